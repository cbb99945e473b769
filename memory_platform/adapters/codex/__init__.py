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

Here: `session` holds what the lines share, `response_items` reads a turn's text, role and
kind, and this module turns lines into Events (reading the JSONL is `adapters.jsonl`).
"""

import json
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path
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
from memory_platform.adapters.codex.response_items import legacy_item, response_item
from memory_platform.adapters.codex.session import (
    Session,
    meta_payload,
    session_id_from_name,
    turn_context_payload,
)
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
from memory_platform.confined import open_file

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


class CodexAdapter:
    source = "codex"

    def discover(self, path: Path) -> Listing:
        return discover_files(path, {"rollout-*.jsonl": None})

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        file = str(path)
        session = Session(session_id_from_name(path))
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
            try:
                made = self._event(item, file, session)
            except Exception as error:  # noqa: BLE001 - reported, the file goes on
                made = unreadable(file, item, error)
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
    def _resume_context(path: Path, offset: int, session: Session) -> None:
        with open_file(path) as fh:
            first = fh.readline()
        try:
            value = json.loads(first.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            meta = meta_payload(value)
            if meta is not None:
                session.take_meta(meta, parse_iso(value.get("timestamp")), first=True)
        context = scan_back(path, offset, turn_context_payload)
        if context is not None:
            session.take_turn_context(context)

    @staticmethod
    def _event(line: JsonLine, file: str, session: Session) -> Event | ParseIssue:
        rec = line.value
        rtype = rec.get("type")
        payload = rec.get("payload")
        attrs: dict[str, Any] = {}
        raw_time = rec.get("timestamp")
        occurred_at = parse_iso(raw_time)
        if occurred_at is None and raw_time is not None:
            attrs["bad_timestamp"] = raw_time

        # Session state first: the session_meta line's own native id must use its id.
        meta = meta_payload(rec, line.number)
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
            parsed = legacy_item(rec, meta, session, attrs)
        elif not isinstance(payload, dict):
            parsed = Parsed("other", "unknown", "", None, f"{rtype} without object payload")
        elif rtype == "response_item":
            parsed = response_item(payload, session, attrs)
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



def _line_time(rec: dict[str, Any]) -> datetime | None:
    moment = parse_iso(rec.get("timestamp"))
    return None if moment is None or is_future(moment) else moment


adapter = CodexAdapter()
