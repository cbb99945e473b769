"""Files by their path relative to a root, read and written under the confined reader's
rules (see the package docstring); writes replace a file atomically inside the root."""

import contextlib
import os
import secrets
from pathlib import Path, PurePosixPath

from memory_platform.confined.files import (
    Refused,
    _absolute,
    _inside,
    _open_folder,
    _split,
    read_bytes,
)
from memory_platform.confined.tree import INSIDE, REFUSE, Listing, Rule, walk

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Root:
    """A folder whose files are found, read and written by paths relative to it, under the
    module's rules. `descend` also judges the folders a relative path goes through (so a
    symlink into a folder left out is refused like the folder itself)."""

    def __init__(self, path: object, *, links: str = INSIDE, descend: Rule | None = None):
        self.path = Path(os.path.realpath(_absolute(path)))
        self.links, self.descend = links, descend
        if not self.path.is_dir():
            raise Refused(path, "not a folder")

    def walk(self, **rules) -> Listing:
        """confined.walk over the root, with its `descend` and `links` rules."""
        return walk(self.path, descend=self.descend, links=self.links, **rules)

    def _relative(self, relative: object) -> PurePosixPath:
        text = os.fspath(relative)
        if "\x00" in text:
            raise Refused(text, "a NUL byte in the path")
        rel = PurePosixPath(text)
        if rel.is_absolute() or text.startswith("~"):
            raise Refused(text, "an absolute path: give one relative to the root")
        if ".." in rel.parts:
            raise Refused(text, "'..' leaves the root")
        return rel

    def resolve(self, relative: object) -> Path:
        """The real path of `relative` inside the root (which need not exist), or Refused:
        a symlink out of the root, any symlink with links=REFUSE, a folder `descend`
        leaves out."""
        rel = self._relative(relative)
        joined = self.path / rel
        real = Path(os.path.realpath(joined))
        root = str(self.path)
        if not _inside(str(real), root):
            raise Refused(relative, "resolves outside the root (a symlink out)")
        if self.links == REFUSE and real != joined:
            raise Refused(relative, "reached through a symlink: not followed here")
        inner = PurePosixPath(real.relative_to(self.path))
        for folder in [*reversed(inner.parents[:-1]), inner] if inner.parts else []:
            if self.descend is not None and not self.descend(folder):
                raise Refused(relative, f"{folder} is left out")
        return real

    def read(self, relative: object, max_bytes: int) -> bytes | None:
        """The file's bytes; None when there is none; Refused when it is not a regular file
        (a symlink with links=REFUSE, a FIFO...) or is over `max_bytes`."""
        try:
            return read_bytes(self.resolve(relative), max_bytes)
        except FileNotFoundError:
            return None

    def _file(self, relative: object) -> tuple[str, list[str], str]:
        rel = self._relative(relative)
        if not rel.parts:
            raise Refused(relative, "the root itself, not a file in it")
        return _split(self.path / rel)

    def write(self, relative: object, data: bytes) -> None:
        """Replace (or create) the file atomically; folders on the way are created. Refused
        when a folder on the way is a symlink or not a folder, or the name is a folder."""
        full, folders, name = self._file(relative)
        parent = _open_folder(full, folders, create=True)
        temp = f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(temp, _CREATE, 0o666, dir_fd=parent)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException as exc:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=parent)
                if isinstance(exc, IsADirectoryError):
                    raise Refused(full, "a folder: not replaced") from None
                raise
        finally:
            os.close(parent)

    def remove(self, relative: object) -> None:
        """Remove the name (a symlink itself, never its target); a missing one is fine."""
        full, folders, name = self._file(relative)
        with contextlib.suppress(FileNotFoundError):
            parent = _open_folder(full, folders)
            try:
                os.unlink(name, dir_fd=parent)
            finally:
                os.close(parent)
