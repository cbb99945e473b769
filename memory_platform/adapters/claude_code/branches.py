"""The first, cheap pass of a full Claude Code parse: per-session facts and which records a
rewind left behind (the active-branch rule is in the package docstring)."""

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_platform.adapters.base import ParseIssue, is_future, parse_iso
from memory_platform.adapters.claude_code.content import first_text, is_wrapper
from memory_platform.adapters.jsonl import JsonlReader


def record_time(rec: dict[str, Any]) -> Any:
    """The raw timestamp value of a record (file-history-snapshot keeps it in `snapshot`)."""
    value = rec.get("timestamp")
    if value is None and rec.get("type") == "file-history-snapshot":
        snapshot = rec.get("snapshot")
        if isinstance(snapshot, dict):
            value = snapshot.get("timestamp")
    return value


def good_time(rec: dict[str, Any]) -> datetime | None:
    moment = parse_iso(record_time(rec))
    return None if moment is None or is_future(moment) else moment


def _is_turn_candidate(rec: dict[str, Any]) -> bool:
    """A real user/assistant turn (not injected meta) that can end the active branch."""
    rtype = rec.get("type")
    if rtype == "assistant":
        return True
    if rtype != "user" or rec.get("isMeta") or rec.get("isCompactSummary"):
        return False
    msg = rec.get("message")
    first = first_text(msg.get("content")) if isinstance(msg, dict) else None
    return first is None or not is_wrapper(first)


@dataclass(slots=True)
class SessionInfo:
    project: str | None = None
    started_at: datetime | None = None
    version: str | None = None


@dataclass(slots=True)
class FileScan:
    abandoned: set[str]
    sessions: dict[str, SessionInfo]


def scan_file(path: Path) -> FileScan:
    """First pass of a full parse: the parent graph and per-session facts, nothing else."""
    parent: dict[str, str | None] = {}
    turns: set[str] = set()  # uuids of user/assistant records
    sessions: dict[str, SessionInfo] = {}
    # Latest main-chain turn (time, line, uuid); sidechain turns only as fallback for
    # subagent files, which hold nothing else.
    best: tuple[datetime, int, str] | None = None
    best_side: tuple[datetime, int, str] | None = None
    for item in JsonlReader(path):
        if isinstance(item, ParseIssue):
            continue
        rec = item.value
        moment = good_time(rec)
        sid = rec.get("sessionId")
        if isinstance(sid, str):
            info = sessions.get(sid)
            if info is None:
                info = sessions[sid] = SessionInfo()
            if info.project is None and isinstance(rec.get("cwd"), str):
                info.project = rec["cwd"]
            if info.version is None and isinstance(rec.get("version"), str):
                info.version = rec["version"]
            if moment is not None and (info.started_at is None or moment < info.started_at):
                info.started_at = moment
        uuid = rec.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            continue
        up = rec.get("parentUuid")
        if up is None:
            up = rec.get("logicalParentUuid")
        parent[uuid] = up if isinstance(up, str) else None
        rtype = rec.get("type")
        if rtype not in ("user", "assistant"):
            continue
        turns.add(uuid)
        if moment is None or not _is_turn_candidate(rec):
            continue
        key = (moment, item.number, uuid)  # line numbers are unique: uuids never compared
        if rec.get("isSidechain"):
            if best_side is None or key > best_side:
                best_side = key
        elif best is None or key > best:
            best = key
    chosen = best or best_side
    if chosen is None:
        return FileScan(set(), sessions)
    return FileScan(_abandoned(parent, turns, chosen[2]), sessions)


def _abandoned(parent: dict[str, str | None], turns: set[str], leaf: str) -> set[str]:
    """Uuids on branches a rewind left behind; linear in the number of records."""
    active: set[str] = set()
    node: str | None = leaf
    while node is not None and node not in active:
        active.add(node)
        node = parent.get(node)
    status: dict[str, bool] = {}  # uuid -> abandoned?
    for start in parent:
        if start in active or start in status:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        node = start
        while True:
            path.append(node)
            on_path.add(node)
            up = parent[node]
            if up is None:
                result = False  # a chain of its own (see the package docstring)
                break
            if up in active:
                # The chain left the active path here; only a user/assistant child is a
                # rewound branch, side records (progress, system, ...) just hang off it.
                result = node in turns and up != leaf
                break
            if up in status:
                result = status[up]
                break
            if up not in parent or up in on_path:
                result = False  # dangling parent (another file) or a cycle: leave it alone
                break
            node = up
        for member in path:
            status[member] = result
    return {uuid for uuid, gone in status.items() if gone}

