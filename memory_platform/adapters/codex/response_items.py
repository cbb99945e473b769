"""Readable text, role and kind of a Codex `response_item` (the model-visible copy of a
turn), in the current envelope format and the pre-envelope one."""

from typing import Any

from memory_platform.adapters.base import join_text
from memory_platform.adapters.codex.session import Session
from memory_platform.adapters.jsonl import Parsed, dumps, str_or_dump

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



def _tool_call(payload: dict[str, Any], session: Session, attrs: dict[str, Any]) -> Parsed:
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


def response_item(payload: dict[str, Any], session: Session, attrs: dict[str, Any]) -> Parsed:
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


def legacy_item(
    rec: dict[str, Any], meta: dict[str, Any] | None, session: Session, attrs: dict[str, Any]
) -> Parsed:
    """A line of the pre-envelope format: session header, state marker or bare item."""
    if meta is not None:
        return Parsed("other", "meta", "", None, "session_meta")
    if "record_type" in rec:
        return Parsed("other", "meta", "", None, f"record_type {rec.get('record_type')}")
    if rec.get("type") in _RESPONSE_ITEM_TYPES:
        attrs["item_type"] = rec.get("type")
        return response_item(rec, session, attrs)
    return Parsed("other", "unknown", "", None, f"unknown type {rec.get('type')}")
