"""Can context vectors be composed from per-turn vectors instead of re-encoding each turn
with its two previous turns (issue 12)? LoCoMo recall of hybrid search with:
- `plain`: each turn alone (the `local` model);
- `ctx2`: each turn read with its two previous turns (`local-ctx2`, the default), which
  costs the model about twice the tokens;
- `mix-a-b`: normalize(v(turn) + a * v(previous) + b * v(the one before)), from the plain
  vectors only (no extra model work); `mix-len`: weights by length in characters instead
  (the turn's up to 1,000, each previous turn's up to 300, as ctx2 reads their last 300);
- `plain-int8`: each turn alone through the int8 model of the interim vectors
  (query/quantized.py), to compare with `plain`: what search finds while a big backlog
  still holds interim vectors.

    python -m memory_platform.bench.context_vectors [OUT] [--int8-only]

`--int8-only` computes the `plain-int8` row alone and adds it to OUT's results.
"""

import json
import os
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from memory_platform.bench import locomo as bench
from memory_platform.bench.common import scratch_db, server_url
from memory_platform.query import embeddings as emb
from memory_platform.store import embeddings as embedding_store

Log = Callable[[str], None]
MIXES = {"mix-0.5-0.5": (0.5, 0.5), "mix-0.7-0.4": (0.7, 0.4), "mix-0.3-0.3": (0.3, 0.3),
         "mix-1-1": (1.0, 1.0), "mix-0.5-0.25": (0.5, 0.25), "mix-len": None}


def _compose(vectors: dict[int, np.ndarray], lengths: dict[int, int],
             conversations: dict[int, list[int]], weights: tuple[float, float] | None
             ) -> dict[int, np.ndarray]:
    out = {}
    for events in conversations.values():
        for j, event in enumerate(events):
            if weights is None:  # by characters, as much as ctx2 reads of each
                v = vectors[event] * min(lengths[event], 1000)
                parts = [(events[j - back], min(lengths[events[j - back]], 300))
                         for back in (1, 2) if j - back >= 0]
            else:
                v = vectors[event].copy()
                parts = [(events[j - back], w) for back, w in zip((1, 2), weights, strict=True)
                         if j - back >= 0]
            for previous, w in parts:
                v = v + w * vectors[previous]
            out[event] = v / np.linalg.norm(v)
    return out


class _Renamed:
    """An embedder writing its rows under another model name."""

    def __init__(self, inner: emb.Embedder, name: str) -> None:
        self.inner, self.name, self.dims = inner, name, inner.dims

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return self.inner.chunk(text)

    def embed(self, texts):
        return self.inner.embed(texts)


def _int8_rows(db, data, ids, golds, qvecs, base) -> dict:
    """Plain per-turn vectors from the interim int8 model, searched (hybrid, and dense
    only) with the numpy model's query vectors, as a query meets interim rows."""
    int8, runtime = base.interim_embedder()
    if runtime != "onnxruntime-int8":
        raise RuntimeError(f"the int8 model is unavailable (interim runtime {runtime})")
    embedder = _Renamed(int8, f"{base.name}+int8")
    began = time.perf_counter()
    counts = emb.embed_missing(db, embedder)
    queries = bench.PrecomputedEmbedder(embedder.name, base.dims, qvecs)
    row = bench.evaluate(db, data, ids, "hybrid", queries, golds=golds)
    return {embedder.name: {"embed_seconds": round(time.perf_counter() - began),
                            "model_inputs": counts["embedded"], **row},
            f"{embedder.name} dense": bench.evaluate(db, data, ids, "dense", queries,
                                                     golds=golds)}


def run(out: Path, log: Log = print, int8_only: bool = False) -> dict:
    data = bench.load_locomo()
    golds = {"original": data}
    base = emb.get_embedder("local")
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="mp-bench-ctx-") as tmp:
        with scratch_db(server_url(Path(tmp)), "context_vectors") as db:
            ids = bench.import_locomo(db, data)
            questions = sorted({qa["question"] for s in data for qa in s["qa"]})
            qvecs = dict(zip(questions, base.embed(questions), strict=True))
            results.update(_int8_rows(db, data, ids, golds, qvecs, base))
            log(f"  plain-int8: {bench._recalls(results[f'{base.name}+int8'])}")
            if int8_only:
                return _merge_int8(out, results, log)
            for embedder in (base, emb.WithContext(base, 2)):
                began = time.perf_counter()
                counts = emb.embed_missing(db, embedder)
                row = bench.evaluate(db, data, ids, "hybrid",
                                     bench.PrecomputedEmbedder(embedder.name, base.dims, qvecs),
                                     golds=golds)
                results[embedder.name] = {"embed_seconds": round(time.perf_counter() - began),
                                          "model_inputs": counts["embedded"], **row}
                log(f"  {embedder.name}: {bench._recalls(row)}")
            with db.connect() as conn:
                rows = conn.execute(
                    "SELECT e.id, e.conversation_id, ee.embedding::text FROM events e "
                    "JOIN event_embeddings ee ON ee.event_id = e.id AND ee.model = %s "
                    "AND ee.chunk = 0 ORDER BY e.conversation_id, e.occurred_at, e.id",
                    (base.name,)).fetchall()
                texts = dict(conn.execute("SELECT id, text FROM events").fetchall())
            vectors = {i: np.asarray(json.loads(v), dtype=np.float32) for i, _, v in rows}
            lengths = {i: len(texts[i]) for i in vectors}
            conversations: dict[int, list[int]] = {}
            for event, conversation, _ in rows:
                conversations.setdefault(conversation, []).append(event)
            for name, weights in MIXES.items():
                composed = _compose(vectors, lengths, conversations, weights)
                model = f"{base.name}+{name}"
                with db.connect() as conn:
                    embedding_store.ensure_model(conn, model, base.dims)
                    with conn.transaction():
                        embedding_store.write_embeddings(
                            conn, model, base.dims,
                            [(embedding_store.ChunkRow(i, 0, 0, 1, f"{name}:{i}"), v)
                             for i, v in composed.items()], [])
                row = bench.evaluate(db, data, ids, "hybrid",
                                     bench.PrecomputedEmbedder(model, base.dims, qvecs), golds=golds)
                results[model] = row
                log(f"  {model}: {bench._recalls(row)}")
    report = {"benchmark": "context vectors on LoCoMo (hybrid, weighted fusion)",
              "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
              "results": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"written to {out}")
    return report


def _merge_int8(out: Path, results: dict, log: Log) -> dict:
    report = json.loads(out.read_text()) if out.exists() else {"results": {}}
    report["results"].update(results)
    report["int8_measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["int8_load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"added to {out}")
    return report


if __name__ == "__main__":
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    run(Path(args[0]) if args else Path("benchmarks/results/context-vectors.json"),
        int8_only="--int8-only" in sys.argv)
