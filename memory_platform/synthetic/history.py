"""`generate_history`: split an event budget over the sources and run the format writers,
in worker processes for large histories.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memory_platform.synthetic.chatgpt import write_chatgpt
from memory_platform.synthetic.claude_ai import write_claude_ai
from memory_platform.synthetic.claude_code import plan_claude_code, write_claude_code
from memory_platform.synthetic.common import Clock, build_manifest
from memory_platform.synthetic.gemini import write_gemini
from memory_platform.synthetic.notes import write_notes

SOURCES = ("claude-code", "claude-ai", "chatgpt", "gemini", "notes")
DEFAULT_MIX = {
    "claude-code": 0.6,
    "claude-ai": 0.15,
    "chatgpt": 0.15,
    "gemini": 0.08,
    "notes": 0.02,
}


def _split_budget(events: int, mix: dict[str, float]) -> dict[str, int]:
    unknown = set(mix) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown sources in mix: {sorted(unknown)}; known: {SOURCES}")
    if any(v < 0 for v in mix.values()):
        raise ValueError("mix weights must be non-negative")
    total = sum(mix.values())
    if total <= 0:
        raise ValueError("mix weights must not all be zero")
    exact = {s: events * mix.get(s, 0.0) / total for s in SOURCES}
    out = {s: int(v) for s, v in exact.items()}
    # Largest remainders get the leftover events so the budgets add up exactly.
    rest = events - sum(out.values())
    for s in sorted(SOURCES, key=lambda s: (-(exact[s] - out[s]), SOURCES.index(s)))[:rest]:
        out[s] += 1
    return out


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def generate_history(
    root: Path,
    events: int,
    *,
    seed: int = 0,
    start: datetime | None = None,
    days: int = 30,
    mix: dict[str, float] | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Write a synthetic multi-source history of `events` events under `root`.

    Deterministic for a given (seed, start, days, mix), whatever `workers` is: every
    session/conversation draws from its own seeded RNG. `workers` processes share the work
    (default: one for small histories, else up to the CPU count). `root` should be empty:
    files already there are left alone and not counted. Returns a manifest with the exact
    counts written: {"root", "events", "by_source", "files", "first", "last"} (first/last are
    ISO-8601 UTC of the earliest and latest timestamp written, None if nothing was).
    """
    if events < 0:
        raise ValueError("events must be >= 0")
    if days <= 0:
        raise ValueError("days must be > 0")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    begin = _as_utc(start) if start is not None else datetime.now(timezone.utc) - timedelta(days)
    t0 = begin.timestamp()
    t1 = t0 + days * 86400.0
    budgets = _split_budget(events, mix if mix is not None else DEFAULT_MIX)
    if workers is None:
        workers = 1 if events < 50_000 else min(os.cpu_count() or 1, 8)

    # Jobs, largest first so the pool balances: Claude Code in chunks of sessions, every other
    # source as one job (each writes one streamed file, or many small notes).
    jobs: list[tuple[str, Callable[..., tuple[int, int, int, int]], tuple[Any, ...]]] = []
    plans, scale = plan_claude_code(budgets["claude-code"], seed, t0, t1)
    chunk = max(1, len(plans) // (workers * 4)) if workers > 1 else max(len(plans), 1)
    for i in range(0, len(plans), chunk):
        args = (root, plans[i : i + chunk], seed, t0, t1, scale)
        jobs.append(("claude-code", write_claude_code, args))
    single = {
        "claude-ai": write_claude_ai,
        "chatgpt": write_chatgpt,
        "gemini": write_gemini,
        "notes": write_notes,
    }
    for source, fn in single.items():
        if budgets[source] > 0:
            jobs.append((source, fn, (root, budgets[source], seed, t0, t1)))
    jobs.sort(key=lambda job: -_job_cost(job[0], job[2], budgets))

    by_source = dict.fromkeys(SOURCES, 0)
    files = 0
    clk = Clock()
    if workers <= 1 or len(jobs) <= 1:
        results = [(source, fn(*args)) for source, fn, args in jobs]
    else:
        # spawn, not fork: the parent may hold threads (file sinks, test runners).
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [(source, pool.submit(fn, *args)) for source, fn, args in jobs]
            results = [(source, fut.result()) for source, fut in futures]
    for source, (n, f, lo, hi) in results:
        by_source[source] += n
        files += f
        clk.merge_range(lo, hi)
    return build_manifest(root, by_source, files, clk)


def _job_cost(source: str, args: tuple[Any, ...], budgets: dict[str, int]) -> float:
    if source == "claude-code":
        return float(sum(p.size for p in args[1]))
    return float(budgets[source]) * 1.3  # chat exports carry longer texts per event
