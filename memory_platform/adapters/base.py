"""The contract every source adapter keeps.

An adapter is pure parsing: it reads one export file (or one member of a zip) and
streams `Event`, `Conversation`, `ParseIssue` and `Checkpoint` items. It never talks
to the database; `memory_platform.ingest.importer` turns the stream into rows.

Rules (see ARCHITECTURE.md):
- Stream. A 500 MB export is never held whole in memory more than once; JSONL is read
  line by line, big JSON arrays with ijson.
- Identity comes from the source: `native_id` is stable across re-exports and unique
  per source (prefix it with the conversation id where the source's ids are only
  unique inside a conversation).
- Never drop a record: unknown record types become `role="other"`, `kind="unknown"`
  with the raw record kept. A record that cannot be read at all becomes a
  `ParseIssue` naming the line or record, and parsing goes on.
- `raw` is the original record as parsed JSON (dict/list/str); `text` is the readable
  text extracted from it. Both are verbatim: no summarising, no truncation.
"""

import hashlib
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from fnmatch import fnmatchcase
from pathlib import Path, PurePath
from typing import Any, Protocol

from memory_platform.confined import Listing, open_file, walk

# Roles allowed in the store; anything else is mapped to "other" by the adapter.
ROLES = frozenset({"user", "assistant", "system", "tool", "other"})

# What a record is, orthogonal to who wrote it. "message" is a real conversational turn.
KINDS = frozenset(
    {"message", "tool_use", "tool_result", "thinking", "summary", "meta", "unknown"}
)

# A timestamp further in the future than this is treated as bad input.
FUTURE_TOLERANCE = timedelta(days=1)


@dataclass(slots=True)
class Event:
    native_id: str
    conversation_id: str | None
    role: str
    text: str
    raw: Any
    occurred_at: datetime | None
    line: int | None = None  # 1-based line (JSONL/markdown) or 1-based record index (JSON)
    parent_id: str | None = None
    author: str | None = None  # model name for assistants, tool name for tools
    kind: str = "message"
    project: str | None = None  # cwd or export project
    git_branch: str | None = None
    is_sidechain: bool = False
    on_active_branch: bool = True
    # Free-form flags worth keeping: is_meta, is_compact_summary, agent_id,
    # time_inferred, empty_reason, message_id, request_id, ...
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Conversation:
    native_id: str
    title: str | None = None
    project: str | None = None
    started_at: datetime | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ParseIssue:
    file: str
    line: int | None
    record_id: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.record_id:
            where += f" (record {self.record_id})"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class Checkpoint:
    """Emitted last by append-only (JSONL) adapters: how far the file was consumed.

    `offset` is the byte offset just past the last complete line and `line` the number
    of complete lines read. A live file's incomplete last line is not consumed, so the
    next import resumes exactly there.
    """

    offset: int
    line: int


Item = Event | Conversation | ParseIssue | Checkpoint


class Adapter(Protocol):
    source: str  # e.g. "claude-code"; the `source` column

    def discover(self, path: Path) -> Listing:
        """Files this adapter reads under `path` (or `path` itself if it is a file), by their
        real paths, and what the walk skipped (`discover_files`)."""
        ...

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        """Stream items from one file, given by its real path and opened through
        `confined.open_file` (no symlink, FIFO or device). Append-only formats honour
        `start_offset`/`start_line` (resume after a previous import); snapshot formats
        ignore them."""
        ...


# --- helpers shared by adapters -------------------------------------------------------

_NUL = "\x00"


def clean_text(value: str) -> str:
    """PostgreSQL text cannot hold NUL; replace it visibly rather than drop the string."""
    return value.replace(_NUL, "\ufffd") if _NUL in value else value


def parse_iso(value: Any) -> datetime | None:
    """ISO-8601 string -> aware UTC datetime; None if missing or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def parse_epoch(value: Any) -> datetime | None:
    """Epoch seconds (float/int) -> aware UTC datetime; None if missing or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    try:
        return datetime.fromtimestamp(float(value), tz=timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def is_future(moment: datetime, now: datetime | None = None) -> bool:
    return moment > (now or datetime.now(timezone.utc)) + FUTURE_TOLERANCE


def short_hash(*parts: str) -> str:
    """Stable 16-hex-digit hash used to build native ids for sources without ids."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:16]


def join_text(parts: list[str]) -> str:
    """Join extracted text fragments with blank lines, skipping empty ones."""
    return "\n\n".join(p for p in parts if p and p.strip())


class ZipArchive(zipfile.ZipFile):
    """A zip export read through `confined.open_file` (the path must be real: no symlink,
    no FIFO or device); closing the archive closes the file."""

    def __init__(self, path: Path):
        handle = open_file(path)
        try:
            super().__init__(handle)
        except BaseException:
            handle.close()
            raise
        self._handle = handle

    def close(self) -> None:
        try:
            super().close()
        finally:
            handle = getattr(self, "_handle", None)
            if handle is not None:
                handle.close()


def discover_files(
    path: Path,
    patterns: Mapping[str, Callable[[Path], bool] | None],
    wanted: Callable[[PurePath], bool] | None = None,
    descend: Callable[[PurePath], bool] | None = None,
) -> Listing:
    """What `Adapter.discover` returns: the files under `path` (a folder, walked by
    `confined.walk`: no symlink out of it, nothing but regular files, each once by its real
    path, sorted) whose name matches one of the glob `patterns` and that the pattern's
    sniffer accepts (None accepts every match), with what the walk skipped; `path` itself
    when it is a file.

    `wanted` judges the path relative to `path` (and `descend` a folder) before anything is
    stat'ed or opened, so cheap name rules (hidden folders, known non-transcripts) cost no
    I/O; sniffers open the file (through `confined.open_file`) to check its content, because
    exports are often renamed or share a name.
    """
    def named(relative: PurePath) -> bool:
        return (any(fnmatchcase(relative.name, p) for p in patterns)
                and (wanted is None or wanted(relative)))

    found = walk(path, wanted=named, descend=descend)
    if found.files == [found.root]:
        return found  # a file named by the user is read whatever its name
    kept = []
    for file in found.files:
        sniffers = [s for p, s in patterns.items() if fnmatchcase(file.name, p)]
        if any(s is None or s(file) for s in sniffers):
            kept.append(file)
    return Listing(found.root, kept, found.skipped)
