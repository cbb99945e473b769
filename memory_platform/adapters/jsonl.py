"""Reading append-only JSONL transcripts, shared by the Claude Code and Codex adapters.

`JsonlReader` streams complete lines from a byte offset (so an import resumes where the last
one stopped), `TimeFiller` gives timeless records a neighbour's time, `scan_back` recovers
context that lies before a resume offset (also used by `dream.triggers` to read a session's
last moment), and `Parsed` is what one record's content reads as.
"""

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_platform.adapters.base import Event, ParseIssue, clean_text
from memory_platform.confined import open_file

try:
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is not installed
    orjson = None  # type: ignore[assignment]

_BOM = b"\xef\xbb\xbf"
# Bytes of one line (one record). Longer lines are skipped without being held, so memory stays
# bounded; the longest real records (a transcript line with pasted images) are a few MB.
MAX_LINE = 256 << 20


def _loads_strict(data: bytes) -> Any:
    if orjson is not None:
        return orjson.loads(data)
    return json.loads(data)


@dataclass(slots=True)
class JsonLine:
    """One complete, parsed JSONL line."""

    number: int  # 1-based line number in the file
    data: bytes  # the line as read, terminator included
    value: dict[str, Any]
    # Parsed by the lenient fallback: may hold lone surrogates; the UTF-8 was repaired.
    lenient: bool = False
    bad_utf8: bool = False

    def text(self) -> str:
        """The line as text without its terminator (what native-id hashes are built from)."""
        return self.data.rstrip(b"\r\n").decode("utf-8", "replace")


class JsonlReader:
    """Streams complete lines of a JSONL file from a byte offset.

    Yields `JsonLine` for every JSON object and `ParseIssue` for every unreadable line;
    blank lines are skipped. `offset`/`line` always describe what has been consumed, so
    they are the Checkpoint once iteration ends. A final line without a newline that does
    not parse is a live file's half-written tail: it is neither reported nor consumed.
    """

    def __init__(self, path: Path, start_offset: int = 0, start_line: int = 0) -> None:
        self.path = path
        self.offset = start_offset
        self.line = start_line

    def __iter__(self) -> Iterator[JsonLine | ParseIssue]:
        file = str(self.path)
        with open_file(self.path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if self.offset > size:
                yield ParseIssue(
                    file, None, None,
                    f"file is shorter ({size} bytes) than the resume offset {self.offset}; "
                    "it was truncated or replaced and must be re-imported from the start",
                )
                return
            glued = False
            if self.offset > 0:
                fh.seek(self.offset - 1)
                # The previous run consumed a final line that had no newline yet: the newline
                # that completes it must not count as a new (empty) line, or line numbers
                # (part of Codex native ids) would shift against a fresh parse.
                glued = fh.read(1) != b"\n"
            for raw, size in _lines(fh):
                complete = raw is None or raw.endswith(b"\n")
                if raw is None or size > len(raw):
                    # Too long to hold: skipped unread (see MAX_LINE), and said so.
                    if not complete:
                        return
                    glued = False
                    self.offset += size
                    self.line += 1
                    yield ParseIssue(
                        file, self.line, None,
                        f"line is {size} bytes, over the {MAX_LINE}-byte limit for one "
                        "record; skipped",
                    )
                    continue
                if glued:
                    glued = False
                    if raw == b"\n" or raw == b"\r\n":
                        self.offset += len(raw)
                        continue
                if raw.isspace():
                    if not complete:
                        return
                    self.offset += len(raw)
                    self.line += 1
                    continue
                number = self.line + 1
                if number == 1 and raw.startswith(_BOM):
                    raw_json = raw[len(_BOM):]
                else:
                    raw_json = raw
                lenient = bad_utf8 = False
                try:
                    value = _loads_strict(raw_json)
                except (ValueError, RecursionError):
                    # json accepts what orjson refuses (NaN, huge ints, lone surrogates) and a
                    # line with broken UTF-8 is still worth reading with replacement chars.
                    lenient = True
                    try:
                        text = raw_json.decode("utf-8")
                    except UnicodeDecodeError:
                        text = raw_json.decode("utf-8", "replace")
                        bad_utf8 = True
                    try:
                        value = json.loads(text)
                    except (ValueError, RecursionError) as exc:
                        if not complete:
                            return  # half-written tail of a live file; re-read next run
                        self.offset += len(raw)
                        self.line = number
                        yield ParseIssue(file, number, None, f"malformed JSON: {exc}")
                        continue
                self.offset += len(raw)
                self.line = number
                if not isinstance(value, dict):
                    yield ParseIssue(
                        file, number, None,
                        f"line is valid JSON but not an object ({type(value).__name__})",
                    )
                    continue
                if bad_utf8:
                    yield ParseIssue(file, number, None,
                                     "invalid UTF-8 replaced by U+FFFD (attrs.invalid_utf8)")
                yield JsonLine(number, raw, value, lenient, bad_utf8)


def _lines(fh) -> Iterator[tuple[bytes | None, int]]:
    """(line, its size) for each line; (None or its incomplete end, size) for a line over
    MAX_LINE, read through in pieces and not kept."""
    while True:
        raw = fh.readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) <= MAX_LINE or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        del raw
        piece = b""
        while True:
            piece = fh.readline(1 << 20)
            size += len(piece)
            if not piece or piece.endswith(b"\n"):
                break
        yield (None if piece.endswith(b"\n") else piece), size


def unreadable(file: str, line: JsonLine, error: Exception) -> ParseIssue:
    """The issue for a record an adapter failed on: one odd record (a list where a string
    belongs) must not stop the file."""
    text = " ".join(str(error).split())[:300]
    return ParseIssue(file, line.number, None,
                      f"could not be parsed ({type(error).__name__}: {text})")


def scan_back(
    path: Path, offset: int, pick: Callable[[dict[str, Any]], Any], window: int = 4 << 20
) -> Any:
    """The first non-None `pick(record)` walking backwards from `offset` (newest first).

    Used only on resumed parses to recover context (last time, last model) that lies before
    the resume offset; reads at most `window` bytes once.
    """
    if offset <= 0:
        return None
    start = max(0, offset - window)
    with open_file(path) as fh:
        fh.seek(start)
        chunk = fh.read(offset - start)
    lines = chunk.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first piece is probably the middle of a line
    for raw in reversed(lines):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            found = pick(value)
            if found is not None:
                return found
    return None


def pg_text(value: str, lenient: bool) -> str:
    """Text safe for a PostgreSQL text column: no NUL and (for leniently parsed lines) no
    lone surrogates, which JSON escapes allow but UTF-8 cannot encode."""
    value = clean_text(value)
    if lenient and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


@dataclass(slots=True)
class TimeFiller:
    """Gives records without a usable time the time of the previous timed record, or of the
    next one when nothing timed came before (those few records are held back until then).

    `before` is asked once, lazily, for the time just before the parse start (resumed
    parses), so a resumed parse infers the same times as a full one.
    """

    file: str
    before: Callable[[], datetime | None] | None = None
    last: datetime | None = None
    pending: list[Event] = field(default_factory=list)

    def push(self, event: Event) -> list[Event]:
        if event.occurred_at is not None:
            self.last = event.occurred_at
            if not self.pending:
                return [event]
            ready = self.pending
            self.pending = []
            for held in ready:
                held.occurred_at = event.occurred_at
            ready.append(event)
            return ready
        event.attrs["time_inferred"] = True
        if self.last is None and self.before is not None:
            self.last = self.before()
            self.before = None
        if self.last is not None:
            event.occurred_at = self.last
            return [event]
        self.pending.append(event)
        return []

    def finish(self) -> list[ParseIssue]:
        issues = [
            ParseIssue(self.file, e.line, e.native_id, "no timestamp in record or file")
            for e in self.pending
        ]
        self.pending = []
        return issues


@dataclass(slots=True)
class Parsed:
    """What one record's content reads as, before it becomes an Event."""

    role: str
    kind: str
    text: str
    author: str | None = None
    empty_reason: str | None = None


def dumps(value: Any) -> str:
    """JSON text of a value that is not text itself (tool inputs, odd payloads)."""
    return json.dumps(value, ensure_ascii=False)


def str_or_dump(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps(value)
