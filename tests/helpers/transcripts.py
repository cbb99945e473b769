"""Small Claude Code transcripts written on the fly, in the real JSONL shape."""

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path


def cc_record(i: int, session: str, at: datetime, role: str = "user", text: str | None = None,
              parent: str | None = None, cwd: str = "/home/me/proj") -> dict:
    rid = str(uuid.UUID(int=(hash(session) & ((1 << 64) - 1)) << 64 | i))
    base = {
        "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
        "sessionId": session, "version": "2.1.3", "gitBranch": "main", "type": role,
        "uuid": rid, "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z",
    }
    body = text if text is not None else f"turn {i} of {session}: port {8000 + i % 97}"
    if role == "user":
        base["message"] = {"role": "user", "content": body}
    else:
        base["message"] = {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_{i:06d}", "type": "message",
            "role": "assistant", "content": [{"type": "text", "text": body}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 5},
        }
    return base


def write_transcript(path: Path, n: int, *, session: str = "s-1",
                     start: datetime | None = None, step: timedelta = timedelta(seconds=30),
                     first: int = 0, mode: str = "w") -> list[dict]:
    """Write (or append) n alternating user/assistant records; returns them."""
    start = start or datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
    records = []
    parent = None
    for i in range(first, first + n):
        rec = cc_record(i, session, start + step * i, "user" if i % 2 == 0 else "assistant",
                        parent=parent)
        parent = rec["uuid"]
        records.append(rec)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec) + "\n")
    return records
