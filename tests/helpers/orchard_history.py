"""A small history for orchard's tests, in the real export formats, anchored on a Monday:
Claude Code sessions in a git repo (and its subfolder) and in a plain folder, and ChatGPT
conversations, some under one repeated title."""

import json
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

from helpers.transcripts import cc_record

ATLAS = "/home/me/src/atlas"
ATLAS_WEB = "/home/me/src/atlas/web"
SCRATCH = "/home/me/scratch"
THESIS = "Thesis chapter 3"
BLOCKER_TEXT = "the staging certificate expired again, waiting on ops to renew it"


@dataclass
class Expected:
    week1: date
    week2: date


def _session(path: Path, session: str, cwd: str, start: datetime, texts: list[str],
             git: bool = True) -> None:
    parent = None
    lines = []
    for i, text in enumerate(texts):
        rec = cc_record(i, session, start + timedelta(minutes=i), "user" if i % 2 == 0
                        else "assistant", text=text, parent=parent, cwd=cwd)
        if not git:
            rec.pop("gitBranch")
        parent = rec["uuid"]
        lines.append(json.dumps(rec))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _chat(title: str, start: datetime, texts: list[str]) -> dict:
    conv_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{title}/{start.isoformat()}"))
    root = f"{conv_id}-root"
    mapping = {root: {"id": root, "message": None, "parent": None, "children": []}}
    parent = root
    for i, text in enumerate(texts):
        node = f"{conv_id}-{i}"
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": "user" if i % 2 == 0 else "assistant",
                                   "name": None, "metadata": {}},
            "create_time": (start + timedelta(minutes=i)).timestamp(), "update_time": None,
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully", "end_turn": True, "weight": 1.0,
            "metadata": {}, "recipient": "all", "channel": None}}
        mapping[parent]["children"].append(node)
        parent = node
    return {"title": title, "create_time": start.timestamp(),
            "update_time": (start + timedelta(minutes=len(texts))).timestamp(),
            "mapping": mapping, "current_node": parent, "conversation_id": conv_id,
            "id": conv_id, "is_archived": False, "default_model_slug": "gpt-4o"}


def write_history(root: Path, monday: date) -> Expected:
    """Two weeks: week1 starts `monday` - 7 days, week2 on `monday` (its turns in the first
    hour, so a history anchored on the current week is never in the future)."""
    w1 = datetime.combine(monday - timedelta(days=7), time(9), tzinfo=timezone.utc)
    w2 = datetime.combine(monday, time(0, 5), tzinfo=timezone.utc)
    cc = root / "claude-code"
    _session(cc / "-home-me-src-atlas" / "a1.jsonl", "a1", ATLAS, w1 + timedelta(days=1),
             ["set up the atlas map tiles", "done: tiles served from /tiles",
              "add a cache header", "added Cache-Control: max-age=3600"])
    _session(cc / "-home-me-src-atlas" / "a2.jsonl", "a2", ATLAS, w2,
             ["deploy atlas to staging", BLOCKER_TEXT, "ok, then write the release notes",
              "release notes drafted in NOTES.md", "tag it when staging works",
              "will tag v1.2 once the certificate is renewed"])
    _session(cc / "-home-me-src-atlas-web" / "a3.jsonl", "a3", ATLAS_WEB,
             w2 + timedelta(minutes=15), ["fix the web build", "the web build passes"])
    _session(cc / "-home-me-scratch" / "s1.jsonl", "s1", SCRATCH, w1 + timedelta(days=2),
             ["what is 2**20", "1048576"], git=False)
    chats = [
        _chat(THESIS, w1, ["outline chapter 3", "here is an outline"]),
        _chat(THESIS, w1 + timedelta(days=3), ["rewrite section 3.2", "rewritten"]),
        _chat(" thesis  chapter 3", w2 + timedelta(minutes=25), ["cite Smith 2021",
                                                                 "added the citation"]),
        _chat("New chat", w1, ["hi", "hello"]),
        _chat("New chat", w1 + timedelta(hours=1), ["hi again", "hello again"]),
        _chat("New chat", w1 + timedelta(hours=2), ["and again", "hello"]),
        _chat("Pasta recipe", w1, ["carbonara?", "eggs, pecorino, guanciale"]),
    ]
    (root / "chatgpt").mkdir(parents=True, exist_ok=True)
    (root / "chatgpt" / "conversations.json").write_text(json.dumps(chats), encoding="utf-8")
    return Expected(week1=monday - timedelta(days=7), week2=monday)


def import_history(db, root: Path) -> None:
    from memory_platform.ingest.importer import import_path

    for kind in ("claude-code", "chatgpt"):
        report = import_path(db, kind, root / kind)
        assert not report.errors, report.errors
