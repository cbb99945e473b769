"""The resume rule of ingest/importer.py `_plan`, at its boundaries: an append-only transcript
resumes after the last complete line it held only while the bytes before that point are
unchanged (their sha256, `prefix_sha256`, matches). An early line edited in place, the file
grown after it, must be read again in full, so the edit is kept as a revision; a file that
shrank back to exactly what was parsed resumes with nothing to read."""

import json
import os
import time
from datetime import datetime, timezone

from helpers.transcripts import cc_record, write_transcript
from memory_platform.ingest import importer as ingest


def _revisions(db) -> list[str]:
    with db.connect() as conn:
        return [r[0] for r in conn.execute("SELECT text FROM event_revisions ORDER BY 1")]


def _rewrite_line(path, index: int, old: str, new: str) -> None:
    lines = path.read_text().splitlines(keepends=True)
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new)
    path.write_text("".join(lines))


def test_an_edited_early_line_in_a_grown_file_is_read_again(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 6)
    assert ingest.import_path(db, "claude-code", path).events_new == 6
    # Same length, so every later offset still lines up: only the prefix hash tells.
    _rewrite_line(path, 1, "turn 1 of s-1", "TURN 1 of s-1")
    write_transcript(path, 2, first=6, mode="a")
    report = ingest.import_path(db, "claude-code", path)
    assert report.errors == []
    assert report.files_resumed == 0, "the prefix changed: no resume"
    assert (report.events_new, report.events_revised) == (2, 1)
    assert report.events_existing == 6  # the whole file was read again (the revised one too)
    assert _revisions(db) == ["TURN 1 of s-1: port 8001"]


def test_a_grown_file_with_its_prefix_intact_resumes(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 6)
    ingest.import_path(db, "claude-code", path)
    write_transcript(path, 2, first=6, mode="a")
    report = ingest.import_path(db, "claude-code", path)
    assert (report.files_resumed, report.events_new, report.events_existing) == (1, 2, 0)
    assert (report.events_revised, report.errors) == (0, [])
    # the catalog counts the whole file after a resume, not the resumed part
    unchanged = ingest.import_path(db, "claude-code", path)
    assert (unchanged.files_unchanged, unchanged.events_existing) == (1, 8)


def test_line_numbers_stay_those_of_the_file_after_a_resume_or_a_full_read(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 6)
    ingest.import_path(db, "claude-code", path)
    with path.open("a") as fh:
        fh.write('{"broken json\n')
    write_transcript(path, 1, first=6, mode="a")
    resumed = ingest.import_path(db, "claude-code", path)
    assert resumed.files_resumed == 1
    assert [(e.file, e.line) for e in resumed.errors] == [(str(path.resolve()), 7)]
    # an early edit: read in full, and the broken line is still line 7
    _rewrite_line(path, 0, "turn 0 of s-1", "TURN 0 of s-1")
    full = ingest.import_path(db, "claude-code", path)
    assert full.files_resumed == 0 and full.events_revised == 1
    assert [e.line for e in full.errors] == [7]


def test_an_edit_of_another_length_in_a_grown_file_is_read_again_cleanly(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 6)
    ingest.import_path(db, "claude-code", path)
    _rewrite_line(path, 2, "turn 2 of s-1", "turn 2 (edited at length) of s-1")
    write_transcript(path, 2, first=6, mode="a")
    report = ingest.import_path(db, "claude-code", path)
    assert (report.files_resumed, report.errors) == (0, [])
    assert (report.events_new, report.events_revised) == (2, 1)


def test_a_file_cut_back_to_exactly_what_was_parsed_resumes_with_nothing_to_read(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 4)
    complete = path.read_bytes()
    # A live session mid-write: the last line is incomplete, so only 4 lines were parsed.
    partial = json.dumps(cc_record(4, "s-1", datetime(2026, 3, 1, 10, tzinfo=timezone.utc)))
    with path.open("a") as fh:
        fh.write(partial[:30])
    assert ingest.import_path(db, "claude-code", path).events_new == 4
    path.write_bytes(complete)  # the partial line is gone: size == parsed bytes
    report = ingest.import_path(db, "claude-code", path)
    assert (report.files_resumed, report.events_new, report.events_existing) == (1, 0, 0)
    assert report.errors == []


def test_a_file_shorter_than_what_was_parsed_is_read_again(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    records = write_transcript(path, 6)
    ingest.import_path(db, "claude-code", path)
    path.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
    report = ingest.import_path(db, "claude-code", path)
    assert (report.files_resumed, report.events_existing, report.events_new) == (0, 3, 0)


# --- the rest of the plan: unchanged files, the report, unreadable files -------------------


def test_an_unchanged_file_is_not_read_at_all(db, tmp_path, monkeypatch):
    """Same size and mtime as its last complete import: skipped without hashing (the
    re-import speed-up BENCHMARKS.md reports)."""
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 4)
    ingest.import_path(db, "claude-code", path)

    def no_reading(*args):
        raise AssertionError("an unchanged file was read")

    monkeypatch.setattr(ingest, "hash_file", no_reading)
    again = ingest.import_path(db, "claude-code", path)
    assert (again.files_unchanged, again.events_existing, again.errors) == (1, 4, [])
    # touched (new mtime, same bytes): hashed once, found unchanged, and its new stat is
    # remembered, so the next run does not read it either
    monkeypatch.undo()
    os.utime(path, (time.time() + 100, time.time() + 100))
    touched = ingest.import_path(db, "claude-code", path)
    assert (touched.files_unchanged, touched.events_new) == (1, 0)
    monkeypatch.setattr(ingest, "hash_file", no_reading)
    after = ingest.import_path(db, "claude-code", path)
    assert (after.files_unchanged, after.errors) == (1, [])


def test_the_report_counts_each_file_once_per_source(db, tmp_path):
    for session in ("s-1", "s-2", "s-3"):
        write_transcript(tmp_path / "proj" / f"{session}.jsonl", 2, session=session)
    first = ingest.import_path(db, "claude-code", tmp_path / "proj")
    assert first.files == 3
    assert first.by_source == {"claude-code": {"files": 3, "events_new": 6,
                                               "events_existing": 0}}
    again = ingest.import_path(db, "claude-code", tmp_path / "proj")
    assert (again.files, again.files_unchanged) == (3, 3)
    assert again.by_source == {"claude-code": {"files": 3, "events_new": 0,
                                               "events_existing": 6}}
    for session in ("s-1", "s-2"):
        write_transcript(tmp_path / "proj" / f"{session}.jsonl", 1, session=session,
                         first=2, mode="a")
    grown = ingest.import_path(db, "claude-code", tmp_path / "proj")
    assert (grown.files_resumed, grown.files_unchanged, grown.events_new) == (2, 1, 2)


def test_a_file_gone_before_its_turn_is_an_error_naming_it(db, tmp_path):
    kept = tmp_path / "proj" / "kept.jsonl"
    write_transcript(kept, 2)
    gone = tmp_path / "proj" / "gone.jsonl"
    report = ingest.import_path(db, "claude-code", tmp_path / "proj",
                                files=[("claude-code", gone), ("claude-code", kept)])
    assert report.files == 2 and report.events_new == 2
    [error] = report.errors
    assert (error.file, error.line, error.record_id) == (str(gone.resolve()), None, None)
    assert error.message.startswith("cannot read file: [Errno 2]")


def test_a_path_that_cannot_be_read_is_an_error_naming_it(db, tmp_path):
    folder = tmp_path / "proj" / "not-a-file.jsonl"
    folder.mkdir(parents=True)
    report = ingest.import_path(db, "claude-code", tmp_path / "proj",
                                files=[("claude-code", folder)])
    [error] = report.errors
    assert (error.file, error.line, error.record_id) == (str(folder.resolve()), None, None)
    assert error.message.startswith("cannot read file: ") and "a folder: not read" in error.message


def test_an_unchanged_file_keeps_reporting_its_errors(db, tmp_path):
    path = tmp_path / "proj" / "s-1.jsonl"
    write_transcript(path, 3)
    with path.open("a") as fh:
        fh.write('{"type": "user", "broken json\n')
    first = ingest.import_path(db, "claude-code", path)
    [error] = first.errors
    again = ingest.import_path(db, "claude-code", path)
    assert again.files_unchanged == 1
    [repeated] = again.errors
    assert (repeated.file, repeated.line) == (str(path.resolve()), error.line) == (
        str(path.resolve()), 4)
    assert repeated.message == error.message + ingest.UNCHANGED_NOTE
    # touched, same bytes: hashed, found unchanged, and still reported
    os.utime(path, (time.time() + 100, time.time() + 100))
    touched = ingest.import_path(db, "claude-code", path)
    assert (touched.files_unchanged, touched.events_new) == (1, 0)
    assert [(e.file, e.line, e.message) for e in touched.errors] == [
        (str(path.resolve()), 4, error.message + ingest.UNCHANGED_NOTE)]
