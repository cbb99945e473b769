"""The collector's benchmark (issue 24): one machine's history pushed over loopback to a real
`memory-platform serve` on a scratch database, through the same commands a person runs.

1. the collector's start: `memory-platform collect --status` (standard library only) and,
   after the push, an idle `collect --once` (process start, settings, a scan of unchanged
   files, no request), best of three, wall and CPU seconds (a loaded machine's wall time
   is mostly waiting for a core);
2. the server away: `collect --once` reads everything into the spool (exit 2); the spool's
   disk per 10k events and its compressed bytes per event (what goes on the wire);
3. the server up: `collect --once` drains the spool: events/s end to end (the server's
   import included) and the collector's peak RSS;
4. a grown history: 1% more turns appended to a tenth of the files: bytes read again and
   seconds (resumption: only the new part is read and sent).
"""

import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memory_platform.bench.common import load_average, machine, scratch_db, server_url

BIN = Path(sys.executable).parent


def _transcripts(folder: Path, files: int, turns: int, first: int = 0,
                 only: int | None = None) -> int:
    start = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)
    written = 0
    for f in range(only if only is not None else files):
        path = folder / f"-home-me-p{f % 7}" / f"s{f:04d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            for i in range(first, first + turns):
                role = "user" if i % 2 == 0 else "assistant"
                at = start + timedelta(minutes=f, seconds=i)
                body = (f"turn {i} of session {f}: the backup job on port {8000 + i % 97} "
                        f"failed with exit code {i % 5}; retried at {at:%H:%M:%S}")
                content = body if role == "user" else [{"type": "text", "text": body}]
                fh.write(json.dumps({
                    "type": role, "uuid": f"{f:08d}-0000-4000-8000-{i:012d}",
                    "parentUuid": f"{f:08d}-0000-4000-8000-{i - 1:012d}" if i else None,
                    "sessionId": f"s{f:04d}", "cwd": f"/home/me/p{f % 7}",
                    "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
                    "message": {"role": role, "content": content}}) + "\n")
                written += 1
    return written


def _collect(env: dict, *args: str) -> tuple[int, float, str]:
    t = time.perf_counter()
    done = subprocess.run([str(BIN / "memory-platform"), "collect", *args], env=env,
                          capture_output=True, text=True, timeout=3600)
    return done.returncode, time.perf_counter() - t, done.stdout + done.stderr


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _du(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


def run(out: Path, *, events: int = 20_000, files: int = 40, log=print) -> dict:
    from memory_platform.vault import tokens

    turns = events // files
    with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp, \
            scratch_db(server_url(Path(tmp)), "collect") as db:
        work = Path(tmp)
        total = _transcripts(work / "laptop/projects", files, turns)
        _, secret = tokens.create(db, None, kind="collector", machine="laptop")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PLATFORM_")}
        laptop = {**base, "MEMORY_PLATFORM_HOME": str(work / "laptop/home"),
                  "MEMORY_PLATFORM_CLAUDE_PROJECTS": str(work / "laptop/projects"),
                  "MEMORY_PLATFORM_COLLECTOR_TOKEN": secret, "CODEX_HOME": str(work / "none")}
        starts = []
        for _ in range(3):
            before = _cpu()
            starts.append((_collect(laptop, "--status")[1], _cpu() - before))
        log(f"collect --status: best {min(starts)[0]:.3f} s wall, "
            f"{min(c for _, c in starts):.3f} s CPU")
        code, away_s, _ = _collect(laptop, "--to", url, "--machine", "laptop", "--once")
        assert code == 2, f"expected the server away (exit 2), got {code}"
        spool = work / "laptop/home/collector/spool"
        spool_bytes = sum(p.stat().st_size for p in spool.glob("*.chunk.gz"))
        raw_bytes = sum(p.stat().st_size for p in (work / "laptop/projects").rglob("*.jsonl"))
        disk = _du(spool)
        log(f"{total} events, {raw_bytes} bytes raw -> spool {spool_bytes} bytes "
            f"({spool_bytes / total:.1f} B/event), {disk} on disk")
        central = {**base, "MEMORY_PLATFORM_HOME": str(work / "central"),
                   "MEMORY_PLATFORM_DATABASE_URL": db.url(),
                   "MEMORY_PLATFORM_API_TOKEN": "bench-admin"}
        serve = subprocess.Popen([str(BIN / "memory-platform"), "serve", "--port", str(port)],
                                 env=central, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait(url)
            code, push_s, output = _collect(laptop, "--to", url, "--machine", "laptop",
                                            "--once")
            rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            assert code == 0, output
            log(f"push: {total} events in {push_s:.2f} s = {total / push_s:.0f} events/s; "
                f"collector peak RSS {rss_kb / 1024:.0f} MB")
            grown_files = max(1, files // 10)
            added = _transcripts(work / "laptop/projects", files, max(1, turns // 10),
                                 first=turns, only=grown_files)
            code, grown_s, output = _collect(laptop, "--to", url, "--machine", "laptop",
                                             "--once", "--json")
            assert code == 0, output
            grown = json.loads(output)
            log(f"grown: {added} events in {grown_files} files: read {grown['bytes_read']} "
                f"bytes, {grown_s:.2f} s")
            idle = []
            for _ in range(3):  # a round with nothing new: start, settings, scan, no request
                before = _cpu()
                code, idle_s, output = _collect(laptop, "--to", url, "--machine", "laptop",
                                                "--once")
                assert code == 0, output
                idle.append((idle_s, _cpu() - before))
            log(f"idle round (start + scan of {files} files): best {min(idle)[0]:.2f} s wall, "
                f"{min(c for _, c in idle):.2f} s CPU")
            with db.connect() as conn:
                stored = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            serve.terminate()
            serve.wait(60)
    result = {
        "what": "memory-platform collect pushing one machine's Claude Code history to a "
                "real `serve` on loopback (scratch database)",
        "machine": machine(), "load_average": load_average(),
        "events": total, "files": files, "raw_bytes": raw_bytes,
        "status_command_s_best_of_3": {"wall": round(min(starts)[0], 3),
                                       "cpu": round(min(c for _, c in starts), 3)},
        "idle_round_s_best_of_3": {"wall": round(min(idle)[0], 3),
                                   "cpu": round(min(c for _, c in idle), 3),
                                   "what": f"process start, settings, a scan of {files} "
                                           "unchanged files, no request"},
        "spool_bytes": spool_bytes, "spool_disk_bytes": disk,
        "compressed_bytes_per_event": round(spool_bytes / total, 1),
        "spool_disk_bytes_per_10k_events": round(disk / total * 10_000),
        "compression_ratio": round(raw_bytes / spool_bytes, 2),
        "read_into_spool_s": round(away_s, 2),
        "push_s": round(push_s, 2), "push_events_per_s": round(total / push_s),
        "collector_peak_rss_mb": round(rss_kb / 1024, 1),
        "grown": {"events_added": added, "files": grown_files,
                  "bytes_read": grown["bytes_read"], "seconds": round(grown_s, 2),
                  "events_new": grown.get("events_new")},
        "stored_events": stored, "expected_events": total + added,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def _wait(url: str, timeout: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"serve did not answer at {url} within {timeout:.0f} s")
