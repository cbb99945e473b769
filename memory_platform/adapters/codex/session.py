"""What the lines of one Codex rollout share: the session id, cwd, model, branch and
sub-agent flag, learned from `session_meta` and `turn_context` lines as they go by."""

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_platform.adapters.base import parse_iso

_UUID_TAIL = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)


def session_id_from_name(path: Path) -> str:
    match = _UUID_TAIL.search(path.stem)
    return match.group(0) if match else path.stem


@dataclass(slots=True)
class Session:
    """What the lines of one rollout share; updated as session_meta/turn_context go by."""

    id: str
    from_meta: bool = False
    cwd: str | None = None
    model: str | None = None
    branch: str | None = None
    sidechain: bool = False
    started_at: datetime | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)  # call_id -> tool name

    def take_meta(self, payload: dict[str, Any], line_time: datetime | None, first: bool) -> None:
        if self.from_meta:
            return  # a fork may copy its parent's session_meta; the first one is ours
        self.from_meta = True
        sid = payload.get("id")
        # Only the first line may name the session: switching ids mid-file would split it.
        if first and isinstance(sid, str) and sid:
            self.id = sid
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str) and git["branch"]:
            self.branch = git["branch"]
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.sidechain = True
        self.started_at = parse_iso(payload.get("timestamp")) or line_time
        for key in (
            "cli_version",
            "originator",
            "source",
            "model_provider",
            "forked_from_id",
            "agent_nickname",
            "agent_role",
        ):
            if payload.get(key) is not None:
                self.attrs[key] = payload[key]

    def take_turn_context(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]


def meta_payload(rec: dict[str, Any], number: int | None = None) -> dict[str, Any] | None:
    """The session-meta object of a line, if it is one (current or pre-envelope format)."""
    if rec.get("type") == "session_meta":
        payload = rec.get("payload")
        return payload if isinstance(payload, dict) else None
    # Pre-envelope first line: a bare {id, timestamp, instructions, git}.
    if "payload" not in rec and "type" not in rec and "id" in rec and number in (None, 1):
        return rec
    return None


def turn_context_payload(rec: dict[str, Any]) -> dict[str, Any] | None:
    payload = rec.get("payload")
    if rec.get("type") == "turn_context" and isinstance(payload, dict):
        return payload
    return None
