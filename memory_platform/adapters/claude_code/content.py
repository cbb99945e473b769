"""What a Claude Code record says: readable text, role and kind of user and assistant
messages, tool calls and results, and the wrapper tags Claude Code injects as "user" text."""

from typing import Any

from memory_platform.adapters.base import join_text
from memory_platform.adapters.jsonl import Parsed, dumps, str_or_dump

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


def is_wrapper(text: str) -> bool:
    head = text[:64].lstrip()
    return head.startswith("<") and head.startswith(_WRAPPERS)


def first_text(content: Any) -> str | None:
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


def result_text(content: Any) -> str:
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
        return result_text(block.get("content"))
    # Unknown block: never dump it whole, it may carry base64 payloads.
    return f"[{btype}]"


def read_user(rec: dict[str, Any], attrs: dict[str, Any], tools: dict[str, str]) -> Parsed:
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
                parts.append(result_text(block.get("content")))
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
    first = first_text(content)
    if rec.get("isMeta") or (first is not None and is_wrapper(first)):
        return Parsed("user", "meta", text, None, None if text else "empty meta")
    return Parsed("user", "message", text, None, None if text else "empty text")


def read_assistant(rec: dict[str, Any], attrs: dict[str, Any], tools: dict[str, str]) -> Parsed:
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

