"""What PostgreSQL cannot hold (ingest/rows.py, ingest/writer.py): records are cut to fit and
said so, or refused one by one; a refusal or an adapter failing on one file never costs the
other rows or files."""

import json
import os
from datetime import datetime, timezone

import pytest

from helpers.hostile import claude_ai_conversation, claude_code_line, dumps
from memory_platform.adapters import jsonl
from memory_platform.adapters.base import Event
from memory_platform.ingest import importer as ingest
from memory_platform.ingest import rows
from memory_platform.store import Database

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def stored(db: Database, sql: str, *args):
    with db.connect() as conn:
        return conn.execute(sql, args).fetchall()


def three_claude_files(tmp_path, middle_text: str):
    for name in ("a", "b", "c"):
        folder = tmp_path / name
        folder.mkdir()
        text = middle_text if name == "b" else "hello"
        (folder / "conversations.json").write_bytes(
            b"[" + dumps(claude_ai_conversation(name, text=text)) + b"]")


def test_a_row_postgresql_refuses_costs_only_itself(db, tmp_path, monkeypatch):
    # Any row PostgreSQL refuses used to fail the whole command: every file before and after
    # it in the same batch was lost. \u0000 stands in for the 256 MB jsonb limit here.
    real = rows.json_text
    monkeypatch.setattr(rows, "json_text", lambda value: real(value).replace(
        "REFUSE-ME", "\\u0000"))
    three_claude_files(tmp_path, "REFUSE-ME")
    report = ingest.import_path(db, "claude-ai", tmp_path)
    assert report.events_new == 3
    [error] = report.errors
    assert error.file == str(tmp_path / "b" / "conversations.json")
    assert error.line == 1 and error.record_id == "b/b-m"
    assert "PostgreSQL refused the record" in error.message and "replaced" in error.message
    [(raw, attrs, text)] = stored(db, "SELECT raw, attrs, text FROM events "
                                      "WHERE native_id = 'b/b-m'")
    assert raw["not_stored"].startswith("PostgreSQL refused") and attrs["raw_refused"] is True
    assert text == "REFUSE-ME"  # the readable text is kept
    assert stored(db, "SELECT error_count FROM source_files WHERE path = %s",
                  str(tmp_path / "b" / "conversations.json")) == [(1,)]


def test_raw_over_the_limit_is_cut_to_fit_and_said(monkeypatch):
    monkeypatch.setattr(rows, "RAW_LIMIT", 4000)
    raw = {"id": "x", "small": "keep me", "big": ["y" * 6000, {"z": "w" * 3000}], "n": 7}
    row = rows.build_row("t", Event("x", None, "user", "hi", raw, AT))
    kept = json.loads(row.values[9])
    assert len(row.values[9].encode()) <= 4000
    assert kept["small"] == "keep me" and kept["n"] == 7 and kept["id"] == "x"
    assert raw["big"][0].startswith(kept["big"][0]) and len(kept["big"][0]) < 6000
    cut = json.loads(row.values[14])["raw_cut"]
    assert cut["strings_cut"] == 2 and cut["json_bytes"] > 9000
    [note] = row.notes
    assert "2 string(s) cut" in note and "attrs.raw_cut" in note
    # the hash is of the record as read: a re-import recognises it
    assert row.values[15] == rows.build_row("t", Event("x", None, "user", "hi", raw, AT)
                                            ).values[15]


def test_text_over_the_limit_is_cut_and_said(monkeypatch):
    monkeypatch.setattr(rows, "TEXT_LIMIT", 1001)
    row = rows.build_row("t", Event("x", None, "user", "\u00e9" * 800, {}, AT))
    assert row.values[8] == "\u00e9" * 500  # 1,000 bytes: a character is never split
    assert json.loads(row.values[14])["text_cut"] == {"chars": 800, "kept_chars": 500}
    assert row.notes and "stored its first 500" in row.notes[0]


def test_slow_path_values_are_stored(db, tmp_path):
    # A lone surrogate or a 30-digit integer sends a record to json.dumps, which writes NaN
    # as NaN: jsonb refuses that, so it must become null as on orjson's path.
    path = tmp_path / "s.jsonl"
    line = json.dumps(claude_code_line(1, text="x\ud800", n=10**30, f=float("nan")))
    path.write_text(line + "\n" + json.dumps(claude_code_line(2)) + "\n", encoding="utf-8")
    report = ingest.import_path(db, "claude-code", path)
    assert report.errors == [] and report.events_new == 2
    [(raw,)] = stored(db, "SELECT raw FROM events WHERE source_line = 1")
    assert raw["f"] is None and raw["n"] == 10**30


def test_nesting_past_what_jsonb_is_given_is_refused_by_record(db, tmp_path):
    path = tmp_path / "s.jsonl"
    deep = "[" * 400 + "]" * 400
    line = json.dumps(claude_code_line(1, deep="@")).replace('"@"', deep)
    path.write_text(line + "\n" + json.dumps(claude_code_line(2)) + "\n", encoding="utf-8")
    report = ingest.import_path(db, "claude-code", path)
    assert report.events_new == 1
    [error] = report.errors
    assert error.line == 1 and "nested deeper than 254 levels" in error.message


def test_jsonl_line_over_the_limit_is_skipped_unread_and_named(db, tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_LINE", 2000)
    path = tmp_path / "s.jsonl"
    lines = [claude_code_line(1), claude_code_line(2, text="q" * 5000), claude_code_line(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    report = ingest.import_path(db, "claude-code", path)
    assert report.events_new == 2
    [error] = report.errors
    assert error.line == 2 and "over the 2000-byte limit" in error.message
    assert sorted(r[0] for r in stored(db, "SELECT source_line FROM events")) == [1, 3]
    # the skipped line counts as consumed: an unchanged re-run adds and reports nothing new
    again = ingest.import_path(db, "claude-code", path)
    assert again.events_new == 0 and again.files_unchanged == 1


def test_an_adapter_failing_on_one_file_costs_only_that_file(db, tmp_path, monkeypatch):
    three_claude_files(tmp_path, "BOOM")
    adapter = ingest.get_adapter("claude-ai")
    real = type(adapter).parse

    def parse(self, path, start_offset=0, start_line=0):
        for item in real(self, path, start_offset, start_line):
            if isinstance(item, Event) and item.text == "BOOM":
                raise TypeError("an adapter bug met by hostile input")
            yield item

    monkeypatch.setattr(type(adapter), "parse", parse)
    report = ingest.import_path(db, "claude-ai", tmp_path)
    assert report.events_new == 2
    [error] = report.errors
    assert error.file == str(tmp_path / "b" / "conversations.json")
    assert "import stopped: TypeError: an adapter bug" in error.message


@pytest.mark.parametrize("title", [{"a": 1}, 7, ["x"]])
def test_odd_conversation_fields_never_fail_the_import(db, tmp_path, title):
    record = claude_ai_conversation("a")
    record["name"] = title
    record["updated_at"] = {"odd": [1, None]}
    (tmp_path / "conversations.json").write_bytes(b"[" + dumps(record) + b"]")
    report = ingest.import_path(db, "claude-ai", tmp_path / "conversations.json")
    assert report.events_new == 1 and report.errors == []
    [(stored_title, attrs)] = stored(db, "SELECT title, attrs FROM conversations")
    assert stored_title == json.dumps(title, separators=(",", ":"))
    assert attrs["updated_at"] == {"odd": [1, None]}


def test_an_id_too_long_for_an_index_is_stored_by_its_start_and_hash(db, tmp_path):
    # A 6,000-character id used to fail the whole import: a b-tree entry (the unique key)
    # holds about 2,700 bytes once compressed. Found by test_hostile_files.
    long_id = "c" + os.urandom(3000).hex()
    path = tmp_path / "conversations.json"
    path.write_bytes(b"[" + dumps(claude_ai_conversation(long_id)) + b","
                     + dumps(claude_ai_conversation("short")) + b"]")
    report = ingest.import_path(db, "claude-ai", path)
    assert report.events_new == 2
    [error] = report.errors
    assert error.line == 1 and "stored as its start and hash" in error.message
    [(native_id, conversation)] = stored(
        db, "SELECT e.native_id, c.native_id FROM events e JOIN conversations c "
            "ON c.id = e.conversation_id WHERE e.source_line = 1")
    assert native_id.startswith(long_id[:100]) and "#sha256:" in native_id
    assert conversation == rows.key_text(long_id) and len(conversation) < 200
    again = ingest.import_path(db, "claude-ai", path)  # the same id again: nothing new
    assert (again.events_new, again.files_unchanged) == (0, 1)
