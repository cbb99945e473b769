"""Curator benchmark: a namespace of 10,000 memories (each with a 384-dimension vector)
weeded with a scripted model, on a scratch embedded PostgreSQL.

Measured: building the listing (read + fingerprint) and rendering it into prompts; the token
size of the listing and how it splits at several prompt budgets; the propose step end to
end with the scripted model (listing, one call per part, validation, recording); validation
alone; the execute step (namespace and rows locked, fingerprint recomputed, cuts archived
with their vectors, tombstones written) for the cut share asked; restore latency, one cut at
a time; and the purge of what is left once the window has passed.

Self-contained on purpose (its own scratch database, no helpers from other benchmarks).
"""

import json
import os
import platform
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from memory_platform.bench.common import uptime
from memory_platform.curator import archive, listing
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.execute import execute
from memory_platform.curator.propose import propose
from memory_platform.curator.verdict import Verdict, problems
from memory_platform.llm import ScriptedProvider
from memory_platform.store import Database
from memory_platform.store import memories as memory_store
from memory_platform.store import memory_embeddings as embedding_store

NAMESPACE = "bench"
MODEL = "bench-curator-384"
DIMS = 384
WEEK = date(2026, 11, 29)
Log = Callable[[str], None]

_SUBJECTS = ["the API", "the worker", "the nightly export", "the billing job", "the cache",
             "the search index", "the web app", "the CLI", "the staging database",
             "the deploy script"]
_FACTS = ["listens on port {n}", "runs every {n} minutes", "keeps {n} days of logs",
          "needs {n} GB of memory", "was last migrated in release {n}",
          "times out after {n} seconds", "retries {n} times before failing",
          "is owned by team {n}"]


def _pct(ms: list[float]) -> dict:
    ordered = sorted(ms)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)

    return {"n": len(ms), "p50_ms": pick(0.5), "p95_ms": pick(0.95), "max_ms": round(
        ordered[-1], 2), "mean_ms": round(statistics.fmean(ordered), 2)}


def texts(size: int, seed: int = 7) -> list[str]:
    """Plausible one-line facts, all different (a vault's memories are unique by text)."""
    rng = np.random.default_rng(seed)
    found = []
    for i in range(size):
        subject = _SUBJECTS[rng.integers(len(_SUBJECTS))]
        fact = _FACTS[rng.integers(len(_FACTS))].format(n=int(rng.integers(2, 9000)))
        found.append(f"{subject.capitalize()} {fact} (note {i}).")
    return found


def load(db: Database, size: int, log: Log) -> dict:
    rng = np.random.default_rng(3)
    began = time.perf_counter()
    ids = []
    with db.connect() as conn:
        embedding_store.ensure_memory_model(conn, MODEL, DIMS)
        with conn.transaction():
            for text in texts(size):
                memory_id, _ = memory_store.add_memory(conn, namespace=NAMESPACE, text=text,
                                                      category="project", actor="bench")
                ids.append(memory_id)
        vectors = rng.standard_normal((size, DIMS)).astype(np.float32)
        for offset in range(0, size, 2000):
            embedding_store.write_memory_embeddings(
                conn, MODEL, DIMS, list(zip(ids[offset:offset + 2000],
                                            vectors[offset:offset + 2000], strict=True)))
        conn.execute("ANALYZE memories")
        conn.execute("ANALYZE memory_embeddings")
    seconds = time.perf_counter() - began
    log(f"  {size:,} memories with {DIMS}-d vectors loaded in {seconds:.1f} s")
    return {"memories": size, "load_seconds": round(seconds, 1)}


def cut_verdict(listed: str, share: float) -> Verdict:
    """What the scripted curator says about one prompt: `share` of its handles cut as
    stale, with a date as evidence (a namespace without a repository)."""
    handles = [int(h) for h in re.findall(r"^\[(\d+)\]", listed, re.M)]
    step = max(1, round(1 / share)) if share > 0 else 0
    return Verdict.model_validate({"cuts": [
        {"handle": h, "reason": "stale",
         "evidence": [{"date": "2025-06-30", "note": "the release it names is past"}]}
        for h in (handles[::step] if step else [])]})


def cutting(share: float) -> Callable:
    return lambda call: cut_verdict(call.prompt, share).model_dump_json(exclude_none=True)


def measure(db: Database, *, share: float, budgets: list[int], config: CuratorConfig,
            restores: int, log: Log) -> dict:
    now = datetime.now(timezone.utc)
    began = time.perf_counter()
    shown = listing.build(db, NAMESPACE, now)
    build_s = time.perf_counter() - began
    splits = []
    for budget in budgets:
        t0 = time.perf_counter()
        parts = listing.chunks(shown, budget)
        render_s = time.perf_counter() - t0
        sizes = [p.tokens for p in parts]
        splits.append({"prompt_budget_tokens": budget, "prompts": len(parts),
                       "listing_tokens": sum(sizes), "largest_prompt_tokens": max(sizes),
                       "handles_per_prompt": round(len(shown) / len(parts)),
                       "listing_chars": sum(len(p.text) for p in parts),
                       "render_ms": round(1000 * render_s, 1)})
        log(f"  budget {budget:,} tokens: {len(parts)} prompts, {sum(sizes):,} listing tokens "
            f"(largest {max(sizes):,}), {len(shown) // len(parts)} handles each")
    parts = listing.chunks(shown, config.prompt_tokens)
    model = ScriptedProvider(answers=cutting(share))
    verdicts = [cut_verdict(p.text, share) for p in parts]
    t0 = time.perf_counter()
    found = [problems(v, shown, p, None) for v, p in zip(verdicts, parts, strict=True)]
    validate_s = time.perf_counter() - t0
    assert not any(found), found[:1]

    t0 = time.perf_counter()
    proposal = propose(db, NAMESPACE, WEEK, agent=lambda: model, dagster_run_id="bench",
                       config=config, repo=None, now=now)
    propose_s = time.perf_counter() - t0
    assert proposal.status == "proposed", proposal.detail
    t0 = time.perf_counter()
    done = execute(db, NAMESPACE, WEEK, dagster_run_id="bench", config=config, now=now)
    execute_s = time.perf_counter() - t0
    log(f"  listing {1000 * build_s:.0f} ms; validation {1000 * validate_s:.0f} ms; propose "
        f"(listing + {len(parts)} scripted calls + validation + record) {propose_s:.2f} s; "
        f"execute ({done.cuts:,} cuts) {execute_s:.2f} s")

    latencies = []
    for memory_id in sorted(done.archived)[:restores]:
        t0 = time.perf_counter()
        archive.restore(db, memory_id, actor="bench", now=now)
        latencies.append(1000 * (time.perf_counter() - t0))
    restore = _pct(latencies)
    log(f"  restore, one at a time: {restore}")
    t0 = time.perf_counter()
    purged = archive.purge(db, purged_by="bench", now=now + timedelta(days=15))
    purge_s = time.perf_counter() - t0
    invariant = archive.invariant(db)
    log(f"  purge of {len(purged):,} archives: {purge_s:.2f} s; invariant ok: "
        f"{invariant['ok']}")
    return {
        "listing_build_ms": round(1000 * build_s, 1),
        "listing_splits": splits,
        "prompts_at_default_budget": len(parts),
        "validation_ms": round(1000 * validate_s, 1),
        "propose_seconds": round(propose_s, 2),
        "scripted_calls": len(model.calls),
        "proposed_cuts": proposal.proposed_cuts,
        "max_cuts": proposal.max_cuts,
        "execute_seconds": round(execute_s, 2),
        "cuts": done.cuts,
        "cuts_per_second": round(done.cuts / execute_s, 1) if execute_s else None,
        "restore_latency": restore,
        "purged": len(purged),
        "purge_seconds": round(purge_s, 2),
        "invariant_ok": invariant["ok"],
    }


def run(out: Path, *, size: int = 10_000, share: float = 0.10,
        budgets: tuple[int, ...] = (8_000, 24_000, 100_000), restores: int = 200,
        log: Log = print) -> dict:
    """Build the namespace on a scratch database, measure, print, write JSON to `out`."""
    config = CuratorConfig()
    report: dict = {
        "benchmark": "curator",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "uptime_at_start": uptime()},
        "model": "scripted (no LLM time in the figures)",
        "cut_share": share,
        "default_prompt_budget_tokens": config.prompt_tokens,
        "tokens_estimated_as": "characters / 4",
    }
    with tempfile.TemporaryDirectory(prefix="mp-bench-curator-") as tmp:
        db = Database(pgdata=Path(tmp) / "pgdata")
        log(f"curator at {size:,} memories:")
        report["namespace"] = load(db, size, log)
        report["results"] = measure(db, share=share, budgets=list(budgets), config=config,
                                    restores=restores, log=log)
        db.close()
    report["machine"]["uptime_at_end"] = uptime()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"\nwritten to {out}")
    return report
