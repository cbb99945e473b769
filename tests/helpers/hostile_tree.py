"""Hostile entries for the confined reader's tests (tests/test_confined.py, the wiki's and the
imports'): symlinks out of a root, FIFOs, sockets, devices, loops, and a deadline so a test
that would hang fails instead, with a memory cap so one that would fill the machine fails
with MemoryError first."""

import contextlib
import os
import resource
import signal
import socket
import stat
from pathlib import Path


class Hung(AssertionError):
    """The code under test did not return within its deadline (it blocked)."""


@contextlib.contextmanager
def deadline(seconds: float, *, memory_mb: int = 1500):
    """Fail with Hung after `seconds`, and with MemoryError past `memory_mb` more address
    space than the process has now (reading /dev/zero whole must not take the machine)."""
    def expired(signum, frame):
        raise Hung(f"still running after {seconds} s: something blocked")

    previous = signal.signal(signal.SIGALRM, expired)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/status") as status:
        size_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize"))
    cap = (size_kb << 10) + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY
                                            else min(cap, hard), hard))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def unix_socket(path: Path) -> socket.socket:
    """A listening Unix socket at `path` (bound from its folder: paths over 107 bytes)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        sock.bind(path.name)
    finally:
        os.chdir(here)
    sock.listen(1)
    return sock


def zero_device(path: Path) -> Path:
    """A character device node like /dev/zero inside the tree (needs root), else a symlink
    to /dev/zero: either way an endless file that is not a regular one."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        path.symlink_to("/dev/zero")
    return path


def loop(path: Path) -> Path:
    """Two symlinks pointing at each other; `path` is one of them."""
    other = path.with_name(path.name + ".other")
    path.symlink_to(other.name)
    other.symlink_to(path.name)
    return path
