"""The collector's spool: chunks read from watched files wait here, on disk, until the server
has them. Bounded: a chunk that would take it past `max_bytes` is not written (the file's
state is not advanced, so it is read again once there is room) and the spool says it is full
(collect --status, the exit code, the next session-start hook). Survives reboots: a chunk is
written to a temporary name, synced and renamed, so a crash leaves whole chunks or none."""

import os
from pathlib import Path

SUFFIX = ".chunk.gz"


class Spool:
    def __init__(self, folder: Path, max_bytes: int):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        for stale in self.folder.glob("*.tmp"):  # a write a crash interrupted
            stale.unlink(missing_ok=True)
        entries = self.entries()
        self._bytes = sum(size for _, size in entries)
        self._next = 1 + max((int(p.name.split("-", 1)[0]) for p, _ in entries), default=0)

    def entries(self) -> list[tuple[Path, int]]:
        """(file, size) of each waiting chunk, oldest first."""
        found = []
        for path in self.folder.glob(f"*{SUFFIX}"):
            try:
                found.append((path, path.stat().st_size))
            except FileNotFoundError:
                continue
        return sorted(found, key=lambda entry: entry[0].name)

    @property
    def bytes(self) -> int:
        return self._bytes

    def add(self, key: str, blob: bytes) -> bool:
        """Keep a chunk of the file `key`; False (nothing written) when it does not fit."""
        if self._bytes + len(blob) > self.max_bytes:
            return False
        name = f"{self._next:012d}-{key}{SUFFIX}"
        tmp = self.folder / (name + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.folder / name)
        self._next += 1
        self._bytes += len(blob)
        return True

    def recount(self) -> None:
        self._bytes = sum(size for _, size in self.entries())

    def remove(self, paths: list[Path]) -> None:
        for path in paths:
            try:
                size = path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                continue
            self._bytes -= size

    def drop_file(self, key: str) -> int:
        """Remove every waiting chunk of the file `key` (it is read again from its start);
        returns how many."""
        mine = [p for p, _ in self.entries() if p.name.split("-", 1)[1] == key + SUFFIX]
        self.remove(mine)
        return len(mine)
