import json
import time
import zipfile
from collections import Counter
from datetime import timedelta
from pathlib import Path

from memory_platform.adapters.base import KINDS, ROLES, Conversation, Event, ParseIssue
from memory_platform.adapters.chatgpt import adapter

REAL_CONV = "966da5c4-5bb7-4e4d-ab6d-a7316b96266e"


def split(items):
    events = [i for i in items if isinstance(i, Event)]
    convs = [i for i in items if isinstance(i, Conversation)]
    issues = [i for i in items if isinstance(i, ParseIssue)]
    return events, convs, issues


def check_invariants(items):
    """Ids unique, aware UTC times, valid roles/kinds, parents emitted before children."""
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
            assert item.conversation_id in announced
            assert item.parent_id is None or item.parent_id in ids
            if not item.text:
                assert item.attrs.get("empty_reason"), item


def parse(path):
    items = list(adapter.parse(Path(path)))
    check_invariants(items)
    return items


def node(node_id, parent, role="user", text="hi", t=1_700_000_000.0, children=(), **message):
    msg = {
        "id": node_id,
        "author": {"role": role, "name": message.pop("name", None), "metadata": {}},
        "create_time": t,
        "update_time": None,
        "content": message.pop("content", {"content_type": "text", "parts": [text]}),
        "status": "finished_successfully",
        "weight": message.pop("weight", 1.0),
        "metadata": message.pop("metadata", {}),
        "recipient": message.pop("recipient", "all"),
        **message,
    }
    return {"id": node_id, "parent": parent, "children": list(children), "message": msg}


def root(node_id="client-created-root", children=()):
    return {"id": node_id, "parent": None, "children": list(children), "message": None}


def conv(conv_id, nodes, current=None, t=1_700_000_000.0, **extra):
    return {
        "id": conv_id, "conversation_id": conv_id, "title": f"title {conv_id}",
        "create_time": t, "update_time": None if t is None else t + 100, "current_node": current,
        "mapping": {n["id"]: n for n in nodes}, "default_model_slug": "gpt-4o", **extra,
    }


def simple(conv_id, t=1_700_000_000.0):
    return conv(conv_id, [
        root(children=["u"]),
        node("u", "client-created-root", t=t + 1, children=["a"]),
        node("a", "u", role="assistant", text="hello", t=t + 2,
             metadata={"model_slug": "gpt-4o"}),
    ], current="a", t=t)


def write(tmp_path, data, name="conversations.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- the real samples -----------------------------------------------------------------

def test_example_conversation_branch(samples_dir):
    events, convs, issues = split(parse(samples_dir / "chatgpt/example-conversation.json"))
    assert issues == []
    assert [c.native_id for c in convs] == ["conv-123"]
    assert convs[0].title == "Sample conversation with branch"
    assert convs[0].started_at.isoformat() == "2024-01-01T00:00:00+00:00"
    # 6 nodes, all with messages; msg-3 branches into msg-4 (active) and msg-5
    assert [e.native_id for e in events] == [f"conv-123/msg-{i}" for i in range(1, 7)]
    active = [e.native_id for e in events if e.on_active_branch]
    assert len(active) == 5 and "conv-123/msg-5" not in active
    by_id = {e.native_id.split("/")[1]: e for e in events}
    assert by_id["msg-5"].parent_id == "conv-123/msg-3"
    assert by_id["msg-4"].parent_id == "conv-123/msg-3"
    assert by_id["msg-1"].parent_id is None
    # msg-1 is a system node with empty text: kept as a hidden meta row
    assert by_id["msg-1"].role == "system" and by_id["msg-1"].kind == "meta"
    assert by_id["msg-1"].attrs["empty_reason"] == "hidden system node"
    assert by_id["msg-3"].author == "gpt-4" and by_id["msg-2"].author is None
    assert by_id["msg-6"].text.startswith("Here's how to write a function in JavaScript:")
    assert all(e.line == 1 for e in events)


def test_real_export_code_interpreter(samples_dir):
    events, convs, issues = split(parse(samples_dir / "chatgpt/conversations.json"))
    assert issues == []
    assert [c.native_id for c in convs] == [REAL_CONV]
    assert convs[0].title == "Average Distance in U(0,1)"
    # 45 mapping nodes, one of them the message-less root: 44 events, nothing dropped
    assert len(events) == 44
    assert Counter((e.role, e.kind) for e in events) == {
        ("system", "meta"): 2,
        ("user", "message"): 8,
        ("assistant", "message"): 12,
        ("assistant", "tool_use"): 11,
        ("tool", "tool_result"): 11,
    }
    assert all(e.on_active_branch for e in events)  # no branches in this export
    assert {e.author for e in events if e.role == "assistant"} == {"gpt-4-code-interpreter"}
    assert {e.author for e in events if e.role == "tool"} == {"python"}
    # the two hidden system nodes have no time: they inherit the conversation's
    inferred = [e for e in events if e.attrs.get("time_inferred")]
    assert len(inferred) == 2 and all(e.role == "system" for e in inferred)
    assert all(e.attrs["content_type"] == "code" for e in events if e.kind == "tool_use")
    assert all(e.text for e in events if e.role != "system")


def test_discover(samples_dir, tmp_path):
    assert list(adapter.discover(samples_dir)) == [samples_dir / "chatgpt/conversations.json"]
    export = tmp_path / "export"
    export.mkdir()
    write(export, [simple("a")], "conversations-000.json")
    write(export, [simple("b")], "conversations-001.json")
    (export / "conversations.json.index").write_text("{}")
    write(export, {"files": []}, "export_manifest.json")
    claude = tmp_path / "claude"
    claude.mkdir()
    write(claude, [{"uuid": "x", "chat_messages": []}])
    with zipfile.ZipFile(tmp_path / "chatgpt.zip", "w") as archive:
        archive.writestr("conversations.json", json.dumps({"conversations": [simple("c")]}))
    assert list(adapter.discover(tmp_path)) == [
        tmp_path / "chatgpt.zip",
        export / "conversations-000.json",
        export / "conversations-001.json",
    ]


# --- containers and shards ------------------------------------------------------------

def test_sharded_zip_with_overlapping_conversation(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations-000.json", json.dumps([simple("a"), simple("b")]))
        archive.writestr("conversations-001.json", json.dumps([simple("b"), simple("c")]))
        archive.writestr("conversations.json.index", "{}")
        archive.writestr("export_manifest.json", "{}")
        archive.writestr("chat.html", "<html></html>")
    events, convs, issues = split(parse(path))
    assert issues == []
    assert [c.native_id for c in convs] == ["a", "b", "c"]
    assert sorted(e.native_id for e in events) == ["a/a", "a/u", "b/a", "b/u", "c/a", "c/u"]


def test_root_ids_repeat_across_conversations(tmp_path):
    path = write(tmp_path, [simple("a"), simple("b")])
    events, _, _ = split(parse(path))
    assert len({e.native_id for e in events}) == 4
    assert {e.parent_id for e in events if e.native_id.endswith("/u")} == {None}


def test_wrapper_object(tmp_path):
    path = write(tmp_path, {"conversations": [simple("a")], "version": 2})
    events, convs, issues = split(parse(path))
    assert issues == [] and [c.native_id for c in convs] == ["a"] and len(events) == 2
    single = write(tmp_path, simple("z"), "one.json")
    events, convs, issues = split(parse(single))
    assert issues == [] and [c.native_id for c in convs] == ["z"]


def test_truncated_zip(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", json.dumps([simple(str(i)) for i in range(50)]))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 60])
    items = parse(path)
    assert len(items) == 1 and isinstance(items[0], ParseIssue)
    assert items[0].file == str(path)


def test_corrupt_zip_member(tmp_path):
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", json.dumps([simple(str(i)) for i in range(50)]))
    data = bytearray(path.read_bytes())
    for offset in range(200, 260):  # inside the deflate stream; the directory stays intact
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    items = parse(path)
    issues = [i for i in items if isinstance(i, ParseIssue)]
    assert len(issues) == 1 and issues[0].file == f"{path}!conversations.json"
    assert "read" in issues[0].message or "invalid JSON" in issues[0].message


# --- bad input ------------------------------------------------------------------------

def test_claude_export_is_rejected_clearly(samples_dir):
    items = parse(samples_dir / "claude-ai/conversations.json")
    assert len(items) == 1
    assert "does not look like a ChatGPT export" in items[0].message
    assert "claude.ai" in items[0].message


def test_gemini_file_is_rejected_clearly(samples_dir):
    items = parse(samples_dir / "gemini-takeout/MyActivity.json")
    assert len(items) == 1 and "Google Takeout" in items[0].message


def test_empty_file(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_bytes(b"")
    items = parse(path)
    assert [i.message for i in items] == ["empty file"]
    path.write_bytes(b"  \n ")
    assert [i.message for i in parse(path)] == ["empty file"]


def test_malformed_json_mid_array(tmp_path):
    text = json.dumps([simple("a"), simple("b"), simple("c")])
    broken = text.replace('"title c"', '"title c', 1)
    path = tmp_path / "conversations.json"
    path.write_text(broken)
    events, convs, issues = split(parse(path))
    assert [c.native_id for c in convs] == ["a", "b"]
    assert len(events) == 4
    assert len(issues) == 1 and issues[0].line == 3 and "record 3" in issues[0].message


def test_times_missing_inherited_and_future(tmp_path):
    t = 1_700_000_000.0
    data = [
        conv("a", [
            root(children=["s"]),
            node("s", "client-created-root", role="system", text="", t=None, children=["u"]),
            node("u", "s", t=None, update_time=t + 5, children=["x"]),
            node("x", "u", role="assistant", t=None, children=["f"]),
            node("f", "x", t=4_102_444_800.0 + 86400 * 400),  # far future
        ], current="f", t=t),
        conv("b", [node("n", None, t=None)], t=None),
    ]
    events, convs, issues = split(parse(write(tmp_path, data)))
    by_id = {e.native_id: e for e in events}
    assert set(by_id) == {"a/s", "a/u", "a/x"}
    assert by_id["a/s"].occurred_at.timestamp() == t and by_id["a/s"].attrs["time_inferred"]
    assert by_id["a/u"].occurred_at.timestamp() == t + 5  # update_time beats inheritance
    assert "time_inferred" not in by_id["a/u"].attrs
    assert by_id["a/x"].occurred_at.timestamp() == t + 5 and by_id["a/x"].attrs["time_inferred"]
    assert [i.record_id for i in issues] == ["a/f", "b/n"]
    assert "future" in issues[0].message and "no time" in issues[1].message
    assert convs[1].started_at is None


def test_current_node_missing_picks_latest_leaf(tmp_path):
    t = 1_700_000_000.0
    nodes = [
        root(children=["u"]),
        node("u", "client-created-root", t=t, children=["a1", "a2"]),
        node("a1", "u", role="assistant", t=t + 10, children=["u2"]),
        node("u2", "a1", t=t + 11, children=[]),
        node("a2", "u", role="assistant", t=t + 50),  # regenerated later: shown last
    ]
    events, _, _ = split(parse(write(tmp_path, [conv("c", nodes, current=None)])))
    active = {e.native_id for e in events if e.on_active_branch}
    assert active == {"c/u", "c/a2"}


def test_content_types_and_kinds(tmp_path):
    t = 1_700_000_000.0
    image = {"content_type": "image_asset_pointer", "asset_pointer": "file-service://file-1"}
    audio = {"content_type": "audio_transcription", "text": "spoken words", "direction": "in"}
    nodes = [
        root(children=["ctx"]),
        node("ctx", "client-created-root", t=t, role="user",
             content={"content_type": "user_editable_context", "user_profile": "I am Ann",
                      "user_instructions": "Be terse"},
             metadata={"is_visually_hidden_from_conversation": True}, children=["mm"]),
        node("mm", "ctx", t=t + 1, content={"content_type": "multimodal_text",
                                           "parts": [image, "what is this?", audio]},
             children=["th"]),
        node("th", "mm", role="assistant", t=t + 2,
             content={"content_type": "thoughts", "thoughts": [
                 {"summary": "Looking", "content": "It is a cat", "finished": True}]},
             children=["call"]),
        node("call", "th", role="assistant", t=t + 3, recipient="browser",
             content={"content_type": "text", "parts": ["search('cat')"]},
             metadata={"model_slug": "o3"}, children=["res"]),
        node("res", "call", role="tool", name="browser", t=t + 4,
             content={"content_type": "tether_browsing_display", "result": "Cats are pets",
                      "summary": None}, children=["odd"]),
        node("odd", "res", role="assistant", t=t + 5,
             content={"content_type": "brand_new_type", "blob": 1}, children=["nul"]),
        node("nul", "odd", t=t + 6, text="zero\x00byte", children=["crit"]),
        node("crit", "nul", role="critic", t=t + 7),
    ]
    events, _, issues = split(parse(write(tmp_path, [conv("c", nodes, current="crit")])))
    assert issues == []
    by_id = {e.native_id.split("/")[1]: e for e in events}
    assert by_id["ctx"].kind == "meta" and by_id["ctx"].text == "I am Ann\n\nBe terse"
    assert by_id["mm"].text == "[image]\n\nwhat is this?\n\nspoken words"
    assert by_id["mm"].kind == "message" and by_id["mm"].attrs["images"] == 1
    assert by_id["th"].kind == "thinking" and by_id["th"].text == "Looking\n\nIt is a cat"
    assert by_id["call"].kind == "tool_use" and by_id["call"].attrs["recipient"] == "browser"
    assert by_id["call"].author == "o3"
    assert by_id["res"].kind == "tool_result" and by_id["res"].author == "browser"
    assert by_id["res"].text == "Cats are pets"
    assert by_id["odd"].kind == "unknown" and by_id["odd"].text == ""
    assert by_id["odd"].attrs["empty_reason"] == "unhandled content_type 'brand_new_type'"
    assert by_id["odd"].raw["message"]["content"]["blob"] == 1
    assert by_id["nul"].text == "zero\ufffdbyte"
    assert by_id["crit"].role == "other" and by_id["crit"].kind == "unknown"


def test_unreadable_records(tmp_path):
    data = [42, {"title": "no id", "mapping": {}}, simple("ok")]
    data[2]["mapping"]["bad"] = "not a node"
    events, convs, issues = split(parse(write(tmp_path, data)))
    assert [c.native_id for c in convs] == ["ok"] and len(events) == 2
    assert [i.line for i in issues] == [1, 2, 3]


def test_parse_rate_smoke(tmp_path):
    """A few thousand messages parse in well under a second per thousand (see report)."""
    t = 1_700_000_000.0
    data = []
    for c in range(100):
        nodes = [root(children=["m0"])]
        for m in range(20):
            parent = f"m{m - 1}" if m else "client-created-root"
            role = "user" if m % 2 == 0 else "assistant"
            nodes.append(node(f"m{m}", parent, role=role, text="word " * 40, t=t + m))
        data.append(conv(f"c{c}", nodes, current="m19"))
    path = write(tmp_path, data)
    start = time.perf_counter()
    count = sum(1 for i in adapter.parse(path) if isinstance(i, Event))
    elapsed = time.perf_counter() - start
    assert count == 2000
    assert elapsed < 5
