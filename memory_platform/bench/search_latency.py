"""Search latency at scale, for the search benchmark.

Synthetic events (text recycled from LoCoMo turns with unique tokens mixed in) with random
unit vectors, the HNSW index built in bulk; p50/p95/p99 of hybrid search with no filter, a
selective filter and broad filters, with the query vector precomputed (the database's share)
and the model's query embedding timed apart.
"""

import os
import random
import statistics
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import numpy as np

from memory_platform.adapters.base import Event
from memory_platform.bench.common import Log, percentiles, scratch_db
from memory_platform.bench.locomo import PrecomputedEmbedder, load_locomo, locomo_events
from memory_platform.ingest.rows import event_row
from memory_platform.query import embeddings as emb
from memory_platform.query import search as service
from memory_platform.store import Database, event_reads, event_search
from memory_platform.store import embeddings as embedding_store
from memory_platform.store import events as event_store


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
    embedder = PrecomputedEmbedder(base.name, base.dims, dict(zip(texts, qvecs, strict=True)))
    return base, embedder, texts, round(statistics.median(single), 1)


def run_latency(admin_url: str, n_events: int, log: Log, queries: int = 200) -> dict:
    base, embedder, texts, single_p50 = _latency_queries(queries, log)
    with scratch_db(admin_url, "search") as db:
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
            table[key] = {**percentiles(times), "queries_with_fewer_than_k": short}
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
