"""Two machines as two HOMEs on loopback: a real `memory-platform serve` on a free port and
two `memory-platform collect` processes. The central side holds each event once, with its
machine; the server killed (SIGKILL) in the middle of a push and started again: the spool
drains and the counts are exact."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from helpers.deployment import free_port, processes, wait_for
from helpers.transcripts import write_transcript
from memory_platform.vault import tokens

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
ADMIN = "e2e-admin-token"


def _count(db, name: str) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT count(*) FROM events e JOIN machines m ON "
                            "m.id = e.machine_id WHERE m.name = %s", (name,)).fetchone()[0]


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


def test_two_machines_and_a_server_killed_mid_push(db, home, tmp_path, database_url):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PLATFORM_")}
    central = {**base, "MEMORY_PLATFORM_HOME": str(home), "MEMORY_PLATFORM_DATABASE_URL":
               database_url, "MEMORY_PLATFORM_API_TOKEN": ADMIN}
    machines = {}
    for name, files, turns in (("laptop", 24, 300), ("desk", 3, 40)):
        root = tmp_path / name
        for i in range(files):
            write_transcript(root / f"projects/-home-me-p{i}/{name}-{i}.jsonl", turns,
                             session=f"{name}-{i}")
        _, secret = tokens.create(db, None, kind="collector", machine=name)
        machines[name] = {**base, "MEMORY_PLATFORM_HOME": str(root / "home"),
                          "MEMORY_PLATFORM_CLAUDE_PROJECTS": str(root / "projects"),
                          "MEMORY_PLATFORM_COLLECTOR_TOKEN": secret,
                          "CODEX_HOME": str(root / "no-codex")}
    serve = [str(BIN / "memory-platform"), "serve", "--port", str(port)]
    with processes(central, tmp_path) as procs:
        procs.start("serve", *serve)
        wait_for(lambda: _up(url), 120, "serve to answer", log=procs.log("serve"))
        # the desk, one round
        desk = subprocess.run([str(BIN / "memory-platform"), "collect", "--to", url,
                               "--once", "--machine", "desk"], env=machines["desk"], capture_output=True,
                              text=True, timeout=300)
        assert desk.returncode == 0, desk.stdout + desk.stderr
        assert _count(db, "desk") == 3 * 40
        # the laptop in the foreground; the server killed once some of it has arrived
        procs.start("laptop", str(BIN / "memory-platform"), "collect", "--to", url,
                    "--machine", "laptop", "--interval", "0.5", env=machines["laptop"])
        wait_for(lambda: _count(db, "laptop") > 0, 300, "the first pushed events",
                 every=0.05, log=procs.log("laptop"))
        os.killpg(procs.started["serve"].pid, signal.SIGKILL)
        procs.started["serve"].wait(30)
        at_kill = _count(db, "laptop")
        assert 0 < at_kill < 24 * 300, at_kill
        time.sleep(2)  # the collector meets a closed port and backs off
        status = (tmp_path / "laptop/home/collector/status.json").read_text()
        assert '"exit_code":2' in status, status
        procs.start("serve", *serve)
        wait_for(lambda: _count(db, "laptop") == 24 * 300, 300, "the spool to drain",
                 log=procs.log("laptop"))
        wait_for(lambda: '"spool_chunks":0' in (
            tmp_path / "laptop/home/collector/status.json").read_text(), 60,
            "the collector to see its spool empty", log=procs.log("laptop"))
    assert _count(db, "laptop") == 24 * 300 and _count(db, "desk") == 3 * 40
    with db.connect() as conn:
        dupes = conn.execute("SELECT count(*) - count(DISTINCT (source, native_id)) "
                             "FROM events").fetchone()[0]
        revisions = conn.execute("SELECT count(*) FROM event_revisions").fetchone()[0]
    assert dupes == 0 and revisions == 0
