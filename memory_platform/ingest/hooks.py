"""Claude Code hook entry points. Claude Code waits for a hook before it exits, so a hook only
validates its input and drops one file into a queue folder: no database, no Dagster, no
third-party import (`session_end_sensor` picks the file up on its next tick).

The `SessionEnd` hook receives one JSON object on stdin, e.g.

    {"session_id": "abc123", "transcript_path": "~/.claude/projects/-home-me-proj/abc123.jsonl",
     "cwd": "/home/me/proj", "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}

`reason` is one of clear, logout, prompt_input_exit, other (more may come: any string is kept).
"""

import json
import os
import re
import select
import time
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.json_depth import nesting_depth

SESSION_END = "SessionEnd"
# A hook payload is a few hundred bytes; anything far bigger is not what we expect.
MAX_INPUT_BYTES = 1 << 20
# Claude Code writes the payload at once; a stdin left open is given up on after this long,
# far inside every hook's timeout (docs/recall-and-wiki.md: 5 s for the prompt hook, 10 s for this one).
STDIN_SECONDS = 1.0
# Nesting levels a payload may have (Claude Code's nest two or three). The standard
# library's parser recurses per level: 100,000 `[` raised RecursionError, a traceback.
MAX_DEPTH = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class HookInputError(ValueError):
    """The hook's stdin was not the payload of its event; the message says what was wrong."""


def queue_dir(home: Path) -> Path:
    """Where SessionEnd events wait for the sensor: `$MEMORY_PLATFORM_HOME/queue/session-end`."""
    return home / "queue" / "session-end"


def read_hook_input(stream, timeout: float = STDIN_SECONDS) -> bytes:
    """Read the hook's stdin until EOF, a complete JSON value, or `timeout` seconds. Some
    Claude Code versions have left a hook's stdin open, and a bare read() would then hang
    until the hook is cancelled."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return stream.read()  # not a real file (an in-memory stream): it has an end
    buf = b""
    deadline = time.monotonic() + timeout
    while len(buf) <= MAX_INPUT_BYTES:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        buf += chunk
        try:
            json.loads(buf)
        except (ValueError, RecursionError):  # incomplete, or too deep: parse_hook_object says
            continue
        break
    return buf


def parse_hook_object(raw: str | bytes, event: str) -> dict:
    """The hook's stdin as the JSON object of Claude Code's `event` hook (every hook of this
    package reads it so): small, not empty, at most MAX_DEPTH levels deep, JSON, an object,
    and no other hook_event_name."""
    if len(raw) > MAX_INPUT_BYTES:
        raise HookInputError(f"hook input is {len(raw)} bytes; expected a small JSON object")
    if not raw or not raw.strip():
        raise HookInputError(f"no input on stdin; expected Claude Code's {event} hook JSON")
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if nesting_depth(text, MAX_DEPTH) > MAX_DEPTH:
        raise HookInputError(f"hook input nests deeper than {MAX_DEPTH} levels; expected "
                             f"Claude Code's {event} hook JSON")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise HookInputError(f"hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"hook input must be a JSON object, got {type(data).__name__}")
    named = data.get("hook_event_name", event)
    if named != event:
        raise HookInputError(f"hook_event_name is {named!r}; this command handles {event}")
    return data


def parse_session_end(raw: str | bytes) -> dict:
    """Validate a SessionEnd hook payload; return the fields we keep."""
    data = parse_hook_object(raw, SESSION_END)
    session_id = data.get("session_id")
    if not isinstance(session_id, str) or not session_id.strip():
        raise HookInputError("hook input has no session_id")
    for key in ("transcript_path", "cwd", "reason"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise HookInputError(f"{key} must be a string, got {type(data[key]).__name__}")
    transcript = data.get("transcript_path") or None
    return {
        "session_id": session_id.strip(),
        "transcript_path": str(Path(transcript).expanduser()) if transcript else None,
        "cwd": data.get("cwd"),
        "hook_event_name": SESSION_END,
        "reason": data.get("reason"),
    }


def enqueue_session_end(payload: dict, home: Path) -> Path:
    """Write one event file atomically (temporary name, then rename), so the sensor never
    reads half a file. The name sorts by arrival time and never collides."""
    folder = queue_dir(home)
    folder.mkdir(parents=True, exist_ok=True)
    received = datetime.now(timezone.utc)
    record = {**payload, "received_at": received.isoformat()}
    session = _UNSAFE.sub("_", payload["session_id"])[:80]
    name = f"{time.time_ns():020d}-{os.getpid()}-{session}.json"
    tmp = folder / f".{name}.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(record, fh, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / name)
    return folder / name


def session_end(raw: str | bytes, home: Path) -> Path:
    """The whole hook: validate stdin, queue it; return the queue file."""
    return enqueue_session_end(parse_session_end(raw), home)
