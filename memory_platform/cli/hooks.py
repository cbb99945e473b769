"""`memory-platform hook ...`: entry points for Claude Code hooks. A hook must never hold up
the session: it reads its JSON on stdin and answers fast."""

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
