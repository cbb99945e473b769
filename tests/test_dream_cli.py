"""`memory-platform dream` as a subprocess: the real Anthropic SDK against a local stub of the
Messages API, the run recorded on the Dagster instance the UI reads, output in the shadow
namespace only; and the one-line error when no LLM is configured."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg

from helpers.vendor_stubs import ANTHROPIC_PATH, VendorStub
from memory_platform.dream.propose import DreamAnswer, ProposedMemory
from memory_platform.ingest import importer as ingest
from memory_platform.store import memories as memory_store

CLI = str(Path(sys.executable).parent / "memory-platform")
DAY = "2025-10-12"


def run(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=600)


def test_dream_cli_through_the_anthropic_sdk(home, samples_dir, db, monkeypatch):
    projects = home / "claude" / "-Users-me-joke"
    projects.mkdir(parents=True)
    shutil.copy(samples_dir / "claude-code/agentlogs/crud.jsonl", projects / "crud.jsonl")
    monkeypatch.setenv("MEMORY_PLATFORM_CLAUDE_PROJECTS", str(home / "claude"))
    ingest.import_path(db, "claude-code", projects)  # so the scripted answer can cite ids
    with db.connect() as conn:
        first_id = conn.execute("SELECT min(id) FROM events WHERE role = 'user' "
                                "AND kind = 'message'").fetchone()[0]
    answer = DreamAnswer(memories=[ProposedMemory(
        text="The user tests Claude Code with a JOKE.md create/read/edit/delete exercise.",
        score=7, category="project", why="recurring test routine",
        source_event_ids=[first_id])])
    with VendorStub() as stub:
        stub.anthropic_text(answer.model_dump_json(), input_tokens=900, output_tokens=80)
        env = {"MEMORY_PLATFORM_LLM_PROVIDER": "anthropic",
               "MEMORY_PLATFORM_LLM_BASE_URL": stub.anthropic_base_url,
               "ANTHROPIC_API_KEY": "sk-ant-test-key"}
        done = run("dream", "--date", DAY, "--json", env=env)
        assert done.returncode == 0, done.stderr
        [request] = stub.requests_to(ANTHROPIC_PATH)
    outcome = json.loads(done.stdout)
    assert outcome["candidates"] == {"proposed": 1} and outcome["staged"] == 1
    assert "Score each for durability" in request.body["system"]
    assert f"[{first_id}]" in request.body["messages"][0]["content"]
    with db.connect() as conn:
        assert memory_store.count_memories(conn, "personal") == 0
        [staged] = memory_store.list_memories(conn, "personal__dream", review="pending")
        call = conn.execute("SELECT provider, input_tokens, run_id FROM llm_calls").fetchone()
    assert "JOKE.md" in staged["text"]
    assert call == ("anthropic", 900, outcome["run_id"])
    assert Path(outcome["digest"]).read_text().startswith(f"# Dream digest {DAY}")
    # the run is on the instance `dagster dev` shows
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    run_record = instance.get_run_by_id(outcome["run_id"])
    assert run_record is not None and run_record.job_name == "dream_job"
    assert run_record.tags["memory-platform/trigger"] == "cli"

    # nothing left to dream: said plainly, no run
    again = run("dream", "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["run_id"] is None


def test_dream_cli_without_an_llm_names_the_settings(home):
    env = {k: "" for k in ("MEMORY_PLATFORM_LLM_PROVIDER", "ANTHROPIC_API_KEY")}
    done = run("dream", "--date", DAY, env=env)
    assert done.returncode == 1
    assert "MEMORY_PLATFORM_LLM_PROVIDER" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3
