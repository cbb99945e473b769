"""Hostile-file benchmark: peak memory and time per MB of the files that used to hurt the
import (issue 11): deep nesting at several depths, one long string at several sizes (and a
1 GB string in a 2 MB zip), each inside a claude.ai export between two good conversations.

Every case is parsed in a fresh Python process (peak RSS is per case: the process's VmHWM,
since ru_maxrss after exec also holds the parent's) by the claude.ai adapter
with the events turned into rows, which is all of the import but the database. Bounded means
peak RSS stays flat as depth grows and grows no faster than the kept string; linear means
seconds per MB stay flat. The `overhead` part times the guard on ordinary synthetic exports
against plain ijson, in this process (best of three, CPU time).
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.bench.common import load_average, machine

DEPTHS = (1_000, 10_000, 100_000, 1_000_000)
STRING_MB = (8, 16, 32, 64, 128, 256)
ZIP_STRING_MB = 1024
PARTS = ("deep", "long", "zip", "overhead")

_CHILD = """
import json, sys, time
from pathlib import Path
from memory_platform.adapters import get_adapter
from memory_platform.adapters.base import Event, ParseIssue
from memory_platform.ingest.rows import build_row
wall, cpu = time.perf_counter(), time.process_time()
events = issues = 0
messages = []
for item in get_adapter("claude-ai").parse(Path(sys.argv[1])):
    if isinstance(item, Event):
        row = build_row("claude-ai", item, 1)
        events += 1
        issues += len(row.notes)
    elif isinstance(item, ParseIssue):
        issues += 1
        messages.append(item.message[:120])
print(json.dumps({
    "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu,
    "peak_rss_mb": next(int(line.split()[1]) for line in open("/proc/self/status")
                        if line.startswith("VmHWM")) / 1024,
    "events": events, "issues": issues, "messages": messages[:3]}))
"""


def _conversation(uid: str, text: str) -> bytes:
    message = {"uuid": f"{uid}-m", "sender": "human", "created_at": "2026-01-01T00:00:01Z",
               "content": [{"type": "text", "text": text}]}
    return json.dumps({"uuid": uid, "name": uid, "created_at": "2026-01-01T00:00:00Z",
                       "chat_messages": [message]}).encode()


def _write_case(out: io.RawIOBase, middle: Callable[[io.RawIOBase], None]) -> None:
    """[good, <middle>, good]: `middle` writes the hostile conversation's text value."""
    out.write(b"[" + _conversation("a", "good") + b",\n")
    head, tail = _conversation("b", "@@").split(b'"@@"')
    out.write(head)
    middle(out)
    out.write(tail + b",\n" + _conversation("c", "good") + b"]")


def _deep(depth: int) -> Callable[[io.RawIOBase], None]:
    return lambda out: out.write(b"[" * depth + b"]" * depth)


def _string(megabytes: int) -> Callable[[io.RawIOBase], None]:
    def write(out: io.RawIOBase) -> None:
        out.write(b'"')
        block = b"x" * (1 << 20)
        for _ in range(megabytes):
            out.write(block)
        out.write(b'"')
    return write


def _measure(path: Path, timeout: int = 1800) -> dict:
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(repo), os.environ.get("PYTHONPATH", "")) if p)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                          text=True, env=env, timeout=timeout)
    if done.returncode != 0:
        return {"failed": done.stderr.strip().splitlines()[-1:] or ["exit " + str(done.returncode)]}
    return json.loads(done.stdout)


def _case(name: str, path: Path, log: Callable[[str], None], **facts) -> dict:
    size = path.stat().st_size
    result = {"case": name, "file_bytes": size, **facts, **_measure(path)}
    if "seconds" in result:
        megabytes = max(facts.get("content_mb", size / (1 << 20)), 1e-9)
        result["seconds_per_mb"] = result["seconds"] / megabytes
        log(f"  {name:28s} {size / (1 << 20):9.2f} MB file  {result['seconds']:7.2f} s  "
            f"{result['seconds_per_mb']:7.3f} s/MB  peak RSS {result['peak_rss_mb']:7.0f} MB  "
            f"events {result['events']}  issues {result['issues']}")
    else:
        log(f"  {name:28s} FAILED: {result['failed']}")
    return result


def run_deep(workdir: Path, log: Callable[[str], None], depths=DEPTHS) -> list[dict]:
    cases = []
    for depth in depths:
        path = workdir / f"deep-{depth}" / "conversations.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            _write_case(out, _deep(depth))
        cases.append(_case(f"nesting {depth:,} levels", path, log, depth=depth))
        path.unlink()
    return cases


def run_long(workdir: Path, log: Callable[[str], None], sizes=STRING_MB) -> list[dict]:
    cases = []
    for megabytes in sizes:
        path = workdir / f"long-{megabytes}" / "conversations.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            _write_case(out, _string(megabytes))
        cases.append(_case(f"one {megabytes} MB string", path, log, string_mb=megabytes,
                           content_mb=path.stat().st_size / (1 << 20)))
        path.unlink()
    return cases


def run_zip(workdir: Path, log: Callable[[str], None], megabytes=ZIP_STRING_MB) -> list[dict]:
    path = workdir / "string-in-zip" / "export.zip"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        with archive.open("conversations.json", "w", force_zip64=True) as out:
            _write_case(out, _string(megabytes))
    # time per MB of what is decompressed and scanned, not of the 2 MB on disk
    return [_case(f"one {megabytes} MB string, zipped", path, log, string_mb=megabytes,
                  content_mb=float(megabytes))]


def run_overhead(workdir: Path, log: Callable[[str], None], events: int = 200_000) -> list[dict]:
    """The guard's cost on ordinary exports, best of three in CPU seconds: reading the records
    (guard vs plain ijson, what the adapters used before) and the whole parse (adapter and
    rows, the import's client side) with each."""
    import ijson

    from memory_platform import synthetic
    from memory_platform.adapters import _json_stream, get_adapter
    from memory_platform.adapters.base import Event
    from memory_platform.ingest.rows import build_row

    def plain(stream, prefix="item", limits=None):
        for index, record in enumerate(ijson.items(stream, prefix, use_float=True), 1):
            yield index, record

    def best(read: Callable[[], int]) -> tuple[float, int]:
        times, count = [], 0
        for _ in range(3):
            start = time.process_time()
            count = read()
            times.append(time.process_time() - start)
        return min(times), count

    def parse(kind: str, path: Path) -> int:
        count = 0
        for item in get_adapter(kind).parse(path):
            if isinstance(item, Event):
                build_row(kind, item, 1)
                count += 1
        return count

    root = workdir / "synthetic"
    synthetic.generate_history(root, events, seed=7)
    guarded = _json_stream.iter_records
    cases = []
    for kind in ("claude-ai", "chatgpt"):
        path = root / kind / "conversations.json"
        data = path.read_bytes()
        megabytes = len(data) / (1 << 20)
        read_plain, records = best(lambda: sum(1 for _ in plain(io.BytesIO(data))))
        read_guarded, _ = best(lambda: sum(1 for _ in guarded(io.BytesIO(data))))
        try:
            _json_stream.iter_records = plain
            parse_plain, parsed = best(lambda: parse(kind, path))
        finally:
            _json_stream.iter_records = guarded
        parse_guarded, _ = best(lambda: parse(kind, path))
        case = {
            "case": f"ordinary {kind} export", "file_bytes": len(data), "records": records,
            "events": parsed, "read_plain_cpu_seconds": read_plain,
            "read_guarded_cpu_seconds": read_guarded,
            "read_overhead_percent": 100 * (read_guarded - read_plain) / read_plain,
            "parse_plain_cpu_seconds": parse_plain, "parse_guarded_cpu_seconds": parse_guarded,
            "parse_overhead_percent": 100 * (parse_guarded - parse_plain) / parse_plain,
            "parse_guarded_events_per_second": parsed / parse_guarded,
        }
        log(f"  {case['case']:28s} {megabytes:7.1f} MB: reading records {read_plain:.2f} -> "
            f"{read_guarded:.2f} s CPU (+{case['read_overhead_percent']:.0f}%), whole parse "
            f"{parse_plain:.2f} -> {parse_guarded:.2f} s (+{case['parse_overhead_percent']:.0f}%)")
        cases.append(case)
    return cases


def run(out: Path, parts=PARTS, log: Callable[[str], None] = print) -> dict:
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise ValueError(f"unknown part(s) {', '.join(sorted(unknown))}; "
                         f"choose from {', '.join(PARTS)}")
    started = datetime.now(timezone.utc)
    result: dict = {"benchmark": "hostile-files", "started_at": started.isoformat(),
                    "machine": machine(), "load_average_at_start": load_average(),
                    "parts": {}}
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as tmp:
        workdir = Path(tmp)
        for part, runner in (("deep", run_deep), ("long", run_long), ("zip", run_zip),
                             ("overhead", run_overhead)):
            if part in parts:
                log(f"{part}:")
                result["parts"][part] = runner(workdir, log)
    result["finished_at"] = datetime.now(timezone.utc).isoformat()
    result["load_average_at_end"] = load_average()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log(f"wrote {out}")
    return result


if __name__ == "__main__":  # python -m memory_platform.bench.hostile [parts] [out]
    chosen = tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else PARTS
    run(Path(sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results/hostile-files.json"),
        chosen)
