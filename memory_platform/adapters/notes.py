"""Markdown notes: a folder of `*.md` / `*.markdown` files (recursive) or a single file.

A note is one Event, or one Event per top-level section (`# ` heading, outside code fences)
when it has two or more top-level headings; text before the first heading then becomes
section 0 so nothing is lost. Time comes from YAML front matter `date`, else the file's
mtime. Ids are the resolved absolute path plus `#<section index>` (0 for a whole note or
the preamble, 1.. for headed sections): moving the notes folder re-imports them as new.
"""

import os
import re
from collections.abc import Iterator
from datetime import date, datetime, time, timezone
from pathlib import Path, PurePath
from typing import Any

import yaml

from memory_platform.adapters.base import (
    Conversation,
    Event,
    Item,
    Listing,
    ParseIssue,
    clean_text,
    discover_files,
    is_future,
    parse_iso,
)
from memory_platform.confined import open_file, read_capped

# A note is read whole (its sections need the whole text): a bigger file is refused unread.
MAX_NOTE_BYTES = 64 << 20
SUFFIXES = frozenset({".md", ".markdown"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^# ")
_FRONT_MATTER_END = frozenset({"---", "..."})
# libyaml is ~10x faster than the pure-Python loader; same safe subset, same error marks
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _lines(text: str) -> list[str]:
    """Lines with their endings, split on \\n only: str.splitlines also breaks on \\x0c,
    \\u2028 and friends, which would put line numbers out of step with editors."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


# Values front matter may hold once its YAML aliases are expanded; real ones hold a dozen.
_FRONT_MATTER_VALUES = 10_000


def _expands_past(value: Any, limit: int) -> bool:
    """Whether `value`, with every shared (aliased) part counted each time it appears, holds
    more than `limit` values. Stops counting at the limit."""
    stack, seen = [value], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set):
            stack.extend(item)
    return False


def _json_safe(value: Any) -> Any:
    """YAML yields dates and other non-JSON types; raw must survive a JSON column."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _front_matter_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return (
            value.replace(tzinfo=timezone.utc) if value.tzinfo is None
            else value.astimezone(timezone.utc)
        )
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=timezone.utc)
    if isinstance(value, str):
        parsed = parse_iso(value)
        if parsed is not None:
            return parsed
        try:
            return datetime.combine(date.fromisoformat(value.strip()), time(), tzinfo=timezone.utc)
        except ValueError:
            return None
    return None


def _sections(lines: list[str], start: int) -> list[tuple[int, int, str | None]]:
    """(first line index, end line index, heading) per top-level section from `start`."""
    headings: list[int] = []
    fence: str | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            elif _HEADING.match(line):
                headings.append(i)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
            if not line.strip().strip(fence[0]):
                fence = None
    if len(headings) < 2:
        heading = lines[headings[0]].rstrip("\r\n")[2:].strip() if headings else None
        return [(start, len(lines), heading)]
    sections: list[tuple[int, int, str | None]] = []
    if any(line.strip() for line in lines[start:headings[0]]):
        sections.append((start, headings[0], None))
    for n, begin in enumerate(headings):
        end = headings[n + 1] if n + 1 < len(headings) else len(lines)
        sections.append((begin, end, lines[begin].rstrip("\r\n")[2:].strip()))
    return sections


def _visible(folder: PurePath) -> bool:
    return not folder.name.startswith(".")


def _is_note(relative: PurePath) -> bool:
    # .git, .obsidian, .trash: tool state, not notes
    if any(part.startswith(".") for part in relative.parts):
        return False
    return relative.suffix.lower() in SUFFIXES


class NotesAdapter:
    source = "notes"

    def discover(self, path: Path) -> Listing:
        # "*" and a suffix rule, not "*.md": suffixes match case-insensitively (Note.MD)
        return discover_files(path, {"*": None}, _is_note, descend=_visible)

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        label = str(path)
        try:
            resolved = path.resolve()
            with open_file(path, max_bytes=MAX_NOTE_BYTES) as fh:
                mtime = datetime.fromtimestamp(os.fstat(fh.fileno()).st_mtime, tz=timezone.utc)
                data = read_capped(fh, MAX_NOTE_BYTES)
        except OSError as error:
            yield ParseIssue(label, None, None, f"cannot read: {error}")
            return
        if data is None:
            yield ParseIssue(label, None, None, f"grew past the limit of {MAX_NOTE_BYTES:,} "
                             "bytes for one note while read; not imported")
            return
        if not data:
            yield ParseIssue(label, None, None, "empty file")
            return
        attrs: dict[str, Any] = {}
        try:
            if data.startswith((b"\xff\xfe", b"\xfe\xff")):
                # Windows editors save "Unicode" notes as UTF-16 with a BOM
                text = data.decode("utf-16")
            else:
                text = data.decode("utf-8")
        except UnicodeDecodeError:
            # a note in a legacy encoding is still a note; keep what is readable
            text = data.decode("utf-8", errors="replace")
            attrs["decode_errors"] = True
            yield ParseIssue(label, None, None,
                             "not UTF-8: unreadable bytes replaced by U+FFFD (attrs.decode_errors)")
        if text.startswith("\ufeff"):
            text = text[1:]
        lines = _lines(text)

        front: dict[str, Any] = {}
        body_start = 0
        if lines and lines[0].rstrip("\r\n") == "---":
            end = next(
                (i for i in range(1, len(lines)) if lines[i].rstrip() in _FRONT_MATTER_END), None
            )
            if end is not None:
                body_start = end + 1
                try:
                    loaded = yaml.load("".join(lines[1:end]), Loader=_YAML_LOADER)
                except yaml.YAMLError as error:
                    mark = getattr(error, "problem_mark", None) or getattr(
                        error, "context_mark", None
                    )
                    where = mark.line + 2 if mark is not None else 1
                    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
                    yield ParseIssue(
                        label, where, None,
                        f"invalid YAML front matter ({problem}); imported without it",
                    )
                    attrs["front_matter_invalid"] = True
                    loaded = None
                if isinstance(loaded, dict) and _expands_past(loaded, _FRONT_MATTER_VALUES):
                    # YAML aliases can make a few lines expand to billions of values
                    yield ParseIssue(
                        label, 2, None,
                        f"front matter expands to more than {_FRONT_MATTER_VALUES} values "
                        "(YAML aliases?); imported without it",
                    )
                    attrs["front_matter_invalid"] = True
                elif isinstance(loaded, dict):
                    front = loaded
                elif loaded is not None:
                    yield ParseIssue(
                        label, 2, None, "front matter is not a mapping; imported without it"
                    )
                    attrs["front_matter_invalid"] = True

        moment: datetime | None = None
        if "date" in front:
            moment = _front_matter_time(front["date"])
            if moment is None:
                yield ParseIssue(
                    label, 1, None,
                    f"front matter date {front['date']!r} is unreadable; using the file mtime",
                )
            elif is_future(moment):
                # a typo in a note's date must not cost the note; the mtime is a real time
                yield ParseIssue(
                    label, 1, None,
                    f"front matter date {front['date']!r} is in the future; using the file mtime",
                )
                moment = None
        if moment is not None:
            attrs["time_source"] = "front_matter"
        else:
            if is_future(mtime):
                yield ParseIssue(
                    label, None, None, f"file mtime {mtime.isoformat()} is in the future; skipped"
                )
                return
            moment = mtime
            attrs["time_source"] = "mtime"

        sections = _sections(lines, body_start)
        safe_front = _json_safe(front)
        note_id = str(resolved)
        first_heading = next((h for _, _, h in sections if h), None)
        title = front.get("title") if isinstance(front.get("title"), str) else None
        yield Conversation(
            native_id=note_id,
            title=title or first_heading or path.stem,
            started_at=moment,
            attrs={"path": note_id},
        )
        headed = len(sections) > 1
        heading_count = 0
        for begin, end, heading in sections:
            # preamble and whole notes are #0, headed sections #1.. whether or not a
            # preamble exists, so adding an intro paragraph does not renumber sections
            if headed and heading is not None:
                heading_count += 1
            index = heading_count if headed else 0
            body = clean_text("".join(lines[begin:end]))
            event_attrs = dict(attrs)
            if headed:
                event_attrs["sections"] = len(sections)
            if not body.strip():
                event_attrs["empty_reason"] = (
                    "front matter only" if front or body_start else "blank note"
                )
            yield Event(
                native_id=f"{note_id}#{index}",
                conversation_id=note_id,
                role="user",
                text=body,
                raw={"path": note_id, "front_matter": safe_front, "section": index,
                     "heading": heading},
                occurred_at=moment,
                line=begin + 1 if begin < len(lines) else max(len(lines), 1),
                author=None,
                kind="message",
                attrs=event_attrs,
            )


adapter = NotesAdapter()
