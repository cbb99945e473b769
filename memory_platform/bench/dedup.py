"""Dedup gate benchmark: (a) the vector stage on the labelled pairs, (b) its latency and
throughput against a vault of 10k and 100k memories in a real PostgreSQL.

(a) benchmarks/data/dedup_pairs.jsonl (hand-written: same fact in other words, related but
different facts, contradictions). Each pair is embedded with the real local model and run
through `dedup.vector_stage` as candidate `b` against stored memory `a`. Reported: precision
and recall of "auto-duplicate" against label `same`, how many pairs go to the judge, what
a naive 0.88 cosine gate would have wrongly rejected against the token-aware gate, and a
small threshold sweep. No LLM is called: the judge's share is counted, not answered.

(b) The vault: filler memories with random unit vectors (80% in the primary namespace, 15%
in its `__dream` shadow, 5% in `__ideas`, the whole vault in the candidate's scope: the
worst case for one namespace) plus the labelled pairs' `a` texts with real vectors; the
candidates are the `b` texts. Timed per candidate: the vector stage (nearest neighbours in
PostgreSQL + the token rule) with the vector precomputed, and the same with the
candidate's own embedding included.
"""

import json
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from memory_platform.bench.common import (
    REPO,
    Log,
    load_average,
    machine,
    percentiles,
    scratch_db,
    server_url,
)
from memory_platform.dream import dedup
from memory_platform.store import dedup as dedup_store
from memory_platform.store import embeddings as embedding_store
from memory_platform.store import memory_embeddings, memory_search
from memory_platform.store import namespaces as namespace_store

PAIRS = REPO / "benchmarks" / "data" / "dedup_pairs.jsonl"
LABELS = ("same", "different", "contradiction")
NAIVE_GATE = 0.88
NAMESPACE = "bench"


# --- (a) the labelled set ----------------------------------------------------------------


def load_pairs(path: Path = PAIRS) -> list[dict]:
    pairs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for i, p in enumerate(pairs, 1):
        if p.get("label") not in LABELS or not p.get("a") or not p.get("b"):
            raise ValueError(f"{path}:{i}: a pair needs a, b and a label in {LABELS}")
    return pairs


def pair_similarities(pairs: Sequence[dict], embedder) -> np.ndarray:
    a = embedder.embed([p["a"] for p in pairs])
    b = embedder.embed([p["b"] for p in pairs])
    return (a * b).sum(axis=1)


def evaluate(pairs: Sequence[dict], sims: np.ndarray,
             thresholds: dedup.Thresholds = dedup.THRESHOLDS) -> dict:
    """The vector stage's outcome per label, precision/recall of auto-duplicate against
    `same`, and what a naive cosine gate would have rejected."""
    outcomes: dict[str, Counter] = {label: Counter() for label in LABELS}
    wrongly_auto = []
    for p, s in zip(pairs, sims, strict=True):
        stored = dedup.Neighbour(text=p["a"], similarity=float(s), namespace=NAMESPACE,
                                 memory_id=0)
        kind = dedup.vector_stage(p["b"], [stored], thresholds).kind
        outcomes[p["label"]][kind] += 1
        if kind == "duplicate" and p["label"] != "same":
            wrongly_auto.append({**p, "similarity": round(float(s), 3)})
    n = {label: sum(outcomes[label].values()) for label in LABELS}
    auto = sum(outcomes[label]["duplicate"] for label in LABELS)
    tp = outcomes["same"]["duplicate"]
    naive = Counter(p["label"] for p, s in zip(pairs, sims, strict=True) if s >= NAIVE_GATE)
    return {
        "thresholds": {"duplicate": thresholds.duplicate, "grey": thresholds.grey},
        "pairs": n,
        "outcomes": {label: dict(outcomes[label]) for label in LABELS},
        "auto_duplicate": auto,
        "precision": round(tp / auto, 4) if auto else None,
        "recall": round(tp / n["same"], 4) if n["same"] else None,
        # with a judge that is always right: same pairs it can still catch
        "recall_with_judge_ceiling": round(
            (tp + outcomes["same"]["judge"]) / n["same"], 4) if n["same"] else None,
        "to_judge": sum(outcomes[label]["judge"] for label in LABELS),
        "contradictions_seen_by_judge": outcomes["contradiction"]["judge"],
        "wrongly_auto_rejected": {
            "different": outcomes["different"]["duplicate"],
            "contradiction": outcomes["contradiction"]["duplicate"],
        },
        "naive_gate": {
            "cosine": NAIVE_GATE,
            "rejected": sum(naive.values()),
            "same": naive["same"],
            "different_wrongly_rejected": naive["different"],
            "contradictions_wrongly_rejected": naive["contradiction"],
            "precision": round(naive["same"] / sum(naive.values()), 4) if naive else None,
        },
        "wrong_auto_pairs": wrongly_auto,
    }


def sweep(pairs: Sequence[dict], sims: np.ndarray) -> list[dict]:
    rows = []
    base = dedup.THRESHOLDS
    for dup in (0.80, 0.82, 0.85, 0.88, 0.90, 0.95):
        for grey in (0.45, 0.50, 0.55, 0.60, 0.65, 0.70):
            if grey > dup:
                continue
            r = evaluate(pairs, sims, replace(base, duplicate=dup, grey=grey))
            rows.append({"duplicate": dup, "grey": grey, "precision": r["precision"],
                         "recall": r["recall"], "auto": r["auto_duplicate"],
                         "to_judge": r["to_judge"],
                         "judge_ceiling_recall": r["recall_with_judge_ceiling"],
                         "contradictions_to_judge": r["contradictions_seen_by_judge"],
                         "wrong_auto": sum(r["wrongly_auto_rejected"].values())})
    return rows


def format_labelled(result: dict, rows: list[dict]) -> str:
    o = result["outcomes"]
    naive = result["naive_gate"]
    t = result["thresholds"]
    lines = [
        f"vector stage at duplicate >= {t['duplicate']} (equal significant tokens), "
        f"grey >= {t['grey']}:",
        f"  {'label':<14}{'pairs':>6}{'auto-dup':>10}{'to judge':>10}{'new':>6}",
    ]
    for label in LABELS:
        lines.append(f"  {label:<14}{result['pairs'][label]:>6}"
                     f"{o[label].get('duplicate', 0):>10}{o[label].get('judge', 0):>10}"
                     f"{o[label].get('new', 0):>6}")
    lines += [
        f"  auto-duplicate precision {result['precision']}, recall {result['recall']} "
        f"(recall if the judge is always right: {result['recall_with_judge_ceiling']})",
        f"  naive cosine >= {naive['cosine']} gate: rejects {naive['rejected']} pairs, of "
        f"which {naive['different_wrongly_rejected']} different and "
        f"{naive['contradictions_wrongly_rejected']} contradictions (precision "
        f"{naive['precision']}); this gate auto-rejects "
        f"{result['wrongly_auto_rejected']['different']} different and "
        f"{result['wrongly_auto_rejected']['contradiction']} contradictions",
        "",
        "sweep:",
        f"  {'dup':>5}{'grey':>6}{'prec':>7}{'recall':>8}{'auto':>6}{'judge':>7}"
        f"{'ceiling':>9}{'contra->judge':>15}{'wrong':>7}",
    ]
    for r in rows:
        lines.append(f"  {r['duplicate']:>5.2f}{r['grey']:>6.2f}"
                     f"{(r['precision'] if r['precision'] is not None else float('nan')):>7.3f}"
                     f"{r['recall']:>8.3f}{r['auto']:>6}{r['to_judge']:>7}"
                     f"{r['judge_ceiling_recall']:>9.3f}{r['contradictions_to_judge']:>15}"
                     f"{r['wrong_auto']:>7}")
    return "\n".join(lines)


def run_labelled(log: Log, embedder=None) -> dict:
    from memory_platform.query.embeddings import get_embedder

    embedder = embedder or get_embedder("local")
    pairs = load_pairs()
    sims = pair_similarities(pairs, embedder)
    result = evaluate(pairs, sims)
    rows = sweep(pairs, sims)
    log(format_labelled(result, rows))
    by_label = {label: [float(s) for p, s in zip(pairs, sims, strict=True)
                        if p["label"] == label] for label in LABELS}
    result["cosine_by_label"] = {
        label: {"min": round(min(v), 3), "median": round(statistics.median(v), 3),
                "max": round(max(v), 3)} for label, v in by_label.items() if v}
    return {"data": str(PAIRS.relative_to(REPO)), "model": embedder.name,
            "result": result, "sweep": rows}


# --- (b) latency at scale ----------------------------------------------------------------


def build_vault(db, size: int, embedder, pairs: Sequence[dict], log: Log,
                seed: int = 11) -> dict:
    """`size` memories in `bench` and its shadows: the pairs' distinct `a` texts with real
    vectors, the rest filler with random unit vectors; HNSW built after loading."""
    rng = np.random.default_rng(seed)
    real = list(dict.fromkeys(p["a"] for p in pairs))
    real_vecs = embedder.embed(real)
    filler = size - len(real)
    if filler < 0:
        raise ValueError(f"a vault of {size} is smaller than the {len(real)} labelled texts")
    shares = {NAMESPACE: 0.80, f"{NAMESPACE}__dream": 0.15, f"{NAMESPACE}__ideas": 0.05}
    began = time.perf_counter()
    with db.connect() as conn:
        for ns in shares:
            namespace_store.ensure_namespace(conn, ns)
        # register the model first (memory_embeddings.model references it); the memories'
        # HNSW index is built after the bulk load, as a first backfill would
        embedding_store.ensure_model(conn, embedder.name, embedder.dims)
        with conn.transaction():
            ids = dedup_store.insert_bench_memories(conn, NAMESPACE, real, actor="bench")
        rows = list(zip(ids, real_vecs, strict=True))
        done = 0
        batch = 10_000
        for ns, share in shares.items():
            count = round(filler * share) if ns != f"{NAMESPACE}__ideas" else filler - done
            for offset in range(0, count, batch):
                n = min(batch, count - offset)
                texts = [f"filler memory {done + offset + j} in {ns}: note "
                         f"{rng.integers(1_000_000)}" for j in range(n)]
                with conn.transaction():
                    new_ids = dedup_store.insert_bench_memories(conn, ns, texts, actor="bench")
                vecs = rng.standard_normal((n, embedder.dims)).astype(np.float32)
                vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
                rows += list(zip(new_ids, vecs, strict=True))
            done += count
        load_s = time.perf_counter() - began
        began = time.perf_counter()
        for offset in range(0, len(rows), batch):
            memory_embeddings.write_memory_embeddings(conn, embedder.name, embedder.dims,
                                                      rows[offset:offset + batch])
        vectors_s = time.perf_counter() - began
        began = time.perf_counter()
        dedup_store.set_maintenance_work_mem(conn, "1GB")
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        index_s = time.perf_counter() - began
        dedup_store.analyze_vault(conn)
        total = len(rows)
    log(f"  {total:,} memories loaded in {load_s:.0f} s; vectors {vectors_s:.0f} s; "
        f"HNSW build {index_s:.0f} s")
    return {"memories": total, "labelled_texts": len(real), "load_seconds": round(load_s, 1),
            "vectors_seconds": round(vectors_s, 1), "hnsw_build_seconds": round(index_s, 1)}


def run_latency(admin_url: str, size: int, log: Log, queries: int = 300) -> dict:
    from memory_platform.query.embeddings import get_embedder

    embedder = get_embedder("local")
    pairs = load_pairs()
    texts = [p["b"] for p in pairs]
    texts = (texts * (queries // len(texts) + 1))[:queries]
    vectors = embedder.embed(texts)
    th = dedup.THRESHOLDS
    with scratch_db(admin_url, "dedup") as db:
        build = build_vault(db, size, embedder, pairs, log)
        with db.connect() as conn:
            # the whole vault is in the candidates' scope: nearest_memories picks by count
            method = "exact" if build["memories"] <= memory_search.EXACT_MAX_ROWS else "hnsw"

            def stage(text: str, vector: np.ndarray, how: str | None = None) -> str:
                found = dedup.neighbours(conn, vector, NAMESPACE, model=embedder.name,
                                         dims=embedder.dims, k=th.k, method=how)
                return dedup.vector_stage(text, found, th).kind

            for text, vector in zip(texts[:20], vectors[:20], strict=True):  # warm up
                stage(text, vector)
            excluded, kinds = [], Counter()
            began = time.perf_counter()
            for text, vector in zip(texts, vectors, strict=True):
                t0 = time.perf_counter()
                kinds[stage(text, vector)] += 1
                excluded.append(1000 * (time.perf_counter() - t0))
            wall = time.perf_counter() - began
            included = []
            for text in texts[:150]:
                t0 = time.perf_counter()
                stage(text, embedder.embed([text])[0])
                included.append(1000 * (time.perf_counter() - t0))
            # the neighbour read the gate did not choose, for comparison (and its agreement)
            other = "hnsw" if method == "exact" else "exact"
            alt, agree = [], 0
            for text, vector in zip(texts[:100], vectors[:100], strict=True):
                t0 = time.perf_counter()
                found = dedup.neighbours(conn, vector, NAMESPACE, model=embedder.name,
                                         dims=embedder.dims, k=th.k, method=other)
                alt.append(1000 * (time.perf_counter() - t0))
                mine = dedup.neighbours(conn, vector, NAMESPACE, model=embedder.name,
                                        dims=embedder.dims, k=th.k)
                agree += [n.memory_id for n in found[:1]] == [n.memory_id for n in mine[:1]]
    result = {
        "vault": build, "neighbour_method": method,
        "vector_stage_ms": percentiles(excluded, mean=True),
        "vector_stage_with_embedding_ms": percentiles(included, mean=True),
        "throughput_candidates_per_second": round(len(texts) / wall, 1),
        "outcomes": dict(kinds),
        f"neighbours_{other}_ms": percentiles(alt, mean=True),
        f"top1_agreement_{other}_vs_{method}": round(agree / len(alt), 3),
        "load_average_after": load_average(),
    }
    log(f"  neighbour read forced to {other}: {result[f'neighbours_{other}_ms']} "
        f"(top-1 agreement {result[f'top1_agreement_{other}_vs_{method}']})")
    log(f"  vector stage ({method}): {result['vector_stage_ms']}")
    log(f"  with the candidate's embedding: {result['vector_stage_with_embedding_ms']}")
    log(f"  throughput {result['throughput_candidates_per_second']} candidates/s "
        f"(one connection, embedding excluded)")
    return result


# --- driver ------------------------------------------------------------------------------


def run(out: Path, *, parts: Sequence[str] = ("labelled", "latency"),
        sizes: Sequence[int] = (10_000, 100_000), log: Log = print) -> dict:
    """Run the chosen parts, print tables, write JSON to `out`."""
    report: dict = {
        "benchmark": "dedup",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        # shared machine: other work running at the same time slows every figure
        "machine": {**machine(), "load_average_at_start": load_average()},
        "embedding_model": "all-MiniLM-L6-v2 (numpy forward pass, query/minilm.py, CPU)",
        "thresholds": dedup.THRESHOLDS.as_metadata(),
        "llm_used": False,
    }
    if "labelled" in parts:
        log("labelled pairs:")
        report["labelled"] = run_labelled(log)
    if "latency" in parts:
        report["latency"] = []
        with tempfile.TemporaryDirectory(prefix="mp-bench-dedup-") as tmp:
            admin_url = server_url(Path(tmp))
            for size in sizes:
                log(f"latency at {size:,} memories:")
                report["latency"].append(run_latency(admin_url, size, log))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"\nwritten to {out}")
    return report
