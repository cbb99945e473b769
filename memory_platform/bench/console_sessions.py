"""Real developer transcripts for the search benchmark: one developer's Claude Code console
sessions (`../shared/benchdata/claude-code-console-bookminder`, MIT, read in place) turned
into the Claude Code JSONL the importer reads, one file per session.

The console text has no per-message records, so each exchange becomes two turns: the
prompt (the `> ` line and what follows it up to the first `⏺`, i.e. a slash command's
output too) as a user message, and everything Claude printed until the next prompt (its
text, tool calls and their output, verbatim) as one assistant message. A session starts at
each welcome box. The files carry no times beyond the day each was added to git
(SOURCES.md); turns are spaced a minute apart from 09:00 of that day, sessions an hour.
"""

import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from memory_platform.bench.common import benchdata

# day file -> the day it was added to git (SOURCES.md)
DAYS = {1: "2025-04-17", 2: "2025-04-17", 3: "2025-05-04", 4: "2025-05-25", 5: "2025-05-25",
        6: "2025-05-29", 7: "2025-05-29", 8: "2025-06-23", 9: "2025-06-23", 10: "2025-06-27",
        11: "2025-06-27", 12: "2025-06-28", 13: "2025-06-30", 14: "2025-07-03",
        15: "2025-07-03", 16: "2025-07-04", 17: "2025-07-04", 18: "2025-07-05",
        19: "2025-07-07", 20: "2025-07-12", 21: "2025-07-12"}
CWD = "/Users/palimondo/Developer/BookMinder"
_BOX = re.compile(r"^╭")


@dataclass
class Turn:
    role: str  # user / assistant
    text: str
    key: str  # day-DDD:S<session>:<turn>, stable across runs


@dataclass
class Session:
    day: int
    number: int
    turns: list[Turn] = field(default_factory=list)


def console_dir() -> Path:
    return benchdata() / "claude-code-console-bookminder"


def parse_day(path: Path, day: int) -> list[Session]:
    """The sessions of one day file (see the module docstring)."""
    sessions: list[Session] = []
    current: Session | None = None
    role, lines = None, []

    def close() -> None:
        nonlocal role, lines
        if current is not None and role is not None:
            text = "\n".join(lines).strip()
            if text:
                n = len(current.turns)
                current.turns.append(Turn(role, text, f"day-{day:03d}:S{current.number}:{n}"))
        role, lines = None, []

    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.rstrip()
        if _BOX.match(line) or current is None:
            if _BOX.match(line):
                close()
                current = Session(day, len(sessions) + 1)
                sessions.append(current)
                role = None
                continue
            if current is None:
                current = Session(day, 1)
                sessions.append(current)
        if line.startswith("> "):
            close()
            role, lines = "user", [line[2:]]
        elif line.startswith("⏺") and role == "user":
            close()
            role, lines = "assistant", [line]
        elif role is not None:
            lines.append(line)
    close()
    return [s for s in sessions if s.turns]


def all_sessions(folder: Path | None = None) -> list[Session]:
    folder = folder or console_dir()
    out = []
    for day in sorted(DAYS):
        path = folder / f"day-{day:03d}.md"
        if path.is_file():
            out.extend(parse_day(path, day))
    return out


def session_records(session: Session) -> list[dict]:
    """Claude Code JSONL records of one session."""
    start = datetime.combine(date.fromisoformat(DAYS[session.day]), datetime.min.time(),
                             timezone.utc) + timedelta(hours=9 + session.number)
    sid = f"bookminder-{session.day:03d}-{session.number:02d}"
    records, parent = [], None
    for i, turn in enumerate(session.turns):
        uuid = f"{sid}-{i:04d}"
        at = (start + timedelta(minutes=i)).isoformat().replace("+00:00", "Z")
        message: dict = ({"role": "user", "content": turn.text} if turn.role == "user" else
                         {"role": "assistant", "model": "claude", "type": "message",
                          "content": [{"type": "text", "text": turn.text}]})
        records.append({"parentUuid": parent, "isSidechain": False, "userType": "external",
                        "cwd": CWD, "sessionId": sid, "type": turn.role, "message": message,
                        "uuid": uuid, "timestamp": at})
        parent = uuid
    return records


def write_jsonl(folder: Path, sessions: list[Session]) -> dict[str, str]:
    """One `<session id>.jsonl` per session under `folder`; returns native id -> turn key."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = {}
    for session in sessions:
        records = session_records(session)
        name = records[0]["sessionId"]
        (folder / f"{name}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        for record, turn in zip(records, session.turns, strict=True):
            keys[record["uuid"]] = turn.key
    return keys
