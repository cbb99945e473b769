"""Search benchmarks: (a) retrieval quality on LoCoMo (`locomo`) and on one developer's real
Claude Code transcripts (`devsearch`, bench/devsearch.py), (b) hybrid-search latency at scale
(`search_latency`), (c) embedding throughput of the local model (here, on this machine's
cores). `run` is `memory-platform bench search`; `python -m` adds the LoCoMo sweep
options the CLI does not expose.
"""

import json
import os
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.bench.common import Log, load_average, machine, server_url
from memory_platform.bench.locomo import (
    VARIANTS,
    format_locomo,
    load_locomo,
    locomo_events,
    run_locomo,
)
from memory_platform.bench.search_latency import run_latency, run_latency_existing


def run_throughput(log: Log) -> dict:
    # The local model now runs in numpy; embedding_speed compares it with the torch
    # reference on the same texts.
    from memory_platform.bench import embedding_speed

    turns = [e.text for sample in load_locomo() for e in locomo_events(sample)]
    return embedding_speed.run(turns, log=log)


def run(out: Path, *, parts: Sequence[str] = ("locomo", "latency", "throughput"),
        sizes: Sequence[int] = (100_000,), log: Log = print,
        variants: Sequence[str] = ("plain", "ctx2"), weights: Sequence[float] | None = None,
        rrf: bool = True, existing_db: str | None = None) -> dict:
    """Run the chosen parts, print tables, write JSON to `out`. `variants`, `weights` and
    `rrf` choose the LoCoMo retrievers (see run_locomo); `existing_db` (a conninfo) measures
    latency on a database an earlier run built instead of building one per size."""
    report: dict = {
        "benchmark": "search",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "embedding_model": "all-MiniLM-L6-v2 (numpy forward pass, query/minilm.py, CPU)",
        "llm_used": False,
        "load_average_at_start": load_average(),
    }
    with tempfile.TemporaryDirectory(prefix="mp-bench-search-") as tmp:
        admin_url = server_url(Path(tmp))
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
        if "devsearch" in parts:
            from memory_platform.bench.devsearch import run_devsearch

            log("developer transcripts:")
            report["devsearch"] = run_devsearch(admin_url, log)
        if "latency" in parts and existing_db:
            log("latency on an existing database:")
            report["latency"] = [run_latency_existing(existing_db, log)]
        elif "latency" in parts:
            report["latency"] = []
            for size in sizes:
                log(f"latency at {size:,} events:")
                report["latency"].append(run_latency(admin_url, size, log))
    report["load_average_at_end"] = load_average()
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
