"""One ChatGPT mapping node as an Event: readable text by content type, role, kind
(message, tool call or result, thinking, hidden meta) and the attrs that explain it."""

from datetime import datetime
from typing import Any

from memory_platform.adapters.base import Event, clean_text, join_text

_ROLES = frozenset({"system", "user", "assistant", "tool"})
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


def node_event(
    conv_id: str,
    node_id: str,
    node: dict[str, Any],
    parent: str | None,
    moment: datetime,
    time_inferred: bool,
    on_active: bool,
    index: int,
) -> Event:
    """The Event of one mapping node that carries a message (`index` is its record's)."""
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
