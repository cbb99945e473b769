"""Rows for the events table: an adapter's Event as the values PostgreSQL can hold.

PostgreSQL's limits, and what happens at each (ARCHITECTURE.md, "Records PostgreSQL cannot
hold"): text holds neither NUL nor lone surrogates (replaced visibly); jsonb refuses \\u0000
(replaced), NaN and Infinity (null, as orjson writes them), nesting deeper than orjson
serialises (the record is refused: `RecordTooDeep`), and more than 256 MB (the raw record is
stored with its longest strings cut, `attrs.raw_cut` says how; the text over `TEXT_LIMIT` is
cut the same way, `attrs.text_cut`). A cut is returned as a note for the import report; the
full record stays in its source file, at the line or index the event records.
"""

import hashlib
import json
import math
from dataclasses import dataclass, field

import orjson

from memory_platform.adapters.base import ROLES, Conversation, Event

# Bytes of JSON text for `raw`. jsonb holds at most 256 MB; its binary form can outgrow the
# text (numbers, small containers), so leave a margin. A batch PostgreSQL still refuses is
# split to the refused row (ingest.writer).
RAW_LIMIT = 192 << 20
# Bytes of UTF-8 for `text`: PostgreSQL takes up to 1 GB, but one row must stay under 1 GB
# with its raw copy, and every byte is held several times on the way.
TEXT_LIMIT = 256 << 20
# Nesting orjson serialises; deeper records are refused rather than sent down a slow path.
MAX_DEPTH = 254
# Bytes of an id: ids are unique keys, and a b-tree entry holds at most ~2,700 bytes. A longer
# id is kept as its start and a hash of the whole (`key_text`), the same wherever it appears.
KEY_LIMIT = 512


class RecordTooDeep(ValueError):
    """A record nested deeper than MAX_DEPTH levels: not storable as jsonb here."""


def pg_text(value: str | None) -> str | None:
    """PostgreSQL text holds neither NUL nor lone surrogates; replace them visibly."""
    if value is None:
        return None
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def key_text(value: str | None) -> str | None:
    """An id as stored: itself, or when over KEY_LIMIT bytes its start and a hash of it all
    (deterministic, so parents and re-imports still find it)."""
    value = pg_text(value)
    if value is None or len(value) <= KEY_LIMIT // 4 or len(value.encode("utf-8")) <= KEY_LIMIT:
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]
    return f"{value[:100]}…#sha256:{digest}"


def json_text(value) -> str:
    """`value` as JSON text jsonb accepts. Raises RecordTooDeep past MAX_DEPTH levels and
    ValueError for what JSON cannot say (an integer of more than 4,300 digits)."""
    try:
        data = orjson.dumps(value)
    except orjson.JSONEncodeError as error:
        if "Recursion limit" in str(error):
            raise RecordTooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
        # Lone surrogates or integers past 64 bits: the slow path, replacing what cannot be
        # stored rather than losing the record.
        try:
            data = json.dumps(_finite(value), ensure_ascii=False, default=str).encode(
                "utf-8", "replace")
        except RecursionError:
            raise RecordTooDeep(f"nested deeper than {MAX_DEPTH} levels") from None
    if b"\\u0000" in data:
        # jsonb rejects \u0000; keep an escaped backslash followed by "u0000" intact.
        text = data.decode("utf-8")
        out, i = [], 0
        while True:
            j = text.find("\\u0000", i)
            if j < 0:
                out.append(text[i:])
                break
            backslashes = len(text[:j]) - len(text[:j].rstrip("\\"))
            out.append(text[i:j])
            out.append("\\u0000" if backslashes % 2 else "\\ufffd")
            i = j + 6
        return "".join(out)
    return data.decode("utf-8")


def _finite(value):
    """`value` with NaN and infinities as None (json.dumps would write NaN, which jsonb
    refuses; orjson writes null). Only reached on the slow path, so a copy is affordable."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


@dataclass
class Row:
    values: tuple
    notes: list[str] = field(default_factory=list)  # what was cut to fit, for the report


def build_row(source: str, event: Event, source_file_id: int | None = None) -> Row:
    """The events row for `event`, cut to what PostgreSQL holds (see the module docstring).
    Raises ValueError (RecordTooDeep among them) for an event that cannot be stored."""
    if event.occurred_at is None or event.occurred_at.tzinfo is None:
        raise ValueError(f"adapter {source} produced an event without an aware timestamp")
    if not isinstance(event.native_id, str) or not event.native_id:
        raise ValueError(f"adapter {source} produced an event without an id")
    if event.line is not None and not 0 <= event.line < 1 << 31:
        raise ValueError(f"line or record number {event.line} is out of range")
    role = event.role
    attrs = event.attrs
    if role not in ROLES:
        attrs = {**attrs, "original_role": role}
        role = "other"
    raw = json_text(event.raw)
    text = pg_text(event.text) or ""
    # The hash covers the record as read, so a re-import of the same file is recognised
    # whatever had to be cut.
    digest = hashlib.sha256(raw.encode("utf-8"))
    digest.update(b"\x1f")
    digest.update(text.encode("utf-8"))
    notes: list[str] = []
    if len(raw) > RAW_LIMIT // 4 and len(raw.encode("utf-8")) > RAW_LIMIT:
        raw, cut = _cut_raw(event.raw, raw)
        attrs = {**attrs, "raw_cut": cut}
        notes.append(
            f"the record's JSON is {cut['json_bytes']} bytes, over what PostgreSQL's jsonb "
            f"holds; stored with {cut['strings_cut']} string(s) cut to their first "
            f"{cut['kept_chars']} characters (attrs.raw_cut); the source file keeps it whole")
    if len(text) > TEXT_LIMIT // 4 and len(text.encode("utf-8")) > TEXT_LIMIT:
        kept = text.encode("utf-8")[:TEXT_LIMIT].decode("utf-8", "ignore")
        attrs = {**attrs, "text_cut": {"chars": len(text), "kept_chars": len(kept)}}
        notes.append(f"the text is {len(text)} characters; stored its first {len(kept)} "
                     "(attrs.text_cut)")
        text = kept
    native_id = key_text(event.native_id)
    if native_id != event.native_id and len(native_id) < len(event.native_id):
        notes.append(f"id of {len(event.native_id)} characters stored as its start and hash")
    values = (
        source,
        native_id,
        key_text(_text(event.conversation_id)),
        key_text(_text(event.parent_id)),
        role,
        event.kind,
        _text(event.author),
        event.occurred_at,
        text,
        raw,
        _text(event.project),
        _text(event.git_branch),
        event.is_sidechain,
        event.on_active_branch,
        json_text(attrs),
        digest.hexdigest()[:32],
        source_file_id,
        event.line,
    )
    return Row(values, notes)


def conversation_row(source: str, conversation: Conversation) -> tuple:
    """(source, native_id, title, project, started_at, attrs) for the conversations table;
    attrs round-trip through json_text, so they hold only what jsonb accepts."""
    if not isinstance(conversation.native_id, str) or not conversation.native_id:
        raise ValueError("has no id")
    attrs = orjson.loads(json_text(conversation.attrs))
    return (source, key_text(conversation.native_id), _text(conversation.title),
            _text(conversation.project), conversation.started_at, attrs)


def _text(value) -> str | None:
    """A text column's value; an adapter handing over another type gets it as JSON text."""
    if value is None or isinstance(value, str):
        return pg_text(value)
    return pg_text(json_text(value))


def event_row(source: str, event: Event, source_file_id: int | None = None) -> tuple:
    """The row alone (benchmarks and tests that build rows by hand)."""
    return build_row(source, event, source_file_id).values


def _cut_raw(value, text: str) -> tuple[str, dict]:
    """`value` as JSON under RAW_LIMIT bytes, its longest strings cut to one length, and
    what was cut. Strings carry what makes a record huge; keys and structure stay."""
    lengths: list[int] = []
    _strings(value, lengths)
    lengths.sort(reverse=True)
    total = len(text.encode("utf-8"))
    budget = RAW_LIMIT
    for _ in range(8):  # non-ASCII strings weigh more bytes than characters: aim lower
        keep = _cut_length(lengths, total - budget)
        cut = json_text(_cut(value, keep))
        size = len(cut.encode("utf-8"))
        if size <= RAW_LIMIT:
            break
        budget -= size - RAW_LIMIT + (1 << 20)
    else:
        keep, cut = 0, json_text(_cut(value, 0))
    return cut, {"json_bytes": total, "kept_bytes": len(cut.encode("utf-8")),
                 "strings_cut": sum(1 for n in lengths if n > keep), "kept_chars": keep}


def _strings(value, lengths: list[int]) -> None:
    if isinstance(value, str):
        lengths.append(len(value))
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, lengths)
    elif isinstance(value, list | tuple):
        for item in value:
            _strings(item, lengths)


def _cut_length(lengths: list[int], excess: int) -> int:
    """The largest length L such that cutting every string to L characters removes at least
    `excess` characters (`lengths` sorted longest first)."""
    removed_above = 0
    for count, length in enumerate(lengths, 1):
        following = lengths[count] if count < len(lengths) else 0
        # cutting the `count` longest strings down to `following` removes this much more
        step = count * (length - following)
        if removed_above + step >= excess:
            return max(following + (removed_above + step - excess) // count, 0)
        removed_above += step
    return 0


def _cut(value, keep: int):
    if isinstance(value, str):
        return value[:keep] if len(value) > keep else value
    if isinstance(value, dict):
        return {key: _cut(item, keep) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cut(item, keep) for item in value]
    return value
