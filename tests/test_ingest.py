"""The import pipeline against a real PostgreSQL: idempotency, resume, bad input, crashes."""

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers.transcripts import cc_record, write_transcript
from memory_platform.ingest import importer as ingest
from memory_platform.ingest.report import ImportFailed
from memory_platform.store import Database

SAMPLE_IMPORTS = [
    ("claude-code", "claude-code"),
    ("codex", "codex-cli/images.jsonl"),
    ("chatgpt", "chatgpt"),
    ("claude-ai", "claude-ai"),
    ("gemini", "gemini-takeout"),
]


def count(db: Database, sql: str = "SELECT count(*) FROM events", *args) -> int:
    with db.connect() as conn:
        return conn.execute(sql, args).fetchone()[0]


def snapshot(db: Database) -> set[tuple]:
    with db.connect() as conn:
        return set(conn.execute(
            "SELECT source, native_id, content_hash, role, kind, occurred_at, text, raw::text, "
            "parent_native_id, on_active_branch FROM events"
        ).fetchall())


@pytest.mark.parametrize("kind,folder", SAMPLE_IMPORTS)
def test_real_samples_import_idempotently(db, samples_dir, kind, folder):
    path = samples_dir / folder
    first = ingest.import_path(db, kind, path)
    assert first.files >= 1
    assert first.events_new > 0
    stored = count(db)
    assert stored == first.events_new
    before = snapshot(db)
    for _ in range(2):
        again = ingest.import_path(db, kind, path)
        assert again.events_new == 0
        assert again.files_unchanged == again.files
        assert again.events_existing == first.events_new
    assert count(db) == stored
    assert snapshot(db) == before
    # Every stored event points at its file and a conversation (or is conversation-less meta).
    assert count(db, "SELECT count(*) FROM events WHERE source_file_id IS NULL") == 0


def test_all_samples_share_one_database(db, samples_dir):
    totals = {}
    for kind, folder in SAMPLE_IMPORTS:
        totals[kind] = ingest.import_path(db, kind, samples_dir / folder).events_new
    with db.connect() as conn:
        by_source = dict(conn.execute("SELECT source, count(*) FROM events GROUP BY source"))
    assert by_source == {k: v for k, v in totals.items() if v}


def test_grown_transcript_adds_only_new_turns(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 10)
    assert ingest.import_path(db, "claude-code", path).events_new == 10

    write_transcript(path, 5, first=10, mode="a")
    # A live session mid-write: the last line is incomplete and must wait for the next run.
    partial = json.dumps(cc_record(15, "s-1", datetime(2026, 3, 1, 10, tzinfo=timezone.utc)))
    with path.open("a") as fh:
        fh.write(partial[:40])
    grown = ingest.import_path(db, "claude-code", path)
    assert (grown.events_new, grown.files_resumed, grown.errors) == (5, 1, [])
    assert grown.events_existing == 0, "a resumed import must not re-read the old lines"

    with path.open("a") as fh:
        fh.write(partial[40:] + "\n")
    finished = ingest.import_path(db, "claude-code", path)
    assert (finished.events_new, finished.errors) == (1, [])
    assert count(db) == 16
    assert ingest.import_path(db, "claude-code", path).events_new == 0


def test_touched_file_with_same_content_is_not_reparsed(db, tmp_path):
    path = tmp_path / "s.jsonl"
    write_transcript(path, 4)
    ingest.import_path(db, "claude-code", path)
    os.utime(path, (time.time() + 100, time.time() + 100))
    again = ingest.import_path(db, "claude-code", path)
    assert (again.files_unchanged, again.events_new, again.events_existing) == (1, 0, 4)


def test_rewritten_record_is_kept_as_a_revision(db, tmp_path):
    path = tmp_path / "s.jsonl"
    records = write_transcript(path, 4)
    ingest.import_path(db, "claude-code", path)
    records[1]["message"]["content"][0]["text"] = "edited answer"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    report = ingest.import_path(db, "claude-code", path)
    assert (report.events_new, report.events_revised) == (0, 1)
    with db.connect() as conn:
        original = conn.execute(
            "SELECT text FROM events WHERE native_id = %s", (records[1]["uuid"],)).fetchone()[0]
        revision = conn.execute("SELECT text FROM event_revisions").fetchone()[0]
    assert "edited" not in original and revision == "edited answer"


def test_malformed_line_names_file_and_line_and_the_rest_imports(db, tmp_path):
    path = tmp_path / "s.jsonl"
    records = write_transcript(path, 6)
    lines = path.read_text().splitlines()
    lines.insert(3, '{"type": "user", "broken json')
    path.write_text("\n".join(lines) + "\n")
    other = tmp_path / "other.jsonl"
    write_transcript(other, 3, session="s-2")
    report = ingest.import_path(db, "claude-code", tmp_path)
    assert report.events_new == 9
    assert len(report.errors) == 1
    error = report.errors[0]
    assert error.file == str(path.resolve()) and error.line == 4
    assert count(db) == 9
    with db.connect() as conn:
        logged = conn.execute("SELECT file, line FROM import_errors").fetchall()
    assert logged == [(str(path.resolve()), 4)]
    assert records  # the good records are the ones stored
    assert count(db, "SELECT count(*) FROM events WHERE native_id = %s", records[3]["uuid"]) == 1


def test_wrong_adapter_is_a_clear_error_and_stores_nothing(db, samples_dir):
    report = ingest.import_path(db, "claude-ai", samples_dir / "chatgpt" / "conversations.json")
    assert report.events_new == 0
    assert report.errors, "a ChatGPT export handed to the claude.ai adapter must be reported"
    assert "claude.ai" in report.errors[0].message or "ChatGPT" in report.errors[0].message
    assert count(db) == 0


def test_empty_file_and_missing_path(db, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    report = ingest.import_path(db, "claude-code", empty)
    assert (report.events_new, report.errors) == (0, [])
    with pytest.raises(ImportFailed, match="no such file"):
        ingest.import_path(db, "claude-code", tmp_path / "nope")


def test_nul_and_lone_surrogates_are_stored_not_lost(db, tmp_path):
    path = tmp_path / "s.jsonl"
    rec = cc_record(0, "s-9", datetime(2026, 3, 2, tzinfo=timezone.utc),
                    text="before\u0000after \ud800 end")
    path.write_text(json.dumps(rec) + "\n")
    report = ingest.import_path(db, "claude-code", path)
    assert (report.events_new, report.errors) == (1, [])
    with db.connect() as conn:
        text = conn.execute("SELECT text FROM events").fetchone()[0]
    assert text.startswith("before") and "after" in text and "\x00" not in text


def test_a_window_import_counts_as_an_import_for_status(db, tmp_path):
    """`up` and the sensor import by daily window, never the whole file at once: status
    must not then say the folder "has not been imported (never)"."""
    from memory_platform.ingest import catalog

    write_transcript(tmp_path / "s.jsonl", 48, step=timedelta(hours=1))
    assert catalog.last_import_under(db, tmp_path.resolve()) is None
    start = datetime(2026, 3, 2, tzinfo=timezone.utc)
    ingest.import_path(db, "claude-code", tmp_path, window=(start, start + timedelta(days=1)))
    last = catalog.last_import_under(db, tmp_path.resolve())
    assert last is not None and last > datetime.now(timezone.utc) - timedelta(minutes=5)


def test_same_record_in_two_files_is_stored_once(db, tmp_path):
    records = write_transcript(tmp_path / "a.jsonl", 5)
    # A resumed session copies earlier records (same uuids) into a new file.
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    report = ingest.import_path(db, "claude-code", tmp_path)
    assert (report.events_new, report.events_existing) == (5, 3)


def test_window_import_writes_only_that_window(db, tmp_path):
    path = tmp_path / "s.jsonl"
    write_transcript(path, 48, step=timedelta(hours=1))  # two days from 2026-03-01 09:00
    start = datetime(2026, 3, 2, tzinfo=timezone.utc)
    report = ingest.import_path(db, "claude-code", path, window=(start, start + timedelta(days=1)))
    assert report.events_new == 24 and report.events_outside_window == 24
    assert count(db, "SELECT count(*) FROM events WHERE occurred_at < %s", start) == 0
    # A windowed run does not claim the file is imported: the full import still reads it.
    full = ingest.import_path(db, "claude-code", path)
    assert (full.files_unchanged, full.events_new, full.events_existing) == (0, 24, 24)


def test_inbox_sniffs_formats(db, samples_dir, tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for src in ("chatgpt/conversations.json", "claude-ai/conversations.json"):
        target = inbox / src.replace("/", "-")
        target.write_bytes((samples_dir / src).read_bytes())
    (inbox / "notes.txt").write_text("not an export")
    report = ingest.import_path(db, None, inbox)
    assert set(report.by_source) == {"chatgpt", "claude-ai"}
    assert any("notes.txt" in s for s in report.skipped)


CRASH_SCRIPT = """
import sys
from pathlib import Path
from memory_platform.ingest import importer as ingest
from memory_platform.ingest import writer
from memory_platform.store import Database
writer.BATCH_EVENTS = 1000
ingest.import_path(Database(url=sys.argv[1]), "claude-code", Path(sys.argv[2]))
"""


def test_sigkill_mid_import_then_rerun_equals_clean_import(db, tmp_path, pg_admin_url):
    import psycopg
    from psycopg.conninfo import make_conninfo

    path = tmp_path / "big.jsonl"
    write_transcript(path, 60000, step=timedelta(seconds=1))
    url = db.url()
    with db.connect():
        pass  # migrate before the child starts
    child = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, url, str(path)],
                             cwd=Path(__file__).parents[1])
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and child.poll() is None:
        stored = count(db)
        if stored >= 3000:
            break
        time.sleep(0.02)
    assert child.poll() is None, "the import finished before it could be killed"
    child.send_signal(signal.SIGKILL)
    child.wait()
    partial = count(db)
    assert 0 < partial < 60000
    with db.connect() as conn:  # the interrupted file is not marked as imported
        assert conn.execute("SELECT imported_sha256 FROM source_files").fetchone()[0] is None

    rerun = ingest.import_path(db, "claude-code", path)
    assert rerun.events_new == 60000 - partial and rerun.errors == []

    clean_name = "clean_" + os.urandom(4).hex()
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{clean_name}"')
    try:
        clean = Database(url=make_conninfo(pg_admin_url, dbname=clean_name))
        ingest.import_path(clean, "claude-code", path)
        assert snapshot(clean) == snapshot(db)
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{clean_name}" WITH (FORCE)')


def test_synthetic_history_round_trips_through_every_adapter(db, tmp_path):
    from memory_platform import synthetic

    manifest = synthetic.generate_history(tmp_path / "h", 3000, seed=3)
    report = ingest.import_path(db, None, tmp_path / "h")
    assert report.errors == []
    assert report.events_new + report.events_existing == manifest["events"]
    assert {k: v["events_new"] + v["events_existing"] for k, v in report.by_source.items()} == {
        k: v for k, v in manifest["by_source"].items() if v}
    # identical records (Claude Code repeats summary lines) are stored once, nothing else is
    assert count(db) >= manifest["events"] - manifest["by_source"]["claude-code"] // 100
