"""The dream cycle end to end through Dagster: a real Claude Code transcript imported, dreamed
with a scripted model, deduplicated against the vault, staged into the shadow namespace only,
with checks as circuit breakers and a digest (file, metadata, webhook)."""

import json
import re
import shutil
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, HTTPServer

import dagster as dg
import pytest

from memory_platform.defs.dream.assets import DREAM_ASSETS
from memory_platform.defs.dream.checks import dream_checks
from memory_platform.defs.ingest.assets import raw_events, source_files
from memory_platform.dream import dedup, staging
from memory_platform.dream.propose import DreamAnswer, ProposedMemory
from memory_platform.llm import ScriptedProvider
from memory_platform.resources import DatabaseResource, DigestNotifier, LLMFactory
from memory_platform.store import memories as memory_store

DAY = "2025-10-12"  # the day of the sample session
KNOWN = "The user asked Claude Code to create, read, edit and delete a JOKE.md file."


class _Webhook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Webhook.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook():
    _Webhook.received = []
    server = HTTPServer(("127.0.0.1", 0), _Webhook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", _Webhook.received
    server.shutdown()


def dreamer(call) -> str:
    """Answers the dream with two memories citing the first turns shown (one restating a
    fact the vault already holds), and the dedup judge with 'new'."""
    if call.system and "Score each for durability" in call.system:
        ids = [int(i) for i in re.findall(r"^\[(\d+)\]", call.prompt, re.M)]
        if not ids:
            return DreamAnswer(memories=[]).model_dump_json()
        return DreamAnswer(memories=[
            ProposedMemory(text=KNOWN, score=7, category="project",
                           why="already known", source_event_ids=[ids[0]]),
            ProposedMemory(text="The user wants each step of a multi-step task tracked in a "
                                "todo list before it is done.", score=8, category="feedback",
                           why="how to work with this user", source_event_ids=ids[:2]),
            ProposedMemory(text="The user said hello.", score=2, category="user",
                           why="chit-chat", source_event_ids=[ids[0]]),
        ]).model_dump_json()
    return json.dumps({"relation": "new", "reason": "different facts"})


@pytest.fixture
def setup(home, samples_dir, db, monkeypatch, webhook):
    projects = home / "claude"
    monkeypatch.setenv("MEMORY_PLATFORM_CLAUDE_PROJECTS", str(projects))
    (projects / "-Users-me-joke").mkdir(parents=True)
    shutil.copy(samples_dir / "claude-code/agentlogs/crud.jsonl",
                projects / "-Users-me-joke" / "crud.jsonl")
    with db.connect() as conn:
        memory_store.add_memory(conn, namespace="personal", text=KNOWN, category="project",
                                source="hand", actor="test")
    from memory_platform.vault import memories as vault

    vault.embed_missing_memories(db)
    llm = ScriptedProvider(answers=dreamer)
    url, received = webhook
    defs = dg.Definitions(
        assets=[source_files, raw_events, *DREAM_ASSETS],
        asset_checks=dream_checks,
        # as the real jobs: the day's import, then the dream (the real ingest job also
        # embeds events for search; not what is tested here)
        jobs=[dg.define_asset_job("ingest_test_job", selection=[raw_events]),
              dg.define_asset_job("dream_test_job", selection=DREAM_ASSETS)],
        resources={"database": DatabaseResource(), "llm": LLMFactory(llm),
                   "notifier": DigestNotifier(webhook_url=url)},
    )
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([source_files], instance=instance,
                          resources={"database": DatabaseResource()}).success
    return {"defs": defs, "instance": instance, "llm": llm, "received": received}


def run_day(setup, raise_on_error=True, day=DAY):
    ingest = setup["defs"].resolve_job_def("ingest_test_job")
    assert ingest.execute_in_process(instance=setup["instance"], partition_key=day).success
    job = setup["defs"].resolve_job_def("dream_test_job")
    return job.execute_in_process(instance=setup["instance"], partition_key=day,
                                  raise_on_error=raise_on_error)


def test_dream_stages_into_the_shadow_namespace_only(setup, db, home):
    result = run_day(setup)
    assert result.success
    with db.connect() as conn:
        primary = memory_store.list_memories(conn, "personal")
        shadow = memory_store.list_memories(conn, "personal__dream", review="pending")
        verdicts = conn.execute(
            "SELECT c.text, v.verdict, v.neighbour_id, v.similarity FROM dedup_verdicts v "
            "JOIN dream_candidates c ON c.id = v.candidate_id ORDER BY c.id").fetchall()
        statuses = dict(conn.execute(
            "SELECT status, count(*) FROM dream_candidates GROUP BY status").fetchall())
        calls = conn.execute("SELECT count(*) FROM llm_calls WHERE purpose = 'dream'"
                             ).fetchone()[0]
    assert [m["text"] for m in primary] == [KNOWN]  # the dream added nothing here
    assert len(shadow) == 1 and "todo list" in shadow[0]["text"]
    assert shadow[0]["source"] == "dream" and shadow[0]["score"] == 8
    assert shadow[0]["source_event_ids"] and shadow[0]["dream_run_id"] == result.run_id
    assert statuses == {"proposed": 2, "below_threshold": 1}
    known = [v for v in verdicts if v[0] == KNOWN][0]
    assert known[1] in ("duplicate", "same_fact") and known[2] == primary[0]["id"]
    assert calls >= 1

    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"no_primary_namespace_writes": True, "staged_have_verdicts": True,
                      "candidates_all_decided": True, "dedup_rejection_rate": True}
    meta = result.asset_materializations_for_node("dream_candidates")[0].metadata
    assert meta["llm_calls"].value >= 1 and meta["proposed"].value == 2
    digest = result.asset_materializations_for_node("dream_digest")[0].metadata
    text = (home / "digests" / f"dream-{DAY}.md").read_text()
    assert "Learned (staged for review): 1" in text and "Rejected as already known: 1" in text
    assert "1 pending" in text
    assert digest["staged"].value == 1
    assert setup["received"] and setup["received"][0]["text"] == text

    # idempotent: a re-run reads nothing new, calls nothing, stages nothing twice
    calls_before = len(setup["llm"].calls)
    again = run_day(setup)
    assert again.success and len(setup["llm"].calls) == calls_before
    with db.connect() as conn:
        assert memory_store.count_memories(conn, "personal__dream", review="pending") == 1
        assert conn.execute("SELECT count(*) FROM dream_candidates").fetchone()[0] == 3


def test_a_run_without_verdicts_is_stopped_before_staging(setup, db, monkeypatch):
    monkeypatch.setattr(dedup, "run_dedup", lambda *a, **k: {"decided": 0})
    result = run_day(setup, raise_on_error=False)
    assert not result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["candidates_all_decided"] is False
    assert result.asset_materializations_for_node("shadow_memories") == []
    with db.connect() as conn:
        assert memory_store.count_memories(conn, "personal__dream", review=None) == 0


def test_a_run_writing_to_a_primary_namespace_fails_its_check(setup, db, monkeypatch):
    def broken_stage_day(database, day: date, *, run_id, embedder=None):
        with database.connect() as conn:
            anchor, _ = memory_store.add_memory(conn, namespace="personal", text="anchor",
                                                source="hand", actor="test")
            memory_store.add_memory(conn, namespace="personal", text="leaked by a bug",
                                    source="dream", actor=f"dream:{run_id}",
                                    dream_run_id=run_id, promoted_from=anchor)
        return {"staged": 1, "already_staged": 0, "memory_ids": [], "by_namespace": {}}

    monkeypatch.setattr(staging, "stage_day", broken_stage_day)
    result = run_day(setup, raise_on_error=False)
    assert not result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["no_primary_namespace_writes"] is False
    assert result.asset_materializations_for_node("dream_digest") == []


def test_a_day_with_nothing_to_dream_needs_no_llm(setup, db, monkeypatch):
    """A range run over quiet days (a backfill, the nightly schedule after a day off) must
    not stop for a missing provider: it would only be needed to send something."""
    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
    defs = dg.Definitions(
        assets=[source_files, raw_events, *DREAM_ASSETS],
        asset_checks=dream_checks,
        jobs=[dg.define_asset_job("ingest_test_job", selection=[raw_events]),
              dg.define_asset_job("dream_test_job", selection=DREAM_ASSETS)],
        resources={"database": DatabaseResource(), "llm": LLMFactory(),
                   "notifier": DigestNotifier()},
    )
    quiet = run_day({"defs": defs, "instance": setup["instance"]}, day="2025-10-11")
    assert quiet.success
    meta = quiet.asset_materializations_for_node("dream_candidates")[0].metadata
    assert meta["llm_calls"].value == 0

    # the day with turns still stops, naming the setting, with nothing half-written
    busy = run_day({"defs": defs, "instance": setup["instance"]}, raise_on_error=False)
    assert not busy.success
    failure = next(e for e in busy.all_events if e.is_step_failure)
    assert "MEMORY_PLATFORM_LLM_PROVIDER" in str(failure.step_failure_data.error)
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM dream_candidates").fetchone()[0] == 0
