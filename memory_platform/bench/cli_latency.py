"""CLI latency as whole processes (issue 12: `search` took 6.5-8 s, almost all of it
importing torch and sentence-transformers to embed one query).

A home with a synthetic history (imported and embedded with the default embedder) and a few
memories; the embedded PostgreSQL is held by this process, as a running `up` or `serve`
would (a CLI that starts the server itself also pays PostgreSQL's start and stop). Each
command runs as a fresh `memory-platform` process: WARMUP_RUNS untimed (page cache), then
`runs` timed, wall clock from spawn to exit; p50/p95/max, with the load average.

    python -m memory_platform.bench.cli_latency --runs 20
"""

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from memory_platform import synthetic
from memory_platform.bench.ingest import _targets
from memory_platform.ingest import importer
from memory_platform.query import embeddings as emb
from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.store.db import start_embedded
from memory_platform.vault import service as vault
from memory_platform.vault.tokens import Scope

Log = Callable[[str], None]
WARMUP_RUNS = 2
# {i} is the run number: `vault add` must add a new memory each time.
COMMANDS = {
    "search (hybrid, the default)": ["search", "why did the import of the export fail"],
    "search --mode keyword": ["search", "why did the import of the export fail",
                              "--mode", "keyword"],
    "search --json, an identifier": ["search", "E0502", "--json"],
    "vault search": ["vault", "search", "which test framework do I prefer"],
    "vault add": ["vault", "add", "personal", "bench note {i}: the staging port is 54{i:02d}"],
    "embed (nothing new)": ["embed"],
}


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def prepare_home(home: Path, events: int, log: Log) -> None:
    """A home whose database holds a synthetic history with default vectors, and memories."""
    os.environ["MEMORY_PLATFORM_HOME"] = str(home)
    settings = load_settings()
    db = Database.from_settings(settings)
    root = home / "history"
    synthetic.generate_history(root, events, seed=11)
    began = time.perf_counter()
    importer.import_path(db, None, root, files=_targets(root))
    counts = emb.embed_missing(db, emb.get_embedder())
    log(f"  home ready: {events:,} events imported and embedded in "
        f"{time.perf_counter() - began:.0f} s ({counts['events']:,} embedded)")
    for text in ("I prefer pytest over unittest", "The staging database listens on 5433",
                 "Deploys go out on Tuesdays after the review"):
        vault.add(db, Scope.everything(), "personal", text, "user", actor="bench")
    with db.connect() as conn:
        conn.execute("VACUUM ANALYZE")
    db.close()


def time_command(argv: list[str], runs: int, env: dict) -> dict:
    # What the installed `memory-platform` script runs.
    exe = [sys.executable, "-c", "from memory_platform.cli import main; main()"]
    walls = []
    for i in range(WARMUP_RUNS + runs):
        args = [a.format(i=i) for a in argv]
        began = time.perf_counter()
        done = subprocess.run(exe + args, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - began
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {done.returncode}: {done.stderr[-500:]}")
        if i >= WARMUP_RUNS:
            walls.append(wall)
    return {"runs": runs, "p50_s": round(statistics.median(walls), 3),
            "p95_s": round(_percentile(walls, 0.95), 3), "max_s": round(max(walls), 3),
            "min_s": round(min(walls), 3)}


def mcp_first_call(env: dict, runs: int) -> dict:
    """`memory-platform mcp` over stdio through the official client: seconds from spawn to
    the session being ready, then the first `cairn_search` (hybrid: loads the model), then
    a second one; medians over `runs` fresh servers."""
    import asyncio

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-c", "from memory_platform.cli import main; main()",
                                      "mcp"], env=env)

    async def once() -> tuple[float, float, float]:
        began = time.perf_counter()
        async with Client(params, read_timeout_seconds=120) as client:
            ready = time.perf_counter()
            await search(client, "why did the import of the export fail")
            first = time.perf_counter()
            await search(client, "which port does staging use")
            second = time.perf_counter()
        return ready - began, first - ready, second - first

    async def search(client, query: str) -> None:
        result = await client.call_tool("cairn_search", {"query": query, "k": 5})
        if result.is_error:
            raise RuntimeError(f"cairn_search failed: {result.content}")

    samples = [asyncio.run(once()) for _ in range(runs)]
    return {"runs": runs,
            "start_to_ready_s_p50": round(statistics.median(s[0] for s in samples), 3),
            "first_search_s_p50": round(statistics.median(s[1] for s in samples), 3),
            "first_search_s_max": round(max(s[1] for s in samples), 3),
            "second_search_s_p50": round(statistics.median(s[2] for s in samples), 3)}


def run(out: Path, *, runs: int = 20, events: int = 2_000, log: Log = print,
        commands: Sequence[str] | None = None) -> dict:
    chosen = {k: v for k, v in COMMANDS.items() if not commands or k in commands}
    results = {}
    with tempfile.TemporaryDirectory(prefix="mp-bench-cli-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        prepare_home(home, events, log)
        start_embedded(home / "pgdata")  # held until this process exits, like `up`
        env = {**os.environ, "MEMORY_PLATFORM_HOME": str(home),
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        for name, argv in chosen.items():
            load_before = round(os.getloadavg()[0], 2)
            results[name] = {**time_command(argv, runs, env), "load_before": load_before,
                             "load_after": round(os.getloadavg()[0], 2)}
            log(f"  {name}: {results[name]}")
        load_before = round(os.getloadavg()[0], 2)
        results["mcp server, first cairn_search"] = {
            **mcp_first_call(env, max(3, runs // 4)), "load_before": load_before,
            "load_after": round(os.getloadavg()[0], 2)}
        log(f"  mcp: {results['mcp server, first cairn_search']}")
    report = {
        "benchmark": "cli latency (whole processes)",
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "history_events": events, "server": "embedded PostgreSQL held by the bench",
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"written to {out}")
    return report


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m memory_platform.bench.cli_latency")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--events", type=int, default=2_000)
    parser.add_argument("--commands", default="", help=f"comma-separated of {list(COMMANDS)}")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/cli-latency.json"))
    args = parser.parse_args()
    run(args.out, runs=args.runs, events=args.events,
        commands=[c for c in args.commands.split(",") if c])
