"""Minimal valid records of every export format, and the hostile things put inside them
(deep nesting, huge strings, bad bytes), for tests/test_hostile_files.py and the hostile-file
benchmark's expectations. Records are built as Python values and written as bytes, so a test
can splice raw bytes (invalid UTF-8, truncation) exactly where it wants them."""

import json
import os
import subprocess
import sys
from pathlib import Path

CREATED = "2026-01-01T00:00:00Z"


def claude_ai_conversation(uid: str, text: str = "hello", **message_extra) -> dict:
    message = {"uuid": f"{uid}-m", "sender": "human", "created_at": "2026-01-01T00:00:01Z",
               "text": text, "content": [{"type": "text", "text": text}], **message_extra}
    return {"uuid": uid, "name": f"conversation {uid}", "created_at": CREATED,
            "chat_messages": [message]}


def chatgpt_conversation(cid: str, text: str = "hello", **message_extra) -> dict:
    t = 1_767_225_600.0  # 2026-01-01
    root = {"id": "root", "parent": None, "children": ["u"], "message": None}
    user = {"id": "u", "parent": "root", "children": [], "message": {
        "id": "u", "author": {"role": "user", "metadata": {}}, "create_time": t + 1,
        "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
        "metadata": {}, "recipient": "all", **message_extra}}
    return {"id": cid, "conversation_id": cid, "title": f"title {cid}", "create_time": t,
            "update_time": t + 10, "current_node": "u", "mapping": {"root": root, "u": user}}


def gemini_row(title: str, **extra) -> dict:
    return {"header": "Gemini Apps", "title": f"Prompted {title}", "time": "2026-01-01T10:00:00Z",
            "products": ["Gemini Apps"], "activityControls": ["Gemini Apps Activity"],
            "safeHtmlItem": [{"html": f"<p>answer to {title}</p>"}], **extra}


def claude_code_line(i: int, text: str = "hello", **extra) -> dict:
    return {"parentUuid": None, "isSidechain": False, "userType": "external",
            "cwd": "/home/me/proj", "sessionId": "s-hostile", "version": "2.1.3",
            "gitBranch": "main", "type": "user", "uuid": f"00000000-0000-4000-8000-{i:012d}",
            "timestamp": f"2026-01-01T10:00:{i % 60:02d}.000Z",
            "message": {"role": "user", "content": text}, **extra}


CODEX_SESSION = "019c0000-aaaa-7bbb-8ccc-0123456789ab"
CODEX_FILE = f"rollout-2026-01-25T10-32-00-{CODEX_SESSION}.jsonl"


def codex_meta() -> dict:
    return {"type": "session_meta", "timestamp": "2026-01-25T10:32:00.000Z", "payload": {
        "id": CODEX_SESSION, "timestamp": "2026-01-25T10:31:59.000Z", "cwd": "/home/me/proj",
        "originator": "codex_cli_rs", "cli_version": "0.93.0", "source": "cli"}}


def codex_line(text: str = "hello", **extra) -> dict:
    return {"type": "response_item", "timestamp": "2026-01-25T10:32:01.000Z", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": text}],
        **extra}}


def dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def deep(depth: int) -> bytes:
    """A JSON array nested `depth` levels deep, as bytes (never built as a Python value)."""
    return b"[" * depth + b"]" * depth


def with_raw(record: dict, key: str, raw: bytes) -> bytes:
    """`record` as JSON bytes with `key` (a placeholder string value) replaced by raw bytes."""
    marker = f"@@{key}@@"
    return dumps(record).replace(json.dumps(marker).encode(), raw)


def array(records: list[bytes]) -> bytes:
    return b"[" + b",\n".join(records) + b"]"


def peak_rss_mb(code: str, env: dict | None = None, limit_mb: int = 3000) -> tuple[float, str]:
    """Run `code` in a fresh Python with its address space capped at `limit_mb` (so a
    regression fails with MemoryError instead of taking the machine); its peak RSS in MB and
    what it printed."""
    wrapper = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit_mb} << 20, {limit_mb} << 20))\n"
        f"{code}\n"
        # VmHWM, not ru_maxrss: after exec Linux carries the parent's high-water mark into
        # ru_maxrss, so a child of a big test worker would report the worker's size.
        "print('PEAK_RSS_KB', next(int(l.split()[1]) for l in open('/proc/self/status')"
        " if l.startswith('VmHWM')))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    full_env = {**os.environ, "PYTHONPATH": str(repo), **(env or {})}
    done = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True,
                          env=full_env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    peak = next(int(line.split()[1]) for line in lines if line.startswith("PEAK_RSS_KB"))
    return peak / 1024, "\n".join(line for line in lines if not line.startswith("PEAK_RSS_KB"))


# --- formats for the property-based suite ------------------------------------------------
# A format builds one good record around a marker (the marker ends up in an event's text),
# joins records into a file, and lists the paths inside a record where a hostile value can
# go. `line_of(k)` is where a parse issue about record k points (index or line number).

class Format:
    def __init__(self, kind, filename, build, paths, join=None, first_line=1):
        self.kind, self.filename, self.build, self.paths = kind, filename, build, paths
        self._join = join or array
        self.first_line = first_line

    def join(self, records: list[bytes]) -> bytes:
        return self._join(records)

    def line_of(self, k: int) -> int:
        return k + self.first_line


def _jsonl(records: list[bytes]) -> bytes:
    return b"".join(r + b"\n" for r in records)


def _codex(records: list[bytes]) -> bytes:
    return _jsonl([dumps(codex_meta()), *records])


MESSAGE = ("chat_messages", 0)
FORMATS = {
    "claude-ai": Format("claude-ai", "conversations.json",
                        lambda marker: claude_ai_conversation(marker, marker), [
        ("uuid",), ("name",), ("created_at",), ("chat_messages",), MESSAGE,
        (*MESSAGE, "uuid"), (*MESSAGE, "sender"), (*MESSAGE, "created_at"), (*MESSAGE, "text"),
        (*MESSAGE, "content"), (*MESSAGE, "content", 0), (*MESSAGE, "content", 0, "text"),
        (*MESSAGE, "content", 0, "type"), (*MESSAGE, "attachments"), (*MESSAGE, "files"),
        (*MESSAGE, "parent_message_uuid")]),
    "chatgpt": Format("chatgpt", "conversations.json",
                      lambda marker: chatgpt_conversation(marker, marker), [
        ("id",), ("title",), ("create_time",), ("current_node",), ("mapping",),
        ("mapping", "u"), ("mapping", "u", "parent"), ("mapping", "u", "message"),
        ("mapping", "u", "message", "author"), ("mapping", "u", "message", "author", "role"),
        ("mapping", "u", "message", "create_time"), ("mapping", "u", "message", "content"),
        ("mapping", "u", "message", "content", "parts"),
        ("mapping", "u", "message", "content", "content_type"),
        ("mapping", "u", "message", "metadata"), ("mapping", "root", "children")]),
    "gemini": Format("gemini", "MyActivity.json", gemini_row, [
        ("header",), ("title",), ("time",), ("products",), ("safeHtmlItem",),
        ("safeHtmlItem", 0), ("safeHtmlItem", 0, "html"), ("details",), ("subtitles",),
        ("attachedFiles",), ("imageFile",), ("titleUrl",)]),
    "claude-code": Format("claude-code", "session.jsonl",
                          lambda marker: claude_code_line(abs(hash(marker)) % 10**9, marker), [
        ("type",), ("uuid",), ("timestamp",), ("message",), ("message", "content"),
        ("message", "role"), ("parentUuid",), ("cwd",), ("sessionId",), ("isSidechain",),
        ("gitBranch",), ("isMeta",), ("toolUseResult",)], join=_jsonl),
    "codex": Format("codex", CODEX_FILE, codex_line, [
        ("type",), ("timestamp",), ("payload",), ("payload", "type"), ("payload", "role"),
        ("payload", "content"), ("payload", "content", 0), ("payload", "content", 0, "text"),
        ("payload", "content", 0, "type")], join=_codex, first_line=2),
}


def set_path(record, path: tuple, value):
    """`record` with the value at `path` replaced (a missing container is left alone)."""
    target = record
    for step in path[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            return record
    try:
        target[path[-1]] = value
    except (IndexError, TypeError):
        pass
    return record
