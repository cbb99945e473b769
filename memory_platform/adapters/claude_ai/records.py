"""One record of a claude.ai export as items: a conversation (Conversation plus one Event
per message, with the branch the UI would show) or a project (one meta Event)."""

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from memory_platform.adapters.base import (
    Conversation,
    Event,
    Item,
    ParseIssue,
    clean_text,
    is_future,
    join_text,
    parse_iso,
)
from memory_platform.adapters.claude_ai.messages import message_text

ROOT_SENTINEL = "00000000-0000-4000-8000-000000000000"


def conversation_items(record: Any, index: int, label: str) -> Iterator[Item]:
    """The Conversation, its Events and ParseIssues for record `index` of conversations.json."""
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
    active = _active_branch(valid, parents)

    for pos, msg, msg_id, moment, inferred in valid:
        text, attrs = message_text(msg)
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


def project_items(record: Any, index: int, label: str) -> Iterator[Item]:
    """The meta Event (or ParseIssue) for record `index` of projects.json."""
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
