"""What every benchmark shares: the PostgreSQL it runs on, scratch databases, timing,
percentiles, the machine description, where the data sits. Benchmarks import from here,
never from each other.
"""

import math
import os
import platform
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from memory_platform.settings import load_settings
from memory_platform.store import Database

Log = Callable[[str], None]
REPO = Path(__file__).resolve().parents[2]


def benchdata() -> Path:
    """The shared benchmark data (LoCoMo, ...), read in place: never copied into the repo."""
    return load_settings().benchdata or REPO.parent / "shared" / "benchdata"


def external_database() -> bool:
    return load_settings().database_url is not None


def server_url(workdir: Path) -> str:
    """A server to create scratch databases on: MEMORY_PLATFORM_DATABASE_URL, else an
    embedded PostgreSQL under `workdir`."""
    url = load_settings().database_url
    if url:
        return url
    from memory_platform.store.db import start_embedded

    return start_embedded(workdir / "pgdata")


@contextmanager
def scratch_db(admin_url: str, label: str) -> Iterator[Database]:
    """A new database for one benchmark run, dropped afterwards (whatever happened)."""
    name = f"bench_{label}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield Database(url=make_conninfo(admin_url, dbname=name))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """fn's value and the seconds it took."""
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def percentiles(samples_ms: list[float], *, mean: bool = False) -> dict[str, float]:
    """Nearest-rank p50/p95/p99 (and the mean when asked) of timings in ms, 2 decimals."""
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 2)

    out = {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99)}
    if mean:
        out["mean"] = round(statistics.fmean(ordered), 2)
    return {**out, "n": len(ordered)}


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform()}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def uptime() -> str:
    """`uptime`'s line (load averages and how long the machine has run), for the report."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True,
                              check=False).stdout.strip()
    except OSError:
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
