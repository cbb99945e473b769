import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memory_platform.adapters.base import Conversation, Event, ParseIssue
from memory_platform.adapters.notes import adapter


def split(items):
    events = [i for i in items if isinstance(i, Event)]
    convs = [i for i in items if isinstance(i, Conversation)]
    issues = [i for i in items if isinstance(i, ParseIssue)]
    return events, convs, issues


def parse(path):
    items = list(adapter.parse(Path(path)))
    ids = [e.native_id for e in items if isinstance(e, Event)]
    assert len(ids) == len(set(ids))
    for event in items:
        if isinstance(event, Event):
            assert event.occurred_at.utcoffset() == timedelta(0)
            assert event.role == "user" and event.kind == "message" and event.author is None
            assert "\x00" not in event.text
            assert event.conversation_id == str(Path(path).resolve())
    return items


def note(tmp_path, name, content, mtime=None):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


MTIME = datetime(2025, 5, 4, 3, 2, 1, tzinfo=timezone.utc).timestamp()


def test_real_markdown_file_is_split_without_loss(samples_dir):
    # An excerpt of aider's real chat log (tests/data/samples/SOURCES.md): plain markdown with
    # 7 "# aider chat started" headings; the one at line 1667 sits after an LLM reply that
    # never closed its ``` fence, so (as in CommonMark) it is code, as are two "#    pip-compile"
    # lines at 2657 and 2666 (inside a fence), leaving 6 of those plus 18 other top-level
    # headings + a preamble
    path = samples_dir / "aider/chat-history.md"
    events, convs, issues = split(parse(path))
    assert issues == []
    assert len(convs) == 1 and len(events) == 25
    text = path.read_text(encoding="utf-8")
    assert "".join(e.text for e in events) == text  # every character is in some section
    assert events[0].native_id.endswith("#0") and events[0].raw["heading"] is None
    assert events[1].native_id.endswith("#1") and events[1].line == 94
    assert events[1].text.startswith("# aider chat started at 2024-08-05 19:33:02\n")
    assert sum(1 for e in events if (e.raw["heading"] or "").startswith("aider chat")) == 6
    assert 1667 not in {e.line for e in events}  # the heading inside the unclosed fence
    assert all(e.attrs["time_source"] == "mtime" for e in events)


def test_sections_front_matter_and_fences(tmp_path):
    path = note(tmp_path, "journal.md", (
        "---\ntitle: Journal\ndate: 2024-01-05\ntags: [a, b]\n---\n"
        "intro line\n"
        "# Monday\ntext\n```bash\n# a shell comment, not a heading\n```\n"
        "## sub heading stays inside\n"
        "# Tuesday\nmore\n"
    ))
    events, convs, issues = split(parse(path))
    assert issues == []
    resolved = str(path.resolve())
    assert convs[0].native_id == resolved and convs[0].title == "Journal"
    assert [e.native_id for e in events] == [f"{resolved}#0", f"{resolved}#1", f"{resolved}#2"]
    assert [e.line for e in events] == [6, 7, 13]
    assert events[0].text == "intro line\n"
    assert events[1].text == (
        "# Monday\ntext\n```bash\n# a shell comment, not a heading\n```\n"
        "## sub heading stays inside\n"
    )
    assert events[2].text == "# Tuesday\nmore\n"
    assert [e.raw["heading"] for e in events] == [None, "Monday", "Tuesday"]
    assert events[1].raw == {
        "path": resolved, "section": 1, "heading": "Monday",
        "front_matter": {"title": "Journal", "date": "2024-01-05", "tags": ["a", "b"]},
    }
    assert all(e.occurred_at.isoformat() == "2024-01-05T00:00:00+00:00" for e in events)
    assert all(e.attrs["time_source"] == "front_matter" for e in events)


def test_single_heading_is_one_event_and_datetime_front_matter(tmp_path):
    path = note(tmp_path, "one.markdown",
                "---\ndate: 2024-02-03T04:05:06+02:00\n---\n# Only\nbody\n", MTIME)
    events, convs, _ = split(parse(path))
    assert len(events) == 1 and events[0].native_id.endswith("#0")
    assert events[0].text == "# Only\nbody\n" and events[0].line == 4
    assert events[0].occurred_at.isoformat() == "2024-02-03T02:05:06+00:00"
    assert convs[0].title == "Only"


def test_no_front_matter_uses_mtime(tmp_path):
    path = note(tmp_path, "plain.md", "just text\n", MTIME)
    events, convs, _ = split(parse(path))
    assert events[0].occurred_at.timestamp() == MTIME
    assert events[0].attrs["time_source"] == "mtime" and events[0].line == 1
    assert convs[0].title == "plain"


def test_invalid_front_matter_is_an_issue_and_still_imported(tmp_path):
    path = note(tmp_path, "bad.md", "---\ntitle: ok\ndate: [unclosed\n---\n# Body\n", MTIME)
    events, _, issues = split(parse(path))
    assert len(issues) == 1 and issues[0].file == str(path)
    assert issues[0].line is not None and "front matter" in issues[0].message
    assert len(events) == 1 and events[0].occurred_at.timestamp() == MTIME
    assert events[0].attrs["front_matter_invalid"] is True


def test_unreadable_and_future_dates_fall_back_to_mtime(tmp_path):
    unreadable = note(tmp_path, "u.md", "---\ndate: someday\n---\nx\n", MTIME)
    future = note(tmp_path, "f.md", "---\ndate: 2999-01-01\n---\nx\n", MTIME)
    for path, word in ((unreadable, "unreadable"), (future, "future")):
        events, _, issues = split(parse(path))
        assert len(issues) == 1 and word in issues[0].message
        assert events[0].occurred_at.timestamp() == MTIME


def test_future_mtime_skips_the_note(tmp_path):
    later = datetime(2999, 1, 1, tzinfo=timezone.utc).timestamp()
    path = note(tmp_path, "late.md", "x\n", later)
    items = parse(path)
    assert len(items) == 1 and "future" in items[0].message


def test_mixed_encodings_and_nul(tmp_path):
    path = note(tmp_path, "mixed.md", "caf\u00e9 utf8\n".encode() + b"caf\xe9 latin1\x00\n")
    events, _, issues = split(parse(path))
    [issue] = issues  # kept, and said so
    assert "U+FFFD" in issue.message
    assert events[0].text == "caf\u00e9 utf8\ncaf\ufffd latin1\ufffd\n"
    assert events[0].attrs["decode_errors"] is True
    clean = note(tmp_path, "clean.md", "\ufeffcaf\u00e9\n")
    events, _, _ = split(parse(clean))
    assert events[0].text == "caf\u00e9\n" and "decode_errors" not in events[0].attrs
    utf16 = note(tmp_path, "win.md", "\ufeff# A\nx\n# B\ny\n".encode("utf-16-le"))
    events, _, _ = split(parse(utf16))
    assert [e.raw["heading"] for e in events] == ["A", "B"]


def test_empty_and_blank_files(tmp_path):
    empty = note(tmp_path, "empty.md", b"")
    assert [i.message for i in parse(empty)] == ["empty file"]
    only_front = note(tmp_path, "meta.md", "---\ntitle: t\n---\n")
    events, _, _ = split(parse(only_front))
    assert events[0].text == "" and events[0].attrs["empty_reason"] == "front matter only"


def test_crlf_line_endings(tmp_path):
    path = note(tmp_path, "win.md", "---\r\ndate: 2024-01-01\r\n---\r\n# A\r\nx\r\n# B\r\ny\r\n")
    events, _, issues = split(parse(path))
    assert issues == [] and [e.line for e in events] == [4, 6]
    assert events[0].text == "# A\r\nx\r\n"
    assert events[0].occurred_at.year == 2024


def test_discover(tmp_path):
    a = note(tmp_path, "b/a.md", "x")
    b = note(tmp_path, "a.markdown", "x")
    note(tmp_path, "c.txt", "x")
    note(tmp_path, ".obsidian/workspace.md", "x")
    note(tmp_path, ".git/x.md", "x")
    upper = note(tmp_path, "Z.MD", "x")
    assert list(adapter.discover(tmp_path)) == sorted([a, b, upper])
    assert list(adapter.discover(a)) == [a]
