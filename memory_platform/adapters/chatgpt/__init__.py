"""ChatGPT data export: `conversations.json` or sharded `conversations-NNN.json`, loose or
in the export zip, optionally wrapped as `{"conversations": [...]}`.

Every node of a conversation's `mapping` that carries a message becomes one Event (all
branches kept, hidden/system/tool nodes included as meta/tool rows); native id
`<conversation id>/<node id>` because node ids such as `client-created-root` repeat across
conversations. Format notes: FORMATS.md section 3.

Here: `messages` turns one node into an Event, `tree` orders the mapping and finds the
branch the UI showed; this module finds and streams the files and walks each conversation.
"""

import fnmatch
import zipfile
from collections.abc import Iterator
from datetime import datetime
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
    top_level_keys,
)
from memory_platform.adapters.base import (
    Conversation,
    Item,
    Listing,
    ParseIssue,
    ZipArchive,
    discover_files,
    is_future,
    parse_epoch,
)
from memory_platform.adapters.chatgpt.messages import node_event
from memory_platform.adapters.chatgpt.tree import active_path, parents_first
from memory_platform.confined import open_file

SHARD_GLOB = "conversations*.json"
_OWN = frozenset({"ChatGPT"})
_OBJECT_PREFIXES = {"conversations": "conversations.item", "mapping": ""}


def _looks_like_chatgpt(opener: Opener) -> bool:
    """Folder scans meet claude.ai's identically named conversations.json; sniff the keys."""
    try:
        with opener() as raw:
            first, stream = peek_start(raw)
            if first == b"{":
                return bool(top_level_keys(stream, frozenset(_OBJECT_PREFIXES)) & {
                    "conversations", "mapping"})
            if first != b"[":
                return False
            keys = first_record_keys(stream, "item", frozenset({"mapping", "chat_messages"}))
    except OPEN_ERRORS:
        return False
    return keys is None or "mapping" in keys


def _file_is_chatgpt(path: Path) -> bool:
    return _looks_like_chatgpt(lambda: open_file(path))


def _shard_members(names: list[str]) -> list[str]:
    return sorted(n for n in names if fnmatch.fnmatch(basename(n), SHARD_GLOB))


def _zip_is_chatgpt(path: Path) -> bool:
    try:
        with ZipArchive(path) as archive:
            for member in _shard_members(archive.namelist()):
                if _looks_like_chatgpt(lambda m=member: archive.open(m)):
                    return True
    except (OSError, zipfile.BadZipFile):
        return False
    return False


class ChatGptAdapter:
    source = "chatgpt"

    def discover(self, path: Path) -> Listing:
        return discover_files(path, {SHARD_GLOB: _file_is_chatgpt, "*.zip": _zip_is_chatgpt})

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        # shards of one export may repeat a conversation; import each once per parse
        seen: set[str] = set()
        if is_zip(path):
            yield from self._parse_zip(path, seen)
        else:
            yield from self._parse_file(lambda: open_file(path), str(path), seen)

    def _parse_zip(self, path: Path, seen: set[str]) -> Iterator[Item]:
        archive = open_zip(path)
        if isinstance(archive, ParseIssue):
            yield archive
            return
        with archive:
            members = _shard_members(archive.namelist())
            if not members:
                yield ParseIssue(str(path), None, None, "zip holds no conversations*.json")
                return
            for member in members:
                label = member_label(path, member)
                try:
                    yield from self._parse_file(lambda m=member: archive.open(m), label, seen)
                except OPEN_ERRORS as error:
                    yield ParseIssue(
                        label, None, None, f"cannot read zip member: {one_line(error)}"
                    )

    def _parse_file(self, opener: Opener, label: str, seen: set[str]) -> Iterator[Item]:
        entries = stream_array(
            opener, label, "ChatGPT export", _OBJECT_PREFIXES,
            lambda r: foreign_message(r, "mapping", "ChatGPT export", _OWN),
        )
        for entry in entries:
            if isinstance(entry, ParseIssue):
                yield entry
                continue
            index, record = entry
            try:
                # one conversation at a time, yielded whole so a bug cannot leave it half done
                items = list(self._conversation(record, index, label, seen))
            except Exception as error:  # noqa: BLE001 - one odd record must not stop the file
                rid = record.get("id") if isinstance(record, dict) else None
                yield ParseIssue(
                    label, index, rid if isinstance(rid, str) else None,
                    f"record {index}: could not be parsed ({type(error).__name__}: "
                    f"{one_line(error)})",
                )
                continue
            yield from items

    def _conversation(
        self, record: Any, index: int, label: str, seen: set[str]
    ) -> Iterator[Item]:
        if not isinstance(record, dict):
            yield ParseIssue(
                label, index, None, f"record {index}: not a JSON object ({type(record).__name__})"
            )
            return
        conv_id = record.get("id") or record.get("conversation_id")
        if not isinstance(conv_id, str) or not conv_id:
            yield ParseIssue(label, index, None, f"record {index}: conversation has no 'id'")
            return
        if conv_id in seen:
            return
        seen.add(conv_id)

        started = parse_epoch(record.get("create_time"))
        if started is not None and is_future(started):
            yield ParseIssue(
                label, index, conv_id,
                f"record {index}: conversation create_time {record.get('create_time')!r} is in "
                "the future; start time left empty",
            )
            started = None
        conv_attrs: dict[str, Any] = {}
        for key in ("default_model_slug", "gizmo_id", "is_archived"):
            if record.get(key) is not None:
                conv_attrs[key] = record[key]
        updated = parse_epoch(record.get("update_time"))
        if updated is not None:
            conv_attrs["updated_at"] = updated.isoformat()
        title = record.get("title")
        yield Conversation(
            native_id=conv_id,
            title=title if isinstance(title, str) and title else None,
            started_at=started,
            attrs=conv_attrs,
        )

        mapping = record.get("mapping")
        if mapping is None:
            return
        if not isinstance(mapping, dict):
            yield ParseIssue(label, index, conv_id, f"record {index}: 'mapping' is not an object")
            return

        nodes: dict[str, dict[str, Any]] = {}
        for node_id, node in mapping.items():
            if isinstance(node, dict):
                nodes[node_id] = node
            else:
                yield ParseIssue(
                    label, index, f"{conv_id}/{node_id}",
                    f"record {index}: node {node_id!r} is not an object",
                )
        parent_of: dict[str, str | None] = {}
        for node_id, node in nodes.items():
            parent = node.get("parent")
            parent_of[node_id] = parent if isinstance(parent, str) and parent in nodes else None

        order = parents_first(nodes, parent_of)
        has_message = {n for n in nodes if nodes[n].get("message") is not None}

        # times and tree facts in parent-first order so children can inherit
        fallback = started or updated
        times: dict[str, datetime] = {}
        inferred: set[str] = set()
        skipped: set[str] = set()
        depth: dict[str, int] = {}
        event_parent: dict[str, str | None] = {}
        for node_id in order:
            parent = parent_of[node_id]
            depth[node_id] = depth[parent] + 1 if parent is not None else 0
            if parent is None:
                event_parent[node_id] = None
            elif parent in has_message:
                event_parent[node_id] = parent
            else:
                # a message-less node (the root) shapes the tree but is not an event
                event_parent[node_id] = event_parent[parent]
            message = nodes[node_id].get("message")
            own = None
            if isinstance(message, dict):
                own = parse_epoch(message.get("create_time"))
                if own is None:
                    own = parse_epoch(message.get("update_time"))
            if own is not None and is_future(own) and node_id in has_message:
                yield ParseIssue(
                    label, index, f"{conv_id}/{node_id}",
                    f"record {index}: node {node_id!r} create_time "
                    f"{message.get('create_time')!r} is in the future; skipped",
                )
                skipped.add(node_id)
                own = None
            if own is not None:
                times[node_id] = own
                continue
            inherited = times.get(parent) if parent is not None else None
            if inherited is None:
                inherited = fallback
            if inherited is not None:
                times[node_id] = inherited
                inferred.add(node_id)
            elif node_id in has_message and node_id not in skipped:
                yield ParseIssue(
                    label, index, f"{conv_id}/{node_id}",
                    f"record {index}: node {node_id!r} has no time and neither do its "
                    "ancestors or the conversation; skipped",
                )
                skipped.add(node_id)

        active = active_path(record.get("current_node"), nodes, parent_of, order, times, depth)

        for node_id in order:
            if node_id not in has_message or node_id in skipped:
                continue
            yield node_event(
                conv_id, node_id, nodes[node_id], event_parent[node_id], times[node_id],
                node_id in inferred, node_id in active, index,
            )


adapter = ChatGptAdapter()
