"""claude.ai account export: `conversations.json` (+ `projects.json`), loose or in the zip.

One Event per chat message (all branches kept), native id `<conversation uuid>/<message
uuid>` because message ids are only trustworthy inside a conversation. Projects become
`kind="meta"` events without a conversation. Format notes: FORMATS.md section 2.
"""

import json
import zipfile
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from memory_platform.adapters._json_stream import (
    OPEN_ERRORS,
    Opener,
    basename,
    first_record_keys,
    foreign_message,
    is_zip,
    member_label,
    one_line,
    open_zip,
    peek_start,
    stream_array,
)
from memory_platform.adapters.base import (
    Conversation,
    Event,
    Item,
    ParseIssue,
    clean_text,
    discover_files,
    is_future,
    join_text,
    parse_iso,
)

ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"
CONVERSATIONS = "conversations.json"
PROJECTS = "projects.json"
_SNIFF_STOP = frozenset({"chat_messages", "mapping", "safeHtmlItem"})

# describe_format() guesses each file kind accepts as its own (a projects.json record without
# prompt_template but with docs is still a project)
_CONV_OWN = frozenset({"claude.ai"})
_PROJ_OWN = frozenset({"claude.ai projects.json"})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _looks_like_claude(opener: Opener) -> bool:
    """Folder scans meet ChatGPT's identically named conversations.json; tell them apart by
    the first record's keys without loading it."""
    try:
        with opener() as raw:
            first, stream = peek_start(raw)
            if first != b"[":
                return False
            keys = first_record_keys(stream, "item", _SNIFF_STOP)
    except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError):
        return False
    if keys is None:  # empty array: nothing to import, claiming it is harmless
        return True
    return "chat_messages" in keys or ("uuid" in keys and not keys & _SNIFF_STOP)


def _file_is_claude(path: Path) -> bool:
    return _looks_like_claude(lambda: open(path, "rb"))


def _beside_claude_conversations(projects: Path) -> bool:
    """projects.json carries no marker of its own; it is claude.ai's when the
    conversations.json beside it is."""
    conversations = projects.with_name(CONVERSATIONS)
    return conversations.is_file() and _file_is_claude(conversations)


def _zip_is_claude(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                if basename(member) == CONVERSATIONS:
                    return _looks_like_claude(lambda m=member: archive.open(m))
    except (OSError, zipfile.BadZipFile):
        return False
    return False


def _tool_use_text(block: dict[str, Any]) -> str:
    name = block.get("name") or "?"
    payload = block.get("input")
    if name == "artifacts" and isinstance(payload, dict):
        head = f"[tool_use artifacts] {payload.get('title') or ''}".rstrip()
        body = payload.get("content")
        if isinstance(body, str) and body:
            return f"{head}\n{body}"
        # update commands carry a diff instead of the full content
        rest = {k: payload[k] for k in ("command", "old_str", "new_str") if k in payload}
        return f"{head}\n{_dumps(rest)}" if rest else head
    return f"[tool_use {name}] {_dumps(payload)}"


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    texts: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                if isinstance(item.get("text"), str):
                    texts.append(item["text"])
    body = "\n".join(t for t in texts if t)
    if not body:
        return ""
    label = " ".join(
        x for x in ("tool_result", block.get("name"), "error" if block.get("is_error") else "")
        if isinstance(x, str) and x
    )
    return f"[{label}]\n{body}"


def _message_text(msg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Readable text of one chat message plus the attrs explaining it."""
    attrs: dict[str, Any] = {}
    parts: list[str] = []
    content = msg.get("content")
    images = 0
    other_blocks: list[str] = []
    used_content = isinstance(content, list) and len(content) > 0
    if used_content:
        for block in content:
            if not isinstance(block, dict):
                other_blocks.append(type(block).__name__)
                continue
            btype = block.get("type")
            if btype == "text":
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
            elif btype == "thinking":
                # private reasoning stays in raw only
                attrs["has_thinking"] = True
            elif btype == "tool_use":
                parts.append(_tool_use_text(block))
            elif btype == "tool_result":
                parts.append(_tool_result_text(block))
            elif btype == "token_budget":
                pass
            elif btype == "image":
                images += 1
                parts.append("[image]")
            else:
                other_blocks.append(str(btype))
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
    elif isinstance(msg.get("text"), str):
        # very old exports have no content[]; the flat text is all there is
        parts.append(msg["text"])
    if other_blocks:
        attrs["other_blocks"] = other_blocks

    attachment_names: list[str] = []
    for att in msg.get("attachments") or []:
        if not isinstance(att, dict):
            continue
        name = att.get("file_name") or "?"
        attachment_names.append(str(name))
        extracted = att.get("extracted_content")
        if isinstance(extracted, str) and extracted:
            parts.append(f"[attachment {name}]\n{extracted}")
    if attachment_names:
        attrs["attachments"] = attachment_names

    files = [
        str(f.get("file_name"))
        for key in ("files", "files_v2")
        for f in (msg.get(key) or [])
        if isinstance(f, dict) and f.get("file_name")
    ]
    if files:
        attrs["files"] = list(dict.fromkeys(files))

    text = clean_text(join_text(parts))
    if not text.strip():
        if images or files:
            attrs["empty_reason"] = "image only" if images else "files only (binary not exported)"
        elif attrs.get("has_thinking"):
            attrs["empty_reason"] = "thinking only"
        elif used_content:
            attrs["empty_reason"] = "no text in content"
        elif isinstance(msg.get("text"), str) and msg["text"]:
            attrs["empty_reason"] = "whitespace only"
        else:
            attrs["empty_reason"] = "no text"
    return text, attrs


class ClaudeAiAdapter:
    source = "claude-ai"

    def discover(self, path: Path) -> Iterator[Path]:
        return discover_files(
            path,
            {
                CONVERSATIONS: _file_is_claude,
                PROJECTS: _beside_claude_conversations,
                "*.zip": _zip_is_claude,
            },
        )

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        label = str(path)
        if is_zip(path):
            yield from self._parse_zip(path)
        elif path.name == PROJECTS:
            yield from self._parse_projects(lambda: open(path, "rb"), label)
        else:
            yield from self._parse_conversations(lambda: open(path, "rb"), label)

    # --- containers ---------------------------------------------------------------------

    def _parse_zip(self, path: Path) -> Iterator[Item]:
        archive = open_zip(path)
        if isinstance(archive, ParseIssue):
            yield archive
            return
        with archive:
            names = archive.namelist()
            conversations = sorted(n for n in names if basename(n) == CONVERSATIONS)
            projects = sorted(n for n in names if basename(n) == PROJECTS)
            if not conversations and not projects:
                yield ParseIssue(
                    str(path), None, None, "zip holds no conversations.json or projects.json"
                )
                return
            for member in conversations + projects:
                label = member_label(path, member)
                opener = partial(archive.open, member)
                try:
                    if basename(member) == PROJECTS:
                        yield from self._parse_projects(opener, label)
                    else:
                        yield from self._parse_conversations(opener, label)
                except OPEN_ERRORS as error:
                    yield ParseIssue(
                        label, None, None, f"cannot read zip member: {one_line(error)}"
                    )

    def _parse_conversations(self, opener: Opener, label: str) -> Iterator[Item]:
        entries = stream_array(
            opener, label, "claude.ai export", {"chat_messages": ""},
            lambda r: foreign_message(r, "chat_messages", "claude.ai export", _CONV_OWN),
        )
        for entry in entries:
            if isinstance(entry, ParseIssue):
                yield entry
                continue
            index, record = entry
            try:
                # one conversation at a time, yielded whole so a bug cannot leave it half done
                items = list(self._conversation(record, index, label))
            except Exception as error:  # noqa: BLE001 - one odd record must not stop the file
                rid = record.get("uuid") if isinstance(record, dict) else None
                yield ParseIssue(
                    label, index, rid if isinstance(rid, str) else None,
                    f"record {index}: could not be parsed ({type(error).__name__}: "
                    f"{one_line(error)})",
                )
                continue
            yield from items

    def _parse_projects(self, opener: Opener, label: str) -> Iterator[Item]:
        entries = stream_array(
            opener, label, "claude.ai projects.json", {"prompt_template": ""},
            lambda r: foreign_message(r, "prompt_template", "claude.ai projects.json", _PROJ_OWN),
        )
        for entry in entries:
            if isinstance(entry, ParseIssue):
                yield entry
                continue
            index, record = entry
            yield from self._project(record, index, label)

    # --- records ------------------------------------------------------------------------

    def _conversation(self, record: Any, index: int, label: str) -> Iterator[Item]:
        if not isinstance(record, dict):
            yield ParseIssue(
                label, index, None, f"record {index}: not a JSON object ({type(record).__name__})"
            )
            return
        conv_id = record.get("uuid")
        if not isinstance(conv_id, str) or not conv_id:
            yield ParseIssue(label, index, None, f"record {index}: conversation has no 'uuid'")
            return
        started = parse_iso(record.get("created_at"))
        if started is not None and is_future(started):
            yield ParseIssue(
                label, index, conv_id,
                f"record {index}: conversation created_at {record.get('created_at')!r} is in "
                "the future; start time left empty",
            )
            started = None
        conv_attrs: dict[str, Any] = {}
        if isinstance(record.get("summary"), str) and record["summary"]:
            conv_attrs["summary"] = record["summary"]
        if record.get("updated_at"):
            conv_attrs["updated_at"] = record["updated_at"]
        yield Conversation(
            native_id=conv_id,
            title=record.get("name") or None,
            started_at=started,
            attrs=conv_attrs,
        )

        messages = record.get("chat_messages")
        if messages is None:
            return
        if not isinstance(messages, list):
            yield ParseIssue(
                label, index, conv_id, f"record {index}: 'chat_messages' is not a list"
            )
            return

        # pass 1: identities and times; the tree needs every message before any is emitted
        valid: list[tuple[int, dict[str, Any], str, datetime, bool]] = []
        seen: set[str] = set()
        previous = started
        for pos, msg in enumerate(messages, 1):
            where = f"record {index}, message {pos}"
            if not isinstance(msg, dict):
                yield ParseIssue(label, index, conv_id, f"{where}: not a JSON object")
                continue
            msg_id = msg.get("uuid")
            if not isinstance(msg_id, str) or not msg_id:
                yield ParseIssue(label, index, conv_id, f"{where}: message has no 'uuid'")
                continue
            if msg_id in seen:
                yield ParseIssue(
                    label, index, f"{conv_id}/{msg_id}",
                    f"{where}: duplicate message uuid {msg_id!r}; kept the first",
                )
                continue
            seen.add(msg_id)
            moment = parse_iso(msg.get("created_at"))
            inferred = moment is None
            if moment is None:
                moment = previous
            if moment is None:
                yield ParseIssue(
                    label, index, f"{conv_id}/{msg_id}",
                    f"{where}: no usable time on the message or the conversation; skipped",
                )
                continue
            if is_future(moment):
                yield ParseIssue(
                    label, index, f"{conv_id}/{msg_id}",
                    f"{where}: created_at {msg.get('created_at')!r} is in the future; skipped",
                )
                continue
            previous = moment
            valid.append((pos, msg, msg_id, moment, inferred))

        parents: dict[str, str | None] = {}
        for _, msg, msg_id, _, _ in valid:
            parent = msg.get("parent_message_uuid")
            real = isinstance(parent, str) and parent != ROOT_SENTINEL
            parents[msg_id] = parent if real else None
        active = self._active_branch(valid, parents)

        for pos, msg, msg_id, moment, inferred in valid:
            text, attrs = _message_text(msg)
            if inferred:
                attrs["time_inferred"] = True
                if msg.get("created_at") is not None:
                    attrs["unreadable_time"] = msg.get("created_at")
            sender = msg.get("sender")
            if sender == "human":
                role, kind = "user", "message"
            elif sender == "assistant":
                role, kind = "assistant", "message"
            else:
                role, kind = "other", "unknown"
                attrs["sender"] = sender
            parent = parents.get(msg_id)
            yield Event(
                native_id=f"{conv_id}/{msg_id}",
                conversation_id=conv_id,
                role=role,
                text=text,
                raw=msg,
                occurred_at=moment,
                line=index,
                parent_id=f"{conv_id}/{parent}" if parent else None,
                author=None,
                kind=kind,
                on_active_branch=active is None or msg_id in active,
                attrs=attrs,
            )

    @staticmethod
    def _active_branch(
        valid: list[tuple[int, dict[str, Any], str, datetime, bool]],
        parents: dict[str, str | None],
    ) -> set[str] | None:
        """Message ids on the branch the UI would show; None when the export is linear.

        The export has no current-leaf pointer, so the latest-created leaf wins (FORMATS 2.3).
        """
        if not any(p for p in parents.values()):
            return None
        has_children = {p for p in parents.values() if p}
        leaves = [(moment, pos, mid) for pos, _, mid, moment, _ in valid if mid not in has_children]
        if not leaves:  # every message is someone's parent: a cycle; nothing is provably active
            return set()
        _, _, current = max(leaves)
        active: set[str] = set()
        node: str | None = current
        while node and node not in active and node in parents:
            active.add(node)
            node = parents[node]
        return active

    def _project(self, record: Any, index: int, label: str) -> Iterator[Item]:
        if not isinstance(record, dict):
            yield ParseIssue(
                label, index, None, f"record {index}: not a JSON object ({type(record).__name__})"
            )
            return
        project_id = record.get("uuid")
        if not isinstance(project_id, str) or not project_id:
            yield ParseIssue(label, index, None, f"record {index}: project has no 'uuid'")
            return
        moment = parse_iso(record.get("created_at"))
        attrs: dict[str, Any] = {"record_type": "project"}
        if moment is None:
            moment = parse_iso(record.get("updated_at"))
            attrs["time_inferred"] = True
        if moment is None:
            yield ParseIssue(
                label, index, project_id, f"record {index}: project has no usable time; skipped"
            )
            return
        if is_future(moment):
            yield ParseIssue(
                label, index, project_id,
                f"record {index}: project created_at {record.get('created_at')!r} is in the "
                "future; skipped",
            )
            return
        parts: list[str] = []
        for key in ("name", "description", "prompt_template"):
            if isinstance(record.get(key), str):
                parts.append(record[key])
        doc_names: list[str] = []
        for doc in record.get("docs") or []:
            if not isinstance(doc, dict):
                continue
            name = str(doc.get("filename") or doc.get("file_name") or "?")
            doc_names.append(name)
            if isinstance(doc.get("content"), str):
                parts.append(f"[doc {name}]\n{doc['content']}")
        if doc_names:
            attrs["docs"] = doc_names
        text = clean_text(join_text(parts))
        if not text:
            attrs["empty_reason"] = "project without name, description, prompt or docs"
        name = record.get("name")
        yield Event(
            native_id=f"project:{project_id}",
            conversation_id=None,
            role="other",
            text=text,
            raw=record,
            occurred_at=moment,
            line=index,
            kind="meta",
            project=name if isinstance(name, str) and name else None,
            attrs=attrs,
        )


adapter = ClaudeAiAdapter()
