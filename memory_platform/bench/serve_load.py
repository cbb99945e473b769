"""`serve` under load: N concurrent clients for D seconds against /search and /vault/search
of a real `memory-platform serve` process, to show what the request hardening (Host,
body-limit and cross-site checks, access rules, pool liveness checks) costs.

The scratch home (an embedded PostgreSQL) is prepared once: a synthetic history of
`events` events imported and embedded with the default event embedder, and `memories`
vault memories in one namespace. Then `serve` is started from each code tree asked for
(`--code label=path`, e.g. `before=/work/main after=.`: the same data, the server's code
from that tree via PYTHONPATH), warmed up, and loaded by `clients` threads, each
alternating the two routes with queries from a fixed list, for `seconds`. Per label and
route: requests/s, p50/p95/max latency, errors (any status but 200, or a failed
connection); the machine's load average before and after each run.

Self-contained on purpose: it needs only the service layer to prepare the data and HTTP
to measure, so it measures any code tree that has a `serve` command.
"""

import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx

Log = Callable[[str], None]
ROUTES = ("/search", "/vault/search")
QUERIES = [
    "why does the build fail", "postgres connection refused", "deploy to staging",
    "rename the crate", "flaky test in CI", "cache invalidation bug", "migration script",
    "what port does the database use", "how do we run the tests", "error E0502",
    "docker compose file", "refactor the parser", "release notes", "memory leak",
    "authentication token expired", "upgrade the dependencies",
]
NAMESPACE = "bench"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prepare(home: Path, events: int, memories: int, log: Log) -> dict:
    """Build the scratch home once (skipped when it is already there)."""
    marker = home / "serve-load.json"
    if marker.exists():
        return json.loads(marker.read_text())
    os.environ["MEMORY_PLATFORM_HOME"] = str(home)
    os.environ.pop("MEMORY_PLATFORM_DATABASE_URL", None)
    from memory_platform.ingest import importer
    from memory_platform.query import embeddings as emb
    from memory_platform.settings import load_settings
    from memory_platform.store import Database
    from memory_platform.synthetic import generate_history
    from memory_platform.vault import service
    from memory_platform.vault.tokens import Scope

    db = Database.from_settings(load_settings())
    began = time.perf_counter()
    manifest = generate_history(home / "history", events, seed=11)
    report = importer.import_path(db, None, home / "history")
    log(f"  imported {report.events_new} events in {time.perf_counter() - began:.0f} s")
    began = time.perf_counter()
    counts = emb.embed_missing(db, emb.get_embedder())
    log(f"  embedded {counts['events']} events in {time.perf_counter() - began:.0f} s")
    vault_embedder = emb.get_embedder("local")
    for i in range(memories):
        service.add(db, Scope.everything(), NAMESPACE,
                    f"fact {i}: {QUERIES[i % len(QUERIES)]} is handled by team {i % 7} "
                    f"on port {5000 + i}", "project", actor="bench", embedder=vault_embedder)
    db.close()
    info = {"events": manifest["events"], "memories": memories}
    marker.write_text(json.dumps(info))
    return info


def _serve(code: Path, home: Path, port: int, log_file: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PLATFORM_")}
    env.update(PYTHONPATH=str(code), MEMORY_PLATFORM_HOME=str(home))
    return subprocess.Popen(
        [sys.executable, "-c", "from memory_platform.cli import main; main()", "serve",
         "--port", str(port)],
        cwd=code, env=env, stdout=log_file.open("w"), stderr=subprocess.STDOUT)


def _wait_ready(base: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode}")
        try:
            if httpx.get(base + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("serve did not answer /health in time")


def _params(route: str, i: int) -> dict:
    q = QUERIES[i % len(QUERIES)]
    return {"q": q, "k": 10} if route == "/search" else {"q": q, "namespace": NAMESPACE}


def _percentile(ordered: list[float], p: float) -> float:
    if not ordered:
        return float("nan")
    return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 1)


def load(base: str, clients: int, seconds: float) -> dict:
    """`clients` threads alternating the routes until `seconds` have passed."""
    results: dict[str, list[float]] = {r: [] for r in ROUTES}
    errors: dict[str, int] = {r: 0 for r in ROUTES}
    samples: dict[str, str] = {}
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(n: int) -> None:
        i = n
        with httpx.Client(base_url=base, timeout=60) as http:
            while time.monotonic() < stop:
                route = ROUTES[i % 2]
                began = time.perf_counter()
                try:
                    r = http.get(route, params=_params(route, i))
                    ok = r.status_code == 200
                    detail = f"{r.status_code} {r.text[:200]}"
                except httpx.HTTPError as exc:
                    ok, detail = False, repr(exc)
                ms = (time.perf_counter() - began) * 1000
                with lock:
                    if ok:
                        results[route].append(ms)
                    else:
                        errors[route] += 1
                        samples.setdefault(route, detail)
                i += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - began
    out = {}
    for route in ROUTES:
        ordered = sorted(results[route])
        out[route] = {"requests": len(ordered), "per_s": round(len(ordered) / elapsed, 1),
                      "p50_ms": _percentile(ordered, 50), "p95_ms": _percentile(ordered, 95),
                      "max_ms": round(ordered[-1], 1) if ordered else None,
                      "errors": errors[route], "error_sample": samples.get(route)}
    total = sum(len(v) for v in results.values())
    return {"seconds": round(elapsed, 1), "total_per_s": round(total / elapsed, 1),
            "errors": sum(errors.values()), "routes": out}


def run(out: Path, *, codes: dict[str, Path], home: Path, events: int = 2000,
        memories: int = 200, clients: int = 8, seconds: float = 60, log: Log = print) -> dict:
    home = home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    log(f"preparing {home} ({events} events, {memories} memories)")
    data = prepare(home, events, memories, log)
    runs = {}
    for label, code in codes.items():
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        proc = _serve(code.resolve(), home, port, home / f"serve-{label}.log")
        try:
            _wait_ready(base, proc)
            for route in ROUTES:  # load the models and warm the caches, unmeasured
                for i in range(4):
                    httpx.get(base + route, params=_params(route, i), timeout=120)
            before = _load()
            log(f"{label}: {clients} clients for {seconds:.0f} s (load {before})")
            measured = load(base, clients, seconds)
            measured.update(code=str(code), load_before=before, load_after=_load())
            runs[label] = measured
            log(f"  {measured['total_per_s']} req/s, errors {measured['errors']}; " + "; ".join(
                f"{r} {m['per_s']}/s p50 {m['p50_ms']} p95 {m['p95_ms']} ms"
                for r, m in measured["routes"].items()))
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    result = {"when": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "platform": platform.platform()},
              "clients": clients, "seconds": seconds, "data": data, "runs": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {out}")
    return result
