import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_platform.adapters.base import Checkpoint, Conversation, Event, ParseIssue
from memory_platform.adapters.claude_code import adapter

SID = "11111111-2222-3333-4444-555555555555"


def run(path: Path, start_offset: int = 0, start_line: int = 0) -> dict[str, Any]:
    items = list(adapter.parse(path, start_offset, start_line))
    assert items and isinstance(items[-1], Checkpoint)
    assert sum(isinstance(i, Checkpoint) for i in items) == 1
    return {
        "items": items,
        "events": [i for i in items if isinstance(i, Event)],
        "issues": [i for i in items if isinstance(i, ParseIssue)],
        "convs": [i for i in items if isinstance(i, Conversation)],
        "checkpoint": items[-1],
    }


def rec(uuid: str, parent: str | None, rtype: str = "user", text: str = "hi", **extra: Any) -> dict:
    """A minimal user/assistant record in the Claude Code envelope."""
    base: dict[str, Any] = {
        "type": rtype,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "cwd": "/home/me/proj",
        "gitBranch": "main",
        "version": "2.1.3",
        "isSidechain": False,
        "timestamp": "2025-10-10T10:00:00.000Z",
    }
    if rtype == "assistant":
        base["message"] = {
            "model": "claude-x",
            "id": f"msg_{uuid}",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        }
    else:
        base["message"] = {"role": "user", "content": text}
    base.update(extra)
    return base


def write(path: Path, *records: Any, tail: str = "\n") -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + tail, encoding="utf-8")
    return path


def by_line(events: list[Event]) -> dict[int, Event]:
    return {e.line: e for e in events if e.line is not None}


# --- every real sample ------------------------------------------------------------------

SAMPLES = {
    "agentlogs/compact.jsonl": {
        ("other", "meta"): 4,
        ("user", "meta"): 7,
        ("user", "message"): 1,
        ("assistant", "thinking"): 1,
        ("assistant", "message"): 1,
        ("system", "meta"): 1,
    },
    "agentlogs/crud.jsonl": {
        ("other", "meta"): 2,
        ("user", "message"): 1,
        ("assistant", "message"): 6,
        ("assistant", "tool_use"): 9,
        ("tool", "tool_result"): 9,
    },
    "agentlogs/images.jsonl": {
        ("other", "summary"): 18,
        ("user", "message"): 1,
        ("assistant", "thinking"): 3,
        ("assistant", "message"): 2,
        ("assistant", "tool_use"): 2,
        ("tool", "tool_result"): 2,
        ("system", "meta"): 1,
    },
    "agentlogs/subagent.jsonl": {
        ("other", "summary"): 1,
        ("other", "meta"): 1,
        ("user", "message"): 2,
        ("assistant", "thinking"): 2,
        ("assistant", "message"): 3,
        ("assistant", "tool_use"): 1,
        ("tool", "tool_result"): 1,
    },
    "agentlogs/todos.jsonl": {
        ("other", "meta"): 1,
        ("user", "message"): 1,
        ("assistant", "message"): 6,
        ("assistant", "tool_use"): 5,
        ("tool", "tool_result"): 5,
    },
    "claude-code-log/dag_compact_after_rewind.jsonl": {
        ("user", "message"): 5,
        ("user", "meta"): 1,
        ("assistant", "message"): 5,
        ("system", "meta"): 1,
    },
}


def _base64_payloads(value: Any, out: list[str]) -> list[str]:
    if isinstance(value, dict):
        source = value.get("source")
        if isinstance(source, dict) and isinstance(source.get("data"), str):
            out.append(source["data"])
        for child in value.values():
            _base64_payloads(child, out)
    elif isinstance(value, list):
        for child in value:
            _base64_payloads(child, out)
    return out


def test_every_sample_is_covered(samples_dir: Path) -> None:
    found = {
        p.relative_to(samples_dir / "claude-code").as_posix()
        for p in (samples_dir / "claude-code").rglob("*.jsonl")
    }
    assert found == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample(samples_dir: Path, name: str) -> None:
    path = samples_dir / "claude-code" / name
    out = run(path)
    events, issues = out["events"], out["issues"]
    data = path.read_bytes()
    lines = data.splitlines()
    non_empty = sum(1 for line in lines if line.strip())

    assert Counter((e.role, e.kind) for e in events) == SAMPLES[name]
    assert issues == []
    assert len(events) + len(issues) == non_empty  # nothing dropped
    assert out["checkpoint"] == Checkpoint(len(data), len(lines))
    assert len({e.native_id for e in events}) == len(events)
    assert [e.line for e in events] == list(range(1, len(lines) + 1))
    for event in events:
        assert event.occurred_at is not None
        assert event.occurred_at.utcoffset() == timedelta(0)
        assert isinstance(event.raw, dict)
        assert "\x00" not in event.text
        assert event.role in {"user", "assistant", "system", "tool", "other"}
        if not event.text:
            assert event.attrs.get("empty_reason")
    # No base64 payload leaks into text.
    payloads = [p[:80] for e in events for p in _base64_payloads(e.raw, [])]
    for event in events:
        assert "data:image" not in event.text
        for payload in payloads:
            assert payload not in event.text
    # Every event's conversation was announced before it.
    announced: set[str] = set()
    for item in out["items"]:
        if isinstance(item, Conversation):
            announced.add(item.native_id)
        elif isinstance(item, Event):
            assert item.conversation_id in announced


def test_sample_is_deterministic(samples_dir: Path) -> None:
    path = samples_dir / "claude-code/agentlogs/images.jsonl"
    first = [(e.native_id, e.text, e.occurred_at) for e in run(path)["events"]]
    second = [(e.native_id, e.text, e.occurred_at) for e in run(path)["events"]]
    assert first == second


def test_compaction(samples_dir: Path) -> None:
    out = run(samples_dir / "claude-code/agentlogs/compact.jsonl")
    lines = by_line(out["events"])
    summary = lines[12]
    assert (summary.role, summary.kind) == ("user", "meta")
    assert summary.attrs["is_compact_summary"] is True
    assert summary.text.startswith("This session is being continued")
    boundary = lines[11]
    assert (boundary.role, boundary.kind) == ("system", "meta")
    assert boundary.attrs["subtype"] == "compact_boundary"
    assert boundary.text == "Conversation compacted"
    assert boundary.parent_id == "844dd3c8-1580-48b3-89e1-e6fe7e674ff8"  # logicalParentUuid
    assert lines[2].attrs["is_meta"] is True  # the "Caveat:" line
    assert lines[3].kind == "meta" and lines[3].text.startswith("<command-name>/clear")
    assert lines[15].kind == "meta"  # <local-command-stdout>
    assert lines[6].kind == "message" and lines[6].text == "how are you doing"
    assert lines[1].attrs["empty_reason"] == "file-history-snapshot"
    assert lines[1].text == ""
    assert lines[1].native_id.startswith("file-history-snapshot:8bab5784-")
    assert lines[1].conversation_id == "compact"  # no sessionId: the file stem
    assert all(e.on_active_branch for e in out["events"])
    conv = next(c for c in out["convs"] if c.native_id == "0e26ec2f-937e-482c-b889-bc126f996913")
    assert conv.project == "/Users/philipp/dev/studio"
    assert conv.started_at.isoformat() == "2025-10-10T21:56:01.409000+00:00"  # earliest
    assert conv.attrs == {"version": "2.0.13"}
    assert lines[7].kind == "thinking" and lines[7].author == "claude-sonnet-4-5-20250929"
    assert lines[7].attrs["message_id"] == lines[8].attrs["message_id"]
    assert lines[7].git_branch == "main" and lines[7].project == "/Users/philipp/dev/studio"


def test_subagent_sidechain(samples_dir: Path) -> None:
    out = run(samples_dir / "claude-code/agentlogs/subagent.jsonl")
    events = out["events"]
    assert [e.line for e in events if e.is_sidechain] == [7, 8]
    lines = by_line(events)
    assert lines[7].role == "user" and lines[7].text.startswith("Hey there!")
    assert lines[8].role == "assistant"
    task = lines[6]
    assert (task.kind, task.author) == ("tool_use", "Task")
    assert task.text.startswith('[tool_use Task] {"subagent_type": "general-purpose"')
    assert task.attrs["model"] == "claude-sonnet-4-5-20250929"
    result = lines[9]
    assert (result.role, result.kind, result.author) == ("tool", "tool_result", "Task")
    assert result.attrs["tool_use_ids"] == task.attrs["tool_use_ids"]
    assert all(e.on_active_branch for e in events)  # sidechains are not abandoned branches
    summary = lines[1]
    assert summary.kind == "summary" and summary.attrs["time_inferred"] is True
    # Inherits from the next timed record when nothing timed precedes it.
    assert summary.occurred_at == lines[2].occurred_at


def test_images_and_summaries(samples_dir: Path) -> None:
    out = run(samples_dir / "claude-code/agentlogs/images.jsonl")
    lines = by_line(out["events"])
    shot = lines[22]
    assert shot.kind == "tool_result" and shot.text.endswith("[image]")
    assert shot.author == "mcp__chrome-devtools__take_screenshot"
    assert max(len(e.text) for e in out["events"]) < 5000  # the 800 KB of base64 stayed raw
    summaries = [e for e in out["events"] if e.kind == "summary"]
    assert len(summaries) == 18
    for summary in summaries:
        assert summary.role == "other"
        assert summary.native_id.startswith(f"summary:{summary.raw['leafUuid']}:")
        assert summary.attrs["time_inferred"] is True
        assert summary.text == summary.raw["summary"]
    assert lines[2].occurred_at == lines[1].occurred_at  # inherited from the previous record
    assert lines[29].text == "stop_hook_summary"  # system record without content


def test_rewind_branches(samples_dir: Path) -> None:
    out = run(samples_dir / "claude-code/claude-code-log/dag_compact_after_rewind.jsonl")
    flags = {e.native_id: e.on_active_branch for e in out["events"]}
    assert {uid for uid, active in flags.items() if not active} == {"b1u", "b1a"}
    lines = by_line(out["events"])
    assert lines[9].parent_id == "b2a2"  # compact boundary follows its logical parent
    assert lines[10].attrs["is_compact_summary"] is True and lines[10].kind == "meta"


def test_rewind_is_not_marked_on_resume(samples_dir: Path, tmp_path: Path) -> None:
    source = samples_dir / "claude-code/claude-code-log/dag_compact_after_rewind.jsonl"
    data = source.read_bytes()
    cut = data.index(b"\n") + 1
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    out = run(path, cut, 1)
    assert len(out["events"]) == 11
    assert all(e.on_active_branch for e in out["events"])


def test_rewind_side_records_and_restarted_chains(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        rec("old1", None, text="first chain", timestamp="2025-01-01T00:00:00Z"),
        rec("old2", "old1", "assistant", timestamp="2025-01-01T00:00:01Z"),
        rec("gone1", "old2", text="rewound prompt", timestamp="2025-01-01T00:00:30Z"),
        rec("gone2", "gone1", "assistant", timestamp="2025-01-01T00:00:31Z"),
        rec("new1", None, text="chain restarted", timestamp="2025-01-01T00:01:00Z"),
        rec("new2", "new1", "assistant", timestamp="2025-01-01T00:01:01Z"),
        {"type": "progress", "uuid": "prog", "parentUuid": "new1", "sessionId": SID,
         "timestamp": "2025-01-01T00:01:00.5Z", "data": {"type": "hook_progress"}},
        {"type": "system", "subtype": "turn_duration", "uuid": "dur", "parentUuid": "new2",
         "sessionId": SID, "timestamp": "2025-01-01T00:01:02Z", "durationMs": 1000},
        rec("side", None, text="subagent prompt", isSidechain=True,
            timestamp="2025-01-01T00:05:00Z"),
        rec("cmd", "final2", text="<command-name>/cost</command-name>",
            timestamp="2025-01-01T00:06:00Z"),
        rec("again1", "new2", text="rewound again", timestamp="2025-01-01T00:02:00Z"),
        rec("again2", "again1", "assistant", timestamp="2025-01-01T00:02:01Z"),
        rec("final1", "new2", text="kept prompt", timestamp="2025-01-01T00:03:00Z"),
        rec("final2", "final1", "assistant", timestamp="2025-01-01T00:03:01Z"),
    )
    out = run(path)
    flags = {e.native_id: e.on_active_branch for e in out["events"]}
    # A chain that never reaches the active path (old*, gone*) is left alone: it cannot be
    # told apart from a restarted chain. A prompt hanging off the path is a rewind (again*);
    # side records (prog, dur) and a meta record after the leaf (cmd) are not.
    assert flags == {
        "old1": True, "old2": True, "gone1": True, "gone2": True, "new1": True, "new2": True,
        "prog": True, "dur": True, "side": True, "cmd": True, "again1": False,
        "again2": False, "final1": True, "final2": True,
    }
    lines = by_line(out["events"])
    assert (lines[7].role, lines[7].kind, lines[7].attrs["empty_reason"]) == (
        "other", "meta", "progress"
    )
    assert lines[10].kind == "meta"


def test_block_types(tmp_path: Path) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBORw0KGgoAAAANSUhEUg" * 50}}
    records = [
        rec("u1", None, message={"role": "user", "content": [
            {"type": "text", "text": "look at this"}, image]}),
        rec("a1", "u1", "assistant", message={"model": "m", "id": "msg1", "content": [
            {"type": "redacted_thinking", "data": "opaque"}]}),
        rec("a2", "a1", "assistant", message={"model": "m", "id": "msg1", "content": [
            {"type": "thinking", "thinking": "", "signature": "sig"}]}),
        rec("a3", "a2", "assistant", message={"model": "m", "id": "msg1", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
             "input": {"query": "grüße"}}]}),
        rec("u2", "a3", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "srvtoolu_1", "is_error": True,
             "content": [{"type": "text", "text": "failed"}, image]}]}),
        rec("u3", "u2", isMeta=True, text="skill body"),
        rec("u4", "u3", text="  <system-reminder>remember</system-reminder>"),
        rec("u5", "u4", message={"role": "user"}),
        rec("a4", "u5", "assistant", message={"model": "m", "id": "msg2", "content": [
            {"type": "text", "text": "answer"}, {"type": "tool_use", "id": "toolu_9",
                                                 "name": "Read", "input": {"p": 1}}]}),
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "2025-10-10T10:00:01Z",
         "sessionId": SID, "content": "queued prompt"},
        {"type": "custom-title", "customTitle": "My title", "sessionId": SID},
    ]
    out = run(write(tmp_path / "s.jsonl", *records))
    lines = by_line(out["events"])
    assert lines[1].text == "look at this\n\n[image]" and lines[1].kind == "message"
    assert (lines[2].kind, lines[2].text, lines[2].attrs["empty_reason"]) == (
        "thinking", "", "redacted_thinking"
    )
    assert lines[3].attrs["empty_reason"] == "empty thinking"
    assert lines[4].kind == "tool_use" and lines[4].author == "web_search"
    assert lines[4].text == '[tool_use web_search] {"query": "grüße"}'
    assert (lines[5].role, lines[5].kind, lines[5].author) == ("tool", "tool_result", "web_search")
    assert lines[5].text == "failed\n\n[image]" and lines[5].attrs["is_error"] is True
    assert (lines[6].role, lines[6].kind) == ("user", "meta")
    assert (lines[7].role, lines[7].kind) == ("user", "meta")
    assert lines[8].attrs["empty_reason"] == "no content"
    assert lines[9].kind == "tool_use" and lines[9].author == "Read"
    assert lines[9].text == 'answer\n\n[tool_use Read] {"p": 1}'
    assert lines[10].native_id.startswith(f"queue-operation:{SID}:")
    assert (lines[10].role, lines[10].kind, lines[10].text) == ("other", "meta", "")
    assert lines[10].attrs["empty_reason"] == "queue-operation"
    assert lines[11].attrs == {"empty_reason": "custom-title", "time_inferred": True}
    assert all("iVBOR" not in e.text for e in out["events"])


# --- discovery ----------------------------------------------------------------------------

def test_discover_layout(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "-home-me-proj"
    (project / SID / "subagents").mkdir(parents=True)
    (project / SID / "tool-results").mkdir()
    (project / "memory").mkdir()
    files = [
        project / f"{SID}.jsonl",
        project / SID / "subagents" / "agent-abc123.jsonl",
        project / "agent-def456.jsonl",
    ]
    for f in files:
        f.write_text("")
    (project / SID / "subagents" / "agent-abc123.meta.json").write_text("{}")
    (project / SID / "tool-results" / "x.txt").write_text("big output")
    (project / SID / "tool-results" / "y.jsonl").write_text("")
    (project / "memory" / "notes.md").write_text("")
    (project / "sessions-index.json").write_text("{}")
    (tmp_path / "history.jsonl").write_text("")
    assert list(adapter.discover(tmp_path)) == sorted(files)
    assert list(adapter.discover(files[1])) == [files[1]]
    assert adapter.source == "claude-code"


# --- robustness ---------------------------------------------------------------------------

def test_malformed_middle_line(tmp_path: Path) -> None:
    broken = '{"type": "user", "uuid": '
    path = write(tmp_path / "s.jsonl", rec("u1", None), broken, rec("u2", "u1"))
    out = run(path)
    assert [e.native_id for e in out["events"]] == ["u1", "u2"]
    [issue] = out["issues"]
    assert (issue.file, issue.line) == (str(path), 2)
    assert issue.message.startswith("malformed JSON")
    assert out["checkpoint"] == Checkpoint(path.stat().st_size, 3)


def test_not_an_object(tmp_path: Path) -> None:
    out = run(write(tmp_path / "s.jsonl", "[1, 2]", '"text"', rec("u1", None)))
    assert [i.line for i in out["issues"]] == [1, 2]
    assert "not an object" in out["issues"][0].message
    assert len(out["events"]) == 1


def test_incomplete_tail_then_resume(tmp_path: Path) -> None:
    first, second, third = (json.dumps(rec(u, None)) for u in ("u1", "u2", "u3"))
    path = tmp_path / "s.jsonl"
    path.write_text(first + "\n" + second[:30], encoding="utf-8")
    out = run(path)
    assert [e.native_id for e in out["events"]] == ["u1"]
    assert out["issues"] == []
    checkpoint = out["checkpoint"]
    assert checkpoint == Checkpoint(len(first) + 1, 1)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(second[30:] + "\n" + third + "\n")
    resumed = run(path, checkpoint.offset, checkpoint.line)
    assert [(e.native_id, e.line) for e in resumed["events"]] == [("u2", 2), ("u3", 3)]
    assert resumed["issues"] == []
    assert resumed["checkpoint"] == Checkpoint(path.stat().st_size, 3)
    again = run(path, resumed["checkpoint"].offset, resumed["checkpoint"].line)
    assert again["events"] == [] and again["checkpoint"] == resumed["checkpoint"]


def test_complete_tail_without_newline_is_consumed(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", rec("u1", None), rec("u2", "u1"), tail="")
    out = run(path)
    assert [e.native_id for e in out["events"]] == ["u1", "u2"]
    assert out["checkpoint"] == Checkpoint(path.stat().st_size, 2)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n" + json.dumps(rec("u3", "u2")) + "\n")
    resumed = run(path, out["checkpoint"].offset, out["checkpoint"].line)
    # The newline that completes line 2 is not a new line: numbering matches a full parse.
    assert [(e.native_id, e.line) for e in resumed["events"]] == [("u3", 3)]
    assert [(e.native_id, e.line) for e in run(path)["events"]][-1] == ("u3", 3)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    out = run(path)
    assert out["items"] == [Checkpoint(0, 0)]


def test_blank_lines_are_counted_not_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("\n" + json.dumps(rec("u1", None)) + "\n\n", encoding="utf-8")
    out = run(path)
    assert [e.line for e in out["events"]] == [2]
    assert out["checkpoint"] == Checkpoint(path.stat().st_size, 3)


def test_unknown_type_is_kept(tmp_path: Path) -> None:
    weird = {"type": "hologram", "sessionId": SID, "timestamp": "2025-10-10T10:00:00Z",
             "beam": {"x": 1}}
    typed_uuid = {"type": "brand-new", "uuid": "nn1", "sessionId": SID,
                  "timestamp": "2025-10-10T10:00:01Z",
                  "message": {"content": [{"type": "text", "text": "salvaged"}]}}
    untyped = {"sessionId": SID, "timestamp": "2025-10-10T10:00:02Z"}
    out = run(write(tmp_path / "s.jsonl", weird, typed_uuid, untyped))
    first, second, third = out["events"]
    assert (first.role, first.kind, first.text) == ("other", "unknown", "")
    assert first.raw == weird
    assert first.attrs["empty_reason"] == "hologram"
    assert first.native_id.startswith(f"hologram:{SID}:")
    assert (second.native_id, second.kind, second.text) == ("nn1", "unknown", "salvaged")
    assert third.native_id.startswith(f"untyped:{SID}:") and third.kind == "unknown"


def test_future_timestamp(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", rec("u1", None),
                 rec("u2", "u1", timestamp="2999-01-01T00:00:00Z"), rec("u3", "u1"))
    out = run(path)
    assert [e.native_id for e in out["events"]] == ["u1", "u3"]
    [issue] = out["issues"]
    assert (issue.line, issue.record_id) == (2, "u2")
    assert "future" in issue.message


def test_missing_and_bad_timestamps(tmp_path: Path) -> None:
    no_time = rec("u0", None)
    del no_time["timestamp"]
    path = write(
        tmp_path / "s.jsonl",
        {"type": "summary", "summary": "Title", "leafUuid": "zz"},
        no_time,
        rec("u1", None, timestamp="2025-10-10T10:00:05Z"),
        rec("u2", "u1", timestamp="yesterday-ish"),
        {"type": "file-history-snapshot", "messageId": "u1", "isSnapshotUpdate": False,
         "snapshot": {"messageId": "u1", "trackedFileBackups": {},
                      "timestamp": "2025-10-10T10:00:09Z"}},
        {"type": "last-prompt", "lastPrompt": "x", "sessionId": SID},
        rec("u3", "u2", timestamp="2025-10-10T10:00:10+02:00"),
    )
    out = run(path)
    assert out["issues"] == []
    lines = by_line(out["events"])
    assert [lines[n].occurred_at.isoformat() for n in range(1, 8)] == [
        "2025-10-10T10:00:05+00:00",  # nothing before: the next timed record
        "2025-10-10T10:00:05+00:00",
        "2025-10-10T10:00:05+00:00",
        "2025-10-10T10:00:05+00:00",  # unreadable: inherited
        "2025-10-10T10:00:09+00:00",  # snapshot.timestamp
        "2025-10-10T10:00:09+00:00",
        "2025-10-10T08:00:10+00:00",  # offsets normalised to UTC
    ]
    assert [n for n in range(1, 8) if lines[n].attrs.get("time_inferred")] == [1, 2, 4, 6]
    assert lines[4].attrs["bad_timestamp"] == "yesterday-ish"


def test_file_without_any_timestamp(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", {"type": "summary", "summary": "a", "leafUuid": "x"},
                 {"type": "summary", "summary": "b", "leafUuid": "y"})
    out = run(path)
    assert out["events"] == []
    assert [(i.line, i.message) for i in out["issues"]] == [
        (1, "no timestamp in record or file"), (2, "no timestamp in record or file")
    ]
    assert out["checkpoint"] == Checkpoint(path.stat().st_size, 2)


def test_resumed_parse_inherits_time_from_before_offset(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", rec("u1", None, timestamp="2025-10-10T10:00:00Z"))
    size = path.stat().st_size
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "summary", "summary": "t", "leafUuid": "u1"}) + "\n")
    out = run(path, size, 1)
    [event] = out["events"]
    assert event.occurred_at.isoformat() == "2025-10-10T10:00:00+00:00"
    assert event.attrs["time_inferred"] is True


def test_invalid_utf8(tmp_path: Path) -> None:
    good = json.dumps(rec("u1", None, text="caf\u00e9 XX"), ensure_ascii=False).encode()
    broken = good.replace(b"XX", b"\xff\xfe")
    path = tmp_path / "s.jsonl"
    path.write_bytes(broken + b"\n" + json.dumps(rec("u2", "u1")).encode() + b"\n")
    out = run(path)
    [issue] = out["issues"]  # repaired, kept, and said so
    assert issue.line == 1 and "invalid UTF-8" in issue.message
    first, second = out["events"]
    assert first.text == "caf\u00e9 \ufffd\ufffd"
    assert first.attrs["invalid_utf8"] is True
    assert "invalid_utf8" not in second.attrs


def test_nul_and_lone_surrogate(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    nul = json.dumps(rec("u1", None, text="a\u0000b"))
    lone = json.dumps(rec("u2", "u1", text="x\ud83d"))  # JS truncated a surrogate pair
    pair = json.dumps(rec("u3", "u2", text="ok \U0001F600"))
    path.write_text(f"{nul}\n{lone}\n{pair}\n", encoding="utf-8")
    out = run(path)
    first, second, third = out["events"]
    assert first.text == "a\ufffdb"
    assert first.raw["message"]["content"] == "a\x00b"  # raw stays verbatim
    assert second.text == "x\ufffd"
    second.text.encode("utf-8")
    assert third.text == "ok \U0001F600"


def test_identity_is_stable(tmp_path: Path) -> None:
    snapshot = {"type": "file-history-snapshot", "messageId": "u1", "isSnapshotUpdate": False,
                "snapshot": {"messageId": "u1", "trackedFileBackups": {},
                             "timestamp": "2025-10-10T10:00:00Z"}}
    queue = {"type": "queue-operation", "operation": "dequeue", "sessionId": SID,
             "timestamp": "2025-10-10T10:00:00Z"}
    one = run(write(tmp_path / "a.jsonl", snapshot, queue, rec("u1", None)))["events"]
    # Same records, shifted and copied into another (resumed) session file.
    two = run(write(tmp_path / "b.jsonl", rec("u0", None), snapshot, queue, rec("u1", None)))
    assert [e.native_id for e in one] == [e.native_id for e in two["events"]][1:]
    assert one[2].native_id == "u1"


def test_shorter_than_offset(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", rec("u1", None))
    out = run(path, 10_000, 50)
    [issue] = out["issues"]
    assert "shorter" in issue.message
    assert out["checkpoint"] == Checkpoint(10_000, 50)
