"""One parser per source format (see base.py for the contract), and content sniffing for
files dropped in the inbox.

Each source is a module or a subpackage (split by concern) exposing `adapter`. Shared by
several: `base` (contract, time/text helpers, `discover_files`), `jsonl` (append-only
transcripts: Claude Code, Codex) and `_json_stream` (big JSON exports, zips), which reads
through `_json_guard` (hostile input: deep nesting, huge strings, bad bytes; built on
`_json_scan`)."""

import importlib
import json
import zipfile
from pathlib import Path

from memory_platform.adapters.base import Adapter, ZipArchive
from memory_platform.confined import open_file

# CLI kind -> module. The kind is also the `source` column.
MODULES = {
    "claude-code": "claude_code",
    "claude-ai": "claude_ai",
    "chatgpt": "chatgpt",
    "gemini": "gemini",
    "notes": "notes",
    "codex": "codex",
}

KINDS = tuple(MODULES)

# Files that sit beside real exports and hold no conversation turns: an inbox's walk (the
# local import's and the collector's) leaves them out.
COMPANION_FILES = {
    "user.json", "users.json", "user_settings.json", "message_feedback.json",
    "model_comparisons.json", "shared_conversations.json", "export_manifest.json",
    "memories.json", "chat.html", "sessions-index.json", "history.jsonl",
    "group_chats.json", "shopping.json", "sora.json", "conversations.json.index",
}


class UnknownFormat(ValueError):
    """A file whose format could not be recognised."""


def get_adapter(kind: str) -> Adapter:
    if kind not in MODULES:
        raise ValueError(f"unknown source kind {kind!r}; expected one of {', '.join(KINDS)}")
    module = importlib.import_module(f"memory_platform.adapters.{MODULES[kind]}")
    return module.adapter


def _peek_json(head: bytes) -> str | None:
    """Classify the start of a JSON export by the keys of its first record."""
    text = head.decode("utf-8", errors="replace")
    if '"mapping"' in text and ('"current_node"' in text or '"create_time"' in text):
        return "chatgpt"
    if '"chat_messages"' in text:
        return "claude-ai"
    if '"safeHtmlItem"' in text or '"Gemini Apps"' in text or "Gemini" in text[:4000]:
        if '"header"' in text and '"time"' in text:
            return "gemini"
    if '"prompt_template"' in text and '"docs"' in text:
        return "claude-ai"  # projects.json
    return None


def detect_kind(path: Path) -> str:
    """Guess the adapter for one file from its content (exports are often renamed). The
    path is real (what a walk yields): it is opened through `confined.open_file`."""
    name = path.name.lower()
    if name.endswith((".md", ".markdown")):
        return "notes"
    if name.endswith(".jsonl"):
        with open_file(path) as fh:
            first = fh.readline(1 << 20)
        try:
            record = json.loads(first) if first.strip() else {}
        except (ValueError, RecursionError):
            record = {}
        if isinstance(record, dict) and "payload" in record:
            return "codex"
        return "claude-code"
    if name.endswith(".zip"):
        try:
            with ZipArchive(path) as archive:
                names = [n.lower() for n in archive.namelist()]
                for member in archive.namelist():
                    low = member.lower()
                    if low.endswith(".json") and "conversations" in low.rsplit("/", 1)[-1]:
                        with archive.open(member) as fh:
                            kind = _peek_json(fh.read(64 * 1024))
                        if kind:
                            return kind
                if any("gemini" in n and n.endswith((".json", ".html")) for n in names):
                    return "gemini"
        except zipfile.BadZipFile as exc:
            raise UnknownFormat(f"{path}: not a readable zip archive ({exc})") from exc
        raise UnknownFormat(f"{path}: zip holds no ChatGPT, claude.ai or Gemini export")
    if name.endswith(".html"):
        with open_file(path) as fh:
            head = fh.read(64 * 1024).decode("utf-8", errors="replace")
        if "Gemini" in head:
            return "gemini"
        raise UnknownFormat(f"{path}: HTML file is not a Gemini My Activity page")
    if name.endswith(".json"):
        with open_file(path) as fh:
            kind = _peek_json(fh.read(64 * 1024))
        if kind:
            return kind
        raise UnknownFormat(f"{path}: JSON file is not a known export (ChatGPT, claude.ai, Gemini)")
    raise UnknownFormat(f"{path}: unknown file type")
