"""Time to searchable (issue 12): a synthetic history in the real export formats
(`synthetic.generate_history`, seed 11) imported and embedded end to end, the way a first
`up` or `import` + `embed` does it, with where the time goes.

For each size it records: import seconds; whether keyword search finds a rare word of the
newest event right after the import (before any ANALYZE or vector); the default embedder's
backfill: seconds until every conversation turn (FIRST_KINDS) had vectors, seconds for
everything, model seconds vs database seconds, tokens and tokens/s; and the load average at
start and end (the machine's 2 cores are shared).

    python -m memory_platform.bench.searchable --sizes 10000,100000
"""

import json
import os
import platform
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

from memory_platform import synthetic
from memory_platform.bench.common import server_url
from memory_platform.bench.ingest import _targets
from memory_platform.ingest import importer
from memory_platform.query import embeddings as emb
from memory_platform.query import quantized
from memory_platform.query import search as service
from memory_platform.query.backfill import FIRST_KINDS
from memory_platform.store import Database
from memory_platform.store import embeddings as embedding_store

Log = Callable[[str], None]
SEED = 11


class _Timed:
    """The embedder, with its model time and input tokens counted (the interim embedder's
    too: counted in its own _Timed and added to this one's)."""

    def __init__(self, inner: emb.Embedder, parent: "_Timed | None" = None) -> None:
        self.inner = inner
        self.parent = parent
        self.name, self.dims = inner.name, inner.dims
        self.context_turns = getattr(inner, "context_turns", 0)
        self.context_chars = getattr(inner, "context_chars", 0)
        self.approximate = getattr(inner, "approximate", False)  # what the backfill reads
        self.model_seconds = 0.0
        self.inputs = 0
        self.tokens = 0
        self.interim: _Timed | None = None
        self.setup: dict = {}

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return self.inner.chunk(text)

    def interim_embedder(self) -> tuple["_Timed", str]:
        began = time.perf_counter()
        pick = getattr(self.inner, "interim_embedder", None)
        inner, runtime = pick() if pick else (self.inner, "same model")
        self.interim = _Timed(inner, parent=self)
        # building the int8 model file on first use (query/quantized.py) is counted here
        self.interim.setup = {"runtime": runtime, "builds": quantized.builds,
                              "seconds": round(time.perf_counter() - began, 1)}
        return self.interim, runtime

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        began = time.perf_counter()
        vectors = self.inner.embed(texts)
        seconds = time.perf_counter() - began
        model = getattr(getattr(self.inner, "inner", self.inner), "_model", None)
        # the local model: count what it read (truncated at 256)
        tokens = sum(len(ids) for ids in model.token_ids(texts)) if model is not None else 0
        for timed in (self, self.parent) if self.parent else (self,):
            timed.model_seconds += seconds
            timed.inputs += len(texts)
            timed.tokens += tokens
        return vectors


def _interim_figures(interim: _Timed | None) -> dict | None:
    """What the interim vectors cost (part of the model figures above)."""
    if interim is None:
        return None
    return {**interim.setup,
            "model_seconds": round(interim.model_seconds, 1), "model_inputs": interim.inputs,
            "model_tokens": interim.tokens,
            "tokens_per_second": round(interim.tokens / max(interim.model_seconds, 1e-9))}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _keyword_right_after_import(db: Database) -> dict:
    """Search by keyword for the rarest word of the newest message, before any ANALYZE or
    vector: it must be found (the table has no statistics yet)."""
    with db.connect() as conn:
        analyzed = conn.execute(
            "SELECT count(*) FROM pg_stats WHERE tablename = 'events' "
            "AND attname = 'text_search'").fetchone()[0] > 0
        event_id, text = conn.execute(
            "SELECT id, text FROM events WHERE kind = 'message' AND text ~ '\\S' "
            "ORDER BY occurred_at DESC, id DESC LIMIT 1").fetchone()
        words = {w.strip(".,:;!?()[]`'\"") for w in text.split()}
        rarity = {w: conn.execute(
            "SELECT count(*) FROM events WHERE text_search @@ plainto_tsquery('english', %s)",
            (w,)).fetchone()[0] for w in words if len(w) >= 4}
    word = min((n, w) for w, n in rarity.items() if n > 0)[1]
    began = time.perf_counter()
    hits = service.search(db, word, k=10, mode="keyword")
    return {"table_analyzed_before": analyzed, "query": word, "event_id": event_id,
            "found_in_top_10": event_id in [h.event_id for h in hits],
            "seconds": round(time.perf_counter() - began, 3)}


class _TurnsSearchable(Exception):
    """Raised from the backfill's progress callback once every conversation turn has a
    vector (`--turns-only`): the pages written so far are committed."""


def _stop_when_turns_searchable(db: Database, model: str):
    turns = embedding_store.Backlog(kinds=FIRST_KINDS)

    def progress(done: int, total: int) -> None:
        with db.connect() as conn:
            if embedding_store.count_to_embed(conn, model, turns) == 0:
                raise _TurnsSearchable

    return progress


def run_size(events: int, workdir: Path, admin_url: str, log: Log,
             embedder_name: str | None = None, turns_only: bool = False) -> dict:
    root = workdir / f"history-{events}"
    manifest = synthetic.generate_history(root, events, seed=SEED)
    targets = _targets(root)
    name = f"bench_ready_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        db = Database(url=make_conninfo(admin_url, dbname=name))
        with db.connect():
            pass  # migrations outside the timing
        load_start = _load()
        began = time.perf_counter()
        report = importer.import_path(db, None, root, files=targets)
        import_s = time.perf_counter() - began
        log(f"  imported {report.events_new:,} events in {import_s:.1f} s")
        keyword = _keyword_right_after_import(db)
        log(f"  keyword search right after import: {keyword}")
        with db.connect() as conn:
            kinds = dict(conn.execute(
                "SELECT kind = ANY(%s), count(*) FROM events WHERE text ~ '\\S' GROUP BY 1",
                (list(FIRST_KINDS),)).fetchall())
        embedder = _Timed(emb.get_embedder(embedder_name))
        began = time.perf_counter()
        if turns_only:
            try:
                emb.embed_missing(db, embedder,
                                  progress=_stop_when_turns_searchable(db, embedder.name))
            except _TurnsSearchable:
                pass
            embed_s = first_s = time.perf_counter() - began
            counts = {"turns_only": True, "first_page_seconds": None}
        else:
            counts = emb.embed_missing(db, embedder)
            embed_s = time.perf_counter() - began
            first_s = counts["first_kinds_seconds"]
        load_end = _load()
        log(f"  {embedder.name}: conversation turns searchable by meaning after "
            f"{first_s:.0f} s, everything after {embed_s:.0f} s; model {embedder.model_seconds:.0f} s, "
            f"{embedder.tokens / max(embedder.model_seconds, 1e-9):,.0f} tokens/s; load "
            f"{load_start} -> {load_end}")
        log(f"  interim vectors: {_interim_figures(embedder.interim)}")
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(root, ignore_errors=True)
    return {
        "events": manifest["events"], "files": manifest["files"], "seed": SEED,
        "first_kind_events": kinds.get(True, 0), "other_events": kinds.get(False, 0),
        "import_seconds": round(import_s, 1),
        "keyword_right_after_import": keyword,
        "embedder": embedder.name,
        "newest_turns_searchable_seconds": counts["first_page_seconds"],
        "first_kinds_searchable_seconds": round(first_s, 1),
        "import_plus_first_kinds_seconds": round(import_s + first_s, 1),
        "embed_seconds": round(embed_s, 1),
        "import_plus_embed_seconds": round(import_s + embed_s, 1),
        "model_seconds": round(embedder.model_seconds, 1),
        "database_and_chunking_seconds": round(embed_s - embedder.model_seconds, 1),
        "model_inputs": embedder.inputs, "model_tokens": embedder.tokens,
        "tokens_per_second": round(embedder.tokens / max(embedder.model_seconds, 1e-9)),
        "interim": _interim_figures(embedder.interim),
        "counts": counts, "load_average_start": load_start, "load_average_end": load_end,
    }


def run(sizes: Sequence[int], out: Path, log: Log = print,
        embedder_name: str | None = None, turns_only: bool = False) -> dict:
    results = []
    with tempfile.TemporaryDirectory(prefix="mp-bench-ready-") as tmp:
        admin_url = server_url(Path(tmp))
        for size in sizes:
            log(f"{size:,} events:")
            results.append(run_size(size, Path(tmp), admin_url, log, embedder_name,
                                    turns_only=turns_only))
    report = {
        "benchmark": "time to searchable",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "results": results,
        "turns_only": turns_only,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"written to {out}")
    return report


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memory_platform.bench.searchable")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--embedder", default=None, help="default: MEMORY_PLATFORM_EMBEDDER")
    parser.add_argument("--turns-only", action="store_true",
                        help="stop once every conversation turn has a vector (tool traffic "
                             "is left; the figure issue 12 asks for)")
    parser.add_argument("--out", type=Path,
                        default=Path("benchmarks/results/searchable.json"))
    args = parser.parse_args()
    run([int(s.replace("_", "")) for s in args.sizes.split(",") if s], args.out,
        embedder_name=args.embedder, turns_only=args.turns_only)
