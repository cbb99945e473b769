"""Pieces every format writer shares: seeded ids, the clock, the time window, file output.

Every session or conversation draws from its own RNG (`unit_rng`), so a history is the same
bytes whatever order or process writes it in. A writer returns (events, files, first us,
last us); `build_manifest` turns the sums into what `generate_history` returns.
"""

from __future__ import annotations

import base64
import math
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

import orjson

_B58_FIX = str.maketrans("+/0OIl", "xZ9QJk")
_HEX = "0123456789abcdef"
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in _HEX}


def json_line(obj: Any) -> str:
    # Claude Code is written by JS JSON.stringify: compact, non-ASCII left as UTF-8, which is
    # also what orjson writes (and fast: most of a history is Claude Code lines).
    return orjson.dumps(obj).decode()


def random_uuid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


def base58_id(rng: random.Random, k: int) -> str:
    # base64 of random bytes with the six non-base58 characters mapped onto base58 ones:
    # same look as Anthropic's ids (msg_01..., toolu_01...), a C-speed path instead of choices().
    raw = base64.b64encode(rng.randbytes(k * 3 // 4 + 3)).decode()
    return raw[:k].translate(_B58_FIX)


def hex_id(rng: random.Random, k: int) -> str:
    return "%0*x" % (k, rng.getrandbits(4 * k))


def fast_randint(rng: random.Random, lo: int, hi: int) -> int:
    """randint(lo, hi) without randrange's Python-level overhead (hot paths only)."""
    return lo + int(rng.random() * (hi - lo + 1))


def unit_rng(seed: int, source: str, index: int) -> random.Random:
    # Each conversation/session gets its own stream so regenerating one (to fit the time
    # window) or generating them in another order gives the same bytes.
    return random.Random(f"{seed}/{source}/{index}")


class Clock:
    """Formats times the way each source writes them and remembers the extremes written."""

    __slots__ = ("lo", "hi", "_minute", "_prefix")

    def __init__(self) -> None:
        self.lo = 1 << 62  # microseconds since the epoch
        self.hi = -1
        self._minute = -1
        self._prefix = ""

    def _see(self, us: int) -> None:
        if us < self.lo:
            self.lo = us
        if us > self.hi:
            self.hi = us

    def merge(self, other: Clock) -> None:
        self.merge_range(other.lo, other.hi)

    def merge_range(self, lo: int, hi: int) -> None:
        if hi >= 0:  # hi < 0: nothing was written
            self._see(lo)
            self._see(hi)

    def _stamp(self, s: int) -> str:
        # strftime is the slow part; consecutive records mostly share the minute.
        m, sec = divmod(s, 60)
        if m != self._minute:
            self._minute = m
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(m * 60))
        return "%s%02d" % (self._prefix, sec)

    def ms(self, t: float) -> str:
        """Claude Code and Gemini Takeout: `2025-10-12T21:35:53.825Z`."""
        ms = int(t * 1000)
        self._see(ms * 1000)
        s, r = divmod(ms, 1000)
        return "%s.%03dZ" % (self._stamp(s), r)

    def us(self, t: float, suffix: str = "Z") -> str:
        """claude.ai: `2025-07-06T03:10:13.076141Z` (projects.json uses `+00:00`)."""
        us = int(t * 1_000_000)
        self._see(us)
        s, r = divmod(us, 1_000_000)
        return "%s.%06d%s" % (self._stamp(s), r, suffix)

    def epoch(self, t: float) -> float:
        """ChatGPT: float epoch seconds with microseconds."""
        v = round(t, 6)
        self._see(int(round(v * 1_000_000)))
        return v

    def seconds(self, t: float) -> str:
        """Note front matter: `2026-03-10T09:14:00Z`."""
        s = int(t)
        self._see(s * 1_000_000)
        return self._stamp(s) + "Z"


def _iso_from_us(us: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=us)
    return moment.isoformat()


def fit_in_window(
    gen: Callable[[float, float], tuple[Any, Clock]],
    base: float,
    scale: float,
    lo: float,
    hi: float,
) -> tuple[Any, Clock]:
    """Run a unit generator at `base`; if it runs past `hi`, shift it back (never before
    `lo`, squeezing its gaps if it is longer than the whole range) and run it again.
    Generators reseed their own RNG, so a rerun differs only in its times."""
    hi_us = int(hi * 1_000_000)
    for _ in range(8):
        out, clk = gen(base, scale)
        if clk.hi <= hi_us:
            return out, clk
        duration = clk.hi / 1_000_000 - base
        room = max(hi - lo, 1.0)
        if duration > room * 0.95:
            factor = room * 0.9 / duration
            scale *= factor
            duration *= factor
        base = max(lo, hi - duration - 0.5)
    return out, clk


def plan_sizes(rng: random.Random, budget: int, lo: int, hi: int, log: bool = True) -> list[int]:
    """Unit sizes in [lo, hi] (log-uniform, or uniform) summing to exactly `budget`."""
    sizes: list[int] = []
    left = budget
    llo, lhi = math.log(lo), math.log(hi + 1)
    while left > 0:
        size = int(math.exp(rng.uniform(llo, lhi))) if log else rng.randint(lo, hi)
        size = min(max(size, lo), hi)
        if left - size < lo:
            size = left if left <= hi else left - lo
        sizes.append(size)
        left -= size
    return sizes


class FileSink:
    """Writes many small files from a few threads.

    Creating a file costs 0.1-2 ms on some virtual disks while writing it costs microseconds;
    threads overlap that latency (the GIL is released in the syscalls). At most `depth` files
    wait in memory, so streaming stays bounded.
    """

    def __init__(self, threads: int = 8, depth: int = 64) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self.slots = threading.BoundedSemaphore(depth)
        self.futures: list[Future[None]] = []
        self.dirs: set[Path] = set()

    def _write(self, path: Path, text: str) -> None:
        try:
            path.write_text(text, encoding="utf-8")
        finally:
            self.slots.release()

    def put(self, path: Path, text: str) -> None:
        if path.parent not in self.dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.dirs.add(path.parent)
        self.slots.acquire()
        self.futures.append(self.pool.submit(self._write, path, text))
        if len(self.futures) > 4096:
            self._drain(done_only=True)

    def _drain(self, done_only: bool = False) -> None:
        keep = []
        for fut in self.futures:
            if done_only and not fut.done():
                keep.append(fut)
            else:
                fut.result()  # re-raise a failed write here, not silently
        self.futures = keep

    def close(self) -> None:
        self._drain()
        self.pool.shutdown()


class ArrayWriter:
    """Streams a JSON array one element at a time."""

    def __init__(self, path: Path, sep: str = ",") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f: TextIO = path.open("w", encoding="utf-8")
        self.f.write("[")
        self.first = True
        self.sep = sep

    def add(self, text: str) -> None:
        if not self.first:
            self.f.write(self.sep)
        self.first = False
        self.f.write(text)

    def close(self) -> None:
        self.f.write("]")
        self.f.close()


def build_manifest(root: Path, by_source: dict[str, int], files: int, clk: Clock) -> dict[str, Any]:
    return {
        "root": str(root),
        "events": sum(by_source.values()),
        "by_source": by_source,
        "files": files,
        "first": _iso_from_us(clk.lo) if clk.hi >= 0 else None,
        "last": _iso_from_us(clk.hi) if clk.hi >= 0 else None,
    }
