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
  `adapters.jsonl`, shared with the Codex adapter. Here: `content` reads one record's text,
  role and kind; `branches` is the first pass (session facts, abandoned branches); this
  module turns records into Events.
"""

from collections.abc import Iterator
from functools import partial
from pathlib import Path, PurePath
from typing import Any

from memory_platform.adapters.base import (
    Checkpoint,
    Conversation,
    Event,
    Item,
    Listing,
    ParseIssue,
    discover_files,
    is_future,
    parse_iso,
    short_hash,
)
from memory_platform.adapters.claude_code.branches import (
    FileScan,
    SessionInfo,
    good_time,
    record_time,
    scan_file,
)
from memory_platform.adapters.claude_code.content import read_assistant, read_user, result_text
from memory_platform.adapters.jsonl import (
    JsonLine,
    JsonlReader,
    Parsed,
    TimeFiller,
    pg_text,
    scan_back,
    str_or_dump,
    unreadable,
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


def _is_transcript(relative: PurePath) -> bool:
    # history.jsonl is the prompt log; tool-results/ holds large tool outputs, not turns
    return relative.name != "history.jsonl" and "tool-results" not in relative.parts


def _holds_turns(folder: PurePath) -> bool:
    return folder.name != "tool-results"


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class ClaudeCodeAdapter:
    source = "claude-code"

    def discover(self, path: Path) -> Listing:
        return discover_files(path, {"*.jsonl": None}, _is_transcript, descend=_holds_turns)

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        file = str(path)
        stem = path.stem
        scan = scan_file(path) if start_offset == 0 else FileScan(set(), {})
        abandoned = scan.abandoned
        tools: dict[str, str] = {}
        seen: set[str] = set()
        # A resumed parse inherits times from just before the offset, like a full parse would.
        before = partial(scan_back, path, start_offset, good_time) if start_offset > 0 else None
        filler = TimeFiller(file, before)
        reader = JsonlReader(path, start_offset, start_line)
        for item in reader:
            if isinstance(item, ParseIssue):
                yield item
                continue
            try:
                made = self._event(item, file, stem, tools, abandoned)
            except Exception as error:  # noqa: BLE001 - reported, the file goes on
                made = unreadable(file, item, error)
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
    def _conversation(cid: str, first: Event, info: SessionInfo | None) -> Conversation:
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
        raw_time = record_time(rec)
        occurred_at = parse_iso(raw_time)
        if occurred_at is None and raw_time is not None:
            attrs["bad_timestamp"] = raw_time
        elif occurred_at is not None and is_future(occurred_at):
            return ParseIssue(
                file, line.number, native_id, f"timestamp {raw_time} is in the future; skipped"
            )

        if rtype == "user":
            parsed = read_user(rec, attrs, tools)
        elif rtype == "assistant":
            parsed = read_assistant(rec, attrs, tools)
        elif rtype == "system":
            content = rec.get("content")
            text = str_or_dump(content if content is not None else rec.get("subtype"))
            parsed = Parsed("system", "meta", text, None, None if text else "empty system")
        elif rtype == "summary":
            text = str_or_dump(rec.get("summary"))
            parsed = Parsed("other", "summary", text, None, None if text else "empty summary")
            if rec.get("leafUuid") is not None:
                attrs["leaf_uuid"] = rec.get("leafUuid")
        elif isinstance(rtype, str) and rtype in _META_TYPES:
            parsed = Parsed("other", "meta", "", None, type_name)
        else:
            # Unknown record type: keep it, and salvage message text if it has any.
            msg = rec.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            text = result_text(content) if content is not None else ""
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
