"""The central side beyond one process (issue 24, point 6), as docs/deployment.md runs it:
an external PostgreSQL with pgvector reached over TCP with a password (pgserver's own
binaries as a standalone server), two databases on it (the memory and Dagster's storage),
and as separate processes the Dagster code server, webserver and daemon on
dagster.yaml.example (dagster-postgres storage, the queued run coordinator, the `llm` pool
limit) with deploy/workspace.yaml, and `memory-platform serve` beside them.

Driven end to end: an import and the embedding of its turns (`ingest_raw_events_job`),
launched through the webserver, queued until the daemon starts and launched by it through
the code server; then a dream (`dream_job`) whose model is a local HTTP stub of the
Anthropic API configured by environment (the run worker is a subprocess of the code
server: no Python object reaches it). Checked through serve's REST API, both databases
and the daemon's own sensor. Every wait has a timeout; every process is killed at the end.

The runs use the in-process executor (run config): with the default multiprocess one,
every step of a run is a process that loads the definitions again (~26 s of CPU each on
this machine), which would make this test take a quarter of an hour."""

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import psycopg
import pytest

from helpers.deployment import processes, start_postgres, wait_for
from helpers.transcripts import cc_record
from helpers.vendor_stubs import ANTHROPIC_PATH, VendorStub

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOCATION, REPOSITORY = "memory_platform.definitions", "__repository__"
# Dagster's own tags for a run over a range of partitions (memory_platform/resources/common.py names them;
# importing that module would load every asset into this test process).
RANGE_START, RANGE_END = "dagster/asset_partition_range_start", "dagster/asset_partition_range_end"
IN_PROCESS = {"execution": {"config": {"in_process": {}}}}
TURNS = [
    ("user", "the nightly backup to the NAS failed again last night"),
    ("assistant", "The rsync log shows the target volume on the NAS ran out of space."),
    ("user", "ok, I pruned the old snapshots on the NAS, twelve of them"),
    ("assistant", "Good: 1.8 TB free now, the next nightly run should succeed."),
]


def graphql(base: str, query: str, variables: dict | None = None) -> dict:
    answer = httpx.post(f"{base}/graphql", json={"query": query, "variables": variables or {}},
                        timeout=60)
    answer.raise_for_status()
    body = answer.json()
    assert "errors" not in body, body
    return body["data"]


LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
    name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
SENSOR = """query ($s: SensorSelector!) { sensorOrError(sensorSelector: $s) {
    __typename ... on Sensor { id sensorState { status } } } }"""
STOP = """mutation ($id: String) { stopSensor(id: $id) { __typename
    ... on StopSensorMutationResult { instigationState { status } } } }"""
RUN = """query ($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"""


def location_loaded(web: str) -> bool:
    try:
        data = graphql(web, LOCATIONS)
    except httpx.HTTPError:
        return False
    entries = data["workspaceOrError"].get("locationEntries") or []
    for entry in entries:
        loaded = entry["locationOrLoadError"] or {}
        assert loaded.get("__typename") != "PythonError", loaded.get("message")
        if entry["name"] == LOCATION and loaded.get("__typename") == "RepositoryLocation":
            return True
    return False


def stop_sensor(web: str, name: str) -> None:
    """What an operator does in the UI: the test launches its own runs, so the folder
    sensors must not launch theirs for the same file meanwhile."""
    found = graphql(web, SENSOR, {"s": {"repositoryLocationName": LOCATION,
                                        "repositoryName": REPOSITORY, "sensorName": name}})
    sensor = found["sensorOrError"]
    assert sensor["__typename"] == "Sensor", sensor
    stopped = graphql(web, STOP, {"id": sensor["id"]})["stopSensor"]
    assert stopped["instigationState"]["status"] == "STOPPED", stopped


def status(web: str, run_id: str) -> str:
    return graphql(web, RUN, {"id": run_id})["runOrError"]["status"]


def finished(web: str, run_id: str, procs, timeout: float) -> str:
    def done():
        for name in ("code", "daemon", "webserver"):
            assert procs.alive(name), procs.log(name).read_text(errors="replace")[-4000:]
        found = status(web, run_id)
        return found if found in ("SUCCESS", "FAILURE", "CANCELED") else None

    return wait_for(done, timeout, f"run {run_id}", every=2, log=procs.log("code"))


def launch(web: str, job: str, tags: dict[str, str]) -> str:
    from dagster_graphql import DagsterGraphQLClient

    client = DagsterGraphQLClient("127.0.0.1", port_number=int(web.rsplit(":", 1)[1]),
                                  timeout=120)
    return client.submit_job_execution(job, repository_location_name=LOCATION,
                                       repository_name=REPOSITORY, run_config=IN_PROCESS,
                                       tags=tags)


@pytest.fixture
def postgres():
    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


def test_the_central_side_runs_as_separate_processes_on_an_external_postgresql(
        tmp_path, postgres, monkeypatch):
    app_url = postgres.create_database("memory", "vector")
    dagster_url = postgres.create_database("dagster")
    home, dagster_home, projects = tmp_path / "home", tmp_path / "dagster", tmp_path / "claude"
    for folder in (home, dagster_home, projects / "-home-me-homelab", tmp_path / "user"):
        folder.mkdir(parents=True)
    shutil.copy(REPO / "dagster.yaml.example", dagster_home / "dagster.yaml")
    day = (datetime.now(timezone.utc) - timedelta(days=1)).replace(hour=21, minute=0,
                                                                   second=0, microsecond=0)
    key = day.strftime("%Y-%m-%d")
    ports = {name: str(_port()) for name in ("code", "web", "serve")}
    token = "deploy-test-admin-token-0123456789"
    web, serve = f"http://127.0.0.1:{ports['web']}", f"http://127.0.0.1:{ports['serve']}"
    auth = {"Authorization": f"Bearer {token}"}
    with VendorStub() as stub:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MEMORY_PLATFORM_", "DAGSTER_", "ANTHROPIC_", "OPENAI_"))}
        env.update(
            HOME=str(tmp_path / "user"), MEMORY_PLATFORM_HOME=str(home),
            MEMORY_PLATFORM_DATABASE_URL=app_url, MEMORY_PLATFORM_CLAUDE_PROJECTS=str(projects),
            MEMORY_PLATFORM_TIMEZONE="UTC", MEMORY_PLATFORM_API_TOKEN=token,
            MEMORY_PLATFORM_LLM_PROVIDER="anthropic",
            MEMORY_PLATFORM_LLM_BASE_URL=stub.anthropic_base_url,
            ANTHROPIC_API_KEY="sk-ant-deploy-test", DAGSTER_HOME=str(dagster_home),
            DAGSTER_POSTGRES_URL=dagster_url, DAGSTER_CODE_HOST="127.0.0.1",
            DAGSTER_CODE_PORT=ports["code"])
        # The webserver and the daemon get Dagster's settings only: they run no code of
        # ours (sensors are evaluated in the code server, runs start from it).
        dagster_only = {k: v for k, v in env.items() if not k.startswith(
            ("MEMORY_PLATFORM_", "ANTHROPIC_"))}
        workspace = str(REPO / "deploy" / "workspace.yaml")
        with processes(env, tmp_path) as procs:
            procs.start("code", str(BIN / "dagster"), "code-server", "start", "-m",
                        "memory_platform.definitions", "-h", "127.0.0.1", "-p", ports["code"],
                        "--location-name", LOCATION)
            procs.start("serve", str(BIN / "memory-platform"), "serve", "--port",
                        ports["serve"])
            wait_for(lambda: "Started Dagster code proxy server" in procs.log("code").read_text(
                errors="replace"), 900, "the code server to load the definitions", every=2,
                log=procs.log("code"))
            health = subprocess.run([str(BIN / "dagster"), "api", "grpc-health-check", "-p",
                                     ports["code"], "-h", "127.0.0.1"], env=dagster_only,
                                    capture_output=True, text=True, timeout=300)
            assert health.returncode == 0, health.stderr  # compose's health check
            procs.start("webserver", str(BIN / "dagster-webserver"), "-h", "127.0.0.1", "-p",
                        ports["web"], "-w", workspace, env=dagster_only)
            wait_for(lambda: location_loaded(web), 600, "the webserver to reach the code "
                     "server", every=3, log=procs.log("webserver"))
            for sensor in ("source_folders_sensor", "session_end_sensor"):
                stop_sensor(web, sensor)

            # A session of one machine, in the watched Claude Code folder.
            path = projects / "-home-me-homelab" / "backup.jsonl"
            parent, lines = None, []
            for i, (role, text) in enumerate(TURNS):
                record = cc_record(i, "deploy-1", day + timedelta(minutes=i), role, text=text,
                                   parent=parent, cwd="/home/me/homelab")
                parent = record["uuid"]
                lines.append(json.dumps(record))
            path.write_text("\n".join(lines) + "\n")

            # Launched through the webserver, the run waits in the queue: no daemon yet.
            ingest = launch(web, "ingest_raw_events_job",
                            {RANGE_START: key, RANGE_END: key})
            assert status(web, ingest) == "QUEUED"
            procs.start("daemon", str(BIN / "dagster-daemon"), "run", "-w", workspace,
                        env=dagster_only)
            assert finished(web, ingest, procs, 900) == "SUCCESS"
            with psycopg.connect(app_url) as conn:
                events = conn.execute("SELECT id, role FROM events ORDER BY id").fetchall()
                vectors = conn.execute("SELECT count(DISTINCT event_id) FROM event_embeddings"
                                       ).fetchone()[0]
            assert [role for _, role in events] == [role for role, _ in TURNS]
            assert vectors == len(TURNS)  # embedded in the same run

            # The dream, with the model scripted at the stub; it cites the first turn.
            from memory_platform.dream.propose import DreamAnswer, ProposedMemory

            fact = "The homelab's nightly backup goes to the NAS with rsync."
            stub.anthropic_text(DreamAnswer(memories=[ProposedMemory(
                text=fact, score=8, category="project", why="how the backups work",
                source_event_ids=[events[0][0]])]).model_dump_json())
            dream = launch(web, "dream_job", {RANGE_START: key, RANGE_END: key})
            assert finished(web, dream, procs, 900) == "SUCCESS"
            [request] = stub.requests_to(ANTHROPIC_PATH)
            assert "the nightly backup to the NAS failed" in json.dumps(request.body)

            # serve, a process of its own, answers from what the runs wrote.
            wait_for(lambda: _get(serve, "/health") == 200, 300, "serve to answer",
                     log=procs.log("serve"))
            hits = httpx.get(f"{serve}/search", params={
                "q": "the rsync target volume on the NAS ran out of space", "mode": "dense",
                "k": 2}, headers=auth, timeout=120)
            assert hits.status_code == 200, hits.text  # 409 while no turn has a vector
            assert [h["event_id"] for h in hits.json()][0] == events[1][0], hits.json()
            assert httpx.get(f"{serve}/search", params={"q": "backup"},
                             timeout=30).status_code == 401  # off loopback rules: a token
            listed = httpx.get(f"{serve}/vault/personal__dream/memories", headers=auth,
                               timeout=60)
            assert listed.status_code == 200, listed.text
            [staged] = listed.json()["items"]
            assert (staged["text"], staged["review"]) == (fact, "pending")
            namespaces = httpx.get(f"{serve}/vault/namespaces", headers=auth, timeout=60)
            assert {n["name"] for n in namespaces.json()} >= {"personal", "personal__dream"}
            with psycopg.connect(app_url) as conn:
                calls = conn.execute("SELECT provider, ok, run_id FROM llm_calls").fetchall()
                primary = conn.execute("SELECT count(*) FROM memories WHERE namespace = "
                                       "'personal'").fetchone()[0]
            assert calls == [("anthropic", True, dream)] and primary == 0

            # Dagster's storage is its own database on the same server: the runs went
            # through the queue, and the llm pool is limited to one step at a time.
            monkeypatch.setenv("DAGSTER_POSTGRES_URL", dagster_url)
            import dagster as dg

            with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
                assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
                for run_id in (ingest, dream):
                    kinds = [e.dagster_event_type for e in instance.all_logs(run_id)]
                    order = [kinds.index(k) for k in (
                        dg.DagsterEventType.RUN_ENQUEUED, dg.DagsterEventType.RUN_STARTING,
                        dg.DagsterEventType.RUN_START, dg.DagsterEventType.RUN_SUCCESS)]
                    assert order == sorted(order), kinds
                assert instance.event_log_storage.get_concurrency_info("llm").slot_count == 1

                # ... and the daemon's sensors read the memory database: the staged entry
                # becomes a partition of vault_promotions
                wait_for(lambda: str(staged["id"]) in instance.get_dynamic_partitions(
                    "pending_memories"), 300, "pending_memories_sensor to add the entry",
                    every=3, log=procs.log("daemon"))
            with psycopg.connect(app_url) as conn:
                tables = {r[0] for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
            assert "events" in tables and "runs" not in tables  # the two stay apart


def _port() -> int:
    from helpers.deployment import free_port

    return free_port()


def _get(base: str, path: str) -> int | None:
    try:
        return httpx.get(base + path, timeout=30).status_code
    except httpx.HTTPError:
        return None
