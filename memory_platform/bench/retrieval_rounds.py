"""Second round of the retrieval experiments (issue 23): LoCoMo through MCP (the `mcp`
layout of bench/retrieval_corpus.py), the product's search with module constants of
query/search.py and query/rerank.py changed one at a time, and the session date in the
embedded text as a vector space of its own.

`python -m memory_platform.bench.retrieval_rounds [--only NAME,...] [--samples N]` prints
each variant's turn-evidence recall (original gold, categories 1-4) and writes
benchmarks/results/search-retrieval-round2.json. Vectors and search runs are cached in
`.bench-cache/` (bench/token_cache.py), so a second run re-scores in minutes.
"""

import argparse
import json
import os
import time
from datetime import datetime, timezone

from memory_platform.bench import retrieval_corpus as rc
from memory_platform.bench import retrieval_variants as rv
from memory_platform.bench.common import REPO
from memory_platform.store import embeddings as embedding_store

DATED = "all-MiniLM-L6-v2+ctx2+date"

# (name, vector space, knobs): knobs as in retrieval_variants.run_search
VARIANTS: list[tuple[str, str, dict]] = [
    ("shipped", rc.CTX2, {}),
    ("dense weight 0.6", rc.CTX2, {"DENSE_WEIGHT": 0.6}),
    ("dense weight 0.8", rc.CTX2, {"DENSE_WEIGHT": 0.8}),
    ("pools 100", rc.CTX2, {"POOL_MIN": 100}),
    ("pools 30", rc.CTX2, {"POOL_MIN": 30}),
    ("neighbour share 0.8", rc.CTX2, {"rerank.NEIGHBOUR_SHARE": 0.8}),
    ("neighbour top 10", rc.CTX2, {"rerank.NEIGHBOUR_TOP": 10}),
    ("short turns <= 48 chars", rc.CTX2, {"rerank.SHORT_TURN_CHARS": 48}),
    ("no duplicate collapse", rc.CTX2, {"COLLAPSE_DUPLICATES": False}),
    ("keyword share over 0.25 x query IDF", rc.CTX2, {"KEYWORD_QUERY_SCALE": 0.25}),
    ("session date in the embedded text", DATED, {}),
]


def dated_input(event: embedding_store.ToEmbed, chunk: str) -> str:
    """The shipped ctx2 input with the turn's date in front: "[8 May 2023] turn\\n\\nctx"."""
    day = event.occurred_at.astimezone(timezone.utc)
    head = f"[{day.day} {day:%B %Y}] {chunk}"
    return f"{head}\n\n{event.context}" if event.context else head


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated variant names")
    parser.add_argument("--samples", type=int, default=0,
                        help="the first N conversations only (exploring; runs not cached)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results"
                                             / "search-retrieval-round2.json"))
    args = parser.parse_args()
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    began = time.perf_counter()
    stores = rc.stores("mcp")
    if args.samples:
        stores = stores[:args.samples]
    rc.embed_ctx2(stores)
    print(f"ctx2 vectors ready {time.perf_counter() - began:.0f}s", flush=True)
    qs = [q for q in rv.questions() if q.sample in {s.label for s in stores}]
    by_label = {s.label: s for s in stores}
    for name, model, knobs in VARIANTS:
        if only and name not in only:
            continue
        if model == DATED:
            rc.embed_inputs(stores, DATED, dated_input)
        t0 = time.perf_counter()
        runs = rv.run_search("mcp", model, knobs, qs)
        if args.samples:  # run_search's cache does not know the subset
            (rc.cache_dir() / "runs" / f"mcp-{model}-{rv._knob_key(knobs)}.json").unlink()
        ranked = {(q.sample, q.index): [h["id"] for h in runs[(q.sample, q.index)]]
                  for q in qs}
        figures = rv.recall(rv.as_dia(by_label, ranked), qs)
        row = {"variant": name + (f" ({args.samples} conversations)" if args.samples
                                  else ""), "model": model, "knobs": knobs, "questions": len(qs),
               "seconds": round(time.perf_counter() - t0, 1),
               "load_average": os.getloadavg()[0], **figures}
        print(json.dumps(row), flush=True)
        _record(args.out, row)


def _record(path: str, row: dict) -> None:
    """Add or replace `row` (by variant name) in the results file, as each one lands."""
    out = {"benchmark": "LoCoMo turn-evidence recall@k, MCP layout, original gold, "
                        "categories 1-4, all-MiniLM-L6-v2, no LLM", "results": []}
    if os.path.exists(path):
        with open(path) as fh:
            out = json.load(fh)
    row["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out["results"] = [r for r in out["results"] if r["variant"] != row["variant"]] + [row]
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
