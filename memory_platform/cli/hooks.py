"""`memory-platform hook ...`: entry points for Claude Code hooks. A hook must never hold up
the session: it reads its JSON on stdin and answers fast.

`session-start` and `prompt` normally never reach this module: cli/__init__.main sends
them to recall/hook_client.py before typer is imported. These commands are the same client
for `--help` and for callers that go through the typer app (tests, `--debug`)."""

import sys

import typer

from memory_platform.cli.common import STATE, fail
from memory_platform.settings import load_settings

hook_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Entry points for Claude Code hooks.")


@hook_app.command("session-end")
def hook_session_end() -> None:
    """Queue a finished Claude Code session for ingestion and a dream. Reads the SessionEnd
    hook's JSON on stdin and writes one file under $MEMORY_PLATFORM_HOME/queue/session-end;
    never touches the database, so the user's exit is not held up."""
    from memory_platform.ingest import hooks

    try:
        hooks.session_end(hooks.read_hook_input(sys.stdin.buffer), load_settings().home)
    except (hooks.HookInputError, OSError) as exc:
        if STATE["debug"]:
            raise
        fail(f"hook session-end: {exc}")


@hook_app.command("session-start")
def hook_session_start() -> None:
    """Print the context a Claude Code session starts with (the SessionStart hook): the
    index and the relevant facts of the namespace the working directory routes to, as
    {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ...}}.
    Always exits 0; on an error it prints nothing and logs to
    $MEMORY_PLATFORM_HOME/logs/hooks.log."""
    from memory_platform.recall.hook_client import main

    raise typer.Exit(main("session-start"))


@hook_app.command("prompt")
def hook_prompt() -> None:
    """Print the few memories most relevant to the prompt (the UserPromptSubmit hook), not
    already given to the session. Always exits 0; errors are logged, nothing printed."""
    from memory_platform.recall.hook_client import main

    raise typer.Exit(main("prompt"))
