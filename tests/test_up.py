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
