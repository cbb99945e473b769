import json
import zipfile
from datetime import timedelta
from pathlib import Path

from memory_platform.adapters.base import KINDS, ROLES, Conversation, Event, ParseIssue
from memory_platform.adapters.claude_ai import adapter

CONV1 = "aaaaaaaa-1111-4222-8333-000000000001"
CONV2 = "aaaaaaaa-1111-4222-8333-000000000002"
CONV3 = "aaaaaaaa-1111-4222-8333-000000000003"
SENTINEL = "00000000-0000-4000-8000-000000000000"


def split(items):
    events = [i for i in items if isinstance(i, Event)]
    convs = [i for i in items if isinstance(i, Conversation)]
    issues = [i for i in items if isinstance(i, ParseIssue)]
    return events, convs, issues


def check_invariants(items):
    """Ids unique, aware UTC times, valid roles/kinds, each conversation announced first."""
    announced = set()
    ids = set()
    for item in items:
        if isinstance(item, Conversation):
            announced.add(item.native_id)
        elif isinstance(item, Event):
            assert item.native_id not in ids, item.native_id
            ids.add(item.native_id)
            assert item.occurred_at is not None
            assert item.occurred_at.utcoffset() == timedelta(0)
            assert item.role in ROLES and item.kind in KINDS
            assert "\x00" not in item.text
            if item.conversation_id is not None:
                assert item.conversation_id in announced
            if not item.text:
                assert item.attrs.get("empty_reason"), item
            assert isinstance(item.raw, dict)


def parse(path):
    items = list(adapter.parse(Path(path)))
    check_invariants(items)
    return items


def conversation(uuid, messages, **extra):
    return {"uuid": uuid, "name": "t", "created_at": "2026-01-01T00:00:00Z",
            "chat_messages": messages, **extra}


def message(uuid, sender="human", text="hi", created="2026-01-01T00:00:01Z", **extra):
    record = {"uuid": uuid, "sender": sender, "text": text,
              "content": [{"type": "text", "text": text}], **extra}
    if created is not None:
        record["created_at"] = created
    return record


def write(tmp_path, data, name="conversations.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- the real sample ------------------------------------------------------------------

def test_sample_counts_and_ids(samples_dir):
    items = parse(samples_dir / "claude-ai/conversations.json")
    events, convs, issues = split(items)
    assert issues == []
    # 3 conversations (the last has no chat_messages), 4 + 3 messages: nothing dropped
    assert [c.native_id for c in convs] == [CONV1, CONV2, CONV3]
    assert len(events) == 7
    assert {e.native_id for e in events} == {
        f"{CONV1}/m1", f"{CONV1}/m2", f"{CONV1}/m3", f"{CONV1}/m4",
        f"{CONV2}/o1", f"{CONV2}/o2", f"{CONV2}/o3",
    }
    assert convs[0].title == "Rust lifetimes"
    assert convs[0].attrs["summary"] == "Explaining a borrow checker error."
    assert convs[2].title == "Broken record" and convs[2].started_at is None
    assert all(e.author is None for e in events)


def test_sample_branches(samples_dir):
    events, _, _ = split(parse(samples_dir / "claude-ai/conversations.json"))
    by_id = {e.native_id.split("/")[1]: e for e in events}
    # m2 and m3 share parent m1; m4 (latest leaf) continues m3, so m3 is the active retry
    assert by_id["m1"].parent_id is None  # the sentinel is not a message
    assert by_id["m2"].parent_id == f"{CONV1}/m1"
    assert by_id["m3"].parent_id == f"{CONV1}/m1"
    assert by_id["m4"].parent_id == f"{CONV1}/m3"
    assert {k: e.on_active_branch for k, e in by_id.items() if k.startswith("m")} == {
        "m1": True, "m2": False, "m3": True, "m4": True
    }
    # the old-style conversation has no parent pointers: linear, all active
    assert all(by_id[k].on_active_branch for k in ("o1", "o2", "o3"))


def test_sample_text_rules(samples_dir):
    events, _, _ = split(parse(samples_dir / "claude-ai/conversations.json"))
    by_id = {e.native_id.split("/")[1]: e for e in events}
    m1 = by_id["m1"]
    assert m1.role == "user"
    assert m1.text.startswith("Why does this not compile?")
    assert "[attachment main.rs]\nfn main() { let r; { let x = 5; r = &x; } }" in m1.text
    assert m1.attrs["files"] == ["screenshot.png"]
    m2 = by_id["m2"]
    assert m2.role == "assistant" and m2.text == "x does not live long enough."
    assert "internal reasoning" not in m2.text and m2.attrs["has_thinking"] is True
    assert m2.raw["content"][0]["thinking"].startswith("internal reasoning")  # raw verbatim
    m3 = by_id["m3"]  # flat text is empty; content[] is authoritative
    assert "Retried answer: move x out of the inner scope." in m3.text
    assert '[tool_use repl] {"code": "cargo check"}' in m3.text
    assert "Finished dev profile" in m3.text
    assert by_id["o2"].text == "Biscuit."  # old export: no content[], flat text
    assert by_id["o3"].text == "" and by_id["o3"].attrs["empty_reason"] == "whitespace only"
    assert by_id["m1"].occurred_at.isoformat() == "2026-02-01T09:00:00+00:00"
    assert all(e.line in (1, 2) for e in events)


def test_discover_picks_claude_files_only(samples_dir, tmp_path):
    found = list(adapter.discover(samples_dir))
    assert found == [samples_dir / "claude-ai/conversations.json"]  # not ChatGPT's namesake
    export = tmp_path / "export"
    export.mkdir()
    write(export, [conversation("c1", [])])
    write(export, [{"uuid": "p1", "name": "P", "created_at": "2026-01-01T00:00:00Z"}],
          "projects.json")
    other = tmp_path / "chatgpt"
    other.mkdir()
    write(other, [{"id": "x", "mapping": {}}])
    with zipfile.ZipFile(tmp_path / "data-2026.zip", "w") as archive:
        archive.writestr("conversations.json", json.dumps([conversation("c2", [])]))
    assert list(adapter.discover(tmp_path)) == [
        tmp_path / "data-2026.zip",
        export / "conversations.json",
        export / "projects.json",
    ]
    single = export / "conversations.json"
    assert list(adapter.discover(single)) == [single]


# --- containers -----------------------------------------------------------------------

def test_zip_with_conversations_and_projects(tmp_path):
    path = tmp_path / "data-2026-01-01-batch-0000.zip"
    project = {
        "uuid": "proj-1", "name": "Garden", "description": "Plants",
        "prompt_template": "Be brief.", "created_at": "2025-12-01T10:00:00+00:00",
        "docs": [{"uuid": "d1", "filename": "soil.md", "content": "Loam is best."}],
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps([conversation("c1", [message("a")])]))
        archive.writestr("projects.json", json.dumps([project]))
        archive.writestr("users.json", "[]")
    events, convs, issues = split(parse(path))
    assert issues == []
    assert [c.native_id for c in convs] == ["c1"]
    assert [e.native_id for e in events] == ["c1/a", "project:proj-1"]
    proj = events[1]
    assert proj.role == "other" and proj.kind == "meta" and proj.conversation_id is None
    assert proj.text == "Garden\n\nPlants\n\nBe brief.\n\n[doc soil.md]\nLoam is best."
    assert proj.occurred_at.isoformat() == "2025-12-01T10:00:00+00:00"
    assert proj.project == "Garden"


def test_truncated_zip_is_one_issue(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", json.dumps([conversation("c1", [message("a")])]))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    events, convs, issues = split(parse(path))
    assert events == [] and convs == []
    assert len(issues) == 1 and str(path) in issues[0].file
    assert "zip" in issues[0].message


def test_zip_without_conversations(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("README.txt", "hi")
    _, _, issues = split(parse(path))
    assert len(issues) == 1 and "no conversations.json" in issues[0].message


# --- bad input ------------------------------------------------------------------------

def test_chatgpt_export_is_rejected_clearly(samples_dir):
    items = parse(samples_dir / "chatgpt/example-conversation.json")
    assert len(items) == 1 and isinstance(items[0], ParseIssue)
    message_ = items[0].message
    assert "does not look like a claude.ai export" in message_
    assert "'mapping'" in message_ and "'chat_messages'" in message_
    assert "ChatGPT" in message_


def test_empty_file(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(b"")
    items = parse(path)
    assert len(items) == 1 and items[0].message == "empty file"


def test_malformed_json_mid_array(tmp_path):
    good = json.dumps([conversation("c1", [message("a")]), conversation("c2", [message("b")])])
    path = tmp_path / "conversations.json"
    path.write_text(good[:-1] + ', {"uuid": "c3", "chat_messages": [tru]}, {"uuid": "c4"}]')
    events, convs, issues = split(parse(path))
    assert [e.native_id for e in events] == ["c1/a", "c2/b"]  # earlier records stand
    assert len(issues) == 1
    assert issues[0].line == 3 and "record 3" in issues[0].message


def test_unreadable_records_are_issues_and_parsing_goes_on(tmp_path):
    path = write(tmp_path, [
        "not an object",
        {"name": "no uuid"},
        conversation("c1", [{"sender": "human", "text": "no uuid"}, 7, message("ok")]),
    ])
    events, convs, issues = split(parse(path))
    assert [e.native_id for e in events] == ["c1/ok"]
    assert [i.line for i in issues] == [1, 2, 3, 3]
    assert "record 1" in issues[0].message and "record 2" in issues[1].message
    assert "message 1" in issues[2].message and "message 2" in issues[3].message


def test_future_and_missing_times(tmp_path):
    path = write(tmp_path, [
        conversation("c1", [
            message("a", created="2026-01-01T00:00:05Z"),
            message("b", created=None),  # inherits from a
            message("c", created="2999-01-01T00:00:00Z"),  # future: skipped
            message("d", created="garbage"),  # unreadable: inherits too
        ]),
        {"uuid": "c2", "chat_messages": [message("x", created=None)]},  # no time anywhere
    ])
    events, convs, issues = split(parse(path))
    by_id = {e.native_id: e for e in events}
    assert set(by_id) == {"c1/a", "c1/b", "c1/d"}
    assert by_id["c1/b"].attrs["time_inferred"] is True
    assert by_id["c1/b"].occurred_at == by_id["c1/a"].occurred_at
    assert by_id["c1/d"].attrs["unreadable_time"] == "garbage"
    assert "time_inferred" not in by_id["c1/a"].attrs
    assert len(issues) == 2
    assert "future" in issues[0].message and issues[0].record_id == "c1/c"
    assert "no usable time" in issues[1].message and issues[1].record_id == "c2/x"
    assert [c.native_id for c in convs] == ["c1", "c2"]


def test_first_message_without_time_inherits_conversation_start(tmp_path):
    path = write(tmp_path, [conversation("c1", [message("a", created=None)])])
    events, _, issues = split(parse(path))
    assert issues == []
    assert events[0].occurred_at.isoformat() == "2026-01-01T00:00:00+00:00"
    assert events[0].attrs["time_inferred"] is True


def test_nul_and_block_types(tmp_path):
    artifact = {"type": "tool_use", "name": "artifacts", "input": {
        "id": "a1", "type": "text/markdown", "title": "Plan", "command": "create",
        "content": "# Plan\nstep 1"}}
    msg = message("a", sender="assistant", text="")
    msg["content"] = [
        {"type": "text", "text": "bad\x00byte"},
        artifact,
        {"type": "token_budget"},
        {"type": "tool_result", "name": "web_search", "is_error": False,
         "content": [{"type": "knowledge", "title": "k", "text": "ignored"},
                     {"type": "text", "text": "result text"}]},
    ]
    image_only = message("b", text="")
    image_only["content"] = [{"type": "image"}]
    thinking_only = message("c", sender="assistant", text="")
    thinking_only["content"] = [{"type": "thinking", "thinking": "secret"}]
    weird = message("d", sender="robot")
    path = write(tmp_path, [conversation("c1", [msg, image_only, thinking_only, weird])])
    events, _, issues = split(parse(path))
    assert issues == []
    a, b, c, d = events
    assert a.text.startswith("bad\ufffdbyte")
    assert "[tool_use artifacts] Plan\n# Plan\nstep 1" in a.text
    assert "[tool_result web_search]\nresult text" in a.text and "ignored" not in a.text
    assert a.raw["content"][0]["text"] == "bad\x00byte"  # raw stays verbatim
    assert b.text == "[image]"
    assert c.text == "" and c.attrs["empty_reason"] == "thinking only"
    assert d.role == "other" and d.kind == "unknown" and d.attrs["sender"] == "robot"


def test_files_only_message_and_active_leaf_tie(tmp_path):
    files = message("f", text="", files=[{"file_name": "photo.jpg"}])
    files["content"] = []
    files.pop("text")
    root = message("r", parent_message_uuid=SENTINEL)
    # two leaves with the same time: the later array position wins
    left = message("l", sender="assistant", parent_message_uuid="r")
    right = message("g", sender="assistant", parent_message_uuid="r")
    path = write(tmp_path, [conversation("c1", [files, root, left, right])])
    events, _, _ = split(parse(path))
    by_id = {e.native_id: e for e in events}
    assert by_id["c1/f"].attrs["empty_reason"].startswith("files only")
    assert by_id["c1/g"].on_active_branch and by_id["c1/r"].on_active_branch
    assert not by_id["c1/l"].on_active_branch


def test_wrapped_single_conversation_object(tmp_path):
    path = write(tmp_path, conversation("c1", [message("a")]))
    events, convs, issues = split(parse(path))
    assert issues == [] and [e.native_id for e in events] == ["c1/a"]
    wrapper = write(tmp_path, {"conversations": []}, "other.json")
    _, _, issues = split(parse(wrapper))
    assert len(issues) == 1 and "top-level JSON object" in issues[0].message
