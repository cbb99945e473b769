"""The dream's dedup step: every proposed candidate of a day through the dedup gate, each
verdict recorded as soon as it is made.

The gate itself (vector stage, significant-token rule, LLM judge) is vault/gate.py: agent
ideas go through the same one (vault/service.py add_idea). What is the dream's here: reading
the day's candidates, comparing each with the vault and with the candidates of the same
batch already let through, and the `dedup_verdicts` rows (idempotent per candidate).

    summary = run_dedup(db, llm, day=date(2025, 3, 14), run_id=context.run_id)
"""

import logging
import math
import statistics
import time
from collections.abc import Sequence
from datetime import date
from typing import Any

import numpy as np

from memory_platform.llm import LLM, LLMCallError
from memory_platform.store import Database, memory_embeddings
from memory_platform.store import dedup as store
from memory_platform.vault.gate import (
    THRESHOLDS,
    Accepted,
    DedupError,
    Neighbour,
    Thresholds,
    VectorOutcome,
    Verdict,
    check_model,
    decide,
    judge,
    neighbours,
    screen,
    vector_stage,
)
from memory_platform.vault.judge import JudgeAnswer, judge_prompt, judge_schema
from memory_platform.vault.significant import differing_tokens, significant_tokens

log = logging.getLogger(__name__)


# --- a day's candidates ------------------------------------------------------------------


def _percentile(samples: Sequence[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 2)


def run_dedup(
    db: Database,
    llm: LLM | None,
    *,
    day: date,
    run_id: str,
    embedder=None,
    thresholds: Thresholds = THRESHOLDS,
) -> dict[str, Any]:
    """Decide every proposed candidate of `day` without a verdict (by id) and record each
    verdict as soon as it is made, so a crash keeps the finished work and a re-run decides
    only the rest. Returns counts by verdict, judge calls, the rejection rate, thresholds
    and per-candidate latency (vector search + judge; embedding, done once per batch, is
    reported apart)."""
    if embedder is None:  # memory vectors: the vault's plain model, never the events' one
        from memory_platform.vault.memories import vault_embedder

        embedder = vault_embedder()
    check_model(embedder, thresholds)
    counts = dict.fromkeys(store.VERDICTS, 0)
    latencies: list[float] = []
    judge_calls = 0
    skipped_existing = 0
    with db.connect() as conn:
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        pending = store.pending_candidates(conn, day)
        earlier = store.accepted_candidates(conn, day)
        began = time.perf_counter()
        texts = [c["text"] for c in earlier + pending]
        vectors = embedder.embed(texts) if texts else np.zeros((0, embedder.dims), np.float32)
        embed_ms = 1000 * (time.perf_counter() - began)
        batch = [Accepted(c["text"], c["namespace"], vectors[i], c["id"])
                 for i, c in enumerate(earlier)]
        for i, cand in enumerate(pending):
            vector = vectors[len(earlier) + i]
            started = time.perf_counter()
            try:
                verdict = decide(conn, cand["text"], cand["namespace"], embedder=embedder,
                                 llm=llm, thresholds=thresholds, vector=vector, batch=batch)
            except LLMCallError as exc:
                raise DedupError(f"candidate {cand['id']}: the dedup judge failed ({exc}); "
                                 f"{sum(counts.values())} verdicts of this run are recorded, "
                                 f"a re-run decides the rest") from exc
            latencies.append(1000 * (time.perf_counter() - started))
            judge_calls += verdict.judge_called
            n = verdict.neighbour
            inserted = store.insert_verdict(
                conn, candidate_id=cand["id"], run_id=run_id, verdict=verdict.verdict,
                decided_by=verdict.decided_by, reason=verdict.reason,
                thresholds=thresholds.as_metadata(),
                neighbour_id=n.memory_id if n else None,
                neighbour_candidate_id=n.candidate_id if n else None,
                neighbour_text=n.text if n else None,
                similarity=n.similarity if n else None,
            )
            if not inserted:  # a concurrent run decided it first; its verdict stands
                skipped_existing += 1
                continue
            counts[verdict.verdict] += 1
            if verdict.accepted:
                batch.append(Accepted(cand["text"], cand["namespace"], vector, cand["id"]))
    decided = sum(counts.values())
    rejected = counts["duplicate"] + counts["same_fact"]
    summary = {
        "day": day.isoformat(),
        "run_id": run_id,
        "candidates": len(pending),
        "decided": decided,
        "already_decided_elsewhere": skipped_existing,
        "verdicts": counts,
        "judge_calls": judge_calls,
        "rejection_rate": round(rejected / decided, 4) if decided else None,
        "thresholds": thresholds.as_metadata(),
        "embed_ms_total": round(embed_ms, 1),
        "latency_ms_p50": _percentile(latencies, 0.5),
        "latency_ms_p95": _percentile(latencies, 0.95),
        "latency_ms_mean": round(statistics.fmean(latencies), 2) if latencies else None,
    }
    log.info("dedup %s: %d decided %s, %d judge calls", day, decided, counts, judge_calls)
    return summary


# The gate itself lives in the vault (vault/gate.py); these names stay importable from
# here for the dream's callers (assets, the dedup benchmark).
__all__ = [
    "THRESHOLDS", "Accepted", "DedupError", "JudgeAnswer", "Neighbour", "Thresholds",
    "Verdict", "VectorOutcome", "decide", "differing_tokens", "judge", "judge_prompt",
    "judge_schema", "neighbours", "run_dedup", "screen", "significant_tokens",
    "vector_stage",
]
