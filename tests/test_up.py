"""`memory-platform up`: the main job on the embedded default, and the real Dagster UI."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg

CLI = str(Path(sys.executable).parent / "memory-platform")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_up_imports_demo_history_and_materializes_every_day(home):
    result = subprocess.run([CLI, "up", "--no-serve"], capture_output=True, text=True,
                            timeout=600, env=os.environ.copy())
    assert result.returncode == 0, result.stderr[-3000:]
    assert "generated a demo history" in result.stderr
    status = json.loads(subprocess.run([CLI, "status", "--json"], capture_output=True,
                                       text=True, timeout=120).stdout)
    assert set(status["by_source"]) == {"claude-code", "claude-ai", "chatgpt", "gemini", "notes"}
    assert status["events"] > 150
    days = {row["month"] for row in status["by_month"]}
    assert days

    with dg.DagsterInstance.get() as instance:  # DAGSTER_HOME is home/dagster (fixture)
        partitions = instance.get_materialized_partitions(dg.AssetKey("raw_events"))
        lake = instance.get_materialized_partitions(dg.AssetKey("raw_events_lake"))
        assert instance.get_latest_materialization_event(dg.AssetKey("source_files"))
    assert len(partitions) >= 7 and lake == partitions
    assert len(list((home / "lake" / "raw_events").iterdir())) == len(partitions)

    # Running it again imports nothing twice.
    again = subprocess.run([CLI, "up", "--no-serve"], capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    after = json.loads(subprocess.run([CLI, "status", "--json"], capture_output=True,
                                      text=True, timeout=120).stdout)
    assert after["events"] == status["events"]


def test_up_serves_the_dagster_ui_with_the_project_assets(home):
    port = _free_port()
    proc = subprocess.Popen([CLI, "up", "--port", str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/graphql",
                    data=json.dumps({"query": "{ assetNodes { assetKey { path } } }"}).encode(),
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=5) as response:
                    body = json.loads(response.read())
                if body.get("data", {}).get("assetNodes"):
                    break
            except (OSError, ValueError):
                time.sleep(1)
        assert proc.poll() is None, proc.stdout.read()[-3000:] if proc.stdout else ""
        assert body is not None, "the Dagster UI never answered"
        keys = {"/".join(n["assetKey"]["path"]) for n in body["data"]["assetNodes"]}
        assert {"source_files", "raw_events", "raw_events_lake"} <= keys
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_definitions_validate_with_the_dagster_cli(home):
    result = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-m",
         "memory_platform.definitions"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Validation successful" in result.stderr + result.stdout


def _ignore_sigint() -> None:  # what `memory-platform up &` or nohup leaves a process with
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_up_in_the_background_stops_on_sigterm_with_its_tree_and_database(home, tmp_path):
    """Under a service manager or `up &`: SIGINT is ignored from the start and only SIGTERM
    reaches `up`. It must stop the webserver, daemon and code server it started, and the
    embedded PostgreSQL must stop with the last process holding it."""
    import shutil
    import tempfile

    import psutil

    port = _free_port()
    # The embedded server runs as its own user when tests run as root: its data folder
    # must be reachable through every parent, which pytest's private tmp folders are not.
    data_home = Path(tempfile.mkdtemp(prefix="mp-up-", dir="/tmp"))
    data_home.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MEMORY_PLATFORM_DATABASE_URL"}
    env.update(MEMORY_PLATFORM_HOME=str(data_home), DAGSTER_HOME=str(data_home / "dagster"))
    log = (tmp_path / "up.log").open("w")
    proc = subprocess.Popen([CLI, "up", "--no-demo", "--port", str(port)], stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                            preexec_fn=_ignore_sigint)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if "Dagster UI: http://" in (tmp_path / "up.log").read_text():
                break
            time.sleep(1)
        text = (tmp_path / "up.log").read_text()
        assert proc.poll() is None and "Dagster UI: http://" in text, text[-3000:]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # printed only once the port answers
        tree = psutil.Process(proc.pid).children(recursive=True)
        postmaster = data_home / "pgdata" / "postmaster.pid"
        postgres = int(postmaster.read_text().splitlines()[0])
        assert len(tree) >= 3 and psutil.pid_exists(postgres)

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, (tmp_path / "up.log").read_text()[-3000:]
        gone, alive = psutil.wait_procs(tree, timeout=30)
        assert [p.pid for p in alive] == [], "processes left behind by up"
        deadline = time.monotonic() + 30
        while psutil.pid_exists(postgres) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not psutil.pid_exists(postgres), "the embedded PostgreSQL is still running"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        shutil.rmtree(data_home, ignore_errors=True)


def test_up_serves_the_ui_before_the_import_of_a_big_history_finishes(home, tmp_path):
    """Issue 22 pt 2: the URL first, then the import and the embeddings as runs, with a
    progress line at least every 5 s; Dagster's own logs in HOME/logs/dagster.log."""
    from memory_platform import synthetic

    projects = tmp_path / "claude-projects"
    manifest = synthetic.generate_history(tmp_path / "gen", 4000, seed=11,
                                          mix={"claude-code": 1.0})
    (tmp_path / "gen" / "claude-code" / "projects").rename(projects)
    port = _free_port()
    log = (tmp_path / "up.log").open("w")
    proc = subprocess.Popen([CLI, "up", "--no-demo", "--port", str(port)], stdout=log,
                            stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    began = time.monotonic()
    try:
        deadline = began + 300
        while time.monotonic() < deadline and proc.poll() is None:
            if "Dagster UI: http://" in (tmp_path / "up.log").read_text():
                break
            time.sleep(0.5)
        text = (tmp_path / "up.log").read_text()
        assert "Dagster UI: http://" in text, text[-3000:]
        assert "ready:" not in text, "the UI came only after the import"
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        # then the import and its vectors, a line at least every 5 s (a little slack for
        # the loaded machine), for a minute of it
        seen, last = 0, time.monotonic()
        while time.monotonic() - last < 60 and proc.poll() is None:
            lines = [line for line in (tmp_path / "up.log").read_text().splitlines()
                     if line.startswith(("import: ", "vectors: "))]
            if len(lines) > seen:
                seen, last = len(lines), time.monotonic()
                if seen >= 8:
                    break
            assert time.monotonic() - last < 8, f"no progress line for 8 s after {seen}"
            time.sleep(0.5)
        text = (tmp_path / "up.log").read_text()
        assert seen >= 8 and "turns with vectors" in text, text[-3000:]
        assert "dagster - INFO" not in text and "dagster.daemon" not in text
        assert (home / "logs" / "dagster.log").stat().st_size > 0
        assert manifest["events"] >= 4000
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
