"""First contact (issue 22 pt 3): a fresh HOME, a generated Claude Code history (57
transcripts, ~6,000 events, `synthetic.generate_history` seed 11), and `memory-platform up`
as a newcomer runs it. Seconds from `up` starting to: the Dagster UI answering, the newest
turn found by meaning (a dense search with its own text ranks it first), every turn with a
vector; and the longest silence in the terminal until `up` says it is ready (or, when
the tool traffic's vectors take longer, until a minute after every turn had one).

    memory-platform bench first-contact
"""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from memory_platform import synthetic
from memory_platform.bench.common import uptime
from memory_platform.query.backfill import FIRST_KINDS

Log = Callable[[str], None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def measure(events: int = 6000, timeout: float = 600.0, log: Log = print) -> dict:
    """One `up` on a fresh HOME over a generated history of `events` events."""
    home = Path(tempfile.mkdtemp(prefix="mp-first-contact-", dir="/tmp"))
    home.chmod(0o755)  # the embedded server may run as its own user
    try:
        manifest = synthetic.generate_history(home / "gen", events, seed=11,
                                              mix={"claude-code": 1.0})
        projects = home / "gen" / "claude-code" / "projects"
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("MEMORY_PLATFORM_") and k != "DAGSTER_HOME"}
        env.update(MEMORY_PLATFORM_HOME=str(home / "data"),
                   MEMORY_PLATFORM_CLAUDE_PROJECTS=str(projects),
                   DAGSTER_HOME=str(home / "data" / "dagster"))
        return {"events_generated": manifest["events"], "files": manifest["files"],
                **_run_up(env, timeout, log)}
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _run_up(env: dict, timeout: float, log: Log) -> dict:
    port = _free_port()
    cli = str(Path(sys.executable).parent / "memory-platform")
    load_start = uptime()
    began = time.monotonic()
    proc = subprocess.Popen([cli, "up", "--no-demo", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(target=lambda: lines.extend(
        (time.monotonic() - began, line.rstrip()) for line in proc.stdout), daemon=True)
    reader.start()
    found: dict = {"ui_seconds": None, "newest_turn_by_meaning_seconds": None,
                   "every_turn_by_meaning_seconds": None, "ready_seconds": None}
    try:
        _poll(proc, began, timeout, port, env, lines, found, log)
    finally:
        import signal

        with_sigint = time.monotonic()
        found["exited_by_itself"] = proc.poll()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        found["stop_seconds"] = round(time.monotonic() - with_sigint, 1)
        reader.join(timeout=10)
    until = found["ready_seconds"] or (lines[-1][0] if lines else 0.0)
    stamps = [0.0] + [t for t, _ in lines if t <= until] + [until]
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    found["longest_silence_seconds"] = round(max(gaps), 1) if gaps else None
    found["terminal_lines_until_ready"] = sum(1 for t, _ in lines if t <= until)
    found["terminal"] = [f"{t:6.1f}  {text}" for t, text in lines][:80]
    found["load_start"], found["load_end"] = load_start, uptime()
    return found


def _poll(proc, began, timeout, port, env, lines, found, log) -> None:
    from memory_platform import first_contact
    from memory_platform.query import search as service
    from memory_platform.query.embeddings import get_embedder
    from memory_platform.settings import load_settings
    from memory_platform.store import Database, event_reads

    settings = load_settings(env)
    database = model = newest = None
    while time.monotonic() - began < timeout and proc.poll() is None:
        now = round(time.monotonic() - began, 1)
        if found["ui_seconds"] is None and _answers(port):
            found["ui_seconds"] = now
            log(f"UI answers after {now} s")
        if any("ready:" in text for _, text in list(lines)):
            found["ready_seconds"] = found["ready_seconds"] or now
        if database is None and any("Dagster UI:" in text for _, text in list(lines)):
            database, model = Database.from_settings(settings), get_embedder().name
        if database is not None:
            if newest is None:
                with database.connect() as conn:
                    newest = event_reads.newest_turn(conn, FIRST_KINDS)
            if newest and found["newest_turn_by_meaning_seconds"] is None:
                hits = service.search(database, newest[1][:500], k=3, mode="dense") \
                    if first_contact.counts(database, model)["with_vectors"] else []
                if hits and hits[0].event_id == newest[0]:
                    found["newest_turn_by_meaning_seconds"] = now
                    log(f"newest turn found by meaning after {now} s")
            if found["every_turn_by_meaning_seconds"] is None:
                c = first_contact.counts(database, model)
                if c["events"] >= c["events_expected"] > 0 and \
                        c["turns_with_vectors"] >= c["turns"] > 0:
                    found["every_turn_by_meaning_seconds"] = now
                    found["turns"] = c["turns"]
                    log(f"every turn ({c['turns']:,}) has a vector after {now} s")
        if all(found[k] is not None for k in ("ui_seconds", "newest_turn_by_meaning_seconds",
                                              "every_turn_by_meaning_seconds")):
            # the tool traffic's vectors come last; watch the terminal a minute more
            found.setdefault("watched_until", now + 60)
            if found["ready_seconds"] is not None or now >= found["watched_until"]:
                return
        time.sleep(1.0)


def run(out: Path, events: int = 6000, log: Log = print) -> dict:
    result = {"benchmark": "first-contact", "events": events, **measure(events, log=log)}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    log(json.dumps({k: v for k, v in result.items() if k != "terminal"}, indent=2))
    return result
