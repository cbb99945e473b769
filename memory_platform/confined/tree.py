"""Walking a root under the confined reader's rules (see the package docstring): the
regular files below it, each once by its real path, and every entry skipped, with why."""

import itertools
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memory_platform.confined.files import (
    _LIST,
    Refused,
    _absolute,
    _inside,
    _open_folder,
    kind_of,
    show,
)

INSIDE = "inside"  # follow a symlink whose target stays inside the root
REFUSE = "refuse"  # refuse every symlink below the root
MAX_DEPTH = 64  # folders below a root
MAX_ENTRIES = 1_000_000  # entries (files, folders, links...) one walk looks at

Rule = Callable[[PurePosixPath], bool]  # judged on a path relative to the root


@dataclass(frozen=True)
class Skip:
    """An entry a walk did not list, and why (the caller reports it)."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Listing:
    """What a walk found: `files` (real paths, sorted, each once), `skipped`, and `links`
    (each symlink followed inside the root, as found, and the real file it names, which is
    in `files`). Iterating it iterates the files."""

    root: Path
    files: list[Path] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    links: dict[Path, Path] = field(default_factory=dict)  # a followed symlink -> its file

    def __iter__(self) -> Iterator[Path]:
        return iter(self.files)


def walk(path: object, *, wanted: Rule | None = None, descend: Rule | None = None,
         links: str = INSIDE, start: object = None, max_depth: int = MAX_DEPTH,
         max_entries: int = MAX_ENTRIES) -> Listing:
    """The regular files under `path` that `wanted` accepts, in folders `descend` accepts
    (None: all), and what was skipped. A file named as the root is listed by its real path;
    a root that does not exist is empty. `start`, a real folder inside the root, walks only
    the part below it (rules and confinement stay the root's)."""
    if links not in (INSIDE, REFUSE):
        raise ValueError(f"links must be {INSIDE!r} or {REFUSE!r}")
    root = Path(os.path.realpath(_absolute(path)))
    listing = Listing(root)
    try:
        mode = os.stat(root).st_mode
    except FileNotFoundError:
        return listing
    if stat.S_ISREG(mode):
        listing.files.append(root)
    elif stat.S_ISDIR(mode):
        first = Path(_absolute(start)) if start is not None else root
        if not _inside(str(first), str(root)):
            raise Refused(first, f"not inside {show(root)}")
        _Walker(listing, wanted, descend, links, max_depth, max_entries).run(first)
    else:
        listing.skipped.append(Skip(show(path), f"{kind_of(mode)}: not read"))
    return listing


class _Walker:
    def __init__(self, listing: Listing, wanted: Rule | None, descend: Rule | None,
                 links: str, max_depth: int, max_entries: int):
        self.listing, self.wanted, self.descend = listing, wanted, descend
        self.links, self.max_depth, self.max_entries = links, max_depth, max_entries
        self.root = str(listing.root)
        self.seen: set[str] = set()
        self.entries = 0

    def run(self, first: Path) -> None:
        parts = first.relative_to(self.listing.root).parts
        folder = _open_folder(str(first), [p for p in str(first).split("/") if p])
        try:
            fd = os.open(".", _LIST, dir_fd=folder)
        finally:
            os.close(folder)
        try:
            self._visit(fd, parts, len(parts))
        finally:
            os.close(fd)
        self.listing.files.sort()

    def skip(self, rel: PurePosixPath | None, reason: str) -> None:
        where = self.listing.root / rel if rel is not None else self.listing.root
        self.listing.skipped.append(Skip(show(where), reason))

    def _want(self, rel: PurePosixPath) -> bool:
        return self.wanted is None or self.wanted(rel)

    def _enter(self, rel: PurePosixPath) -> bool:
        return self.descend is None or self.descend(rel)

    def _visit(self, fd: int, parts: tuple[str, ...], depth: int) -> bool:
        """List one folder; False once the entry cap stopped the walk."""
        with os.scandir(fd) as found:  # never more than the cap in memory
            room = self.max_entries - self.entries + 1
            entries = sorted(itertools.islice(found, max(room, 1)), key=lambda e: e.name)
        for entry in entries:
            self.entries += 1
            if self.entries > self.max_entries:
                self.skip(None, f"more than {self.max_entries:,} entries: the rest of the "
                          "folder was not walked")
                return False
            rel = PurePosixPath(*parts, entry.name)
            if entry.is_symlink():
                self._link(rel)
            elif entry.is_dir(follow_symlinks=False):
                if not self._enter(rel):
                    continue
                if not _utf8(entry.name):
                    self.skip(rel, "a folder whose name is not UTF-8: not walked")
                elif depth + 1 > self.max_depth:
                    self.skip(rel, f"deeper than {self.max_depth} folders: not walked")
                else:
                    try:
                        child = os.open(entry.name, _LIST, dir_fd=fd)
                    except OSError as exc:
                        self.skip(rel, f"cannot open the folder ({exc.strerror}): not walked")
                        continue
                    try:
                        if not self._visit(child, rel.parts, depth + 1):
                            return False
                    finally:
                        os.close(child)
            elif not self._want(rel):
                continue
            elif not _utf8(entry.name):
                self.skip(rel, "a name that is not UTF-8: not read")
            elif entry.is_file(follow_symlinks=False):
                self._add(str(self.listing.root / rel))
            else:
                self.skip(rel, f"{kind_of(entry.stat(follow_symlinks=False).st_mode)}: "
                          "not read")
        return True

    def _add(self, real: str) -> None:
        if real not in self.seen:
            self.seen.add(real)
            self.listing.files.append(Path(real))

    def _link(self, rel: PurePosixPath) -> None:
        full = str(self.listing.root / rel)
        try:
            real = os.path.realpath(full, strict=True)
            mode = os.stat(real).st_mode
        except OSError:
            if self._want(rel):
                self.skip(rel, "a broken symlink or a symlink loop: not read")
            return
        is_dir = stat.S_ISDIR(mode)
        if not (self._enter(rel) if is_dir else self._want(rel)):
            return  # a name the rules leave out, whatever it points to
        if not _inside(real, self.root):
            self.skip(rel, f"a symlink out of the folder (to {show(real)}): not followed")
        elif self.links == REFUSE:
            self.skip(rel, f"a symlink (to {show(real)}): not followed here")
        elif is_dir:
            if not self._allowed(real, folder=True):
                self.skip(rel, "a symlink into a folder that is left out: not followed")
        elif not stat.S_ISREG(mode):
            self.skip(rel, f"a symlink to {kind_of(mode)}: not read")
        elif not self._allowed(real, folder=False):
            self.skip(rel, "a symlink to a file that is left out: not followed")
        else:
            self._add(real)
            self.listing.links[Path(full)] = Path(real)

    def _allowed(self, real: str, *, folder: bool) -> bool:
        """Whether the rules accept the target where it really is."""
        if real == self.root:
            return True
        rel = PurePosixPath(real[len(self.root.rstrip("/")) + 1:])
        folders = [rel.parents[i] for i in range(len(rel.parts) - 1)][::-1]
        if not all(self._enter(f) for f in folders):
            return False
        return self._enter(rel) if folder else self._want(rel)


def _utf8(name: str) -> bool:
    return not any("\udc80" <= c <= "\udcff" for c in name)  # os.fsdecode's escapes
