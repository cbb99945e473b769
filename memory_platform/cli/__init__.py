"""The command line face: main.py assembles the commands of ingest.py, search.py, dream.py, curator.py,
review.py, vault.py, orchard.py, tokens.py, serve.py, hooks.py, recall.py and bench.py over
common.py.

`main` sends `memory-platform hook session-start|prompt` straight to recall's
standard-library client before anything else is imported: Claude Code runs the prompt hook
on every prompt, and importing the CLI (typer, rich, pydantic) alone costs more than its
300 ms budget. `memory-platform collect` goes straight to the collector (collect/cli.py) the
same way: a collector's machine needs no database, Dagster or model."""

import sys

FAST_HOOKS = ("session-start", "prompt")


def main() -> None:
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "hook" and args[1] in FAST_HOOKS:
        from memory_platform.recall.hook_client import main as hook_main

        sys.exit(hook_main(args[1]))
    if args[:1] == ["collect"]:  # a laptop's collector: none of the heavy parts
        from memory_platform.collect.cli import main as collect_main

        sys.exit(collect_main(args[1:]))
    from memory_platform.cli.main import main as cli_main

    cli_main()


def __getattr__(name: str):
    if name == "app":  # the typer app, imported only when asked for
        from memory_platform.cli.main import app

        return app
    raise AttributeError(name)


__all__ = ["app", "main"]
