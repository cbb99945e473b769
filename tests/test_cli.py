"""The CLI contract, run as a real subprocess (exit codes, --json, one-line errors)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.transcripts import write_transcript

CLI = str(Path(sys.executable).parent / "memory-platform")


def run(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=300)


def test_import_json_contract_and_idempotency(home, samples_dir):
    first = run("import", "claude-code", str(samples_dir / "claude-code"), "--json")
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert {"files", "events_new", "events_existing", "errors"} <= set(data)
    assert data["files"] == 6 and data["events_new"] > 100 and data["errors"] == []
    second = json.loads(run("import", "claude-code", str(samples_dir / "claude-code"),
                            "--json").stdout)
    assert (second["events_new"], second["events_existing"]) == (0, data["events_new"])

    status = run("status", "--json")
    assert status.returncode == 0, status.stderr
    totals = json.loads(status.stdout)
    assert totals["events"] == data["events_new"]
    assert totals["by_source"]["claude-code"]["events"] == data["events_new"]
    assert totals["by_month"] and totals["conversations"] >= 5


def test_record_errors_are_listed_with_file_and_line_and_exit_nonzero(home, tmp_path):
    path = tmp_path / "t.jsonl"
    write_transcript(path, 4)
    lines = path.read_text().splitlines()
    lines.insert(1, "{not json")
    path.write_text("\n".join(lines) + "\n")
    result = run("import", "claude-code", str(path), "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["events_new"] == 4
    [error] = data["errors"]
    assert error["file"] == str(path.resolve()) and error["line"] == 2 and error["message"]

    # The file is unchanged, but its error is not forgotten: reported again, exit 1.
    human = run("import", "claude-code", str(path))
    assert human.returncode == 1
    assert "1 file(s) unchanged" in human.stdout and "1 error(s)" in human.stdout
    assert f"{path.resolve()}:2" in human.stderr and "unchanged since" in human.stderr
    again = json.loads(run("import", "claude-code", str(path), "--json").stdout)
    [error] = again["errors"]
    assert error["line"] == 2 and error["message"].count("unchanged since") == 1

    status = json.loads(run("status", "--json").stdout)
    assert status["files_with_errors"] == [
        {"kind": "claude-code", "path": str(path.resolve()), "errors": 1,
         "last_import_at": status["files_with_errors"][0]["last_import_at"]}]

    # Fixed, the file imports clean and leaves the list.
    path.write_text("\n".join(line for line in lines if line != "{not json") + "\n")
    fixed = run("import", "claude-code", str(path), "--json")
    assert fixed.returncode == 0 and json.loads(fixed.stdout)["errors"] == []
    assert json.loads(run("status", "--json").stdout)["files_with_errors"] == []


def test_failures_are_one_clear_line(home, tmp_path):
    missing = run("import", "chatgpt", str(tmp_path / "nope.zip"))
    assert missing.returncode == 1
    assert "no such file" in missing.stderr and "Traceback" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1

    unknown = run("import", "myspace", str(tmp_path))
    assert unknown.returncode != 0 and "unknown source" in unknown.stderr

    bad_db = run("status", env_extra={
        "MEMORY_PLATFORM_DATABASE_URL": f"postgresql://x@/none?host={tmp_path}&connect_timeout=1"})
    assert bad_db.returncode == 1
    assert "cannot connect to PostgreSQL" in bad_db.stderr and "Traceback" not in bad_db.stderr
    debug = run("--debug", "status", env_extra={
        "MEMORY_PLATFORM_DATABASE_URL": f"postgresql://x@/none?host={tmp_path}&connect_timeout=1"})
    assert "Traceback" in debug.stderr


def test_status_warns_when_claude_code_folder_is_not_imported(home, tmp_path):
    projects = Path(os.environ["MEMORY_PLATFORM_CLAUDE_PROJECTS"])
    write_transcript(projects / "-home-me" / "s.jsonl", 2)
    result = run("status", "--json")
    assert result.returncode == 0
    [warning] = json.loads(result.stdout)["warnings"]
    assert "cleanupPeriodDays" in warning
    assert run("import", "claude-code", str(projects)).returncode == 0
    assert json.loads(run("status", "--json").stdout)["warnings"] == []


def test_status_shows_the_vault_backlog_and_what_is_not_dreamed(home, db):
    from datetime import datetime, timedelta, timezone

    from memory_platform.store import memories as memory_store

    projects = Path(os.environ["MEMORY_PLATFORM_CLAUDE_PROJECTS"])
    start = (datetime.now(timezone.utc) - timedelta(days=2)).replace(hour=9, minute=0)
    write_transcript(projects / "-home-me" / "s.jsonl", 4, start=start)
    assert run("import", "claude-code", str(projects)).returncode == 0
    with db.connect() as conn:
        memory_store.add_memory(conn, namespace="personal", text="Prefers tea.", actor="test")
        memory_store.add_memory(conn, namespace="personal", text="Lives in Lyon.", actor="test")
        memory_store.add_memory(conn, namespace="personal__dream", text="Reads on Sundays.",
                                source="dream", actor="dream:r1", dream_run_id="r1")
        memory_store.add_memory(conn, namespace="work", text="Deploys on Fridays.",
                                actor="test")

    data = json.loads(run("status", "--json").stdout)
    curator = {"lint_findings_open": 0, "lint_findings_open_by_kind": {},
               "curator_tombstones": 0, "curator_archives": 0, "curator_purged": 0,
               "curator_invariant_ok": True}
    assert data["vault"] == [
        {"namespace": "personal", "memories": 2, "pending_review": 1,
         "oldest_pending_days": 0.0, **curator},
        {"namespace": "work", "memories": 1, "pending_review": 0, "oldest_pending_days": None,
         **curator}]
    assert data["curator_invariant_ok"] is True
    assert data["undreamed"]["first"] == f"{start:%Y-%m-%d}"
    assert data["undreamed"]["last"] >= f"{start + timedelta(days=2):%Y-%m-%d}"  # today
    human = run("status")
    assert human.returncode == 0
    assert "vault: memories, review backlog, findings, curator cuts" in human.stdout
    assert f"not dreamed yet: {start:%Y-%m-%d}" in human.stdout


def test_small_things_read_right(home):
    """Help without type noise, one `error:` style everywhere, singular nouns, ISO 8601
    timestamps in --json, and a sentence (not a dict) from `embed`."""
    assert "<bool>" not in run("--help").stdout + run("vault", "list", "--help").stdout

    bad = run("dream", "--date", "2026-13-01")
    assert bad.returncode == 1
    assert bad.stderr.strip() == "error: --date '2026-13-01' is not a date like 2026-03-01"

    assert run("token", "create", "--kind", "agent", "--namespaces", "work").returncode == 0
    assert "total: 1 token (1 live)" in run("token", "list").stdout

    assert run("vault", "add", "work", "Deploys go out on Fridays.").returncode == 0
    [memory] = json.loads(run("vault", "list", "work", "--json").stdout)["memories"]
    assert "T" in memory["created_at"] and " " not in memory["created_at"]

    # Nothing imported: search by meaning has nothing to search, and `embed` says why
    # instead of "embedded 0 events" (issue 22).
    embedded = run("embed")
    assert embedded.returncode == 0, embedded.stderr
    assert embedded.stdout.startswith("nothing to embed: no event has text yet"), \
        embedded.stdout
    assert "embedded 0" not in embedded.stdout
    stats = json.loads(run("embed", "--json").stdout)
    assert (stats["events"], stats["with_vectors"], stats["without_vectors"]) == (0, 0, 0)


def test_vault_add_keeps_the_vault_rules_on_the_cli(home):
    """The CLI writes through the same service as REST and MCP: nothing but the dream writes
    into <ns>__dream, and no credential enters the vault."""
    dream = run("vault", "add", "work__dream", "Planted by hand.")
    assert dream.returncode == 1 and "holds the dream's output" in dream.stderr
    secret = run("vault", "add", "work", "The key is ghp_" + "a1B2c3D4" * 5)
    assert secret.returncode == 1 and "credential" in secret.stderr
    category = run("vault", "add", "work", "Fine text.", "--category", "misc")
    assert category.returncode == 1 and "unknown category" in category.stderr
    assert json.loads(run("vault", "list", "work", "--json").stdout)["total"] == 0 \
        if run("vault", "list", "work", "--json").returncode == 0 else True
