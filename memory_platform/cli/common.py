"""What every command shares: the consoles, one-line errors, the database handle, the
actor written to audit rows, and date options.

Commands import the services they call inside their bodies: `memory-platform X` loads only
what X needs (Dagster alone takes seconds to import, the embedding model more), so a
command that needs neither starts in a fraction of a second.
"""

import getpass
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from memory_platform.settings import SettingsError, load_settings

# Markup and emoji codes off by default: what the CLI prints is mostly stored text (a
# memory's "[tool.ruff]", a file name "bad100.jsonl:100:" that rich would turn into an
# emoji, a "[red]" in a turn). A line that styles its own words says markup=True and
# escapes the user text in it.
err = Console(stderr=True, emoji=False, markup=False)
out = Console(emoji=False, markup=False)

STATE = {"debug": False}


def fail(message: str, code: int = 1) -> None:
    """Print one `error:` line and exit."""
    err.print(f"[bold red]error:[/] {escape(str(message))}", highlight=False, soft_wrap=True,
              markup=True)
    raise typer.Exit(code)


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/] {escape(str(message))}", highlight=False, soft_wrap=True,
              markup=True)


MAX_LISTED_ERRORS = 20


def print_errors(errors, limit: int = MAX_LISTED_ERRORS) -> None:
    """One `error:` line per error, the first `limit` of them and then a count of the rest
    (`--json` keeps them all). Each is user text (file names, record ids): never markup."""
    errors = list(errors)
    for error in errors[:limit]:
        err.print(f"[bold red]error:[/] {escape(str(error))}", highlight=False,
                  soft_wrap=True, markup=True)
    if len(errors) > limit:
        err.print(f"... and {len(errors) - limit:,} more error(s) (`--json` lists them all)",
                  highlight=False, markup=False)


def say(message: str) -> None:
    """A line of plain text: brackets in it ("[exact]", a memory's "[tool.ruff]") are text,
    not rich markup."""
    out.print(message, highlight=False, soft_wrap=True, markup=False)


def needs_llm(what: str) -> None:
    """Stop at once, before Dagster is imported, when no LLM provider can be built: `what`
    needs one (issue 22: `dream` took 21-25 s to say so)."""
    from memory_platform.llm.providers import llm_not_configured

    problem = llm_not_configured()
    if problem:
        fail(f"{what} needs an LLM: {problem}")


@contextmanager
def output_to(log: Path) -> Iterator[Path]:
    """Send this process's stdout and stderr, its children's included (dbt, Dagster's
    loggers), to the file `log` while the block runs: a command that prints one result
    (`report`, `report --json`) prints only that (issue 22). The descriptors are put back
    even when the block fails, so its error is still printed."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield log
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run(fn):
    """Run a command body: known failures become one clear line (--debug: the traceback);
    Ctrl-C stops with `interrupted` and exit code 130."""
    from memory_platform.ingest.report import ImportFailed
    from memory_platform.llm.base import LLMError
    from memory_platform.store import DatabaseError

    try:
        return fn()
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        # Ctrl-C: one line and the shell's code for SIGINT (128 + 2), never a traceback
        # (the work committed so far stays; a re-run continues).
        err.print("interrupted", highlight=False, markup=False)
        raise typer.Exit(130) from None
    except (ImportFailed, DatabaseError, LLMError, SettingsError, FileNotFoundError,
            PermissionError, ValueError) as exc:
        if STATE["debug"]:
            raise
        fail(str(exc))
    except Exception as exc:  # anything else is a bug: still one line unless --debug
        if STATE["debug"]:
            raise
        fail(f"{type(exc).__name__}: {exc} (run with --debug for the traceback)")


def database():
    from memory_platform.store import Database

    return Database.from_settings(load_settings())


def actor() -> str:
    """Who a CLI write is audited as."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):
        # getuser() fails in containers with no passwd entry and no USER; the audit row
        # still says the write came from the CLI.
        return "cli"


def parse_day(value: str | None, option: str) -> datetime | None:
    """A --since/--until style option as an aware datetime (UTC when no zone is given)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        # A ValueError, so `run` reports it as every other failure: one `error:` line.
        raise ValueError(f"{option} {value!r} is not a date like 2026-03-01") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


def one_line(text: str, width: int = 300) -> str:
    text = " ".join(str(text).split())
    return text[:width] + ("…" if len(text) > width else "")


def _json_default(value):
    # ISO 8601 with a `T` for every date and time, as REST and MCP write them.
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def to_json(data) -> str:
    return json.dumps(data, default=_json_default)
