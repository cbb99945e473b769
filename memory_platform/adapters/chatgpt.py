"""ChatGPT data export: `conversations.json` or sharded `conversations-NNN.json`, loose or
in the export zip, optionally wrapped as `{"conversations": [...]}`.

Every node of a conversation's `mapping` that carries a message becomes one Event (all
branches kept, hidden/system/tool nodes included as meta/tool rows); native id
`<conversation id>/<node id>` because node ids such as `client-created-root` repeat across
conversations. Format notes: FORMATS.md section 3.
"""

import fnmatch
import zipfile
from collections.abc import Iterator
from datetime import datetime, timezone
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
    Event,
    Item,
    ParseIssue,
    clean_text,
    discover_files,
    is_future,
    join_text,
    parse_epoch,
)

SHARD_GLOB = "conversations*.json"
_ROLES = frozenset({"system", "user", "assistant", "tool"})
_OWN = frozenset({"ChatGPT"})
_OBJECT_PREFIXES = {"conversations": "conversations.item", "mapping": ""}
_OLDEST = datetime.min.replace(tzinfo=timezone.utc)
# content types whose text is shown to the user as a normal turn
_VISIBLE_TYPES = frozenset(
    {"text", "multimodal_text", "tether_browsing_display", "tether_quote", "sonic_webpage",
     "system_error"}
)
_KNOWN_TYPES = frozenset(
    {"text", "multimodal_text", "code", "execution_output", "tether_browsing_display",
     "tether_quote", "sonic_webpage", "system_error", "thoughts", "reasoning_recap",
     "user_editable_context", "model_editable_context"}
)
_PART_PLACEHOLDERS = {
    "image_asset_pointer": "[image]",
    "audio_asset_pointer": "[audio]",
    "real_time_user_audio_video_asset_pointer": "[audio/video]",
    "video_container_asset_pointer": "[video]",
}


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
    return _looks_like_chatgpt(lambda: open(path, "rb"))


def _shard_members(names: list[str]) -> list[str]:
    return sorted(n for n in names if fnmatch.fnmatch(basename(n), SHARD_GLOB))


def _zip_is_chatgpt(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            for member in _shard_members(archive.namelist()):
                if _looks_like_chatgpt(lambda m=member: archive.open(m)):
                    return True
    except (OSError, zipfile.BadZipFile):
        return False
    return False


def _strs(*values: Any) -> list[str]:
    return [v for v in values if isinstance(v, str)]


def _content_text(content: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Readable text of a message `content` by content_type (FORMATS 3.3)."""
    ctype = content.get("content_type")
    attrs: dict[str, Any] = {}
    parts: list[str] = []
    if ctype in ("text", "multimodal_text") or (
        ctype not in _KNOWN_TYPES and isinstance(content.get("parts"), list)
    ):
        images = 0
        for part in content.get("parts") or []:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                ptype = part.get("content_type")
                if ptype == "audio_transcription" and isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif ptype in _PART_PLACEHOLDERS:
                    images += ptype == "image_asset_pointer"
                    parts.append(_PART_PLACEHOLDERS[ptype])
                elif isinstance(part.get("text"), str):
                    parts.append(part["text"])
                else:
                    parts.append(f"[{ptype or 'part'}]")
        if images:
            attrs["images"] = images
    elif ctype in ("code", "execution_output"):
        parts = _strs(content.get("text"))
        if ctype == "code" and content.get("language"):
            attrs["language"] = content["language"]
    elif ctype == "tether_browsing_display":
        parts = _strs(content.get("result"), content.get("summary"))
    elif ctype in ("tether_quote", "sonic_webpage"):
        parts = _strs(content.get("title"), content.get("url"), content.get("text"))
    elif ctype == "system_error":
        name, body = content.get("name"), content.get("text")
        parts = [f"{name}: {body}" if name and body else str(body or name or "")]
    elif ctype == "thoughts":
        for thought in content.get("thoughts") or []:
            if isinstance(thought, dict):
                parts.extend(_strs(thought.get("summary"), thought.get("content")))
    elif ctype == "reasoning_recap":
        parts = _strs(content.get("content"))
    elif ctype == "user_editable_context":
        parts = _strs(content.get("user_profile"), content.get("user_instructions"))
    elif ctype == "model_editable_context":
        parts = _strs(content.get("model_set_context"))
    else:
        # unknown content types keep appearing; salvage any obvious text, raw keeps the rest
        parts = _strs(content.get("text"), content.get("result"), content.get("content"))
    return clean_text(join_text(parts)), attrs



class ChatGptAdapter:
    source = "chatgpt"

    def discover(self, path: Path) -> Iterator[Path]:
        return discover_files(path, {SHARD_GLOB: _file_is_chatgpt, "*.zip": _zip_is_chatgpt})

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        # shards of one export may repeat a conversation; import each once per parse
        seen: set[str] = set()
        if is_zip(path):
            yield from self._parse_zip(path, seen)
        else:
            yield from self._parse_file(lambda: open(path, "rb"), str(path), seen)

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

        order = self._parents_first(nodes, parent_of)
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

        active = self._active_path(record.get("current_node"), nodes, parent_of, order, times,
                                   depth)

        for node_id in order:
            if node_id not in has_message or node_id in skipped:
                continue
            yield self._event(
                conv_id, node_id, nodes[node_id], event_parent[node_id], times[node_id],
                node_id in inferred, node_id in active, index,
            )

    @staticmethod
    def _parents_first(
        nodes: dict[str, dict[str, Any]], parent_of: dict[str, str | None]
    ) -> list[str]:
        """Mapping order, except that every node comes after its ancestors (consumers may
        link parent rows), robust to cycles."""
        order: list[str] = []
        done: set[str] = set()
        for node_id in nodes:
            chain: list[str] = []
            in_chain: set[str] = set()
            current: str | None = node_id
            while current is not None and current not in done and current not in in_chain:
                chain.append(current)
                in_chain.add(current)
                current = parent_of[current]
            if current is not None and current in in_chain:
                # a parent cycle: cut it so the node nearest the loop becomes a root
                parent_of[chain[-1]] = None
            for member in reversed(chain):
                done.add(member)
                order.append(member)
        return order

    @staticmethod
    def _active_path(
        current: Any,
        nodes: dict[str, dict[str, Any]],
        parent_of: dict[str, str | None],
        order: list[str],
        times: dict[str, datetime],
        depth: dict[str, int],
    ) -> set[str]:
        """Nodes on the branch the UI showed: from current_node to the root (FORMATS 3.4)."""
        if not isinstance(current, str) or current not in nodes:
            has_children = {p for p in parent_of.values() if p is not None}
            position = {n: i for i, n in enumerate(order)}
            leaves = [n for n in nodes if n not in has_children]
            if not leaves:
                return set()
            # the latest leaf is what the UI showed last; depth breaks ties between siblings
            current = max(
                leaves, key=lambda n: (times.get(n, _OLDEST), depth.get(n, 0), position[n])
            )
        active: set[str] = set()
        node: str | None = current
        while node is not None and node not in active:
            active.add(node)
            node = parent_of.get(node)
        return active

    def _event(
        self,
        conv_id: str,
        node_id: str,
        node: dict[str, Any],
        parent: str | None,
        moment: datetime,
        time_inferred: bool,
        on_active: bool,
        index: int,
    ) -> Event:
        message = node.get("message")
        attrs: dict[str, Any] = {}
        if time_inferred:
            attrs["time_inferred"] = True
        common = {
            "native_id": f"{conv_id}/{node_id}",
            "conversation_id": conv_id,
            "raw": node,
            "occurred_at": moment,
            "line": index,
            "parent_id": f"{conv_id}/{parent}" if parent is not None else None,
            "on_active_branch": on_active,
        }
        if not isinstance(message, dict):
            attrs["empty_reason"] = "message is not an object"
            return Event(role="other", text="", kind="unknown", attrs=attrs, **common)

        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        content = message.get("content")
        role_raw = author.get("role")
        role = role_raw if role_raw in _ROLES else "other"
        if message.get("id") not in (None, node_id):
            attrs["message_id"] = message.get("id")

        if isinstance(content, dict):
            ctype = content.get("content_type")
            text, content_attrs = _content_text(content)
            attrs.update(content_attrs)
            attrs["content_type"] = ctype
        else:
            ctype, text = None, ""

        recipient = message.get("recipient")
        if isinstance(recipient, str) and recipient != "all":
            attrs["recipient"] = recipient
        if message.get("channel"):
            attrs["channel"] = message["channel"]
        hidden = (
            message.get("weight") == 0
            or bool(metadata.get("is_visually_hidden_from_conversation"))
            or (role == "system" and not metadata.get("is_user_system_message"))
        )
        if hidden:
            attrs["hidden"] = True
        attachments = [
            a.get("name") for a in metadata.get("attachments") or []
            if isinstance(a, dict) and a.get("name")
        ]
        if attachments:
            attrs["attachments"] = attachments

        if role == "other":
            kind = "unknown"
            attrs["author_role"] = role_raw
        elif ctype is None:
            kind = "unknown"
        elif ctype in ("user_editable_context", "model_editable_context"):
            kind = "meta"
        elif ctype in ("thoughts", "reasoning_recap"):
            kind = "thinking"
        elif role == "tool" or ctype == "execution_output":
            kind = "tool_result"
        elif role == "assistant" and ("recipient" in attrs or ctype == "code"):
            kind = "tool_use"
        elif hidden:
            kind = "meta"
        elif ctype in _VISIBLE_TYPES:
            kind = "message"
        else:
            kind = "unknown"

        if not text:
            if not isinstance(content, dict):
                attrs["empty_reason"] = "message has no content object"
            elif hidden and role == "system":
                attrs["empty_reason"] = "hidden system node"
            elif ctype not in _KNOWN_TYPES:
                attrs["empty_reason"] = f"unhandled content_type {ctype!r}"
            else:
                attrs["empty_reason"] = "no text in content"

        if role == "assistant":
            author_name = metadata.get("model_slug")
        elif role == "tool":
            author_name = author.get("name")
        else:
            author_name = None
        return Event(
            role=role,
            text=text,
            kind=kind,
            author=author_name if isinstance(author_name, str) else None,
            attrs=attrs,
            **common,
        )


adapter = ChatGptAdapter()
