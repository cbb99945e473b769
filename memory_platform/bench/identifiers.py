"""Exact-identifier search at scale (issue 12): is an event that holds a rare identifier
(an error code, a ticket id, a hash, a UUID, a path, a function name) in the top 3 of the
default hybrid search, queried alone or inside a sentence?

The store: `events` events whose text is recycled from LoCoMo's turns (read in place, never
copied), IDENTIFIERS_PER_CATEGORY events per category holding one identifier each inside an
ordinary turn ("... see E0502"), and near misses: for each identifier NEAR_MISSES short
events with a look-alike (E0503 for E0502, the same ticket prefix, a hash one digit off), the
dense neighbours that buried the true event before. Vectors are real all-MiniLM-L6-v2
vectors: one per distinct LoCoMo turn, reused by the events that recycle it, and one per
identifier or near-miss event. Queries are embedded for real.

Reported per category and overall: hit@1, hit@3, hit@10 and MRR@10 for hybrid search with
and without the identifier rule (`IDENTIFIER_MAX_EVENTS` = 0 turns it off), and keyword-only.

    python -m memory_platform.bench.identifiers --events 100000
"""

import json
import os
import platform
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memory_platform.adapters.base import Event
from memory_platform.bench.common import scratch_db, server_url
from memory_platform.bench.locomo import PrecomputedEmbedder, load_locomo, locomo_events
from memory_platform.ingest.rows import event_row
from memory_platform.query import embeddings as emb
from memory_platform.query import search as service
from memory_platform.store import embeddings as embedding_store
from memory_platform.store import events as event_store

Log = Callable[[str], None]
IDENTIFIERS_PER_CATEGORY = 60
NEAR_MISSES = 3
SENTENCES = [
    "what did we find out about {id}?",
    "why does {id} keep coming back after the deploy",
    "{id} again, how did we fix it last time",
]
HOLDERS = ["{turn} (see {id})", "{turn} The log said {id}.", "{id}: {turn}",
           "{turn} Ref {id} for details."]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _one_off(rng: random.Random, ident: str) -> str:
    """The same identifier with one digit or hex letter changed."""
    spots = [i for i, c in enumerate(ident) if c in "0123456789abcdef"]
    i = rng.choice(spots)
    choices = [c for c in ("0123456789" if ident[i].isdigit() else "abcdef") if c != ident[i]]
    return ident[:i] + rng.choice(choices) + ident[i + 1:]


WORDS = ["parse", "member", "token", "buffer", "cache", "index", "loader", "session",
         "export", "import", "user", "record", "batch", "queue", "stream"]


def make_identifiers(rng: random.Random) -> dict[str, list[tuple[str, list[str]]]]:
    """{category: [(identifier, near misses)]}, every identifier unique."""
    words = WORDS
    makers = {
        "error code": lambda: f"E{rng.randint(0, 9999):04d}",
        "oracle/sql code": lambda: f"ORA-{rng.randint(0, 99999):05d}",
        "ticket id": lambda: f"{rng.choice(['PROJ', 'OPS', 'TICKET', 'BUG'])}-{rng.randint(100, 9999)}",
        "git hash": lambda: _hex(rng, rng.choice([7, 8, 12, 40])),
        "uuid": lambda: str(uuid.UUID(int=rng.getrandbits(128))),
        "path": lambda: f"src/{rng.choice(words)}/{rng.choice(words)}_{rng.choice(words)}"
                        f"{rng.randint(0, 99)}.py",
        "snake_case": lambda: f"{rng.choice(words)}_{rng.choice(words)}_{rng.choice(words)}"
                              f"_v{rng.randint(2, 99)}",
        "camelCase": lambda: f"get{rng.choice(words).title()}{rng.choice(words).title()}"
                             f"By{rng.choice(['Id', 'Name', 'Key'])}{rng.randint(2, 99)}",
    }
    seen: set[str] = set()
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for category, make in makers.items():
        items = []
        while len(items) < IDENTIFIERS_PER_CATEGORY:
            ident = make()
            if ident in seen:
                continue
            misses = []
            while len(misses) < NEAR_MISSES:
                miss = _one_off(rng, ident)
                if miss not in seen and miss != ident and miss not in misses:
                    misses.append(miss)
            seen.update([ident, *misses])
            items.append((ident, misses))
        out[category] = items
    return out


def build(db, n_events: int, log: Log, seed: int = 12) -> tuple[dict, dict]:
    """Load the store; returns ({category: [(identifier, event id)]}, timings)."""
    rng = random.Random(seed)
    turns = sorted({e.text for s in load_locomo() for e in locomo_events(s)})
    idents = make_identifiers(rng)
    special: list[tuple[str, str | None, str | None]] = []  # (text, identifier, category)
    for category, items in idents.items():
        for ident, misses in items:
            turn = rng.choice(turns)
            special.append((rng.choice(HOLDERS).format(turn=turn, id=ident), ident, category))
            for miss in misses:
                special.append((rng.choice(["{id}", "error {id}", "see {id}", "{id} again"])
                                .format(id=miss), None, None))
    base = emb.get_embedder("local")
    began = time.perf_counter()
    turn_vectors = dict(zip(turns, base.embed(turns), strict=True))
    special_vectors = base.embed([t for t, _, _ in special])
    embed_s = time.perf_counter() - began
    log(f"  {len(turns):,} turns and {len(special):,} identifier/near-miss texts embedded "
        f"in {embed_s:.0f} s")
    positions = set(rng.sample(range(n_events), len(special)))
    special_iter = iter(enumerate(special))
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    rows, natives, vectors, holders = [], [], [], {}
    for i in range(n_events):
        if i in positions:
            j, (text, ident, category) = next(special_iter)
            vector = special_vectors[j]
            if ident:
                holders[f"s{i}"] = (category, ident)
        else:
            text = rng.choice(turns)
            vector = turn_vectors[text]
        rows.append(event_row("claude-code", Event(
            native_id=f"s{i}", conversation_id=f"c{i // 500}", role="user" if i % 2 else
            "assistant", text=text, raw={"i": i},
            occurred_at=start + timedelta(seconds=i * 365 * 86400 // n_events))))
        natives.append(f"s{i}")
        vectors.append(vector)
    began = time.perf_counter()
    with db.connect() as conn:
        for offset in range(0, len(rows), 20_000):
            with conn.transaction():
                event_store.write_events(conn, rows[offset:offset + 20_000])
        ids = dict(conn.execute("SELECT native_id, id FROM events").fetchall())
        for offset in range(0, len(rows), 20_000):
            batch = [(embedding_store.ChunkRow(ids[natives[k]], 0, 0, 1, f"b{k}"), vectors[k])
                     for k in range(offset, min(len(rows), offset + 20_000))]
            with conn.transaction():
                embedding_store.write_embeddings(conn, base.name, base.dims, batch, [])
        workers = max(0, (os.cpu_count() or 1) - 1)
        conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
        embedding_store.ensure_model(conn, base.name, base.dims, maintenance_work_mem="1GB")
        conn.execute("VACUUM ANALYZE events")
        conn.execute("VACUUM ANALYZE event_embeddings")
    load_s = time.perf_counter() - began
    log(f"  {n_events:,} events and vectors loaded, HNSW built, in {load_s:.0f} s")
    targets: dict[str, list[tuple[str, int]]] = {}
    for native, (category, ident) in holders.items():
        targets.setdefault(category, []).append((ident, ids[native]))
    return targets, {"embed_seconds": round(embed_s, 1), "load_seconds": round(load_s, 1),
                     "identifier_events": sum(len(v) for v in targets.values()),
                     "near_miss_events": len(special) - len(holders)}


def evaluate(db, targets: dict, queries: dict, embedder, log: Log) -> dict:
    """hit@1/3/10 and MRR@10 per category and query shape, for three retrievers."""
    retrievers = {
        "hybrid (default)": {"mode": "hybrid", "rule": True},
        "hybrid without the identifier rule": {"mode": "hybrid", "rule": False},
        "keyword only": {"mode": "keyword", "rule": True},
    }
    saved = service.IDENTIFIER_MAX_EVENTS
    results: dict = {}
    for name, how in retrievers.items():
        service.IDENTIFIER_MAX_EVENTS = saved if how["rule"] else 0
        latencies = []
        try:
            table: dict = {}
            for category, items in targets.items():
                for shape in ("alone", "in a sentence"):
                    ranks = []
                    for ident, event_id in items:
                        query = queries[(ident, shape)]
                        began = time.perf_counter()
                        hits = service.search(db, query, k=10, mode=how["mode"],
                                              embedder=embedder)
                        latencies.append(1000 * (time.perf_counter() - began))
                        ranked = [h.event_id for h in hits]
                        ranks.append(ranked.index(event_id) + 1 if event_id in ranked else None)
                    table[f"{category} / {shape}"] = _metrics(ranks)
            everything = [r for r in table.values()]
            table["all"] = {m: round(statistics.fmean(t[m] for t in everything), 1)
                            for m in ("hit@1", "hit@3", "hit@10", "mrr@10")}
            table["all"]["queries"] = sum(t["queries"] for t in everything)
            table["latency_ms_p50"] = round(statistics.median(latencies), 1)
        finally:
            service.IDENTIFIER_MAX_EVENTS = saved
        results[name] = table
        log(f"  {name}: {table['all']} p50 {table['latency_ms_p50']} ms")
    return results


def _metrics(ranks: list[int | None]) -> dict:
    n = len(ranks)
    return {"hit@1": round(100 * sum(r == 1 for r in ranks) / n, 1),
            "hit@3": round(100 * sum(r is not None and r <= 3 for r in ranks) / n, 1),
            "hit@10": round(100 * sum(r is not None for r in ranks) / n, 1),
            "mrr@10": round(100 * statistics.fmean(1 / r if r else 0.0 for r in ranks), 1),
            "queries": n}


def run(out: Path, *, events: int = 100_000, log: Log = print) -> dict:
    report: dict = {
        "benchmark": "exact identifiers",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "events": events, "identifiers_per_category": IDENTIFIERS_PER_CATEGORY,
        "near_misses_per_identifier": NEAR_MISSES,
        "identifier_max_events": service.IDENTIFIER_MAX_EVENTS,
    }
    with tempfile.TemporaryDirectory(prefix="mp-bench-ident-") as tmp:
        with scratch_db(server_url(Path(tmp)), "identifiers") as db:
            targets, report["build"] = build(db, events, log)
            rng = random.Random(5)
            queries = {}
            for items in targets.values():
                for ident, _ in items:
                    queries[(ident, "alone")] = ident
                    queries[(ident, "in a sentence")] = rng.choice(SENTENCES).format(id=ident)
            base = emb.get_embedder("local")
            texts = sorted(set(queries.values()))
            embedder = PrecomputedEmbedder(base.name, base.dims,
                                    dict(zip(texts, base.embed(texts), strict=True)))
            report["results"] = evaluate(db, targets, queries, embedder, log)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    log(format_table(report["results"]))
    log(f"written to {out}")
    return report


def format_table(results: dict) -> str:
    lines = ["| retriever | hit@1 | hit@3 | hit@10 | MRR@10 | p50 ms |",
             "|---|---|---|---|---|---|"]
    for name, table in results.items():
        a = table["all"]
        lines.append(f"| {name} | {a['hit@1']} | {a['hit@3']} | {a['hit@10']} | "
                     f"{a['mrr@10']} | {table['latency_ms_p50']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memory_platform.bench.identifiers")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--out", type=Path,
                        default=Path("benchmarks/results/search-identifiers.json"))
    args = parser.parse_args()
    run(args.out, events=args.events)
