"""Search benchmarks: (a) retrieval quality on LoCoMo, (b) hybrid-search latency at scale,
(c) embedding throughput of the local model.

(a) LoCoMo (CC BY-NC 4.0, evaluation only: read in place, never copied into the repo). Each
of the ten conversations is imported as its own history (source "locomo", one conversation
per sample, text "speaker: text", image turns "[shared image: caption]", occurred_at from
the session date) and every question is searched with a conversation filter. Metric:
LoCoMo's turn-level evidence recall (fraction of a question's evidence turns in the top k;
questions without evidence count 1), plus recall_any@k and recall_all@k, at k = 5, 10, 25,
50, for categories 1-5 and 1-4. No LLM at index or query time.

(b) Latency: synthetic events (text recycled from LoCoMo turns with unique tokens mixed in)
with random unit vectors, the HNSW index built in bulk; p50/p95/p99 of hybrid search with no
filter, a selective filter and broad filters, with the query vector precomputed (the
database's share) and the model's query embedding timed apart.

(c) Throughput of the local model on this machine's cores.
"""

import json
import math
import os
import platform
import random
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from memory_platform.adapters.base import Event
from memory_platform.ingest.rows import event_row
from memory_platform.query import embeddings as emb
from memory_platform.query import search as service
from memory_platform.store import Database, event_reads, event_search
from memory_platform.store import embeddings as embedding_store
from memory_platform.store import events as event_store

# The shared data sits beside the checkout (../shared); never copied into the repo.
_REPO = Path(__file__).resolve().parents[2]
LOCOMO = Path(os.environ.get("MEMORY_PLATFORM_BENCHDATA", _REPO.parent / "shared" / "benchdata")) / "locomo"
KS = (5, 10, 25, 50)
Log = Callable[[str], None]


# --- LoCoMo data -------------------------------------------------------------------------


def _session_time(text: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def locomo_events(sample: dict) -> list[Event]:
    conv = sample["conversation"]
    speakers = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
    events = []
    n = 1
    while f"session_{n}" in conv:
        start = _session_time(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = turn.get("text") or ""
            if turn.get("blip_caption"):
                text = f"{text} [shared image: {turn['blip_caption']}]".strip()
            events.append(Event(
                native_id=f"{sample['sample_id']}:{turn['dia_id']}",
                conversation_id=sample["sample_id"], role=speakers.get(turn["speaker"], "other"),
                text=f"{turn['speaker']}: {text}", raw=turn,
                occurred_at=start + timedelta(seconds=30 * i),
            ))
        n += 1
    return events


def normalise_evidence(evidence: Sequence[str], valid: set[str]) -> list[str]:
    """BENCHMARKS.md: split on ';', ',' and whitespace, strip a trailing '.', drop ids that
    are not in the conversation."""
    found: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            part = part.strip().rstrip(".")
            if part in valid and part not in found:
                found.append(part)
    return found


def load_locomo(audited: bool = False) -> list[dict]:
    data = json.loads((LOCOMO / "locomo10.json").read_text())
    fixes = {}
    if audited:
        for item in json.loads((LOCOMO / "audit" / "errors.json").read_text()):
            if item.get("correct_evidence") is not None:
                fixes[item["question_id"]] = item["correct_evidence"]
    for s_index, sample in enumerate(data):
        conv = sample["conversation"]
        valid = {t["dia_id"] for key, turns in conv.items()
                 if re.fullmatch(r"session_\d+", key) for t in turns}
        for q_index, qa in enumerate(sample["qa"]):
            evidence = fixes.get(f"locomo_{s_index}_qa{q_index}", qa.get("evidence", []))
            qa["gold"] = normalise_evidence(evidence, valid)
    return data


def import_locomo(db: Database, data: list[dict]) -> dict[str, tuple[int, dict[int, str]]]:
    """sample_id -> (conversation id, {event id: dia_id})."""
    out = {}
    with db.connect() as conn:
        for sample in data:
            rows = [event_row("locomo", e) for e in locomo_events(sample)]
            with conn.transaction():
                event_store.write_events(conn, rows)
            stored = conn.execute(
                "SELECT id, native_id, conversation_id FROM events WHERE source = 'locomo' "
                "AND native_id LIKE %s", (sample["sample_id"] + ":%",)).fetchall()
            out[sample["sample_id"]] = (stored[0][2],
                                        {i: native.split(":", 1)[1] for i, native, _ in stored})
        conn.execute("ANALYZE events")
    return out


class _Precomputed:
    """Query vectors embedded in one batch up front, served by text."""

    def __init__(self, name: str, dims: int, vectors: dict[str, np.ndarray]):
        self.name, self.dims, self._vectors = name, dims, vectors

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])


def _score(ranked_dia: list[str], gold: list[str], k: int) -> tuple[float, float, float]:
    if not gold:
        return 1.0, 1.0, 1.0
    top = set(ranked_dia[:k])
    found = sum(1 for g in gold if g in top)
    return found / len(gold), float(found > 0), float(found == len(gold))


def evaluate(db: Database, data: list[dict], ids: dict, mode: str, embedder,
             fusion: str | None = None, golds: dict[str, list[dict]] | None = None) -> dict:
    """Recall table for one retriever: {gold: {categories: {metric@k: value}}}."""
    per_question = []  # (sample, qa index, ranked dia ids)
    for sample in data:
        conv_id, dia_of = ids[sample["sample_id"]]
        filters = service.SearchFilters(conversation_id=conv_id)
        for q_index, qa in enumerate(sample["qa"]):
            hits = service.search(db, qa["question"], k=max(KS), filters=filters, mode=mode,
                                  embedder=embedder, fusion=fusion)
            per_question.append((sample["sample_id"], q_index, [dia_of[h.event_id] for h in hits]))
    result = {}
    for gold_name, gold_data in (golds or {"original": data}).items():
        by_sample = {s["sample_id"]: s for s in gold_data}
        table = {}
        for label, cats in (("1-5", {1, 2, 3, 4, 5}), ("1-4", {1, 2, 3, 4})):
            rows = [(ranked, by_sample[sid]["qa"][qi]) for sid, qi, ranked in per_question]
            rows = [(ranked, qa) for ranked, qa in rows if qa["category"] in cats]
            metrics = {}
            for k in KS:
                scores = [_score(ranked, qa["gold"], k) for ranked, qa in rows]
                metrics[f"recall@{k}"] = round(100 * statistics.fmean(s[0] for s in scores), 1)
                metrics[f"any@{k}"] = round(100 * statistics.fmean(s[1] for s in scores), 1)
                metrics[f"all@{k}"] = round(100 * statistics.fmean(s[2] for s in scores), 1)
            metrics["questions"] = len(rows)
            table[label] = metrics
        result[gold_name] = table
    return result


# LoCoMo variants: how each turn is embedded (the query is always embedded by the plain
# model). "ctx2" is what the default embedder (`local-ctx2`) stores.
VARIANTS = {"plain": 0, "ctx1": 1, "ctx2": 2, "ctx3": 3}


def run_locomo(admin_url: str, log: Log, variants: Sequence[str] = ("plain", "ctx2"),
               weights: Sequence[float] | None = None, rrf: bool = True) -> list[dict]:
    """Keyword-only, then per variant: dense-only, hybrid RRF (when `rrf`) and hybrid
    weighted at each of `weights` (default: the shipped DENSE_WEIGHT)."""
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown LoCoMo variants {unknown}; choose from {sorted(VARIANTS)}")
    weights = tuple(weights or (service.DENSE_WEIGHT,))
    data = load_locomo()
    golds = {"original": data, "audited": load_locomo(audited=True)}
    base = emb.get_embedder("local")
    results = []
    with _scratch_db(admin_url) as db:
        ids = import_locomo(db, data)
        questions = sorted({qa["question"] for s in data for qa in s["qa"]})
        began = time.perf_counter()
        qvecs = dict(zip(questions, base.embed(questions), strict=True))
        log(f"  {len(questions)} questions embedded in {time.perf_counter() - began:.1f} s")
        row = evaluate(db, data, ids, "keyword", None, golds=golds)
        results.append({"retriever": "keyword (FTS, IDF-weighted OR query)", **row})
        log(f"  keyword: {_recalls(row)}")
        for variant in variants:
            turns = VARIANTS[variant]
            embedder = base if turns == 0 else emb.WithContext(base, turns)
            counts = emb.embed_missing(db, embedder)
            log(f"  {embedder.name}: embedded {counts['events']} events "
                f"in {counts['seconds']:.0f} s")
            query = _Precomputed(embedder.name, embedder.dims, qvecs)
            row = evaluate(db, data, ids, "dense", query, golds=golds)
            results.append({"retriever": f"dense {embedder.name}", **row})
            log(f"  dense {embedder.name}: {_recalls(row)}")
            if rrf:
                row = evaluate(db, data, ids, "hybrid", query, fusion="rrf", golds=golds)
                results.append({"retriever": f"hybrid RRF(k={service.RRF_K}) {embedder.name}",
                                **row})
                log(f"  hybrid rrf {embedder.name}: {_recalls(row)}")
            default_weight = service.DENSE_WEIGHT
            try:
                for w in weights:
                    service.DENSE_WEIGHT = w
                    row = evaluate(db, data, ids, "hybrid", query, fusion="weighted",
                                   golds=golds)
                    results.append({"retriever": f"hybrid weighted w={w} {embedder.name}",
                                    **row})
                    log(f"  hybrid w={w} {embedder.name}: {_recalls(row)}")
            finally:
                service.DENSE_WEIGHT = default_weight
    return results


def _recalls(row: dict) -> str:
    m = row["original"]["1-5"]
    return " ".join(f"@{k} {m[f'recall@{k}']}" for k in KS)


def format_locomo(results: list[dict], gold: str = "original", cats: str = "1-5") -> str:
    lines = [f"LoCoMo turn-level evidence recall (%), gold={gold}, categories {cats}",
             "| retriever | @5 | @10 | @25 | @50 | any@10 | all@10 |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        m = r[gold][cats]
        lines.append(f"| {r['retriever']} | " + " | ".join(
            str(m[f"recall@{k}"]) for k in KS) + f" | {m['any@10']} | {m['all@10']} |")
    return "\n".join(lines)


# --- latency -----------------------------------------------------------------------------


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 2)

    return {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "n": len(ordered)}


def build_scale_db(db: Database, n_events: int, dims: int, model: str, log: Log,
                   seed: int = 7) -> dict:
    """n_events synthetic events (1,000 per conversation, 5 sources, a year of days) and a
    random unit vector each; the HNSW index built after loading, in bulk."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    turns = [e.text for sample in load_locomo() for e in locomo_events(sample)]
    sources = ["claude-code", "claude-ai", "chatgpt", "gemini", "notes"]
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    began = time.perf_counter()
    batch = 20_000
    with db.connect() as conn:
        for offset in range(0, n_events, batch):
            rows = []
            for i in range(offset, min(n_events, offset + batch)):
                text = rng.choice(turns)
                if i % 50 == 0:  # exact tokens worth finding
                    text += f" error E{i:06d} at /srv/app/{uuid.UUID(int=rng.getrandbits(128))}"
                rows.append(event_row(sources[i % 5], Event(
                    native_id=f"s{i}", conversation_id=f"c{i // 1000}",
                    role="user" if i % 2 else "assistant", text=text, raw={"i": i},
                    occurred_at=start + timedelta(seconds=i * 365 * 86400 // n_events),
                )))
            with conn.transaction():
                event_store.write_events(conn, rows)
        load_s = time.perf_counter() - began
        ids = [r[0] for r in conn.execute("SELECT id FROM events ORDER BY id")]
        began = time.perf_counter()
        for offset in range(0, len(ids), batch):
            chunk = ids[offset:offset + batch]
            vectors = nrng.standard_normal((len(chunk), dims)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            rows = [(embedding_store.ChunkRow(i, 0, 0, 1, f"r{i}"), v)
                    for i, v in zip(chunk, vectors, strict=True)]
            with conn.transaction():
                embedding_store.write_embeddings(conn, model, dims, rows, [])
        vectors_s = time.perf_counter() - began
        began = time.perf_counter()
        # pgvector 0.6 builds HNSW in parallel, and far faster while the whole graph fits in
        # maintenance_work_mem (1M x 384 dims needs ~2.5 GB; 1 GB made the build crawl).
        workers = max(0, (os.cpu_count() or 1) - 1)
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        embedding_store.ensure_model(conn, model, dims, maintenance_work_mem="4GB")
        index_s = time.perf_counter() - began
        conn.execute("VACUUM ANALYZE events")
        conn.execute("VACUUM ANALYZE event_embeddings")
        sizes = conn.execute(
            "SELECT pg_total_relation_size('events'), pg_total_relation_size('event_embeddings'),"
            " pg_relation_size(%s)", (embedding_store.index_name(model),)).fetchone()
    log(f"  {n_events:,} events loaded in {load_s:.0f} s; vectors {vectors_s:.0f} s; "
        f"HNSW build {index_s:.0f} s")
    return {"events": n_events, "load_seconds": round(load_s, 1),
            "vectors_seconds": round(vectors_s, 1), "hnsw_build_seconds": round(index_s, 1),
            "events_bytes": sizes[0], "embeddings_bytes": sizes[1], "hnsw_bytes": sizes[2]}


# Queries run before timing: the first searches after a build read the HNSW graph and the
# tables into memory (at 1M events the unfiltered p95 was 246 ms cold, ~45 ms warm).
WARMUP_QUERIES = 50


def _latency_queries(queries: int, log: Log) -> tuple:
    base = emb.get_embedder("local")
    data = load_locomo()
    texts = [qa["question"] for s in data for qa in s["qa"]][:queries]
    began = time.perf_counter()
    qvecs = base.embed(texts)
    single = []
    for t in texts[:50]:
        t0 = time.perf_counter()
        base.embed([t])
        single.append(1000 * (time.perf_counter() - t0))
    log(f"  query embedding (batch) {1000 * (time.perf_counter() - began) / len(texts):.1f} "
        f"ms/query; single-query p50 {statistics.median(single):.1f} ms")
    embedder = _Precomputed(base.name, base.dims, dict(zip(texts, qvecs, strict=True)))
    return base, embedder, texts, round(statistics.median(single), 1)


def run_latency(admin_url: str, n_events: int, log: Log, queries: int = 200) -> dict:
    base, embedder, texts, single_p50 = _latency_queries(queries, log)
    with _scratch_db(admin_url) as db:
        build = build_scale_db(db, n_events, base.dims, base.name, log)
        measured = measure_latency(db, embedder, texts, log)
    return {"build": build, **measured, "query_embedding_ms_p50": single_p50}


def run_latency_existing(url: str, log: Log, queries: int = 200) -> dict:
    """Measure on a database an earlier run built (build_scale_db), without rebuilding it:
    at 1M events the HNSW build alone takes ~30 minutes here."""
    base, embedder, texts, single_p50 = _latency_queries(queries, log)
    db = Database(url=url)
    with db.connect() as conn:
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        sizes = conn.execute(
            "SELECT pg_total_relation_size('events'), pg_total_relation_size('event_embeddings'),"
            " pg_relation_size(%s)", (embedding_store.index_name(base.name),)).fetchone()
    log(f"  existing database: {events:,} events")
    build = {"events": events, "reused_database": True, "events_bytes": sizes[0],
             "embeddings_bytes": sizes[1], "hnsw_bytes": sizes[2]}
    return {"build": build, **measure_latency(db, embedder, texts, log),
            "query_embedding_ms_p50": single_p50}


def measure_latency(db: Database, embedder, texts: Sequence[str], log: Log) -> dict:
    """Hybrid k=10 percentiles per filter and per dense path (auto, forced exact, forced
    HNSW), after WARMUP_QUERIES untimed searches."""
    with db.connect() as conn:
        conv = conn.execute("SELECT conversation_id FROM events WHERE native_id = 's5'"
                            ).fetchone()[0]
    week_start = datetime(2025, 6, 2, tzinfo=timezone.utc)
    cases = {
        "none": service.SearchFilters(),
        "conversation (0.1%)": service.SearchFilters(conversation_id=conv),
        "one week (1.9%)": service.SearchFilters(since=week_start,
                                                  until=week_start + timedelta(days=7)),
        "source (20%)": service.SearchFilters(source="chatgpt"),
        "role (50%)": service.SearchFilters(role="user"),
    }
    for text in texts[:WARMUP_QUERIES]:
        service.search(db, text, k=10, mode="hybrid", embedder=embedder)
    table = {}
    for name, filters in cases.items():
        for strategy in ("auto", "exact", "hnsw") if name != "none" else ("auto",):
            saved = service.EXACT_MAX_ROWS
            service.EXACT_MAX_ROWS = {"auto": saved, "exact": 10**12, "hnsw": -1}[strategy]
            try:
                if strategy == "exact" and name.startswith(("role", "source")):
                    continue  # 20-50% of the table: exact is the slow path by design
                times, short = [], 0
                for text in texts:
                    t0 = time.perf_counter()
                    hits = service.search(db, text, k=10, filters=filters, mode="hybrid",
                                          embedder=embedder)
                    times.append(1000 * (time.perf_counter() - t0))
                    short += len(hits) < 10
            finally:
                service.EXACT_MAX_ROWS = saved
            key = f"{name} [{strategy}]"
            table[key] = {**_percentiles(times), "queries_with_fewer_than_k": short}
            log(f"  {key}: {table[key]}")
    return {"warmup_queries": WARMUP_QUERIES, "exact_max_rows": service.EXACT_MAX_ROWS,
            "hybrid_ms": table, "week_read": _week_read(db, week_start)}


def _week_read(db: Database, start: datetime) -> dict:
    """Read one week of events as a summary would: count blocks of event_embeddings read."""
    with db.connect() as conn:
        before_emb = event_search.table_io_blocks(conn, "event_embeddings")
        before_ev = event_search.table_io_blocks(conn, "events")
        rows = 0
        text_bytes = 0
        for page in event_reads.events_in_window(conn, start, start + timedelta(days=7)):
            rows += len(page)
            text_bytes += sum(len(str(r).encode()) for r in page)
        after_emb = event_search.table_io_blocks(conn, "event_embeddings")
        after_ev = event_search.table_io_blocks(conn, "events")
    return {"events": rows, "bytes_returned": text_bytes,
            "events_blocks": after_ev - before_ev,
            "event_embeddings_blocks": after_emb - before_emb}


# --- throughput --------------------------------------------------------------------------


def run_throughput(log: Log) -> dict:
    # The local model now runs in numpy; embedding_speed compares it with the torch
    # reference on the same texts.
    from memory_platform.bench import embedding_speed

    turns = [e.text for sample in load_locomo() for e in locomo_events(sample)]
    return embedding_speed.run(turns, log=log)


# --- driver ------------------------------------------------------------------------------


class _scratch_db:
    def __init__(self, admin_url: str):
        self.admin_url = admin_url
        self.name = f"bench_search_{uuid.uuid4().hex[:8]}"

    def __enter__(self) -> Database:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
        return Database(url=make_conninfo(self.admin_url, dbname=self.name))

    def __exit__(self, *exc) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def run(out: Path, *, parts: Sequence[str] = ("locomo", "latency", "throughput"),
        sizes: Sequence[int] = (100_000,), log: Log = print,
        variants: Sequence[str] = ("plain", "ctx2"), weights: Sequence[float] | None = None,
        rrf: bool = True, existing_db: str | None = None) -> dict:
    """Run the chosen parts, print tables, write JSON to `out`. `variants`, `weights` and
    `rrf` choose the LoCoMo retrievers (see run_locomo); `existing_db` (a conninfo) measures
    latency on a database an earlier run built instead of building one per size."""
    from memory_platform.bench.ingest import _admin_url

    report: dict = {
        "benchmark": "search",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "embedding_model": "all-MiniLM-L6-v2 (numpy forward pass, query/minilm.py, CPU)",
        "llm_used": False,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    with tempfile.TemporaryDirectory(prefix="mp-bench-search-") as tmp:
        admin_url = _admin_url(Path(tmp))
        if "throughput" in parts:
            log("embedding throughput:")
            report["throughput"] = run_throughput(log)
        if "locomo" in parts:
            log("LoCoMo:")
            results = run_locomo(admin_url, log, variants, weights, rrf)
            report["locomo"] = {"data": "locomo10.json (10 conversations, 1,986 questions)",
                                "granularity": "turn", "results": results}
            for gold in ("original", "audited"):
                for cats in ("1-5", "1-4"):
                    log("\n" + format_locomo(results, gold, cats))
        if "latency" in parts and existing_db:
            log("latency on an existing database:")
            report["latency"] = [run_latency_existing(existing_db, log)]
        elif "latency" in parts:
            report["latency"] = []
            for size in sizes:
                log(f"latency at {size:,} events:")
                report["latency"].append(run_latency(admin_url, size, log))
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"\nwritten to {out}")
    return report


if __name__ == "__main__":
    # The options the CLI's `bench search` does not expose (a LoCoMo-only sweep):
    #   python -m memory_platform.bench.search --parts locomo --variants ctx2 --weights 0.7
    import argparse

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(prog="python -m memory_platform.bench.search")
    parser.add_argument("--parts", default="locomo,latency,throughput")
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--variants", default="plain,ctx2", help=f"of {sorted(VARIANTS)}")
    parser.add_argument("--weights", default="", help="dense weights, e.g. 0.6,0.7")
    parser.add_argument("--no-rrf", action="store_true")
    parser.add_argument("--existing-db", default=None,
                        help="latency: measure on this database (built by build_scale_db)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/search.json"))
    args = parser.parse_args()
    run(args.out, parts=[p for p in args.parts.split(",") if p],
        sizes=[int(s.replace("_", "")) for s in args.sizes.split(",") if s],
        variants=[v for v in args.variants.split(",") if v],
        weights=[float(w) for w in args.weights.split(",") if w] or None,
        rrf=not args.no_rrf, existing_db=args.existing_db)
