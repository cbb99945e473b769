"""OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

See FORMATS.md section 5. Decisions worth knowing:

- Lines carry no ids. `native_id` is `<session id>:<line number>:<hash of the line>`: the
  file is append-only (resume appends), so line numbers are stable, and the hash catches a
  file that was replaced under the same name. The session id comes from the first line
  (`session_meta.payload.id`, or the bare `id` of the pre-envelope format); a resumed parse
  reads the first line again to learn it, and the last `turn_context` before the offset to
  learn the model and cwd. Without a session_meta the id comes from the file name.
- The model-visible `response_item` copy is the canonical turn. `event_msg` records repeat
  user/assistant/reasoning text for the UI; they are stored (never dropped) as role
  "other", kind "meta", with empty text and `empty_reason="event_msg duplicate"`; the
  other event_msg types (token_count, task_started, ...) get `empty_reason="event_msg
  <type>"`.
- Injected context Codex itself sends as a "user" message (AGENTS.md, environment
  context, skills, user shell commands, turn aborts) is kind "meta", mirroring Codex's own
  `is_contextual_user_fragment`; developer/system messages are role "system", kind "meta".
- `author` is the model (from the latest `turn_context`) for assistant text and
  reasoning, and the tool name for tool calls and their outputs (model in attrs["model"]).
- Codex has no branches in the file (rollbacks are events), so `on_active_branch` is
  always True. Sessions spawned as sub-agents (`source.subagent`) are marked sidechain.
"""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
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

# Codex's own markers for context it injects as a user message (lower-case prefixes).
_CONTEXT_PREFIXES = (
    "# agents.md instructions for ",
    "<environment_context>",
    "<user_instructions>",
    "<skill>",
    "<user_shell_command>",
    "<turn_aborted>",
    "<plugins>",
    "<subagents>",
    "<subagent_notification>",
    "<permissions instructions>",
    "<instructions>",
)

# event_msg types that only repeat a response_item turn for the UI.
_DUPLICATE_EVENTS = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
    }
)

# Pre-envelope rollouts (mid-2025) wrote bare ResponseItems.
_RESPONSE_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "image_generation_call",
        "tool_search_call",
        "tool_search_output",
        "compaction",
        "compaction_summary",
        "ghost_snapshot",
    }
)

_UUID_TAIL = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)


def _items_text(content: Any) -> str:
    """Readable text of a content list; images (data URLs, i.e. base64) become "[image]"."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str_or_dump(content)
    parts: list[str] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
            continue
        if not isinstance(item, dict):
            continue
        itype = item.get("type")
        if itype in ("input_image", "image", "output_image"):
            parts.append("[image]")
        elif isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif isinstance(item.get("refusal"), str):
            parts.append(item["refusal"])
        else:
            parts.append(f"[{itype}]")
    return join_text(parts)


def _first_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                return item["text"]
    return None


def _is_context(text: str | None) -> bool:
    return text is not None and text[:64].lstrip().lower().startswith(_CONTEXT_PREFIXES)


def _output_text(output: Any) -> str:
    if isinstance(output, dict):
        # Older FunctionCallOutputPayload objects: {"content": ..., "success": ...}.
        if "content" in output:
            return _items_text(output.get("content"))
        return dumps(output)
    return _items_text(output)


def _session_id_from_name(path: Path) -> str:
    match = _UUID_TAIL.search(path.stem)
    return match.group(0) if match else path.stem


@dataclass(slots=True)
class _Session:
    """What the lines of one rollout share; updated as session_meta/turn_context go by."""

    id: str
    from_meta: bool = False
    cwd: str | None = None
    model: str | None = None
    branch: str | None = None
    sidechain: bool = False
    started_at: datetime | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)  # call_id -> tool name

    def take_meta(self, payload: dict[str, Any], line_time: datetime | None, first: bool) -> None:
        if self.from_meta:
            return  # a fork may copy its parent's session_meta; the first one is ours
        self.from_meta = True
        sid = payload.get("id")
        # Only the first line may name the session: switching ids mid-file would split it.
        if first and isinstance(sid, str) and sid:
            self.id = sid
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        git = payload.get("git")
        if isinstance(git, dict) and isinstance(git.get("branch"), str) and git["branch"]:
            self.branch = git["branch"]
        source = payload.get("source")
        if isinstance(source, dict) and "subagent" in source:
            self.sidechain = True
        self.started_at = parse_iso(payload.get("timestamp")) or line_time
        for key in (
            "cli_version",
            "originator",
            "source",
            "model_provider",
            "forked_from_id",
            "agent_nickname",
            "agent_role",
        ):
            if payload.get(key) is not None:
                self.attrs[key] = payload[key]

    def take_turn_context(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("cwd"), str):
            self.cwd = payload["cwd"]
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]


def _tool_call(payload: dict[str, Any], session: _Session, attrs: dict[str, Any]) -> Parsed:
    ptype = str(payload.get("type"))
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        name = ptype.removesuffix("_call")
    # Only the argument-like fields: image_generation_call carries base64 in `result`.
    for key in ("arguments", "input", "action", "query"):
        if key in payload:
            body = str_or_dump(payload[key])
            break
    else:
        body = ""
    call_id = payload.get("call_id")
    if isinstance(call_id, str):
        session.tools[call_id] = name
        attrs["call_id"] = call_id
    if session.model:
        attrs["model"] = session.model
    revised = payload.get("revised_prompt")
    if isinstance(revised, str) and revised:
        body = join_text([body, revised])
    return Parsed("assistant", "tool_use", f"[tool_use {name}] {body}".rstrip(), name)


def _response_item(payload: dict[str, Any], session: _Session, attrs: dict[str, Any]) -> Parsed:
    ptype = payload.get("type")
    if ptype == "message":
        role = payload.get("role")
        content = payload.get("content")
        text = _items_text(content)
        reason = None if text else "no content"
        if isinstance(payload.get("phase"), str):
            attrs["phase"] = payload["phase"]
        if role == "user":
            kind = "meta" if _is_context(_first_text(content)) else "message"
            return Parsed("user", kind, text, None, reason)
        if role == "assistant":
            return Parsed("assistant", "message", text, session.model, reason)
        if role in ("developer", "system"):
            attrs["message_role"] = role
            return Parsed("system", "meta", text, None, reason)
        attrs["message_role"] = role
        return Parsed("other", "message", text, None, reason)
    if ptype == "reasoning":
        text = _items_text(payload.get("summary"))
        if not text:
            text = _items_text(payload.get("content"))
        reason = None
        if not text:
            encrypted = payload.get("encrypted_content")
            reason = "encrypted reasoning" if encrypted else "empty reasoning"
        return Parsed("assistant", "thinking", text, session.model, reason)
    if isinstance(ptype, str) and ptype.endswith("_output"):
        call_id = payload.get("call_id")
        author = None
        if isinstance(call_id, str):
            attrs["call_id"] = call_id
            author = session.tools.get(call_id)
        text = _output_text(payload.get("output"))
        return Parsed("tool", "tool_result", text, author, None if text else "empty output")
    if isinstance(ptype, str) and ptype.endswith("_call"):
        return _tool_call(payload, session, attrs)
    if ptype in ("compaction", "compaction_summary"):
        return Parsed("other", "meta", "", None, "encrypted compaction")
    if ptype == "ghost_snapshot":
        return Parsed("other", "meta", "", None, "ghost_snapshot")
    return Parsed("other", "unknown", "", None, f"unknown response_item {ptype}")


class CodexAdapter:
    source = "codex"

    def discover(self, path: Path) -> Iterator[Path]:
        return discover_files(path, {"rollout-*.jsonl": None})

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        file = str(path)
        session = _Session(_session_id_from_name(path))
        before = None
        if start_offset > 0:
            self._resume_context(path, start_offset, session)
            # Lines before the offset hold the time a timeless first new line inherits.
            before = partial(scan_back, path, start_offset, _line_time)
        filler = TimeFiller(file, before)
        announced = False
        reader = JsonlReader(path, start_offset, start_line)
        for item in reader:
            if isinstance(item, ParseIssue):
                yield item
                continue
            made = self._event(item, file, session)
            if isinstance(made, ParseIssue):
                yield made
                continue
            for event in filler.push(made):
                if not announced:
                    announced = True
                    yield Conversation(
                        session.id, None, session.cwd or event.project,
                        session.started_at or event.occurred_at, dict(session.attrs),
                    )
                yield event
        yield from filler.finish()
        yield Checkpoint(reader.offset, reader.line)

    @staticmethod
    def _resume_context(path: Path, offset: int, session: _Session) -> None:
        with open(path, "rb") as fh:
            first = fh.readline()
        try:
            value = json.loads(first.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            meta = _meta_payload(value)
            if meta is not None:
                session.take_meta(meta, parse_iso(value.get("timestamp")), first=True)
        context = scan_back(path, offset, _turn_context)
        if context is not None:
            session.take_turn_context(context)

    @staticmethod
    def _event(line: JsonLine, file: str, session: _Session) -> Event | ParseIssue:
        rec = line.value
        rtype = rec.get("type")
        payload = rec.get("payload")
        attrs: dict[str, Any] = {}
        raw_time = rec.get("timestamp")
        occurred_at = parse_iso(raw_time)
        if occurred_at is None and raw_time is not None:
            attrs["bad_timestamp"] = raw_time

        # Session state first: the session_meta line's own native id must use its id.
        meta = _meta_payload(rec, line.number)
        if meta is not None:
            session.take_meta(meta, occurred_at, first=line.number == 1)
        elif rtype == "turn_context" and isinstance(payload, dict):
            session.take_turn_context(payload)

        native_id = f"{session.id}:{line.number}:{short_hash(line.text())}"
        if occurred_at is not None and is_future(occurred_at):
            return ParseIssue(
                file, line.number, native_id, f"timestamp {raw_time} is in the future; skipped"
            )

        if "payload" not in rec:
            parsed = _legacy(rec, meta, session, attrs)
        elif not isinstance(payload, dict):
            parsed = Parsed("other", "unknown", "", None, f"{rtype} without object payload")
        elif rtype == "response_item":
            parsed = _response_item(payload, session, attrs)
            attrs["item_type"] = payload.get("type")
        elif rtype == "event_msg":
            etype = payload.get("type")
            attrs["event_type"] = etype
            reason = "event_msg duplicate" if etype in _DUPLICATE_EVENTS else f"event_msg {etype}"
            parsed = Parsed("other", "meta", "", None, reason)
        elif rtype == "session_meta":
            parsed = Parsed("other", "meta", "", None, "session_meta")
        elif rtype == "turn_context":
            parsed = Parsed("other", "meta", "", None, "turn_context")
            if isinstance(payload.get("turn_id"), str):
                attrs["turn_id"] = payload["turn_id"]
        elif rtype == "compacted":
            text = str_or_dump(payload.get("message"))
            parsed = Parsed("other", "summary", text, None, None if text else "empty compaction")
        else:
            parsed = Parsed("other", "unknown", "", None, f"unknown type {rtype}")

        if parsed.empty_reason and not parsed.text:
            attrs["empty_reason"] = parsed.empty_reason
        if line.bad_utf8:
            attrs["invalid_utf8"] = True
        return Event(
            native_id=native_id,
            conversation_id=session.id,
            role=parsed.role,
            text=pg_text(parsed.text, line.lenient),
            raw=rec,
            occurred_at=occurred_at,
            line=line.number,
            author=parsed.author,
            kind=parsed.kind,
            project=session.cwd,
            git_branch=session.branch,
            is_sidechain=session.sidechain,
            attrs=attrs,
        )


def _meta_payload(rec: dict[str, Any], number: int | None = None) -> dict[str, Any] | None:
    """The session-meta object of a line, if it is one (current or pre-envelope format)."""
    if rec.get("type") == "session_meta":
        payload = rec.get("payload")
        return payload if isinstance(payload, dict) else None
    # Pre-envelope first line: a bare {id, timestamp, instructions, git}.
    if "payload" not in rec and "type" not in rec and "id" in rec and number in (None, 1):
        return rec
    return None


def _legacy(
    rec: dict[str, Any], meta: dict[str, Any] | None, session: _Session, attrs: dict[str, Any]
) -> Parsed:
    """A line of the pre-envelope format: session header, state marker or bare item."""
    if meta is not None:
        return Parsed("other", "meta", "", None, "session_meta")
    if "record_type" in rec:
        return Parsed("other", "meta", "", None, f"record_type {rec.get('record_type')}")
    if rec.get("type") in _RESPONSE_ITEM_TYPES:
        attrs["item_type"] = rec.get("type")
        return _response_item(rec, session, attrs)
    return Parsed("other", "unknown", "", None, f"unknown type {rec.get('type')}")


def _line_time(rec: dict[str, Any]) -> datetime | None:
    moment = parse_iso(rec.get("timestamp"))
    return None if moment is None or is_future(moment) else moment


def _turn_context(rec: dict[str, Any]) -> dict[str, Any] | None:
    payload = rec.get("payload")
    if rec.get("type") == "turn_context" and isinstance(payload, dict):
        return payload
    return None


adapter = CodexAdapter()
