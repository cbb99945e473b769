"""Reading the files of another memory store through the one confined reader
(`memory_platform.confined`), so an import is never led outside what the user named.

- The file or folder the user named is followed if it is itself a symlink (their choice).
  Below a named folder a symlink out of it is refused and reported; one whose target stays
  inside is read once, where its target is (`confined.INSIDE`).
- Only regular files are read, never blocking: a FIFO, socket, device or folder is
  refused, sizes are capped (per file, and the walk's depth and entries), a NUL in a path
  is refused. Every skip comes back as a `Problem` for the import's report.
"""

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memory_platform import confined
from memory_platform.vault.imports.records import Note, Problem

Refused = confined.Refused


@dataclass(frozen=True)
class Found:
    """A regular file read below a root: its path and bytes."""

    path: Path
    data: bytes


def _real(path: Path) -> Path:
    if "\x00" in str(path):
        raise Refused(path, "the path holds a NUL character")
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path}: no such file or folder")
    return Path(os.path.realpath(path))


def read_named(path: Path, max_bytes: int) -> bytes:
    """The bytes of the one file the user named (a symlink there is followed: their
    choice); Refused for anything that is not a regular file within the size cap."""
    return confined.read_bytes(_real(path), max_bytes)


Rule = Callable[[tuple[str, ...]], bool]  # on a path relative to the root, as its parts


def walk(root: Path, max_bytes: int, wanted: Rule, descend: Rule
         ) -> Iterator[Found | Problem | Note]:
    """Every regular file below the folder the user named that `wanted` accepts, in the
    folders `descend` accepts, read, in path order; each refusal reported where it is."""
    real = _real(root)
    if not real.is_dir():
        raise NotADirectoryError(f"{root}: not a folder")

    def parts(rule: Rule) -> confined.Rule:
        return lambda rel: rule(PurePosixPath(rel).parts)

    listing = confined.walk(real, wanted=parts(wanted), descend=parts(descend),
                            links=confined.INSIDE)
    for skip in listing.skipped:
        yield Problem(skip.path, None, f"refused: {skip.reason}")
    for path in listing.files:
        try:
            yield Found(path, confined.read_bytes(path, max_bytes))
        except OSError as exc:  # Refused (swapped for a FIFO, grown past the cap) or gone
            reason = exc.reason if isinstance(exc, Refused) else exc.strerror
            yield Problem(str(path), None, f"refused: {reason}")


def decode(found: Found) -> tuple[str | None, Problem | None]:
    """The file's text, or the Problem that stops it: a NUL byte (text files hold none) or
    bytes that are not UTF-8 (reported with the line they are on)."""
    data = found.data.removeprefix(b"\xef\xbb\xbf")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        return None, Problem(str(found.path), line, "refused: a NUL byte (not a text file)")
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return None, Problem(str(found.path), line, "refused: not UTF-8 text")
