"""A dying database (issue 11, points 7 and 13): kept connections replaced after PostgreSQL
restarts, the embedded server started again when it dies, pids of killed processes
forgotten so the last live one stops the server, the recorder's retries, and the fault
test: PostgreSQL killed under a running `memory-platform serve`.

Each test runs its own PostgreSQL (pgserver in a temporary folder): killing the shared
test server would take every other test down with it."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pgserver
import pytest

from helpers.api import thread_recorder
from helpers.transcripts import cc_record
from memory_platform.query.connections import on_connection
from memory_platform.store import Database, DatabaseError
from memory_platform.store import db as store_db
from memory_platform.store import memories as memory_store

CLI = str(Path(sys.executable).parent / "memory-platform")
REPO = Path(__file__).resolve().parents[1]
DAY = datetime(2026, 3, 2, tzinfo=timezone.utc)


def postmaster_pid(pgdata: Path) -> int | None:
    return store_db._postmaster_pid(pgdata)


def kill_postgres(pgdata: Path) -> int:
    """SIGKILL the postmaster and wait until it and its backends are gone."""
    pid = postmaster_pid(pgdata)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 20
    while store_db._process_alive(pid):
        assert time.monotonic() < deadline, "the postmaster did not die"
        time.sleep(0.05)
    time.sleep(0.5)  # its backends notice the postmaster's death and exit
    return pid


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture
def pg_tmp():
    """A folder for a PostgreSQL data directory. Not under pytest's tmp_path: as root,
    pgserver runs PostgreSQL as the `pgserver` user, and pytest keeps its base folder
    private (0700), re-applying that whenever any pytest session starts."""
    folder = Path(tempfile.mkdtemp(prefix="mp-recovery-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def own_server(pg_tmp):
    """A PostgreSQL of this test's own: (pgdata, url). Deleted at the end."""
    server = pgserver.get_server(str(pg_tmp / "pg"), cleanup_mode="delete")
    yield server.pgdata, server.get_uri()
    server.cleanup()


def test_kept_connections_are_replaced_after_the_server_restarts(own_server):
    pgdata, url = own_server
    db = Database(url=url)
    with db.connect() as a, db.connect() as b:  # two connections kept in the pool
        a.execute("SELECT 1")
        b.execute("SELECT 1")
    assert on_connection(db, lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1
    kill_postgres(pgdata)
    with pytest.raises(DatabaseError, match="cannot connect"):
        db.ping()  # down: a clear error, not a hang
    store_db.start_embedded(pgdata)  # the server comes back
    # the first calls after the restart succeed: no dead connection is handed out
    db.ping()
    with db.connect() as conn:
        assert conn.execute("SELECT 2").fetchone()[0] == 2
    assert on_connection(db, lambda conn: conn.execute("SELECT 3").fetchone()[0]) == 3


def test_the_embedded_server_is_started_again_when_it_dies(pg_tmp):
    pgdata = pg_tmp / "pgdata"
    db = Database(pgdata=pgdata)
    try:
        db.ping()
        before = kill_postgres(pgdata.resolve())
        db.ping()  # the connection fails, the embedded server is started again
        after = postmaster_pid(pgdata.resolve())
        assert after is not None and after != before and store_db._process_alive(after)
        with db.connect() as conn:
            assert conn.execute("SELECT 1").fetchone()[0] == 1
    finally:
        db.close()
        subprocess.run([str(Path(pgserver.__file__).parent / "pginstall/bin/pg_ctl"), "-D",
                        str(pgdata), "-m", "immediate", "stop"], capture_output=True,
                       user="pgserver" if os.geteuid() == 0 else None)


HOLD = ("import sys, time; from pathlib import Path; "
        "from memory_platform.store.db import start_embedded; "
        "start_embedded(Path(sys.argv[1])); print('up', flush=True); "
        "time.sleep(float(sys.argv[2]))")


def test_a_killed_process_no_longer_keeps_the_embedded_server_running(pg_tmp):
    pgdata = (pg_tmp / "pgdata").resolve()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(pgdata), "600"], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "up"
    server = postmaster_pid(pgdata)
    assert server is not None and store_db._process_alive(server)
    holder.kill()  # SIGKILL: no exit hook runs, its pid stays in the handle file
    holder.wait()
    holders = json.loads((pgdata / store_db.HANDLE_FILE).read_text())
    assert holder.pid in holders

    # The next process joins, forgets the dead pid, and stops the server when it exits,
    # being the last live process holding it.
    done = subprocess.run([sys.executable, "-c", HOLD, str(pgdata), "0"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    wait_for(lambda: not store_db._process_alive(server), 30, "the server to stop")
    assert holder.pid not in json.loads((pgdata / store_db.HANDLE_FILE).read_text())


def test_a_failed_recording_is_retried_not_dropped():
    attempts = []

    def record(memory_id, promoted_id, actor, old_memory_id):
        attempts.append(memory_id)
        if len(attempts) < 3:
            raise RuntimeError("terminating connection due to administrator command")
        return "run-1"

    recorder = thread_recorder(record)
    recorder.RETRY_DELAYS_S = (0.05, 0.05, 0.05)
    recorder.submit(7, 8, actor="dashboard:local", namespace="work__dream")
    assert recorder.drain(10)
    status = recorder.status()
    assert attempts == [7, 7, 7] and recorder.runs == {7: "run-1"}
    assert (status["recorded"], status["failed"], status["retried"]) == (1, 0, 2)

    always = thread_recorder(lambda *args: 1 / 0)
    always.RETRY_DELAYS_S = (0.01,)
    always.submit(9, 10, actor="x", namespace="work__dream")
    assert always.drain(10)
    assert (always.status()["failed"], always.status()["retried"]) == (1, 1)
    assert "ZeroDivisionError" in always.status()["last_error"]


# --- the fault test: PostgreSQL killed under a running `serve` -----------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(tmp_path, own_server):
    """`memory-platform serve` on a free loopback port over this test's own PostgreSQL
    (external: the test decides when it comes back); (base url, pgdata, db, log file)."""
    pgdata, url = own_server
    db = Database(url=url)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(cc_record(
        i, "s-fault", DAY + timedelta(minutes=i), "user",
        text=f"turn {i}: the fault test checks recovery {i}")) + "\n" for i in range(5)))
    from memory_platform.ingest import importer

    importer.import_path(db, "claude-code", path)
    home = tmp_path / "home"
    (home / "dagster").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PLATFORM_")}
    env.update(MEMORY_PLATFORM_HOME=str(home), MEMORY_PLATFORM_DATABASE_URL=url,
               DAGSTER_HOME=str(home / "dagster"), PYTHONPATH=str(REPO))
    port = _free_port()
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([CLI, "serve", "--port", str(port)], env=env, cwd=REPO,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _get(base, "/health") == 200, 120, "serve to answer")
        yield base, pgdata, db, log
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def _get(base: str, path: str, **params) -> int | None:
    try:
        return httpx.get(base + path, params=params, timeout=30).status_code
    except httpx.HTTPError:
        return None


def test_serve_recovers_when_postgresql_is_killed_under_it(served):
    base, pgdata, db, log = served
    search = {"q": "recovery", "mode": "keyword"}
    assert httpx.get(base + "/search", params=search, timeout=30).json()[0]["text"]
    with db.connect() as conn:
        entry, _ = memory_store.add_memory(conn, namespace="work__ideas", source="agent",
                                           text="the fault test recovers", actor="test",
                                           review="pending")
    # (the first approval loads the vault embedder: seconds, more on a busy machine)
    approved = httpx.post(f"{base}/review/api/entries/{entry}/approve", json={}, timeout=300)
    assert approved.status_code == 200
    kill_postgres(pgdata)  # before the recorder's quiet period ends: its first try fails

    health = httpx.get(base + "/health", timeout=30)
    assert health.status_code == 503 and health.json()["status"] == "down"
    assert health.json()["database"]
    down = httpx.get(base + "/search", params=search, timeout=30)
    assert down.status_code == 503 and "database is unavailable" in down.json()["detail"]
    wait_for(lambda: "retrying in" in log.read_text(), 120,
             "the recorder to fail and schedule a retry")

    store_db.start_embedded(pgdata)  # PostgreSQL comes back
    wait_for(lambda: _get(base, "/health") == 200, 30, "/health to say ok")
    found = httpx.get(base + "/search", params=search, timeout=30)
    assert found.status_code == 200 and "recovery" in found.json()[0]["text"]

    def recorded():
        status = httpx.get(base + "/review/api/status", timeout=30).json()
        return status if status["recorded"] == 1 else None

    status = wait_for(recorded, 180, "the queued recording to be retried")
    assert status["failed"] == 0 and status["retried"] >= 1


def test_serve_starts_its_embedded_postgresql_again(tmp_path, pg_tmp):
    home = pg_tmp / "home"
    (home / "dagster").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PLATFORM_")}
    env.update(MEMORY_PLATFORM_HOME=str(home), DAGSTER_HOME=str(home / "dagster"),
               PYTHONPATH=str(REPO))
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([CLI, "serve", "--port", str(port)], env=env, cwd=REPO,
                            stdout=(tmp_path / "serve.log").open("w"),
                            stderr=subprocess.STDOUT)
    pgdata = (home / "pgdata").resolve()
    try:
        wait_for(lambda: _get(base, "/health") == 200, 120, "serve to answer")
        before = kill_postgres(pgdata)
        # every request meanwhile answers 200 or 503, never a bare 500
        codes = set()

        def back():
            code = _get(base, "/vault/namespaces")
            codes.add(code)
            return code == 200

        wait_for(back, 60, "serve to start its PostgreSQL again")
        assert codes <= {200, 503}, codes
        after = postmaster_pid(pgdata)
        assert after != before and store_db._process_alive(after)
        assert _get(base, "/health") == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    # serve was the last process holding it: it stopped the server on the way out
    wait_for(lambda: not store_db._process_alive(after), 30, "the server to stop")
