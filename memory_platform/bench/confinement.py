"""What the confined reader costs an import (`bench ingest --confinement`): the same
synthetic history imported into fresh databases with the confined reader (as shipped) and
with a baseline that opens files with plain `open()` and walks folders with `rglob` (what
the code did before issue 20), alternating the two so the machine's load hits both alike.

The baseline swaps `open_file` (in every module that imported it) and the adapters' walk
for the unconfined versions for the duration of its runs only; nothing else differs.
"""

import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory_platform import confined
from memory_platform.bench.common import load_average, scratch_db
from memory_platform.ingest import importer as ingest


def _plain_open(path, *, max_bytes=None):
    return open(path, "rb")


def _plain_walk(path, *, wanted=None, descend=None, links=confined.INSIDE, start=None,
                **_caps) -> confined.Listing:
    root = Path(path).resolve()
    if root.is_file():
        return confined.Listing(root, [root])
    files = sorted(p for p in root.rglob("*") if p.is_file()
                   and (wanted is None or wanted(p.relative_to(root))))
    return confined.Listing(root, files)


@contextmanager
def unconfined() -> Iterator[None]:
    """Every module's `open_file` and the adapters' `walk` replaced by the plain ones."""
    swapped = []
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if not name.startswith("memory_platform.") or name.startswith("memory_platform.confined"):
            continue
        for attr, plain in (("open_file", _plain_open), ("walk", _plain_walk)):
            if getattr(module, attr, None) is getattr(confined, attr):
                swapped.append((module, attr))
                setattr(module, attr, plain)
    try:
        yield
    finally:
        for module, attr in swapped:
            setattr(module, attr, getattr(confined, attr))


def _clocked(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """fn's value, wall seconds, and CPU seconds of this process (all its threads: the
    parser and the import's writer). CPU time is what the reader costs; on a loaded
    machine the wall clock mostly measures the neighbours."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def measure(root: Path, discover: Callable[[], list], parse: Callable[[list], int],
            admin_url: str, log: Callable[[str], None], rounds: int = 3) -> dict:
    """Discovery, parse only (adapters, no database) and import, confined and baseline,
    `rounds` of each, alternated (baseline first in odd rounds, confined first in even
    ones): per run the wall and CPU seconds; the medians, and the cost of the confined
    reader in percent of the baseline, by CPU time and by wall-clock rate."""
    runs: dict[str, list[dict]] = {"confined": [], "baseline": []}
    load_before = load_average()
    for n in range(rounds):
        order = ("baseline", "confined") if n % 2 == 0 else ("confined", "baseline")
        for mode in order:
            with (unconfined() if mode == "baseline" else _nothing()):
                targets, walk_s, walk_cpu = _clocked(discover)
                parsed, parse_s, parse_cpu = _clocked(lambda: parse(targets))
                with scratch_db(admin_url, f"confine_{mode}") as db:
                    with db.connect():
                        pass  # migrate outside the timing
                    report, import_s, import_cpu = _clocked(lambda: ingest.import_path(
                        db, None, root, files=targets))
            run = {"events": report.events_new, "discovery_cpu_seconds": round(walk_cpu, 3),
                   "parse_cpu_seconds": round(parse_cpu, 2),
                   "parse_events_per_second": round(parsed / parse_s),
                   "import_cpu_seconds": round(import_cpu, 2),
                   "import_events_per_second": round(report.events_new / import_s)}
            runs[mode].append(run)
            log(f"  {mode}: discovery {walk_cpu:.2f} s CPU; parse {parse_cpu:.1f} s CPU "
                f"({run['parse_events_per_second']:,} events/s); import {import_cpu:.1f} s "
                f"CPU ({run['import_events_per_second']:,} events/s)")
    median = {mode: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
              for mode, rs in runs.items()}

    def cost(key: str, higher_is_better: bool = False) -> float:
        c, b = median["confined"][key], median["baseline"][key]
        return round(((b - c) / b if higher_is_better else (c - b) / b) * 100, 2)

    costs = {"discovery_cpu": cost("discovery_cpu_seconds"),
             "parse_cpu": cost("parse_cpu_seconds"),
             "import_cpu": cost("import_cpu_seconds"),
             "import_rate_wall_clock": cost("import_events_per_second", True)}
    log(f"  confined reader cost (median of {rounds}, % of the baseline): "
        + ", ".join(f"{k} {v:+.1f}%" for k, v in costs.items()))
    return {"rounds": rounds, "runs": runs, "median": median, "cost_percent": costs,
            "load_average_before": load_before, "load_average_after": load_average()}


@contextmanager
def _nothing() -> Iterator[None]:
    yield
