"""Opening one file under the confined reader's rules (see the package docstring): by its
real path, each folder on the way opened with O_NOFOLLOW from `/`, the file with O_NONBLOCK
and O_NOFOLLOW, its type checked with fstat on what was opened, its size capped."""

import errno
import os
import stat
from typing import BinaryIO

_PASS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LIST = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = (os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
         | getattr(os, "O_NOCTTY", 0))


class Refused(OSError):
    """A path the confinement does not open, read or write; str() says which and why."""

    def __init__(self, path: object, reason: str):
        self.shown, self.reason = show(path), reason
        super().__init__(f"{self.shown}: {reason}")


def show(path: object) -> str:
    """A path as text any store can hold (a name that is not UTF-8 gets U+FFFD)."""
    raw = os.fsencode(path) if isinstance(path, (str, bytes, os.PathLike)) else b"?"
    return raw.replace(b"\x00", b"\\0").decode("utf-8", "replace")


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character "
          "device", stat.S_IFBLK: "a block device", stat.S_IFDIR: "a folder",
          stat.S_IFLNK: "a symlink"}


def kind_of(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _absolute(path: object) -> str:
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if "\x00" in text:
        raise Refused(text, "a NUL byte in the path")
    return os.path.abspath(text)


def _open_folder(path: str, names: list[str], *, create: bool = False) -> int:
    """An O_PATH descriptor of the folder `names` (from /), each step with O_NOFOLLOW."""
    fd = os.open("/", _PASS)
    try:
        for i, name in enumerate(names):
            try:
                step = os.open(name, _PASS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, dir_fd=fd)
                step = os.open(name, _PASS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                what = kind_of(os.lstat(name, dir_fd=fd).st_mode)
                raise Refused(path, f"{show('/' + '/'.join(names[:i + 1]))} is {what}, "
                              "not a folder: not followed") from None
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def _split(path: object) -> tuple[str, list[str], str]:
    full = _absolute(path)
    parts = [p for p in full.split("/") if p]
    if not parts:
        raise Refused(full, "a folder, not a file")
    return full, parts[:-1], parts[-1]


def open_file(path: object, *, max_bytes: int | None = None) -> BinaryIO:
    """The regular file at `path`, opened for reading by its real path: no component may be
    a symlink (what `walk` yields qualifies; resolve what a person names first). Never
    blocks. Raises Refused (a symlink, a FIFO, a socket, a device, a folder, over
    `max_bytes`), FileNotFoundError, or another OSError."""
    full, folders, name = _split(path)
    parent = _open_folder(full, folders)
    try:
        fd = os.open(name, _READ, dir_fd=parent)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(full, "a symlink: not followed") from None
        if exc.errno == errno.ENXIO:
            raise Refused(full, "a socket: not read") from None
        raise
    finally:
        os.close(parent)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(full, f"{kind_of(st.st_mode)}: not read")
        if max_bytes is not None and st.st_size > max_bytes:
            raise Refused(full, f"{st.st_size:,} bytes, over the limit of {max_bytes:,}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_APPEND = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
           | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))


def append_text(path: object, text: str) -> None:
    """Append `text` to the log file at `path` (created 0600). Never blocks, never follows
    the file's own name: a FIFO (read or not), a socket, a device or a symlink in its place
    raises Refused (a log someone swapped must not stall a hook or redirect its writes)."""
    full = _absolute(path)
    try:
        fd = os.open(full, _APPEND, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(full, "a symlink: not followed") from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads, or a socket
            raise Refused(full, f"{kind_of(os.lstat(full).st_mode)}: not written") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(full, f"{kind_of(st.st_mode)}: not written")
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def read_bytes(path: object, max_bytes: int) -> bytes:
    """The whole file at `path` (see open_file), at most `max_bytes` (else Refused, also
    for a file that grew past it while read)."""
    with open_file(path, max_bytes=max_bytes) as fh:
        data = read_capped(fh, max_bytes)
    if data is None:
        raise Refused(path, f"over the limit of {max_bytes:,} bytes (it grew while read)")
    return data


def read_capped(fh: BinaryIO, max_bytes: int) -> bytes | None:
    """The rest of an open file, or None past `max_bytes`. Reads what fstat says is there
    plus a byte (a buffer of the file's size, not of the limit), then on while it grows."""
    want = min(os.fstat(fh.fileno()).st_size, max_bytes) + 1
    parts, total = [], 0
    while want > 0:
        chunk = fh.read(want)
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            return None
        want = min(1 << 20, max_bytes + 1 - total)
    return b"".join(parts)


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip("/") + "/")
