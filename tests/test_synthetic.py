"""The synthetic history generator writes the real export formats, and counts what it writes.

Everything here reads the generated files back with `json`, independently of the generator,
and compares them with the manifest and with the real samples in tests/data/samples.
"""

import hashlib
import json
import re
import time
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memory_platform.synthetic import generate_demo, generate_history
from memory_platform.synthetic.claude_ai import ROOT_PARENT
from memory_platform.synthetic.claude_code import encode_cwd

START = datetime(2026, 1, 5, 8, 30, tzinfo=timezone.utc)
DAYS = 30

CC_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
AI_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
AI_PROJECT_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")
GEMINI_TS = CC_TS
NOTE_DATE = re.compile(r"^date: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$", re.M)
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
ANY_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MSG_ID = re.compile(r"^msg_01[A-Za-z0-9]{22}$")
TOOLU_ID = re.compile(r"^toolu_01[A-Za-z0-9]{22}$")
REQ_ID = re.compile(r"^req_[A-Za-z0-9]+$")
GEMINI_URL = re.compile(r"^https://gemini\.google\.com/app/[0-9a-f]{16}$")
GEMINI_FILE = Path("gemini/Takeout/My Activity/Gemini Apps/MyActivity.json")


@pytest.fixture(scope="session")
def samples(samples_dir) -> Path:
    """The real export samples (tests/data/samples, provenance in its SOURCES.md)."""
    return samples_dir


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("history")
    return root, generate_history(root, 6000, seed=7, start=START, days=DAYS)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], float]:
    root = tmp_path_factory.mktemp("big")
    began = time.perf_counter()
    manifest = generate_history(root, 20_000, seed=3, start=START, days=DAYS)
    return root, manifest, time.perf_counter() - began


# --- reading the files back -----------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n"), path
    return [json.loads(line) for line in text.split("\n")[:-1]]


def cc_files(root: Path) -> list[Path]:
    return sorted((root / "claude-code" / "projects").rglob("*.jsonl"))


def cc_main_files(root: Path) -> list[Path]:
    return sorted((root / "claude-code" / "projects").glob("*/*.jsonl"))


def load_json(root: Path, rel: str | Path) -> Any:
    path = root / rel
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def note_events(text: str) -> int:
    assert text.startswith("---\n")
    body = text.split("\n---\n", 1)[1]
    headings = 0
    fenced = False
    for line in body.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            headings += 1
    return headings if headings >= 2 else 1


def recount(root: Path) -> tuple[dict[str, int], int]:
    """Events per source and files, counted from disk by the documented rules."""
    counts = {
        "claude-code": sum(len(read_jsonl(p)) for p in cc_files(root)),
        "claude-ai": sum(len(c.get("chat_messages", [])) for c in
                         load_json(root, "claude-ai/conversations.json"))
        + len(load_json(root, "claude-ai/projects.json")),
        "chatgpt": sum(
            1
            for conv in load_json(root, "chatgpt/conversations.json")
            for node in conv["mapping"].values()
            if node["message"] is not None
        ),
        "gemini": sum(
            2 if row["title"].startswith("Prompted ") else 1
            for row in load_json(root, GEMINI_FILE)
        ),
        "notes": sum(
            note_events(p.read_text(encoding="utf-8")) for p in (root / "notes").glob("*.md")
        ) if (root / "notes").exists() else 0,
    }  # fmt: skip
    files = sum(1 for p in root.rglob("*") if p.is_file())
    return counts, files


def parse_ts(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def all_times(root: Path) -> list[datetime]:
    """Every timestamp a record carries, as written."""
    out: list[datetime] = []
    for path in cc_files(root):
        for rec in read_jsonl(path):
            if "timestamp" in rec:
                assert CC_TS.match(rec["timestamp"]), rec["timestamp"]
                out.append(parse_ts(rec["timestamp"]))
            snap = rec.get("snapshot")
            if snap:
                assert CC_TS.match(snap["timestamp"])
                out.append(parse_ts(snap["timestamp"]))
    for conv in load_json(root, "claude-ai/conversations.json"):
        for key in ("created_at", "updated_at"):
            assert AI_TS.match(conv[key]), conv[key]
            out.append(parse_ts(conv[key]))
        for msg in conv["chat_messages"]:
            for key in ("created_at", "updated_at"):
                assert AI_TS.match(msg[key]), msg[key]
                out.append(parse_ts(msg[key]))
            for block in msg["content"]:
                for key in ("start_timestamp", "stop_timestamp"):
                    if block.get(key) is not None:
                        assert AI_TS.match(block[key])
                        out.append(parse_ts(block[key]))
    for proj in load_json(root, "claude-ai/projects.json"):
        for key in ("created_at", "updated_at"):
            assert AI_PROJECT_TS.match(proj[key]), proj[key]
            out.append(parse_ts(proj[key]))
    for conv in load_json(root, "chatgpt/conversations.json"):
        for key in ("create_time", "update_time"):
            assert isinstance(conv[key], float)
            out.append(datetime.fromtimestamp(conv[key], timezone.utc))
        for node in conv["mapping"].values():
            msg = node["message"]
            if msg is not None and msg["create_time"] is not None:
                assert isinstance(msg["create_time"], float)
                out.append(datetime.fromtimestamp(msg["create_time"], timezone.utc))
    for row in load_json(root, GEMINI_FILE):
        assert GEMINI_TS.match(row["time"]), row["time"]
        out.append(parse_ts(row["time"]))
    for path in (root / "notes").glob("*.md") if (root / "notes").exists() else []:
        found = NOTE_DATE.search(path.read_text(encoding="utf-8"))
        assert found, path
        out.append(parse_ts(found.group(1)))
    return out


def tree(root: Path) -> dict[str, bytes]:
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


# --- counts ---------------------------------------------------------------------------------


def test_manifest_counts_equal_what_is_on_disk(history) -> None:
    root, manifest = history
    counts, files = recount(root)
    assert manifest["by_source"] == counts
    assert manifest["events"] == sum(counts.values()) == 6000
    assert manifest["files"] == files
    assert manifest["root"] == str(root)


def test_default_mix_proportions(history) -> None:
    _, manifest = history
    share = {k: v / manifest["events"] for k, v in manifest["by_source"].items()}
    assert share == pytest.approx(
        {"claude-code": 0.6, "claude-ai": 0.15, "chatgpt": 0.15, "gemini": 0.08, "notes": 0.02},
        abs=0.002,
    )


def test_twenty_thousand_events_are_exact(big) -> None:
    root, manifest, seconds = big
    counts, files = recount(root)
    assert manifest["events"] == 20_000
    assert manifest["by_source"] == counts
    assert manifest["files"] == files
    assert seconds < 120  # about 2 s on a laptop; generous for slow CI disks


@pytest.mark.parametrize("events", [0, 1, 2, 7, 33, 150])
def test_tiny_histories_still_count_exactly(tmp_path: Path, events: int) -> None:
    manifest = generate_history(tmp_path, events, seed=1, start=START, days=3)
    counts, files = recount(tmp_path)
    assert manifest["by_source"] == counts
    assert manifest["events"] == events
    assert manifest["files"] == files


def test_mix_selects_sources(tmp_path: Path) -> None:
    manifest = generate_history(tmp_path, 500, seed=2, start=START, mix={"chatgpt": 1.0})
    assert manifest["by_source"] == {
        "claude-code": 0, "claude-ai": 0, "chatgpt": 500, "gemini": 0, "notes": 0,
    }  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chatgpt"]
    assert recount(tmp_path)[0]["chatgpt"] == 500


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate_history(tmp_path, 10, mix={"slack": 1.0})
    with pytest.raises(ValueError):
        generate_history(tmp_path, 10, mix={"chatgpt": 0.0})
    with pytest.raises(ValueError):
        generate_history(tmp_path, -1)


# --- determinism ----------------------------------------------------------------------------


def test_same_seed_same_bytes(tmp_path: Path, history) -> None:
    root, manifest = history
    again = generate_history(tmp_path / "again", 6000, seed=7, start=START, days=DAYS)
    assert tree(tmp_path / "again") == tree(root)
    assert {k: v for k, v in again.items() if k != "root"} == {
        k: v for k, v in manifest.items() if k != "root"
    }


def digest(root: Path) -> str:
    """One hash over every file's relative path and bytes, in path order."""
    h = hashlib.sha256()
    for rel, data in tree(root).items():
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


# Recorded on the single-module generator before it was split into a package. A change here
# means every stored benchmark history (and its figures) no longer matches what the code
# writes: change the generator on purpose, then record the new hashes in the same commit.
PINNED = {
    "history": "c818fed256a6ccae651e2b2bd8ecba2b41c13968798260a5a2e47dadeece7ec8",
    "big": "3bf7a64be38cf517a83d7077079b489e21eb97969209b6c771f75d4e33ba3193",
    "demo": "41ca7d3c4757ff0d375329d88a1e03986616d4a9c52600882616ca18a211062f",
}


def test_history_bytes_are_pinned(history, big) -> None:
    assert digest(history[0]) == PINNED["history"]
    assert digest(big[0]) == PINNED["big"]


def test_demo_bytes_are_pinned(tmp_path: Path) -> None:
    generate_demo(tmp_path, today=date(2026, 3, 15))
    assert digest(tmp_path) == PINNED["demo"]


def test_worker_processes_do_not_change_the_output(tmp_path: Path) -> None:
    generate_history(tmp_path / "one", 2500, seed=5, start=START, workers=1)
    generate_history(tmp_path / "two", 2500, seed=5, start=START, workers=2)
    assert tree(tmp_path / "one") == tree(tmp_path / "two")


def test_other_seed_other_history(tmp_path: Path) -> None:
    generate_history(tmp_path / "a", 800, seed=1, start=START)
    generate_history(tmp_path / "b", 800, seed=2, start=START)
    assert tree(tmp_path / "a") != tree(tmp_path / "b")


# --- timestamps -----------------------------------------------------------------------------


def test_timestamps_in_range_and_formats(history) -> None:
    root, manifest = history
    times = all_times(root)
    assert times
    end = START + timedelta(days=DAYS)
    assert min(times) >= START
    assert max(times) <= end
    assert abs(parse_ts(manifest["first"]) - min(times)) < timedelta(milliseconds=1)
    assert abs(parse_ts(manifest["last"]) - max(times)) < timedelta(milliseconds=1)
    # spread over the whole range, not bunched at the start
    assert max(times) - min(times) > timedelta(days=DAYS * 0.9)


def test_claude_code_times_increase_within_a_file(history) -> None:
    root, _ = history
    for path in cc_files(root):
        stamps = [r["timestamp"] for r in read_jsonl(path) if "timestamp" in r]
        assert stamps == sorted(stamps), path
        assert len(set(stamps)) == len(stamps), path


def test_chat_times_increase_within_a_conversation(history) -> None:
    root, _ = history
    for conv in load_json(root, "claude-ai/conversations.json"):
        created = [m["created_at"] for m in conv["chat_messages"]]
        assert created == sorted(created)
    for conv in load_json(root, "chatgpt/conversations.json"):
        mapping = conv["mapping"]
        path, node = [], conv["current_node"]
        while node is not None:
            path.append(node)
            node = mapping[node]["parent"]
        times = [mapping[n]["message"]["create_time"] for n in reversed(path)
                 if mapping[n]["message"] and mapping[n]["message"]["create_time"] is not None]
        assert times == sorted(times)


def test_gemini_rows_newest_first(history) -> None:
    root, _ = history
    stamps = [row["time"] for row in load_json(root, GEMINI_FILE)]
    assert stamps == sorted(stamps, reverse=True)


def test_default_start_is_the_last_days_before_now(tmp_path: Path) -> None:
    before = datetime.now(timezone.utc)
    manifest = generate_history(tmp_path, 300, seed=4, days=5)
    after = datetime.now(timezone.utc)
    assert parse_ts(manifest["first"]) >= before - timedelta(days=5, seconds=1)
    assert parse_ts(manifest["last"]) <= after


# --- ids ------------------------------------------------------------------------------------


def test_claude_code_ids_are_unique_and_well_formed(history) -> None:
    root, _ = history
    uuids: Counter[str] = Counter()
    tool_ids: Counter[str] = Counter()
    message_files: dict[str, Path] = {}
    for path in cc_files(root):
        for rec in read_jsonl(path):
            if "uuid" in rec:
                assert UUID.match(rec["uuid"]), rec["uuid"]
                uuids[rec["uuid"]] += 1
            if rec["type"] == "assistant":
                msg = rec["message"]
                assert MSG_ID.match(msg["id"]) and REQ_ID.match(rec["requestId"])
                assert message_files.setdefault(msg["id"], path) == path
                for block in msg["content"]:
                    if block["type"] == "tool_use":
                        assert TOOLU_ID.match(block["id"])
                        tool_ids[block["id"]] += 1
    assert uuids and max(uuids.values()) == 1
    assert tool_ids and max(tool_ids.values()) == 1


def test_chat_ids_are_unique(history) -> None:
    root, _ = history
    ids: Counter[str] = Counter()
    for conv in load_json(root, "claude-ai/conversations.json"):
        ids[conv["uuid"]] += 1
        for msg in conv["chat_messages"]:
            assert UUID.match(msg["uuid"])
            ids[msg["uuid"]] += 1
    for conv in load_json(root, "chatgpt/conversations.json"):
        assert conv["id"] == conv["conversation_id"]
        assert ANY_UUID.match(conv["id"])
        ids[conv["id"]] += 1
        for node_id, node in conv["mapping"].items():
            assert node["id"] == node_id
            if node_id != "client-created-root":
                assert ANY_UUID.match(node_id)
                ids[node_id] += 1
    assert max(ids.values()) == 1


# --- structure against the real samples -----------------------------------------------------


def first_of(records: list[dict], pred) -> dict:
    return next(r for r in records if pred(r))


def test_claude_ai_shape_matches_sample(history, samples: Path) -> None:
    root, _ = history
    sample = json.loads((samples / "claude-ai/conversations.json").read_text())[0]
    convs = [c for c in load_json(root, "claude-ai/conversations.json") if c["chat_messages"]]
    sample_msg_keys = set().union(*(m.keys() for m in sample["chat_messages"]))
    for conv in convs:
        assert set(conv) >= set(sample), set(sample) - set(conv)
        for msg in conv["chat_messages"]:
            assert set(msg) >= sample_msg_keys, sample_msg_keys - set(msg)
            assert msg["sender"] in ("human", "assistant")
            assert msg["content"] and all("type" in b for b in msg["content"])


def test_claude_ai_parent_chains_and_retries(big) -> None:
    root, _, _ = big
    retries = 0
    for conv in load_json(root, "claude-ai/conversations.json"):
        seen = {ROOT_PARENT}
        children: Counter[str] = Counter()
        for msg in conv["chat_messages"]:
            assert msg["parent_message_uuid"] in seen
            seen.add(msg["uuid"])
            if msg["sender"] == "assistant":
                children[msg["parent_message_uuid"]] += 1
        retries += sum(1 for n in children.values() if n == 2)
    assert retries > 0
    projects = load_json(root, "claude-ai/projects.json")
    assert projects and all({"uuid", "name", "docs", "prompt_template"} <= set(p) for p in projects)


def test_chatgpt_shape_matches_sample(history, samples: Path) -> None:
    root, _ = history
    sample = json.loads((samples / "chatgpt/conversations.json").read_text())[0]
    sample_node = next(n for n in sample["mapping"].values() if n["message"])
    for conv in load_json(root, "chatgpt/conversations.json"):
        assert set(conv) >= set(sample), set(sample) - set(conv)
        for node in conv["mapping"].values():
            assert set(node) >= set(sample_node)
            if node["message"]:
                assert set(node["message"]) >= set(sample_node["message"])
                assert set(node["message"]["author"]) >= set(sample_node["message"]["author"])


def test_chatgpt_trees_are_consistent(big) -> None:
    root, _, _ = big
    branches = tools = 0
    for conv in load_json(root, "chatgpt/conversations.json"):
        mapping = conv["mapping"]
        assert mapping["client-created-root"]["message"] is None
        assert mapping["client-created-root"]["parent"] is None
        for node_id, node in mapping.items():
            for child in node["children"]:
                assert mapping[child]["parent"] == node_id
            if node["parent"] is not None:
                assert node_id in mapping[node["parent"]]["children"]
            branches += len(node["children"]) > 1
            msg = node["message"]
            if msg and msg["author"]["role"] == "tool":
                tools += 1
                assert msg["content"]["content_type"] == "execution_output"
        assert mapping[conv["current_node"]]["children"] == []
        node = conv["current_node"]
        while mapping[node]["parent"] is not None:
            node = mapping[node]["parent"]
        assert node == "client-created-root"
    assert branches > 0 and tools > 0


def test_claude_code_shape_matches_samples(history, samples: Path) -> None:
    root, _ = history
    real = read_jsonl(samples / "claude-code/agentlogs/crud.jsonl")
    real_compact = read_jsonl(samples / "claude-code/agentlogs/compact.jsonl")
    want = {
        "prompt": first_of(real, lambda r: r["type"] == "user"
                           and isinstance(r["message"]["content"], str)),
        "assistant": first_of(real, lambda r: r["type"] == "assistant"),
        "tool_result": first_of(real, lambda r: "toolUseResult" in r),
        "snapshot": first_of(real, lambda r: r["type"] == "file-history-snapshot"),
    }  # fmt: skip
    got: dict[str, list[dict]] = {k: [] for k in want}
    for path in cc_files(root):
        for rec in read_jsonl(path):
            content = rec.get("message", {}).get("content")
            typed = isinstance(content, str) and not content.startswith("<")  # not a /command
            if rec["type"] == "user" and typed and not (
                rec.get("isMeta") or rec.get("isCompactSummary")
            ):
                got["prompt"].append(rec)
            elif rec["type"] == "assistant":
                got["assistant"].append(rec)
            elif "toolUseResult" in rec:
                got["tool_result"].append(rec)
            elif rec["type"] == "file-history-snapshot":
                got["snapshot"].append(rec)
    for kind, sample in want.items():
        assert got[kind], kind
        for rec in got[kind]:
            assert set(rec) >= set(sample), (kind, set(sample) - set(rec))
    for rec in got["assistant"]:
        assert set(rec["message"]) >= set(want["assistant"]["message"])
        assert set(rec["message"]["usage"]) >= set(want["assistant"]["message"]["usage"])
        assert len(rec["message"]["content"]) == 1  # one record per content block
    boundary = first_of(real_compact, lambda r: r.get("subtype") == "compact_boundary")
    summary = first_of(real_compact, lambda r: r.get("isCompactSummary"))
    for path in cc_files(root):
        for rec in read_jsonl(path):
            if rec.get("subtype") == "compact_boundary":
                assert set(rec) >= set(boundary)
                assert rec["parentUuid"] is None and rec["logicalParentUuid"]
            if rec.get("isCompactSummary"):
                assert set(rec) >= set(summary)


def test_claude_code_threading(big) -> None:
    root, _, _ = big
    kinds: Counter[str] = Counter()
    for path in cc_main_files(root):
        records = read_jsonl(path)
        session_id = path.stem
        by_uuid = {r["uuid"]: r for r in records if "uuid" in r}
        tool_uses: dict[str, str] = {}
        previous_msg = None
        closed: set[str] = set()
        for rec in records:
            kinds[rec["type"]] += 1
            if rec["type"] in ("user", "assistant", "system"):
                assert rec["sessionId"] == session_id
                assert rec["cwd"] and encode_cwd(rec["cwd"]) == path.parent.name
                assert rec["isSidechain"] is False
                if rec["parentUuid"] is not None:
                    assert rec["parentUuid"] in by_uuid
            if rec["type"] == "assistant":
                msg_id = rec["message"]["id"]
                # records of one response are consecutive (snapshot lines may sit between)
                assert msg_id not in closed or msg_id == previous_msg
                if previous_msg and previous_msg != msg_id:
                    closed.add(previous_msg)
                previous_msg = msg_id
                block = rec["message"]["content"][0]
                kinds["block:" + block["type"]] += 1
                if block["type"] == "tool_use":
                    tool_uses[block["id"]] = rec["uuid"]
            elif rec["type"] == "user":
                if previous_msg:
                    closed.add(previous_msg)
                    previous_msg = None
                content = rec["message"]["content"]
                if isinstance(content, list) and content[0].get("type") == "tool_result":
                    assert content[0]["tool_use_id"] in tool_uses
                if rec.get("isCompactSummary"):
                    assert by_uuid[rec["parentUuid"]].get("subtype") == "compact_boundary"
                    assert rec["message"]["content"].startswith("This session is being continued")
                    kinds["compact"] += 1
            elif rec["type"] == "summary":
                assert UUID.match(rec["leafUuid"])
    for kind in ("summary", "file-history-snapshot", "compact", "block:thinking",
                 "block:tool_use", "block:text"):  # fmt: skip
        assert kinds[kind] > 0, kind


def test_claude_code_subagent_files(big) -> None:
    root, _, _ = big
    agent_files = sorted((root / "claude-code" / "projects").glob("*/*/subagents/agent-*.jsonl"))
    assert agent_files
    for path in agent_files:
        session_id = path.parent.parent.name
        agent_id = path.stem.removeprefix("agent-")
        records = read_jsonl(path)
        assert records[0]["parentUuid"] is None
        assert all(r["isSidechain"] is True and r["agentId"] == agent_id for r in records)
        assert all(r["sessionId"] == session_id for r in records)
        assert all(r["version"].startswith("2.1") for r in records)
        parent = read_jsonl(path.parent.parent.with_suffix(".jsonl"))
        links = [r for r in parent if isinstance(r.get("toolUseResult"), dict)
                 and r["toolUseResult"].get("agentId") == agent_id]  # fmt: skip
        assert len(links) == 1 and links[0]["agentId"] == agent_id


def test_gemini_shape_matches_sample(history, samples: Path) -> None:
    root, _ = history
    sample_rows = json.loads((samples / "gemini-takeout/MyActivity.json").read_text())
    prompted = first_of(sample_rows, lambda r: r["title"].startswith("Prompted ")
                        and "safeHtmlItem" in r)  # fmt: skip
    rows = load_json(root, GEMINI_FILE)
    feedback = [r for r in rows if r["title"] == "Gave feedback: Good response"]
    assert 1 <= len(feedback) <= 3
    for row in rows:
        assert row["header"] == "Gemini Apps" and row["products"] == ["Gemini Apps"]
        if row["title"].startswith("Prompted "):
            assert set(row) >= set(prompted)
            assert row["safeHtmlItem"] and row["safeHtmlItem"][0]["html"].startswith("<")
            assert len(row["details"]) == 1 and GEMINI_URL.match(row["details"][0]["url"])


def test_notes_have_front_matter_and_one_or_two_sections(history) -> None:
    root, _ = history
    notes = sorted((root / "notes").glob("*.md"))
    assert notes
    sections = Counter()
    for path in notes:
        text = path.read_text(encoding="utf-8")
        assert NOTE_DATE.search(text)
        assert path.name[:10] == NOTE_DATE.search(text).group(1)[:10]
        sections[note_events(text)] += 1
    assert set(sections) == {1, 2}


# --- content --------------------------------------------------------------------------------


def test_texts_are_varied(big) -> None:
    root, _, _ = big
    prompts: list[str] = []
    answers: list[str] = []
    for path in cc_main_files(root):
        for rec in read_jsonl(path):
            if rec["type"] == "user" and isinstance(rec["message"]["content"], str):
                if not rec.get("isMeta") and not rec["message"]["content"].startswith("<"):
                    prompts.append(rec["message"]["content"])
            elif rec["type"] == "assistant" and rec["message"]["content"][0]["type"] == "text":
                answers.append(rec["message"]["content"][0]["text"])
    chat = [m["text"] for c in load_json(root, "claude-ai/conversations.json")
            for m in c["chat_messages"]]  # fmt: skip
    for texts, floor in ((prompts, 0.8), (answers, 0.8), (chat, 0.9)):
        assert len(texts) > 100
        assert len(set(texts)) / len(texts) > floor
    vocabulary = {w for t in prompts + answers for w in re.findall(r"[A-Za-z_]{4,}", t)}
    assert len(vocabulary) > 500


# --- demo -----------------------------------------------------------------------------------


def test_demo_counts_story_and_dates(tmp_path: Path) -> None:
    today = date(2026, 3, 15)
    manifest = generate_demo(tmp_path, today=today)
    counts, files = recount(tmp_path)
    assert manifest["by_source"] == counts
    assert manifest["files"] == files
    assert 150 <= manifest["events"] <= 400
    assert all(n > 0 for n in counts.values())
    times = all_times(tmp_path)
    midnight = datetime(2026, 3, 15, tzinfo=timezone.utc)
    assert midnight - timedelta(days=11) <= min(times) and max(times) < midnight
    everything = b"".join(tree(tmp_path).values()).decode()
    for needle in ("E0502", "database is locked", "tsvector", "port 5433", "cilantro",
                   "small PRs", "thiserror", "ADR-004"):  # fmt: skip
        assert needle in everything, needle
    assert list((tmp_path / "claude-code/projects").glob("*/*/subagents/agent-*.jsonl"))


def test_demo_is_fixed_apart_from_the_date(tmp_path: Path) -> None:
    generate_demo(tmp_path / "a", today=date(2026, 3, 15))
    generate_demo(tmp_path / "b", today=date(2026, 3, 15))
    generate_demo(tmp_path / "c", today=date(2026, 4, 1))
    a, b, c = tree(tmp_path / "a"), tree(tmp_path / "b"), tree(tmp_path / "c")
    assert a == b
    assert len(a) == len(c) and a != c


def test_demo_defaults_to_today(tmp_path: Path) -> None:
    manifest = generate_demo(tmp_path)
    assert parse_ts(manifest["last"]) < datetime.now(timezone.utc)
    assert parse_ts(manifest["first"]) > datetime.now(timezone.utc) - timedelta(days=12)
