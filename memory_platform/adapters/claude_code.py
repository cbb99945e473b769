"""Claude Code session transcripts (`~/.claude/projects/<encoded-cwd>/**/*.jsonl`).

One JSON object per line; see FORMATS.md section 1. Decisions worth knowing:

- Identity: `native_id` is the record `uuid`, so a record copied into a resumed session file
  gets the same id there. Records without a uuid get an id built from their own content
  (`summary:<leafUuid>:<hash>`, `file-history-snapshot:<messageId>:<hash of line>`,
  `<type>:<sessionId>:<hash of line>`), never from their position in the file.
- Records without `sessionId` (summary, file-history-snapshot) belong to the file stem,
  which equals the session id for main transcripts.
- Time: a record without a usable timestamp inherits the previous timestamped record's
  time (on a resumed parse looked up just before the resume offset), or the next one's if
  none came before, and is flagged `time_inferred`. A file without any timestamp yields
  one ParseIssue per record. Timestamps more than a day in the future are rejected with a
  ParseIssue because they would sort above every real turn forever.
- Active branch: a rewind leaves the abandoned turns in the file. On a full parse
  (`start_offset == 0`) a first, cheap pass keeps only the parent graph (uuid -> parent,
  small tuples, never the records) and walks back from the latest non-meta, non-sidechain
  user/assistant record, following `logicalParentUuid` across compact boundaries. A record
  is marked `on_active_branch=False` when its chain leaves that path at a user/assistant
  record hanging off an earlier node of the path. Side records (progress, system,
  attachments), sidechains and chains that never reach the path stay True: a second
  parentless chain in a session may be an edited first prompt, but equally a chain that
  restarted (resume, appended history), and marking a valid half of a session abandoned
  would be worse than missing one edit. A
  resumed parse (`start_offset > 0`) cannot see the old records, so it marks every new
  record True; re-parse from 0 to refresh the flags.
- Reading the JSONL itself (resume offsets, half-written tails, inferred times) is
  `adapters.jsonl`, shared with the Codex adapter.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path, PurePath
from typing import Any

from memory_platform.adapters.base import (
    Checkpoint,
    Conversation,
    Event,
    Item,
    ParseIssue,
    discover_files,
    is_future,
    join_text,
    parse_iso,
    short_hash,
)
from memory_platform.adapters.jsonl import (
    JsonLine,
    JsonlReader,
    Parsed,
    TimeFiller,
    dumps,
    pg_text,
    scan_back,
    str_or_dump,
)

# Small session/bookkeeping records: kept raw, no readable text.
_META_TYPES = frozenset(
    {
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "attachment",
        "custom-title",
        "ai-title",
        "agent-name",
        "last-prompt",
        "permission-mode",
        "agent-setting",
        "pr-link",
        "bridge-session",
        "worktree-state",
        "tag",
    }
)

# Text Claude Code injects as a "user" message that the human did not type.
_WRAPPERS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<command-contents>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<system-reminder>",
    "<task-notification>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "<user-memory-input>",
)


def _is_wrapper(text: str) -> bool:
    head = text[:64].lstrip()
    return head.startswith("<") and head.startswith(_WRAPPERS)


def _first_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                return text if isinstance(text, str) else None
            if isinstance(block, str):
                return block
    return None


def _result_text(content: Any) -> str:
    """Readable text of a tool_result's content; binary parts become placeholders."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return dumps(content)
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            parts.append(_block_text(item))
    return join_text(parts)


def _block_text(block: dict[str, Any]) -> str:
    """Text of a content block that is not handled specially by the caller."""
    btype = block.get("type")
    if btype == "text":
        return str_or_dump(block.get("text"))
    if btype == "image":
        return "[image]"
    if btype == "document":
        title = block.get("title")
        return f"[document {title}]" if isinstance(title, str) and title else "[document]"
    if btype == "tool_reference":
        return f"[tool_reference {block.get('tool_name')}]"
    text = block.get("text")
    if isinstance(text, str):
        return text
    if "content" in block:
        return _result_text(block.get("content"))
    # Unknown block: never dump it whole, it may carry base64 payloads.
    return f"[{btype}]"


def _user(rec: dict[str, Any], attrs: dict[str, Any], tools: dict[str, str]) -> Parsed:
    msg = rec.get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    has_result = is_error = False
    ids: list[str] = []
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                has_result = True
                tool_use_id = block.get("tool_use_id")
                if isinstance(tool_use_id, str):
                    ids.append(tool_use_id)
                if block.get("is_error"):
                    is_error = True
                parts.append(_result_text(block.get("content")))
            else:
                parts.append(_block_text(block))
        text = join_text(parts)
    else:
        return Parsed("user", "meta" if rec.get("isMeta") else "message", "", None, "no content")

    if rec.get("isCompactSummary"):
        return Parsed("user", "meta", text, None, None if text else "empty compact summary")
    if has_result:
        attrs["tool_use_ids"] = ids
        if is_error:
            attrs["is_error"] = True
        author = next((tools[i] for i in ids if i in tools), None)
        return Parsed("tool", "tool_result", text, author, None if text else "empty tool_result")
    first = _first_text(content)
    if rec.get("isMeta") or (first is not None and _is_wrapper(first)):
        return Parsed("user", "meta", text, None, None if text else "empty meta")
    return Parsed("user", "message", text, None, None if text else "empty text")


def _assistant(rec: dict[str, Any], attrs: dict[str, Any], tools: dict[str, str]) -> Parsed:
    msg = rec.get("message")
    msg = msg if isinstance(msg, dict) else {}
    model = msg.get("model") if isinstance(msg.get("model"), str) else None
    content = msg.get("content")
    if isinstance(content, str):
        return Parsed("assistant", "message", content, model, None if content else "empty text")
    if not isinstance(content, list) or not content:
        return Parsed("assistant", "message", "", model, "no content")
    parts: list[str] = []
    names: list[str] = []
    ids: list[str] = []
    has_text = has_thinking = redacted = False
    for block in content:
        if isinstance(block, str):
            parts.append(block)
            has_text = True
            continue
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype in ("tool_use", "server_tool_use"):
            name = str(block.get("name"))
            names.append(name)
            tool_id = block.get("id")
            if isinstance(tool_id, str):
                ids.append(tool_id)
                tools[tool_id] = name
            parts.append(f"[tool_use {name}] {dumps(block.get('input'))}")
        elif btype == "thinking":
            has_thinking = True
            parts.append(str_or_dump(block.get("thinking")))
        elif btype == "redacted_thinking":
            has_thinking = redacted = True
        else:
            has_text = True
            parts.append(_block_text(block))
    text = join_text(parts)
    if names:
        attrs["tool_use_ids"] = ids
        if model:
            attrs["model"] = model
        return Parsed("assistant", "tool_use", text, names[0], None if text else "empty tool_use")
    if has_thinking and not has_text:
        reason = None
        if not text:
            reason = "redacted_thinking" if redacted else "empty thinking"
        return Parsed("assistant", "thinking", text, model, reason)
    return Parsed("assistant", "message", text, model, None if text else "empty text")


def _record_time(rec: dict[str, Any]) -> Any:
    """The raw timestamp value of a record (file-history-snapshot keeps it in `snapshot`)."""
    value = rec.get("timestamp")
    if value is None and rec.get("type") == "file-history-snapshot":
        snapshot = rec.get("snapshot")
        if isinstance(snapshot, dict):
            value = snapshot.get("timestamp")
    return value


def _good_time(rec: dict[str, Any]) -> datetime | None:
    moment = parse_iso(_record_time(rec))
    return None if moment is None or is_future(moment) else moment


def _is_turn_candidate(rec: dict[str, Any]) -> bool:
    """A real user/assistant turn (not injected meta) that can end the active branch."""
    rtype = rec.get("type")
    if rtype == "assistant":
        return True
    if rtype != "user" or rec.get("isMeta") or rec.get("isCompactSummary"):
        return False
    msg = rec.get("message")
    first = _first_text(msg.get("content")) if isinstance(msg, dict) else None
    return first is None or not _is_wrapper(first)


@dataclass(slots=True)
class _SessionInfo:
    project: str | None = None
    started_at: datetime | None = None
    version: str | None = None


@dataclass(slots=True)
class _FileScan:
    abandoned: set[str]
    sessions: dict[str, _SessionInfo]


def _scan(path: Path) -> _FileScan:
    """First pass of a full parse: the parent graph and per-session facts, nothing else."""
    parent: dict[str, str | None] = {}
    turns: set[str] = set()  # uuids of user/assistant records
    sessions: dict[str, _SessionInfo] = {}
    # Latest main-chain turn (time, line, uuid); sidechain turns only as fallback for
    # subagent files, which hold nothing else.
    best: tuple[datetime, int, str] | None = None
    best_side: tuple[datetime, int, str] | None = None
    for item in JsonlReader(path):
        if isinstance(item, ParseIssue):
            continue
        rec = item.value
        moment = _good_time(rec)
        sid = rec.get("sessionId")
        if isinstance(sid, str):
            info = sessions.get(sid)
            if info is None:
                info = sessions[sid] = _SessionInfo()
            if info.project is None and isinstance(rec.get("cwd"), str):
                info.project = rec["cwd"]
            if info.version is None and isinstance(rec.get("version"), str):
                info.version = rec["version"]
            if moment is not None and (info.started_at is None or moment < info.started_at):
                info.started_at = moment
        uuid = rec.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            continue
        up = rec.get("parentUuid")
        if up is None:
            up = rec.get("logicalParentUuid")
        parent[uuid] = up if isinstance(up, str) else None
        rtype = rec.get("type")
        if rtype not in ("user", "assistant"):
            continue
        turns.add(uuid)
        if moment is None or not _is_turn_candidate(rec):
            continue
        key = (moment, item.number, uuid)  # line numbers are unique: uuids never compared
        if rec.get("isSidechain"):
            if best_side is None or key > best_side:
                best_side = key
        elif best is None or key > best:
            best = key
    chosen = best or best_side
    if chosen is None:
        return _FileScan(set(), sessions)
    return _FileScan(_abandoned(parent, turns, chosen[2]), sessions)


def _abandoned(parent: dict[str, str | None], turns: set[str], leaf: str) -> set[str]:
    """Uuids on branches a rewind left behind; linear in the number of records."""
    active: set[str] = set()
    node: str | None = leaf
    while node is not None and node not in active:
        active.add(node)
        node = parent.get(node)
    status: dict[str, bool] = {}  # uuid -> abandoned?
    for start in parent:
        if start in active or start in status:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        node = start
        while True:
            path.append(node)
            on_path.add(node)
            up = parent[node]
            if up is None:
                result = False  # a chain of its own (see the module docstring)
                break
            if up in active:
                # The chain left the active path here; only a user/assistant child is a
                # rewound branch, side records (progress, system, ...) just hang off it.
                result = node in turns and up != leaf
                break
            if up in status:
                result = status[up]
                break
            if up not in parent or up in on_path:
                result = False  # dangling parent (another file) or a cycle: leave it alone
                break
            node = up
        for member in path:
            status[member] = result
    return {uuid for uuid, gone in status.items() if gone}


def _is_transcript(relative: PurePath) -> bool:
    # history.jsonl is the prompt log; tool-results/ holds large tool outputs, not turns
    return relative.name != "history.jsonl" and "tool-results" not in relative.parts


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class ClaudeCodeAdapter:
    source = "claude-code"

    def discover(self, path: Path) -> Iterator[Path]:
        return discover_files(path, {"*.jsonl": None}, _is_transcript)

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        file = str(path)
        stem = path.stem
        scan = _scan(path) if start_offset == 0 else _FileScan(set(), {})
        abandoned = scan.abandoned
        tools: dict[str, str] = {}
        seen: set[str] = set()
        # A resumed parse inherits times from just before the offset, like a full parse would.
        before = partial(scan_back, path, start_offset, _good_time) if start_offset > 0 else None
        filler = TimeFiller(file, before)
        reader = JsonlReader(path, start_offset, start_line)
        for item in reader:
            if isinstance(item, ParseIssue):
                yield item
                continue
            made = self._event(item, file, stem, tools, abandoned)
            if isinstance(made, ParseIssue):
                yield made
                continue
            for event in filler.push(made):
                cid = event.conversation_id
                if cid is not None and cid not in seen:
                    seen.add(cid)
                    yield self._conversation(cid, event, scan.sessions.get(cid))
                yield event
        yield from filler.finish()
        yield Checkpoint(reader.offset, reader.line)

    @staticmethod
    def _conversation(cid: str, first: Event, info: _SessionInfo | None) -> Conversation:
        attrs: dict[str, Any] = {}
        if info is not None:
            if info.version:
                attrs["version"] = info.version
            return Conversation(
                cid, None, info.project or first.project, info.started_at or first.occurred_at,
                attrs,
            )
        version = first.attrs.get("version")
        if version:
            attrs["version"] = version
        return Conversation(cid, None, first.project, first.occurred_at, attrs)

    @staticmethod
    def _event(
        line: JsonLine, file: str, stem: str, tools: dict[str, str], abandoned: set[str]
    ) -> Event | ParseIssue:
        rec = line.value
        rtype = rec.get("type")
        type_name = rtype if isinstance(rtype, str) and rtype else "untyped"
        sid = _str(rec.get("sessionId"))
        conversation_id = sid or stem
        uuid = rec.get("uuid")
        if isinstance(uuid, (str, int)) and not isinstance(uuid, bool) and str(uuid):
            native_id = str(uuid)
        elif rtype == "summary":
            summary_hash = short_hash(str_or_dump(rec.get("summary")))
            native_id = f"summary:{rec.get('leafUuid')}:{summary_hash}"
        elif rtype == "file-history-snapshot":
            native_id = f"file-history-snapshot:{rec.get('messageId')}:{short_hash(line.text())}"
        else:
            native_id = f"{type_name}:{conversation_id}:{short_hash(line.text())}"

        attrs: dict[str, Any] = {}
        raw_time = _record_time(rec)
        occurred_at = parse_iso(raw_time)
        if occurred_at is None and raw_time is not None:
            attrs["bad_timestamp"] = raw_time
        elif occurred_at is not None and is_future(occurred_at):
            return ParseIssue(
                file, line.number, native_id, f"timestamp {raw_time} is in the future; skipped"
            )

        if rtype == "user":
            parsed = _user(rec, attrs, tools)
        elif rtype == "assistant":
            parsed = _assistant(rec, attrs, tools)
        elif rtype == "system":
            content = rec.get("content")
            text = str_or_dump(content if content is not None else rec.get("subtype"))
            parsed = Parsed("system", "meta", text, None, None if text else "empty system")
        elif rtype == "summary":
            text = str_or_dump(rec.get("summary"))
            parsed = Parsed("other", "summary", text, None, None if text else "empty summary")
            if rec.get("leafUuid") is not None:
                attrs["leaf_uuid"] = rec.get("leafUuid")
        elif rtype in _META_TYPES:
            parsed = Parsed("other", "meta", "", None, type_name)
        else:
            # Unknown record type: keep it, and salvage message text if it has any.
            msg = rec.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            text = _result_text(content) if content is not None else ""
            parsed = Parsed("other", "unknown", text, None, None if text else type_name)

        if parsed.empty_reason and not parsed.text:
            attrs["empty_reason"] = parsed.empty_reason
        for key, name in (
            ("isMeta", "is_meta"),
            ("isCompactSummary", "is_compact_summary"),
            ("agentId", "agent_id"),
            ("requestId", "request_id"),
            ("subtype", "subtype"),
            ("version", "version"),
            ("isApiErrorMessage", "is_api_error"),
        ):
            value = rec.get(key)
            if value is not None:
                attrs[name] = value
        msg = rec.get("message")
        if isinstance(msg, dict) and msg.get("id") is not None:
            attrs["message_id"] = msg["id"]
        if line.bad_utf8:
            attrs["invalid_utf8"] = True

        parent = rec.get("parentUuid")
        if parent is None:
            parent = rec.get("logicalParentUuid")
        branch = rec.get("gitBranch")
        return Event(
            native_id=native_id,
            conversation_id=conversation_id,
            role=parsed.role,
            text=pg_text(parsed.text, line.lenient),
            raw=rec,
            occurred_at=occurred_at,
            line=line.number,
            parent_id=parent if isinstance(parent, str) else None,
            author=parsed.author,
            kind=parsed.kind,
            project=_str(rec.get("cwd")),
            git_branch=branch if isinstance(branch, str) and branch else None,
            is_sidechain=bool(rec.get("isSidechain")),
            on_active_branch=native_id not in abandoned,
            attrs=attrs,
        )


adapter = ClaudeCodeAdapter()
