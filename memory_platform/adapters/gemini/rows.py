"""One Gemini My Activity row, from JSON or HTML alike: is it Gemini's, which conversation,
which prompt, and the Conversation and Events it becomes (ids per the package docstring)."""

import json
import re
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from memory_platform.adapters.base import Conversation, Event, Item, clean_text, short_hash
from memory_platform.adapters.gemini.html_text import html_to_text

# Known localized prompt verbs. Anything else is handled by the generic "Verb: prompt" rule.
PROMPT_PREFIXES = ("Prompted ", "Eingegebener Prompt: ")
_BARE_PROMPT_TITLES = frozenset({"Prompted", "Eingegebener Prompt:"})
_GENERIC_VERB_WINDOW = 40
_CONV_URL = re.compile(r"gemini\.google\.com/(?:u/\d+/)?app/([A-Za-z0-9_-]+)")


def mentions_gemini(value: Any) -> bool:
    if isinstance(value, str):
        return "gemini" in value.lower()
    if isinstance(value, list):
        return any(isinstance(v, str) and "gemini" in v.lower() for v in value)
    return False


def is_gemini_row(record: dict[str, Any]) -> bool:
    """Gemini by structure first (safeHtmlItem exists only on Gemini rows), then by product
    or header, which are localized but keep the brand name."""
    return (
        "safeHtmlItem" in record
        or mentions_gemini(record.get("products"))
        or mentions_gemini(record.get("header"))
    )


def split_prompt(title: str, has_response: bool) -> tuple[str | None, str]:
    """(prompt text or None if the row is not a prompt row, how it was extracted)."""
    for prefix in PROMPT_PREFIXES:
        if title.startswith(prefix):
            return title[len(prefix):], "verb"
    if title.strip() in _BARE_PROMPT_TITLES:
        return "", "verb"
    if not has_response:
        return None, "not a prompt"
    # a turn in a language we have no verb for: "Verb: prompt" is the common shape
    colon = title.find(": ")
    if 0 <= colon < _GENERIC_VERB_WINDOW:
        return title[colon + 2:], "generic"
    return title, "full title"


def _whole_second(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _conversation_ids(urls: list[str]) -> list[str]:
    found: list[str] = []
    for url in urls:
        for match in _CONV_URL.finditer(url):
            if match.group(1) not in found:
                found.append(match.group(1))
    return found


class FileState:
    """Per-file bookkeeping: conversations announced, ids used, rows skipped."""

    def __init__(self) -> None:
        self.conversations: set[str] = set()
        self.ids: dict[str, str] = {}  # base native id -> digest of the row that took it
        self.foreign = 0
        self.ours = 0

    def unique_base(self, base: str, row_digest: str) -> str | None:
        """None for an exact duplicate row; a suffixed id when a different row collides."""
        candidate, n = base, 1
        while candidate in self.ids:
            if self.ids[candidate] == row_digest:
                return None
            n += 1
            candidate = f"{base}~{n}"
        self.ids[candidate] = row_digest
        return candidate


def turn_items(
    state: FileState,
    *,
    title: str,
    moment: datetime,
    conv_urls: list[str],
    response_html: list[str],
    raw: Any,
    index: int,
    extra_attrs: dict[str, Any],
) -> Iterator[Item]:
    """Conversation (when new) and the Events for one Gemini row (JSON or HTML)."""
    ids = _conversation_ids(conv_urls)
    attrs: dict[str, Any] = dict(extra_attrs)
    if ids:
        conv_id, id_part = ids[0], ids[0]
        if len(ids) > 1:
            attrs["other_conversation_ids"] = ids[1:]
    else:
        conv_id, id_part = f"day:{moment.astimezone(timezone.utc):%Y-%m-%d}", "noconv"
        attrs["conversation_inferred"] = True
    if conv_id not in state.conversations:
        state.conversations.add(conv_id)
        yield Conversation(
            native_id=conv_id,
            attrs={"conversation_inferred": True} if not ids else {},
        )

    has_response = bool(response_html)
    prompt, how = split_prompt(title, has_response)
    # tells an exact duplicate row from a different row that happens to share the id
    digest = short_hash(title, str(moment), *response_html, json.dumps(conv_urls))
    stamp = _whole_second(moment)
    if prompt is None:
        base = state.unique_base(f"{id_part}:{stamp}:{short_hash(title)}", digest)
        if base is None:
            return
        meta_attrs = dict(attrs)
        if not title:
            meta_attrs["empty_reason"] = "row without title"
        yield Event(
            native_id=f"{base}:meta", conversation_id=conv_id, role="other",
            text=clean_text(title), raw=raw, occurred_at=moment, line=index, kind="meta",
            attrs=meta_attrs,
        )
        return

    base = state.unique_base(f"{id_part}:{stamp}:{short_hash(prompt)}", digest)
    if base is None:
        return
    prompt_attrs = dict(attrs)
    prompt_attrs["prompt_extraction"] = how
    if not has_response:
        prompt_attrs["no_response"] = True
    if not prompt.strip():
        prompt_attrs["empty_reason"] = "no prompt text (image-only prompt?)"
    prompt_id = f"{base}:prompt"
    yield Event(
        native_id=prompt_id, conversation_id=conv_id, role="user", text=clean_text(prompt),
        raw=raw, occurred_at=moment, line=index, kind="message", attrs=prompt_attrs,
    )
    if not has_response:
        return
    response_attrs = dict(attrs)
    if len(response_html) > 1:
        # regenerations/drafts land in one row; all of them are kept
        response_attrs["drafts"] = len(response_html)
    text = clean_text("\n\n".join(t for t in map(html_to_text, response_html) if t))
    if not text:
        response_attrs["empty_reason"] = "no text in response html"
    yield Event(
        native_id=f"{base}:response", conversation_id=conv_id, role="assistant", text=text,
        raw=raw, occurred_at=moment, line=index, parent_id=prompt_id, author="gemini",
        kind="message", attrs=response_attrs,
    )
