"""Streaming helpers shared by the snapshot-export adapters (claude.ai, ChatGPT, Gemini).

Big exports are one JSON array of hundreds of MB, sometimes inside a zip. These helpers
stream such arrays record by record with ijson, turn every low-level failure (broken JSON,
truncated zip member, bad compression) into one exception type that knows how far the
stream got, and sniff a file's format cheaply so a folder scan can pick the right files.
"""

import io
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import ijson

from memory_platform.adapters._json_guard import GuardedReader, Limits
from memory_platform.adapters.base import ParseIssue, ZipArchive
from memory_platform.confined import open_file

Opener = Callable[[], BinaryIO]

_WHITESPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"

# Everything that can go wrong while pulling bytes through ijson from a file or zip member.
_READ_ERRORS: tuple[type[BaseException], ...] = (
    ijson.JSONError,
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    OSError,
    UnicodeDecodeError,
    ValueError,
)


class StreamError(Exception):
    """A JSON stream stopped being readable. `index` is the 1-based record being read."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def one_line(error: BaseException, limit: int = 300) -> str:
    """yajl error messages span several lines with an ASCII pointer; keep them greppable."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Prefixed(io.RawIOBase):
    """A byte stream that replays bytes already peeked before continuing with the source.

    Zip members cannot seek back cheaply, so peeking the first byte must not consume it.
    """

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size is None or size < 0:
                data, self._head = self._head + self._rest.read(), b""
                return data
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._rest.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def peek_start(stream: BinaryIO) -> tuple[bytes, BinaryIO]:
    """First non-whitespace byte (b"" for an empty/blank stream) and a stream that still
    yields everything from it on, after a UTF-8 BOM (yajl rejects the BOM, Windows tools
    write it) and any amount of leading whitespace, which is read and dropped as it comes
    (a file after 1 MB of blanks read as empty)."""
    head = stream.read(4096)
    if head.startswith(_BOM):
        head = head[3:]
    while True:
        # (translate: C speed; lstrip with a set of bytes runs at ~50 MB/s)
        head = b"" if not head.translate(None, _WHITESPACE) else head.lstrip(_WHITESPACE)
        if head:
            break
        head = stream.read(64 << 10)
        if not head:
            break
    return head[:1], _Prefixed(head, stream)


@dataclass(frozen=True)
class RecordNote:
    """Something said about record `index` (None: about bytes outside any record): a repair
    (the record is still yielded after the note) or, with `skipped`, why it was not read."""

    index: int | None
    message: str
    skipped: bool = False


def _is_local(error: BaseException) -> bool:
    """A yajl error confined to one token (bad bytes, a stray character, a number out of
    range): the record holding it is lost, the structure around it is not."""
    text = str(error)
    return "lexical error" in text or "overflow" in text or not isinstance(error, ijson.JSONError)


def iter_records(
    stream: BinaryIO, prefix: str = "item", limits: Limits | None = None
) -> Iterator[tuple[int, Any] | RecordNote]:
    """Yield (1-based index, record) for each element under `prefix`, and a RecordNote for
    each record repaired (before it) or skipped (instead of it) by the guard, or lost to a
    lexical error; reading then goes on with the next record.

    Raises StreamError naming the record being read when the JSON structure or the
    underlying bytes break; records yielded before that stand.
    """
    guard = GuardedReader(stream, prefix, limits)
    base = 0
    while True:
        count = 0
        try:
            for record in ijson.items(guard, guard.prefix, use_float=True):
                count += 1
                for index, message in guard.take_notes(base + count):
                    yield RecordNote(index, message)
                yield base + count, record
        except (ijson.JSONError, ValueError) as error:
            failed = base + count + 1
            problem = guard.problem
            if problem is None and not _is_local(error):
                raise StreamError(failed, f"invalid JSON: {one_line(error)}") from error
            index = problem.index if problem is not None else failed
            why = problem.message if problem is not None else f"invalid JSON: {one_line(error)}"
            for noted, message in guard.take_notes(index):
                yield RecordNote(noted, message)
            yield RecordNote(index, why, skipped=True)
            if index is None or not guard.resume_after(index):
                return
            base = index
            continue
        except _READ_ERRORS as error:
            # bad CRC, truncated deflate stream, I/O error: the bytes, not the JSON, are broken
            kind = type(error).__name__
            if kind == "error":  # zlib.error
                kind = f"{type(error).__module__}.error"
            raise StreamError(base + count + 1, f"read failed ({kind}): {one_line(error)}"
                              ) from error
        for index, message in guard.take_notes():
            yield RecordNote(index, message)
        if guard.problem is not None:  # bytes after the records, nested too deep
            yield RecordNote(guard.problem.index, guard.problem.message, skipped=True)
        return


def top_level_keys(stream: BinaryIO, stop: frozenset[str] = frozenset()) -> set[str]:
    """Keys of a top-level JSON object, without building its values; stops early at any key
    in `stop` so a 500 MB wrapper is not scanned to the end."""
    keys: set[str] = set()
    try:
        for prefix, event, value in ijson.parse(GuardedReader(stream, "")):
            if prefix == "" and event == "map_key":
                keys.add(value)
                if value in stop:
                    break
            elif prefix == "" and event == "end_map":
                break
    except _READ_ERRORS:
        pass
    return keys


def first_record_keys(stream: BinaryIO, prefix: str, stop: frozenset[str]) -> set[str] | None:
    """Keys of the first object under `prefix` (None if the array is empty or its first
    element is not an object), stopping at the first key in `stop`: cheap format sniffing
    for folder scans, without building the record."""
    keys: set[str] = set()
    seen_item = False
    try:
        for event_prefix, event, value in ijson.parse(GuardedReader(stream, "")):
            if event_prefix == prefix:
                if event == "start_map":
                    seen_item = True
                elif event == "map_key":
                    keys.add(value)
                    if value in stop:
                        break
                elif event == "end_map" or not seen_item:
                    break  # end of the first object, or a first element that is no object
            elif event_prefix == "" and event == "end_array":
                break
    except _READ_ERRORS:
        pass
    return keys if seen_item else None


def describe_format(record: Any) -> str | None:
    """Best guess at which export a record came from, for 'wrong adapter' messages."""
    if not isinstance(record, dict):
        return None
    if "mapping" in record:
        return "ChatGPT"
    if "chat_messages" in record:
        return "claude.ai"
    if "safeHtmlItem" in record or "products" in record:
        return "Google Takeout My Activity"
    if "header" in record and "time" in record:
        return "Google Takeout My Activity"
    if "prompt_template" in record or "docs" in record:
        return "claude.ai projects.json"
    return None


# Failures opening a file or zip member (truncated archive, encryption, odd compression).
OPEN_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    EOFError,
    zlib.error,
    zipfile.BadZipFile,
    RuntimeError,
    NotImplementedError,
)


def basename(member: str) -> str:
    """File name of a zip member (members use '/' whatever the platform)."""
    return member.rstrip("/").rsplit("/", 1)[-1]


def open_zip(path: Path) -> "zipfile.ZipFile | ParseIssue":
    """The archive, or a ParseIssue saying why it can't be opened (truncated downloads of
    exports are common)."""
    try:
        return ZipArchive(path)
    except (zipfile.BadZipFile, OSError) as error:
        return ParseIssue(
            str(path), None, None, f"cannot open zip (truncated or corrupt?): {one_line(error)}"
        )


def is_zip(path: Path) -> bool:
    """By magic bytes, so a truncated zip (which zipfile.is_zipfile rejects) still counts."""
    if path.suffix.lower() == ".zip":
        return True
    try:
        with open_file(path) as probe:
            return probe.read(2) == b"PK"
    except OSError:
        return False


_MARKERS = (
    "mapping", "chat_messages", "safeHtmlItem", "products", "header", "prompt_template", "docs"
)


def foreign_message(record: Any, expected: str, what: str, own: frozenset[str]) -> str | None:
    """A clear 'wrong adapter' message when the first record belongs to another export.

    `own` are describe_format() guesses that this adapter accepts.
    """
    if not isinstance(record, dict) or expected in record:
        return None
    guess = describe_format(record)
    if guess is None or guess in own:
        return None
    marker = next((k for k in _MARKERS if k in record), "?")
    return (
        f"does not look like a {what} (first record has '{marker}', expected '{expected}'; "
        f"is this a {guess} export?)"
    )


def stream_array(
    opener: Opener,
    label: str,
    what: str,
    object_prefixes: Mapping[str, str],
    check_first: Callable[[Any], str | None],
) -> Iterator[tuple[int, Any] | ParseIssue]:
    """Stream (index, record) pairs of a JSON export, or ParseIssues for what went wrong.

    A top-level array is read as `item`; a top-level object is accepted only when it has one
    of the keys in `object_prefixes` (key -> ijson prefix to read, "" = the object itself is
    the one record). Empty input, other top-level values, a first record of another format
    (`check_first` returns a message) and broken JSON each end the file with one issue;
    records yielded before stand.
    """
    keys: set[str] = set()
    try:
        with opener() as raw:
            first, stream = peek_start(raw)
            if first == b"{":
                keys = top_level_keys(stream, frozenset(object_prefixes))
    except OPEN_ERRORS as error:
        yield ParseIssue(label, None, None, f"cannot read: {one_line(error)}")
        return
    if not first:
        yield ParseIssue(label, None, None, "empty file")
        return
    if first == b"[":
        prefix = "item"
    elif first == b"{":
        chosen = next((k for k in object_prefixes if k in keys), None)
        if chosen is None:
            shown = ", ".join(sorted(keys)[:8]) or "none readable"
            yield ParseIssue(
                label, None, None,
                f"does not look like a {what}: top-level JSON object (keys: {shown}) "
                "where an array was expected",
            )
            return
        prefix = object_prefixes[chosen]
    else:
        yield ParseIssue(
            label, None, None,
            f"does not look like a {what}: not a JSON array (starts with {first!r})",
        )
        return
    try:
        with opener() as raw:
            _, stream = peek_start(raw)
            for entry in iter_records(stream, prefix):
                if isinstance(entry, RecordNote):
                    yield ParseIssue(label, entry.index, None, _note_text(entry))
                    continue
                index, record = entry
                if index == 1:
                    foreign = check_first(record)
                    if foreign:
                        yield ParseIssue(label, 1, None, foreign)
                        return
                yield index, record
    except StreamError as error:
        yield ParseIssue(
            label, error.index, None,
            f"record {error.index}: {error.message}; stopped here",
        )
    except OPEN_ERRORS as error:
        yield ParseIssue(label, None, None, f"cannot read: {one_line(error)}")


def _note_text(note: RecordNote) -> str:
    where = f"record {note.index}" if note.index is not None else "outside the records"
    if not note.skipped:
        return f"{where}: {note.message}"
    return f"{where}: {note.message}; not imported, reading went on after it"


def member_label(path: Path, member: str) -> str:
    """How a zip member is named in issues: `export.zip!conversations.json`."""
    return f"{path}!{member}"
