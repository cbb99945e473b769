import json
import re
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_platform.adapters.base import Checkpoint, Conversation, Event, ParseIssue
from memory_platform.adapters.codex import adapter

SID = "019c0000-aaaa-7bbb-8ccc-0123456789ab"
ROLLOUT = f"rollout-2026-01-25T10-32-00-{SID}.jsonl"


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


def line(rtype: str, payload: dict, ts: str | None = "2026-01-25T10:32:00.000Z") -> dict:
    record: dict[str, Any] = {"type": rtype, "payload": payload}
    if ts is not None:
        record["timestamp"] = ts
    return record


def meta(**extra: Any) -> dict:
    payload = {"id": SID, "timestamp": "2026-01-25T10:31:59.000Z", "cwd": "/home/me/proj",
               "originator": "codex_cli_rs", "cli_version": "0.93.0", "source": "cli",
               "git": {"branch": "main", "commit_hash": "abc"}}
    payload.update(extra)
    return line("session_meta", payload)


def user(text: str, ts: str = "2026-01-25T10:32:01.000Z") -> dict:
    return line("response_item", {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": text}]}, ts)


def turn_context(model: str = "gpt-5.2-codex", cwd: str = "/home/me/proj") -> dict:
    return line("turn_context", {"cwd": cwd, "model": model, "approval_policy": "never"})


def assistant(text: str) -> dict:
    return line("response_item", {"type": "message", "role": "assistant",
                                  "content": [{"type": "output_text", "text": text}]})


def write(path: Path, *records: Any, tail: str = "\n") -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + tail, encoding="utf-8")
    return path


def by_line(events: list[Event]) -> dict[int, Event]:
    return {e.line: e for e in events if e.line is not None}


# --- every real sample ------------------------------------------------------------------

SAMPLES = {
    "crud.jsonl": {
        ("other", "meta"): 21,  # 1 session_meta, 5 turn_context, 15 event_msg
        ("system", "meta"): 1,
        ("user", "meta"): 2,
        ("user", "message"): 1,
        ("assistant", "thinking"): 4,
        ("assistant", "tool_use"): 4,
        ("tool", "tool_result"): 4,
        ("assistant", "message"): 1,
    },
    "images.jsonl": {
        ("other", "meta"): 56,  # 1 session_meta, 13 turn_context, 42 event_msg
        ("system", "meta"): 1,
        ("user", "meta"): 2,
        ("user", "message"): 3,
        ("assistant", "thinking"): 9,
        ("assistant", "tool_use"): 10,
        ("tool", "tool_result"): 10,
        ("assistant", "message"): 3,
    },
}
SESSIONS = {
    "crud.jsonl": "019bf4b5-e7b0-75a0-8bf2-05fbf1b13c9b",
    "images.jsonl": "019c16bd-a0fc-7293-855d-2948ce5dc471",
}


def test_every_sample_is_covered(samples_dir: Path) -> None:
    assert {p.name for p in (samples_dir / "codex-cli").glob("*.jsonl")} == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample(samples_dir: Path, name: str) -> None:
    path = samples_dir / "codex-cli" / name
    out = run(path)
    events = out["events"]
    data = path.read_bytes()
    lines = data.splitlines()

    assert Counter((e.role, e.kind) for e in events) == SAMPLES[name]
    assert out["issues"] == []
    assert len(events) == sum(1 for raw in lines if raw.strip())  # nothing dropped
    assert out["checkpoint"] == Checkpoint(len(data), len(lines))
    assert len({e.native_id for e in events}) == len(events)
    sid = SESSIONS[name]
    for number, event in enumerate(events, start=1):
        assert event.line == number
        assert re.fullmatch(rf"{sid}:{number}:[0-9a-f]{{16}}", event.native_id)
        assert event.conversation_id == sid
        assert event.occurred_at is not None
        assert event.occurred_at.utcoffset() == timedelta(0)
        assert event.on_active_branch and not event.is_sidechain
        assert "base64," not in event.text
        if not event.text:
            assert event.attrs.get("empty_reason")
        if event.raw["type"] == "event_msg":
            assert (event.role, event.kind, event.text) == ("other", "meta", "")
        if event.role == "assistant" and event.kind in ("message", "thinking"):
            assert event.author == "gpt-5.2-codex"
    [conv] = out["convs"]
    assert out["items"][0] == conv
    assert conv.native_id == sid and conv.title is None
    assert conv.project is not None and conv.project.startswith("/Users/philipp/dev/agentlogs")
    assert conv.started_at is not None


def test_crud_details(samples_dir: Path) -> None:
    out = run(samples_dir / "codex-cli/crud.jsonl")
    lines = by_line(out["events"])
    assert lines[1].attrs["empty_reason"] == "session_meta"
    assert lines[2].attrs["message_role"] == "developer"
    assert lines[3].text.startswith("# AGENTS.md instructions for")
    assert lines[4].text.startswith("<environment_context>")
    assert lines[5].text.startswith("create a file `JOKE.md`")
    assert lines[6].attrs == {"event_type": "user_message", "empty_reason": "event_msg duplicate"}
    assert lines[8].attrs["empty_reason"] == "event_msg token_count"
    assert lines[10].text == "**Planning file operations and command sequence**"
    assert lines[16].attrs["empty_reason"] == "encrypted reasoning"
    call, result = lines[11], lines[13]
    assert call.author == "exec_command" and call.attrs["model"] == "gpt-5.2-codex"
    assert call.text.startswith('[tool_use exec_command] {"cmd":"cat <<')
    assert (result.author, result.attrs["call_id"]) == ("exec_command", call.attrs["call_id"])
    assert result.text.startswith("Chunk ID: dd6d89")
    patch = lines[24]
    assert patch.kind == "tool_use" and patch.text.startswith("[tool_use apply_patch] *** Begin")
    assert lines[26].author == "apply_patch" and lines[26].kind == "tool_result"
    assert lines[37].text.startswith("Created `JOKE.md`")
    assert lines[5].project == "/Users/philipp/dev/agentlogs/fixtures"
    [conv] = out["convs"]
    assert conv.attrs["originator"] == "codex_exec" and conv.attrs["cli_version"] == "0.89.0"
    assert conv.started_at.isoformat() == "2026-01-25T10:32:00.688000+00:00"


def test_image_stays_out_of_text(samples_dir: Path) -> None:
    out = run(samples_dir / "codex-cli/images.jsonl")
    prompt = by_line(out["events"])[5]
    assert prompt.kind == "message"
    assert prompt.text.startswith("<image name=[Image #1]>\n\n[image]\n\n</image>")
    assert prompt.raw["payload"]["content"][1]["image_url"].startswith("data:image/png;base64,")
    assert len(prompt.text) < 1000


def test_resume_matches_full_parse(samples_dir: Path, tmp_path: Path) -> None:
    data = (samples_dir / "codex-cli/images.jsonl").read_bytes()
    offsets = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    cut = offsets[59]  # after line 60, mid-session
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(data[:cut])
    head = run(path)
    assert head["checkpoint"] == Checkpoint(cut, 60)
    path.write_bytes(data)
    tail = run(path, cut, 60)
    full = run(path)

    def key(e: Event) -> tuple:
        return (e.native_id, e.conversation_id, e.role, e.kind, e.text, e.author, e.project,
                e.occurred_at, e.line, e.attrs)

    assert [key(e) for e in head["events"] + tail["events"]] == [key(e) for e in full["events"]]
    assert tail["convs"][0].native_id == full["convs"][0].native_id
    assert tail["checkpoint"] == full["checkpoint"]


# --- discovery ----------------------------------------------------------------------------

def test_discover(tmp_path: Path) -> None:
    day = tmp_path / "sessions" / "2026" / "01" / "25"
    day.mkdir(parents=True)
    archived = tmp_path / "archived_sessions"
    archived.mkdir()
    wanted = [day / ROLLOUT, archived / "rollout-2025-12-01T00-00-00-x.jsonl"]
    for f in wanted:
        f.write_text("")
    (tmp_path / "history.jsonl").write_text("")
    (tmp_path / "session_index.jsonl").write_text("")
    assert list(adapter.discover(tmp_path)) == sorted(wanted)
    assert list(adapter.discover(wanted[0])) == [wanted[0]]
    assert adapter.source == "codex"


# --- robustness ---------------------------------------------------------------------------

def test_malformed_middle_line(tmp_path: Path) -> None:
    path = write(tmp_path / ROLLOUT, meta(), "{not json", user("hello"))
    out = run(path)
    assert [e.line for e in out["events"]] == [1, 3]
    [issue] = out["issues"]
    assert (issue.file, issue.line) == (str(path), 2)
    assert issue.message.startswith("malformed JSON")


def test_incomplete_tail_then_resume(tmp_path: Path) -> None:
    second = json.dumps(user("second"))
    path = tmp_path / ROLLOUT
    path.write_text(json.dumps(meta()) + "\n" + second[:25], encoding="utf-8")
    out = run(path)
    assert len(out["events"]) == 1 and out["issues"] == []
    checkpoint = out["checkpoint"]
    assert checkpoint.line == 1 and checkpoint.offset == len(json.dumps(meta())) + 1
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(second[25:] + "\n" + json.dumps(assistant("third")) + "\n")
    resumed = run(path, checkpoint.offset, checkpoint.line)
    assert [(e.line, e.text) for e in resumed["events"]] == [(2, "second"), (3, "third")]
    assert all(e.conversation_id == SID for e in resumed["events"])
    assert all(e.native_id.startswith(f"{SID}:") for e in resumed["events"])
    assert resumed["checkpoint"] == Checkpoint(path.stat().st_size, 3)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / ROLLOUT
    path.write_bytes(b"")
    assert run(path)["items"] == [Checkpoint(0, 0)]


def test_unknown_types_are_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path / ROLLOUT,
        meta(),
        line("hologram", {"x": 1}),
        line("response_item", {"type": "teleport", "where": "mars"}),
        line("response_item", {"type": "image_generation_call", "id": "ig1",
                               "result": "iVBORw0KGgo" * 20, "revised_prompt": "a cat"}),
        line("compacted", {"message": "summary of the work so far"}),
        line("response_item", {"type": "local_shell_call", "call_id": "c1",
                               "action": {"command": ["ls"]}}),
    )
    lines = by_line(run(path)["events"])
    assert (lines[2].role, lines[2].kind, lines[2].attrs["empty_reason"]) == (
        "other", "unknown", "unknown type hologram"
    )
    assert lines[3].kind == "unknown" and lines[3].raw["payload"]["where"] == "mars"
    assert lines[4].kind == "tool_use" and "iVBOR" not in lines[4].text
    assert lines[4].text == "[tool_use image_generation] a cat"
    assert (lines[5].kind, lines[5].text) == ("summary", "summary of the work so far")
    assert lines[6].text == '[tool_use local_shell] {"command": ["ls"]}'


def test_future_and_missing_timestamps(tmp_path: Path) -> None:
    path = write(
        tmp_path / ROLLOUT,
        meta(),
        user("soon", ts="2999-01-01T00:00:00Z"),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "no time"}]}, ts=None),
        user("bad time", ts="not a time"),
    )
    out = run(path)
    [issue] = out["issues"]
    assert issue.line == 2 and "future" in issue.message
    assert issue.record_id is not None and issue.record_id.startswith(f"{SID}:2:")
    lines = by_line(out["events"])
    assert sorted(lines) == [1, 3, 4]
    assert lines[3].occurred_at == lines[1].occurred_at and lines[3].attrs["time_inferred"]
    assert lines[4].attrs["bad_timestamp"] == "not a time" and lines[4].attrs["time_inferred"]


def test_invalid_utf8_and_nul(tmp_path: Path) -> None:
    bad = json.dumps(user("ab XX")).encode().replace(b"XX", b"\xc3\x28")
    nul = json.dumps(user("a\u0000b")).encode()
    path = tmp_path / ROLLOUT
    path.write_bytes(json.dumps(meta()).encode() + b"\n" + bad + b"\n" + nul + b"\n")
    out = run(path)
    [issue] = out["issues"]  # repaired, kept, and said so
    assert issue.line == 2 and "invalid UTF-8" in issue.message
    lines = by_line(out["events"])
    assert lines[2].text == "ab \ufffd(" and lines[2].attrs["invalid_utf8"] is True
    assert lines[3].text == "a\ufffdb"


def test_context_injection_and_model(tmp_path: Path) -> None:
    path = write(
        tmp_path / ROLLOUT,
        meta(),
        user("<user_instructions>\nbe nice\n</user_instructions>"),
        user("<USER_SHELL_COMMAND>ls</USER_SHELL_COMMAND>"),
        user("real question"),
        line("response_item", {"type": "message", "role": "developer",
                               "content": [{"type": "input_text", "text": "dev says"}]}),
        turn_context(model="gpt-9", cwd="/elsewhere"),
        assistant("answer"),
        line("response_item", {"type": "function_call_output", "call_id": "nope",
                               "output": [{"type": "input_text", "text": "out"},
                                          {"type": "input_image", "image_url": "data:x"}]}),
    )
    lines = by_line(run(path)["events"])
    assert [lines[n].kind for n in (2, 3, 4)] == ["meta", "meta", "message"]
    assert (lines[5].role, lines[5].kind) == ("system", "meta")
    assert lines[4].author is None and lines[4].project == "/home/me/proj"
    assert (lines[7].author, lines[7].project) == ("gpt-9", "/elsewhere")
    assert lines[7].git_branch == "main"
    assert lines[8].text == "out\n\n[image]" and lines[8].author is None


def test_subagent_session_is_sidechain(tmp_path: Path) -> None:
    source = {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}
    out = run(write(tmp_path / ROLLOUT, meta(source=source), user("hi")))
    assert all(e.is_sidechain for e in out["events"])
    assert out["convs"][0].attrs["source"] == source


def test_session_id_from_file_name(tmp_path: Path) -> None:
    out = run(write(tmp_path / ROLLOUT, user("no meta line")))
    assert out["events"][0].conversation_id == SID
    assert out["convs"][0].native_id == SID


def test_copied_session_meta_does_not_rename(tmp_path: Path) -> None:
    parent = meta(id="019c9999-0000-7000-8000-000000000000")
    out = run(write(tmp_path / ROLLOUT, meta(forked_from_id="x"), parent, user("hi")))
    assert {e.conversation_id for e in out["events"]} == {SID}
    assert out["convs"][0].attrs["forked_from_id"] == "x"


def test_legacy_format(tmp_path: Path) -> None:
    path = write(
        tmp_path / "rollout-2025-06-01T10-00-00-legacy.jsonl",
        {"id": "legacy-id", "timestamp": "2025-06-01T10:00:00Z", "instructions": "be good",
         "git": {"branch": "dev"}},
        {"record_type": "state"},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "old prompt"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
         "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1",
         "output": {"content": "file.txt", "success": True}},
    )
    out = run(path)
    assert out["issues"] == []
    lines = by_line(out["events"])
    assert {e.conversation_id for e in out["events"]} == {"legacy-id"}
    assert lines[1].attrs["empty_reason"] == "session_meta"
    assert lines[2].attrs["empty_reason"] == "record_type state"
    assert (lines[3].role, lines[3].kind, lines[3].text) == ("user", "message", "old prompt")
    assert lines[3].attrs["time_inferred"] is True
    assert lines[3].occurred_at.isoformat() == "2025-06-01T10:00:00+00:00"
    assert lines[4].text == '[tool_use shell] {"command":["ls"]}'
    assert (lines[5].text, lines[5].author) == ("file.txt", "shell")
    assert lines[5].git_branch == "dev"
