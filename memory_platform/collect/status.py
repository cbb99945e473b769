"""The collector's last status (HOME/collector/status.json) and the one line a person must
see when it needs them: read by `collect --status`, `memory-platform status` and the
session-start hook (recall/hook_client.py), so standard library only."""

import json
import os
from pathlib import Path

REFUSED = 4  # the exit code of a collector the server refuses (collect/run.py)


def home() -> Path:
    """$MEMORY_PLATFORM_HOME as Settings.home reads it (default ~/.memory-platform), without
    loading the settings (pydantic costs more than the whole `collect --status`)."""
    value = (os.environ.get("MEMORY_PLATFORM_HOME") or "").strip()
    return Path(value or "~/.memory-platform").expanduser()


def status(home: Path) -> dict:
    """The last round's status (empty before the first, or when unreadable)."""
    try:
        found = json.loads((Path(home) / "collector" / "status.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def warning(home: Path) -> str | None:
    """One line when the collector needs a person (full spool, refused token), else None."""
    found = status(home)
    if found.get("spool_full"):
        return (f"memory-platform collector: the spool is full ({found.get('spool_bytes')} "
                f"bytes); new sessions are not being collected until {found.get('server')} "
                f"takes them (memory-platform collect --status)")
    if found.get("exit_code") == REFUSED:
        return f"memory-platform collector: refused by the server: {found.get('last_error')}"
    return None
