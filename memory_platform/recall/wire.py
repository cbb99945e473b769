"""What the hook client and the resident process agree on: the protocol version and where
the socket is, and the hooks' log. Standard library only at import (the client imports it on
every hook call)."""

import sys
from pathlib import Path

PROTOCOL = 1
SOCKET_NAME = "recall.sock"


def socket_path(home: Path) -> Path:
    """`$MEMORY_PLATFORM_HOME/run/recall.sock`."""
    return home / "run" / SOCKET_NAME


def write_log(home: Path | None, entry: str) -> None:
    """Append `entry` to $MEMORY_PLATFORM_HOME/logs/hooks.log through the confined writer:
    a FIFO there must not block the hook, nor a symlink redirect its writes (both hooks'
    loggers come here). A log that cannot be written goes to stderr with the reason."""
    from memory_platform.confined import append_text  # on the error path only: ~40 ms

    try:
        if home is None:
            raise OSError("no home to log in")
        (home / "logs").mkdir(parents=True, exist_ok=True)
        append_text(home / "logs" / "hooks.log", entry)
    except OSError as exc:
        sys.stderr.write(f"memory-platform: {exc}; the entry:\n{entry}")
