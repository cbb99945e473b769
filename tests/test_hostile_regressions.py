"""Regressions for the hostile export files of issue 11 (points 1, 5, 6 and 12, and what the
property-based suite in test_hostile_files.py found): one bad record is reported with its index
and costs only itself; the rest of the file and the other files import; memory and time stay
bounded. Each of these failed before its fix."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.hostile import (
    array,
    chatgpt_conversation,
    claude_ai_conversation,
    deep,
    dumps,
    peak_rss_mb,
    with_raw,
)
from memory_platform.adapters import get_adapter
from memory_platform.adapters.base import Event, ParseIssue
from memory_platform.ingest import importer as ingest
from memory_platform.store import Database

CLI = str(Path(sys.executable).parent / "memory-platform")
BUILDERS = {"claude-ai": claude_ai_conversation, "chatgpt": chatgpt_conversation}


def conversations(db: Database) -> set[str]:
    with db.connect() as conn:
        rows = conn.execute("SELECT DISTINCT c.native_id FROM events e "
                            "JOIN conversations c ON c.id = e.conversation_id").fetchall()
    return {row[0] for row in rows}


def three_records(kind: str, middle: bytes, key: str) -> bytes:
    """Conversations a, b, c; b's message holds `middle` (raw JSON bytes) under `key`."""
    build = BUILDERS[kind]
    return array([dumps(build("a")), with_raw(build("b", **{key: f"@@{key}@@"}), key, middle),
                  dumps(build("c"))])


# --- 1. deep nesting -------------------------------------------------------------------

@pytest.mark.parametrize("kind,depth", [("claude-ai", 1_000), ("chatgpt", 2_000)])
def test_deeply_nested_record_is_reported_and_the_rest_imports(db, tmp_path, kind, depth):
    path = tmp_path / "conversations.json"
    path.write_bytes(three_records(kind, deep(depth), "deep"))
    report = ingest.import_path(db, kind, path)
    assert conversations(db) == {"a", "c"}
    [error] = report.errors
    assert error.file == str(path) and error.line == 2
    assert "nested deeper than" in error.message


@pytest.mark.parametrize("depth", [30_000, 1_000_000])
def test_deep_nesting_keeps_memory_bounded(tmp_path, depth):
    # Before: 30,000 levels took 2.2 GB, a million levels (a 2 MB file) 21 GB.
    path = tmp_path / "conversations.json"
    path.write_bytes(three_records("claude-ai", deep(depth), "deep"))
    code = (
        "from pathlib import Path\n"
        "from memory_platform.adapters import get_adapter\n"
        "from memory_platform.adapters.base import Event, ParseIssue\n"
        f"items = list(get_adapter('claude-ai').parse(Path({str(path)!r})))\n"
        "print('events', sum(isinstance(i, Event) for i in items))\n"
        "print('issues', [(i.line, i.message[:40]) for i in items if isinstance(i, ParseIssue)])\n"
    )
    peak, out = peak_rss_mb(code, limit_mb=2000)
    assert "events 2" in out and "(2, 'record 2: nested deeper than" in out, out
    assert peak < 250, f"peak RSS {peak:.0f} MB"


# --- 5. a record PostgreSQL cannot hold ------------------------------------------------

def test_record_over_the_jsonb_limit_is_cut_reported_and_other_files_import(db, tmp_path):
    # One 300 MB string: over PostgreSQL's 256 MB jsonb limit, which used to fail the whole
    # command and lose the good files before and after it.
    for name in ("a", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "conversations.json").write_bytes(array([dumps(
            claude_ai_conversation(name))]))
    (tmp_path / "b").mkdir()
    big = tmp_path / "b" / "conversations.json"
    size = 300 << 20
    with big.open("wb") as out:
        head, tail = dumps(claude_ai_conversation("b", text="@@")).rsplit(b"@@", 1)
        out.write(b"[" + head)
        for _ in range(size >> 20):
            out.write(b"x" * (1 << 20))
        out.write(tail + b"]")
    report = ingest.import_path(db, "claude-ai", tmp_path)
    assert conversations(db) == {"a", "b", "c"}
    [error] = report.errors
    assert error.file == str(big) and error.line == 1 and "was cut" in error.message
    with db.connect() as conn:
        kept, raw_kept = conn.execute(
            "SELECT length(text), length(raw->'content'->0->>'text') FROM events "
            "WHERE native_id = 'b/b-m'"
        ).fetchone()
    assert 0 < kept < size and 0 < raw_kept < size


# --- 6. long strings parse in linear time ----------------------------------------------

def test_long_strings_parse_in_linear_time(tmp_path):
    # Before: 8/16/32/64 MB -> 1.5/3.1/11/39 s, quadratic (yajl re-lexes a string split
    # across reads from its start on every read).
    seconds = {}
    for megabytes in (8, 64):
        path = tmp_path / f"{megabytes}" / "conversations.json"
        path.parent.mkdir()
        path.write_bytes(array([dumps(claude_ai_conversation("a", text="y" * (megabytes << 20))),
                                dumps(claude_ai_conversation("c"))]))
        start = time.process_time()
        items = list(get_adapter("claude-ai").parse(path))
        seconds[megabytes] = time.process_time() - start
        events = [i for i in items if isinstance(i, Event)]
        assert [len(e.text) for e in events] == [megabytes << 20, 5]
        assert not [i for i in items if isinstance(i, ParseIssue)]
    assert seconds[64] < 24 * max(seconds[8], 0.02), seconds


# --- 12. invalid UTF-8 inside a record --------------------------------------------------

def test_invalid_utf8_in_a_claude_ai_record_is_reported_and_the_file_goes_on(db, tmp_path):
    path = tmp_path / "conversations.json"
    first = dumps(claude_ai_conversation("a", text="caf\u00e9 XX")).replace(b"XX", b"\xff\xfe")
    path.write_bytes(array([first, dumps(claude_ai_conversation("c"))]))
    report = ingest.import_path(db, "claude-ai", path)
    assert conversations(db) == {"a", "c"}
    [error] = report.errors
    assert error.line == 1 and "invalid UTF-8" in error.message
    with db.connect() as conn:
        [text] = conn.execute("SELECT text FROM events WHERE native_id = 'a/a-m'").fetchone()
    assert text == "caf\u00e9 \ufffd\ufffd"


# --- the CLI: exit code 1, the record named, the rest imported ----------------------------

def test_cli_reports_the_bad_record_and_exits_1(home, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(three_records("claude-ai", deep(5_000), "deep"))
    done = subprocess.run([CLI, "import", "claude-ai", str(path), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["events_new"] == 2
    [error] = data["errors"]
    assert error["line"] == 2 and "nested deeper than" in error["message"]


# --- found while building the suite: a YAML bomb in a note's front matter ----------------

def test_yaml_alias_bomb_in_front_matter_is_refused_quickly(tmp_path):
    # Nine lines of aliases expand to 9^9 values: the note took 164 s and 2 GB, then failed.
    lines = ["---", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    path = tmp_path / "bomb.md"
    path.write_text("\n".join([*lines, "---", "# hello", "body", ""]), encoding="utf-8")
    start = time.process_time()
    items = list(get_adapter("notes").parse(path))
    assert time.process_time() - start < 2
    [issue] = [i for i in items if isinstance(i, ParseIssue)]
    assert "expands to more than" in issue.message
    [event] = [i for i in items if isinstance(i, Event)]
    assert event.text == "# hello\nbody\n" and event.raw["front_matter"] == {}


def test_bench_hostile_runs_and_deep_nesting_stays_flat(tmp_path):
    out = tmp_path / "hostile.json"
    done = subprocess.run([CLI, "bench", "hostile", "--parts", "deep", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    cases = json.loads(out.read_text())["parts"]["deep"]
    assert [c["depth"] for c in cases] == [1_000, 10_000, 100_000, 1_000_000]
    assert all(c["events"] == 2 and c["issues"] == 1 for c in cases), cases
    peaks = [c["peak_rss_mb"] for c in cases]
    assert max(peaks) - min(peaks) < 50, peaks  # flat in depth (was 2.2 GB at 30,000)
