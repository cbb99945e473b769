"""sha256 of a file and of its first bytes, in one confined read: the prefix-hash rule by
which a local import (ingest/importer.py) and a collector (collect/scan.py) both decide that
a grown file may be resumed where they left it (same first bytes) or must be read again."""

import hashlib
from pathlib import Path

from memory_platform.confined.files import open_file


def hash_file(path: Path, prefix_bytes: int = 0) -> tuple[str, str | None, int]:
    """sha256 of the whole file and of its first `prefix_bytes` bytes, in one read (through
    `open_file`: the path is real). Returns (sha256, prefix sha256 or None, bytes hashed)."""
    digest = hashlib.sha256()
    prefix = None
    done = 0
    with open_file(path) as fh:
        while True:
            want = 1 << 20
            if prefix is None and prefix_bytes and done < prefix_bytes:
                want = min(want, prefix_bytes - done)
            chunk = fh.read(want)
            if not chunk:
                break
            digest.update(chunk)
            done += len(chunk)
            if prefix is None and prefix_bytes and done == prefix_bytes:
                prefix = digest.copy().hexdigest()
    return digest.hexdigest(), prefix, done


def hash_prefix(path: Path, length: int) -> str:
    return hash_file(path, length)[1] or hashlib.sha256().hexdigest()
