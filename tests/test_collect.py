"""The collector (memory_platform/collect) against the central app in-process: two
machines as two HOMEs, a grown transcript re-sent only from its new part, a server that is
away (the spool waits, then drains exactly), a full spool that says so, the collector
token's one route, and the collector's import footprint."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.api import LOCAL, local_client
from helpers.transcripts import write_transcript
from memory_platform.api.app import create_app
from memory_platform.collect import run
from memory_platform.vault import tokens

ADMIN = "admin-secret-token"


class _Settings:
    """What watched_roots reads, for a machine's HOME."""

    def __init__(self, root: Path):
        self.claude_projects = root / "claude-projects"
        self.inbox = root / "inbox"
        self.notes = None
        self.demo = root / "demo"

    def watched_folders(self):
        return [("claude-code", self.claude_projects), (None, self.inbox)]


def machine(tmp_path: Path, name: str, client, token: str | None, **config) -> run.Collector:
    from memory_platform.collect.scan import watched_roots

    root = tmp_path / name
    (root / "claude-projects").mkdir(parents=True, exist_ok=True)
    cfg = run.Config(server=LOCAL, home=root / "mp-home", machine=name, token=token,
                     roots=watched_roots(_Settings(root)), **config)
    return run.Collector(cfg, client=client)


def counts(db) -> dict:
    with db.connect() as conn:
        return dict(conn.execute(
            "SELECT m.name, count(e.id) FROM events e JOIN machines m ON m.id = e.machine_id "
            "GROUP BY m.name").fetchall())


@pytest.fixture
def app(db, home):
    return create_app(db, token=ADMIN)


def test_two_machines_land_once_each_with_their_machine(db, home, app, tmp_path):
    _, laptop_token = tokens.create(db, None, kind="collector", machine="laptop")
    _, desk_token = tokens.create(db, None, kind="collector", machine="desk")
    client = local_client(app)
    laptop = machine(tmp_path, "laptop", client, laptop_token)
    desk = machine(tmp_path, "desk", client, desk_token)
    write_transcript(tmp_path / "laptop/claude-projects/-home-me-vnc/a.jsonl", 30,
                     session="vnc-laptop")
    write_transcript(tmp_path / "desk/claude-projects/-home-me-backup/b.jsonl", 20,
                     session="backup-desk")
    assert laptop.round()[0] == run.OK
    assert desk.round()[0] == run.OK
    assert counts(db) == {"laptop": 30, "desk": 20}
    # a second round, and a whole re-send, add nothing
    code, summary = laptop.round()
    assert code == run.OK and summary["chunks_read"] == 0
    laptop.files.clear()
    code, summary = laptop.round()
    assert code == run.OK and summary["chunks_read"] == 1 and summary["events_new"] == 0
    assert counts(db) == {"laptop": 30, "desk": 20}
    with db.connect() as conn:
        uid = conn.execute("SELECT uid FROM machines WHERE name = 'laptop'").fetchone()[0]
    assert uid == json.loads((tmp_path / "laptop/mp-home/machine.json").read_text())["uid"]


def test_every_answer_names_the_machine(db, home, app, tmp_path):
    from datetime import datetime, timezone

    from memory_platform import status as status_service
    from memory_platform.ingest import importer, machines
    from memory_platform.query import reading, search
    from memory_platform.settings import load_settings

    tokens.create(db, None, kind="collector", machine="laptop")
    laptop = machine(tmp_path, "laptop", local_client(app), ADMIN)
    write_transcript(tmp_path / "laptop/claude-projects/-p/a.jsonl", 6, session="named")
    assert laptop.round()[0] == run.OK
    # an event imported here, before and after: the local machine's
    local = tmp_path / "here.jsonl"
    write_transcript(local, 4, session="here")
    importer.import_path(db, "claude-code", local)
    me = machines.local(db, home)
    assert me.is_local and me.uid == json.loads((home / "machine.json").read_text())["uid"]
    hits = search.search(db, "turn", k=20, mode="keyword")
    assert {h.machine for h in hits} == {"laptop", me.name}
    found = reading.get_event(db, hits[0].event_id, before=1)
    assert found["event"]["machine"] == hits[0].machine
    rows = reading.timeline(db, since=datetime(2026, 1, 1, tzinfo=timezone.utc),
                            until=datetime(2027, 1, 1, tzinfo=timezone.utc))
    assert {(r["machine"], r["events"]) for r in rows} == {("laptop", 6), (me.name, 4)}
    report = status_service.report(db, load_settings())
    shown = {m["name"]: m for m in report["machines"]}
    assert shown["laptop"]["events"] == 6 and shown["laptop"]["last_collection_at"]
    assert shown[me.name]["events"] == 4 and shown[me.name]["local"]
    machines.rename(db, home, "workstation")
    machines.rename(db, home, "old-laptop", of="laptop")
    assert {h.machine for h in search.search(db, "turn", k=20, mode="keyword")} == {
        "old-laptop", "workstation"}
    assert json.loads((home / "machine.json").read_text())["name"] == "workstation"
    with pytest.raises(ValueError, match="exists already"):
        machines.rename(db, home, "workstation", of="old-laptop")
    with pytest.raises(ValueError, match="invalid machine name"):
        machines.rename(db, home, "../etc")


def test_a_grown_transcript_is_sent_only_from_its_new_part(db, home, app, tmp_path):
    client = local_client(app)
    laptop = machine(tmp_path, "laptop", client, ADMIN)
    tokens.create(db, None, kind="collector", machine="laptop")
    path = tmp_path / "laptop/claude-projects/-home-me-p/s.jsonl"
    write_transcript(path, 40, session="grow")
    laptop.round()
    first_size = path.stat().st_size
    write_transcript(path, 10, session="grow", first=40, mode="a")
    code, summary = laptop.round()
    assert code == run.OK
    assert summary["bytes_read"] == path.stat().st_size - first_size
    assert summary["events_new"] == 10
    assert counts(db) == {"laptop": 50}
    # rewritten from the start (another beginning): read again whole, replaced on the server
    write_transcript(path, 5, session="other", mode="w")
    code, summary = laptop.round()
    assert summary["bytes_read"] == path.stat().st_size and summary["events_new"] == 5


class _Away:
    """A client whose server is down until `up` is set."""

    def __init__(self, client):
        self.client, self.up, self.tries = client, False, 0

    def post(self, *args, **kwargs):
        import httpx

        self.tries += 1
        if not self.up:
            raise httpx.ConnectError("connection refused")
        return self.client.post(*args, **kwargs)


def test_server_away_then_back_drains_the_spool_exactly(db, home, app, tmp_path):
    tokens.create(db, None, kind="collector", machine="laptop")
    away = _Away(local_client(app))
    laptop = machine(tmp_path, "laptop", away, ADMIN)
    for i in range(3):
        write_transcript(tmp_path / f"laptop/claude-projects/-p/{i}.jsonl", 15,
                         session=f"away-{i}")
    code, summary = laptop.round()
    assert code == run.AWAY and "connection refused" in summary["last_error"]
    assert run.status(laptop.config.home)["spool_chunks"] == 3
    write_transcript(tmp_path / "laptop/claude-projects/-p/0.jsonl", 5, session="away-0",
                     first=15, mode="a")
    assert laptop.round()[0] == run.AWAY  # the growth waits behind the first chunks
    away.up = True
    code, summary = laptop.round()
    assert code == run.OK and summary["events_new"] == 50
    assert counts(db) == {"laptop": 50}
    assert laptop.spool.entries() == [] and laptop.spool.bytes == 0


def test_a_full_spool_says_so_and_loses_nothing(db, home, app, tmp_path):
    tokens.create(db, None, kind="collector", machine="laptop")
    away = _Away(local_client(app))
    laptop = machine(tmp_path, "laptop", away, ADMIN, spool_bytes=1500)
    for i in range(4):
        write_transcript(tmp_path / f"laptop/claude-projects/-p/{i}.jsonl", 10,
                         session=f"full-{i}")
    code, _ = laptop.round()
    assert code == run.FULL
    found = run.status(laptop.config.home)
    assert found["spool_full"] and found["exit_code"] == run.FULL
    assert "spool is full" in run.warning(laptop.config.home)
    # the next session-start hook on that machine shows it to the person
    from memory_platform.recall.hook_client import _with_collector_line

    shown = json.loads(_with_collector_line(laptop.config.home, json.dumps(
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "x"}})))
    assert "spool is full" in shown["systemMessage"]
    assert shown["hookSpecificOutput"]["additionalContext"] == "x"
    away.up = True
    for _ in range(5):  # each round drains what fits, then reads on
        code, _ = laptop.round()
        if code == run.OK:
            break
    assert code == run.OK and counts(db) == {"laptop": 40}
    assert run.warning(laptop.config.home) is None


def test_the_collector_token_reaches_only_its_machines_route(db, home, app, tmp_path):
    _, secret = tokens.create(db, None, kind="collector", machine="laptop")
    tokens.create(db, None, kind="collector", machine="desk")
    client = local_client(app)
    auth = {"Authorization": f"Bearer {secret}", "X-Memory-Platform": "1"}
    for method, path in (("GET", "/search?q=x"), ("GET", "/vault/namespaces"),
                         ("GET", "/timeline?since=2026-01-01&until=2026-02-01"),
                         ("GET", "/review"), ("GET", "/reports")):
        assert client.request(method, path, headers=auth).status_code == 403, path
    # another machine's route
    desk = machine(tmp_path, "desk", client, secret)
    write_transcript(tmp_path / "desk/claude-projects/-p/d.jsonl", 4, session="desk-x")
    code, summary = desk.round()
    assert code == run.REFUSED and "not desk's" in summary["last_error"]
    assert counts(db) == {}
    # its own, until revoked
    laptop = machine(tmp_path, "laptop", client, secret)
    write_transcript(tmp_path / "laptop/claude-projects/-p/l.jsonl", 4, session="lap-x")
    assert laptop.round()[0] == run.OK and counts(db) == {"laptop": 4}
    [row] = [t for t in tokens.list_tokens(db) if t["machine"] == "laptop"]
    tokens.revoke(db, row["id"])
    write_transcript(tmp_path / "laptop/claude-projects/-p/l.jsonl", 2, session="lap-x",
                     first=4, mode="a")
    assert laptop.round()[0] == run.REFUSED
    assert counts(db) == {"laptop": 4}
    # and a person's token may not push
    _, person = tokens.create(db, "work", kind="person")
    laptop.config.token = person
    assert laptop.round()[0] == run.REFUSED


def test_a_smaller_body_limit_splits_the_requests(db, home, tmp_path):
    import random

    tokens.create(db, None, kind="collector", machine="laptop")
    app = create_app(db, token=ADMIN, max_body_bytes=48 * 1024)
    laptop = machine(tmp_path, "laptop", local_client(app), ADMIN)
    rng = random.Random(7)
    for i in range(12):  # ~20 KB compressed each: several per 900 KB request, one per 48 KB
        write_transcript(tmp_path / f"laptop/claude-projects/-p/{i}.jsonl", 2,
                         session=f"limit-{i}")
        with (tmp_path / f"laptop/claude-projects/-p/{i}.jsonl").open("a") as fh:
            fh.write(json.dumps({"type": "note", "pad": rng.randbytes(15_000).hex()}) + "\n")
    code, summary = laptop.round()
    assert code == run.OK, summary
    # 2 turns and the padding record (kind other) per file
    assert counts(db) == {"laptop": 36} and laptop.spool.entries() == []


def test_bad_bodies_are_refused_with_their_reason(db, home, app):
    from memory_platform.collect import wire

    tokens.create(db, None, kind="collector", machine="laptop")
    client = local_client(app)
    headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": wire.CONTENT_TYPE}
    url = "/ingest/laptop/records"
    assert client.post(url, content=b"x", headers={**headers, "Content-Type":
                                                   "text/plain"}).status_code == 415
    bad = client.post(url, content=b"not gzip", headers=headers)
    assert bad.status_code == 422 and "gzip" in bad.json()["detail"]
    bomb = wire.encode({"root": "notes", "kind": "notes", "rel": "a.md", "source_path": "/a",
                        "offset": 0, "through_sha256": "0" * 64, "complete": True},
                       b"a" * (70 << 20))
    assert len(bomb) < 1 << 20
    assert "inflates past" in client.post(url, content=bomb, headers=headers).json()["detail"]
    assert client.post("/ingest/nobody/records", content=b"", headers=headers
                       ).status_code == 404
    # the app's guards hold here as everywhere: the Host check, the body limit
    assert client.post(url, content=b"", headers={**headers, "Host": "evil.example"}
                       ).status_code == 421
    assert client.post(url, content=b"x" * (2 << 20), headers=headers).status_code == 413
    # a record holding NUL is reported by line; the rest of the file is stored
    lines = [json.dumps({"type": "user", "uuid": "u1", "sessionId": "n",
                         "timestamp": "2026-03-01T09:00:00.000Z",
                         "message": {"role": "user", "content": "fine"}}),
             '{"type": "user", "uuid": "u2", "sessionId": "n", "timestamp": "2026-03-01T09:00:'
             '01.000Z", "message": {"role": "user", "content": "bad \x00 nul"}}']
    data = ("\n".join(lines) + "\n").encode()
    import hashlib

    body = wire.encode({"root": "claude-code", "kind": "claude-code", "rel": "p/n.jsonl",
                        "source_path": "/x/n.jsonl", "offset": 0, "complete": True,
                        "through_sha256": hashlib.sha256(data).hexdigest()}, data)
    answer = client.post(url, content=body, headers=headers)
    assert answer.status_code == 200, answer.text
    [chunk] = answer.json()["chunks"]
    assert chunk["status"] == "stored" and chunk["events_new"] == 1
    [error] = chunk["errors"]
    assert error["line"] == 2, error


def test_the_collector_imports_none_of_the_heavy_parts():
    code = ("import sys, memory_platform.collect.cli, memory_platform.collect.run, "
            "memory_platform.collect.scan, memory_platform.collect.push;"
            "import memory_platform.adapters as a; [a.get_adapter(k) for k in a.KINDS];"
            "heavy = ('psycopg', 'dagster', 'numpy', 'onnxruntime', 'torch', 'tokenizers', "
            "'polars', 'duckdb', 'pandas', 'pyarrow', 'fastapi', 'typer', 'sqlalchemy');"
            "print([m for m in sys.modules if m.split('.')[0] in heavy or "
            "m.startswith(('memory_platform.store', 'memory_platform.ingest', "
            "'memory_platform.query'))])")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120, check=True)
    assert found.stdout.strip() == "[]"
    # and the command's own entry (cli/__init__) goes straight there
    code = ("import sys; sys.argv = ['memory-platform', 'collect', '--status'];"
            "import memory_platform.cli as c\ntry:\n c.main()\nexcept SystemExit: pass\n"
            "print('typer' in sys.modules, 'psycopg' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=120, check=True)
    assert found.stdout.strip().splitlines()[-1] == "False False"


def test_a_pushed_file_read_again_by_a_daily_partition_keeps_its_machine(db, home, app,
                                                                         tmp_path):
    """The daily partition re-imports catalogued files by window without naming a machine
    (assets/cairn.py): a pushed file's records are still its machine's."""
    from datetime import datetime, timezone

    from memory_platform.ingest import importer

    tokens.create(db, None, kind="collector", machine="laptop")
    laptop = machine(tmp_path, "laptop", local_client(app), ADMIN)
    write_transcript(tmp_path / "laptop/claude-projects/-p/w.jsonl", 8, session="window")
    assert laptop.round()[0] == run.OK
    [mirror] = [p for p in (home / "received").rglob("*.jsonl")]
    with db.connect() as conn:
        conn.execute("DELETE FROM events")
    report = importer.import_path(
        db, None, home, window=(datetime(2026, 3, 1, tzinfo=timezone.utc),
                                datetime(2026, 3, 2, tzinfo=timezone.utc)),
        files=[("claude-code", mirror)])
    assert report.events_new == 8
    assert counts(db) == {"laptop": 8}


def test_the_service_files_name_the_collect_command():
    import plistlib

    repo = Path(__file__).resolve().parents[1]
    unit = (repo / "deploy/collector/memory-platform-collector.service").read_text()
    [start] = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert " collect --to " in start and "--machine" in start
    plist = plistlib.loads((repo / "deploy/collector/com.memory-platform.collector.plist"
                            ).read_bytes())
    assert plist["ProgramArguments"][1:3] == ["collect", "--to"]
    doc = (repo / "docs/collector.md").read_text()
    assert "deploy/collector/memory-platform-collector.service" in doc
    assert "deploy/collector/com.memory-platform.collector.plist" in doc


def test_the_commands_of_machines_and_collector_tokens(db, home):
    """`token create --kind collector`, `machine list|name` and `status` through the CLI."""
    from typer.testing import CliRunner

    from memory_platform.cli.main import app

    runner = CliRunner()
    made = runner.invoke(app, ["token", "create", "--kind", "collector", "--machine",
                               "laptop", "--json"])
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["machine"] == "laptop"
    refused = runner.invoke(app, ["token", "create", "--kind", "collector", "--namespaces",
                                  "work", "--machine", "laptop"])
    assert refused.exit_code == 1 and "no namespace" in refused.output
    refused = runner.invoke(app, ["token", "create", "--kind", "collector"])
    assert refused.exit_code == 1 and "--machine" in refused.output
    listed = json.loads(runner.invoke(app, ["machine", "list", "--json"]).output)
    assert {m["name"] for m in listed} >= {"laptop"} and sum(m["local"] for m in listed) == 1
    renamed = runner.invoke(app, ["machine", "name", "desk2", "--of", "laptop"])
    assert renamed.exit_code == 0 and "desk2" in renamed.output
    bad = runner.invoke(app, ["machine", "name", "a b"])
    assert bad.exit_code == 1 and "invalid machine name" in bad.output
    shown = runner.invoke(app, ["status"])
    assert shown.exit_code == 0 and "desk2" in shown.output and "(this one)" in shown.output
