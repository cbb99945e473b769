"""What the hook client and the resident process agree on: the protocol version and where
the socket is. Standard library only (the client imports it on every hook call)."""

from pathlib import Path

PROTOCOL = 1
SOCKET_NAME = "recall.sock"


def socket_path(home: Path) -> Path:
    """`$MEMORY_PLATFORM_HOME/run/recall.sock`."""
    return home / "run" / SOCKET_NAME
