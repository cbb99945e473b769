"""Readable text of one claude.ai chat message: text blocks, tool calls and results,
attachments' extracted text, and the attrs that explain an empty one."""

import json
from typing import Any

from memory_platform.adapters.base import clean_text, join_text


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


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


def message_text(msg: dict[str, Any]) -> tuple[str, dict[str, Any]]:
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
