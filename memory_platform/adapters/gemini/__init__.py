"""Google Takeout "My Activity" for Gemini Apps: `MyActivity.json` / `My Activity.json` /
`MyActivity.html` (names are localized), loose, in a Takeout folder or in the Takeout zip.

Files are chosen by content, not name: a JSON array of My Activity rows that mention
Gemini (or carry `safeHtmlItem`), or My Activity HTML (`div.outer-cell`) that mentions Gemini.

Each "Prompted ..." row is one turn and becomes two Events: the prompt (role user) and, when
the row holds response HTML, the response (role assistant, author "gemini", parent = the
prompt). Other Gemini rows (Gave feedback, Selected preferred draft, Created, Used, ...)
become one `kind="meta"` Event each. Rows of other products (Search, YouTube, ...) share the
My Activity format but are not ours: they yield nothing and no issue; they are counted in
`adapter.skipped_foreign[file]` and logged at INFO.

There are no ids in the export, so native ids are synthesized (FORMATS 4.5):
`<conversation id from details url or 'noconv'>:<whole-second UTC time>:<hash of prompt>`
plus `:prompt` / `:response` / `:meta`. The conversation is the `gemini.google.com/app/<id>`
link when the row has one, else the UTC calendar day (`day:YYYY-MM-DD`, marked
`conversation_inferred`). Conversations are announced when first seen; because rows run
newest first, their `started_at` is left empty (the earliest event is the start).

Here: `rows` turns one row (JSON or HTML) into items, `html_text` makes response HTML
readable, `activity_html` reads the HTML variant; this module finds and streams the files.
"""

import logging
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any

import ijson

from memory_platform.adapters._json_guard import GuardedReader
from memory_platform.adapters._json_stream import (
    OPEN_ERRORS,
    Opener,
    basename,
    foreign_message,
    is_zip,
    member_label,
    one_line,
    open_zip,
    peek_start,
    stream_array,
)
from memory_platform.adapters.base import (
    Item,
    Listing,
    ParseIssue,
    ZipArchive,
    discover_files,
    is_future,
    parse_iso,
)
from memory_platform.adapters.gemini.activity_html import parse_html, parse_local_time
from memory_platform.adapters.gemini.html_text import html_to_text
from memory_platform.adapters.gemini.rows import FileState, is_gemini_row, turn_items
from memory_platform.confined import open_file

__all__ = ["GeminiAdapter", "adapter", "html_to_text", "is_gemini_row", "parse_local_time"]

log = logging.getLogger(__name__)

_SNIFF_RECORDS = 50
_SNIFF_HTML_BYTES = 1 << 20
_OWN = frozenset({"Google Takeout My Activity"})
_SUFFIXES = (".json", ".html", ".htm")


class GeminiAdapter:
    source = "gemini"

    def __init__(self) -> None:
        # rows of other products per file of the last parse (they are not ours to import)
        self.skipped_foreign: dict[str, int] = {}

    def discover(self, path: Path) -> Listing:
        # every name: My Activity files are localized, so only the suffix is known
        return discover_files(path, {"*": _file_is_gemini}, _may_hold_gemini)

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        if is_zip(path):
            yield from self._parse_zip(path)
        else:
            yield from self._parse_any(lambda: open_file(path), str(path))

    def _parse_zip(self, path: Path) -> Iterator[Item]:
        archive = open_zip(path)
        if isinstance(archive, ParseIssue):
            yield archive
            return
        with archive:
            members = [
                m for m in sorted(archive.namelist())
                if basename(m).lower().endswith(_SUFFIXES)
                and _looks_like_gemini(lambda m=m: archive.open(m))
            ]
            if not members:
                yield ParseIssue(str(path), None, None, "zip holds no Gemini Apps activity")
                return
            for member in members:
                label = member_label(path, member)
                try:
                    yield from self._parse_any(lambda m=member: archive.open(m), label)
                except OPEN_ERRORS as error:
                    yield ParseIssue(
                        label, None, None, f"cannot read zip member: {one_line(error)}"
                    )

    def _parse_any(self, opener: Opener, label: str) -> Iterator[Item]:
        try:
            with opener() as raw:
                first, _ = peek_start(raw)
        except OPEN_ERRORS as error:
            yield ParseIssue(label, None, None, f"cannot read: {one_line(error)}")
            return
        state = FileState()
        if first == b"<":
            yield from parse_html(opener, label, state)
        else:
            yield from self._parse_json(opener, label, state)
        self.skipped_foreign[label] = state.foreign
        if state.foreign and not state.ours:
            yield ParseIssue(
                label, None, None,
                f"no Gemini Apps rows: all {state.foreign} rows belong to other Google products",
            )
        elif state.foreign:
            log.info("%s: skipped %d rows of other Google products", label, state.foreign)

    # --- JSON variant (the HTML one is in activity_html) ---

    def _parse_json(self, opener: Opener, label: str, state: FileState) -> Iterator[Item]:
        entries = stream_array(
            opener, label, "Gemini My Activity file", {},
            lambda r: foreign_message(r, "products", "Gemini My Activity file", _OWN),
        )
        for entry in entries:
            if isinstance(entry, ParseIssue):
                yield entry
                continue
            index, record = entry
            yield from self._json_row(record, index, label, state)

    def _json_row(
        self, record: Any, index: int, label: str, state: FileState
    ) -> Iterator[Item]:
        if not isinstance(record, dict):
            yield ParseIssue(
                label, index, None, f"record {index}: not a JSON object ({type(record).__name__})"
            )
            return
        if not is_gemini_row(record):
            state.foreign += 1
            return
        state.ours += 1
        moment = parse_iso(record.get("time"))
        if moment is None:
            yield ParseIssue(
                label, index, None,
                f"record {index}: unreadable time {record.get('time')!r}; skipped",
            )
            return
        if is_future(moment):
            yield ParseIssue(
                label, index, None,
                f"record {index}: time {record.get('time')!r} is in the future; skipped",
            )
            return
        title = record.get("title") if isinstance(record.get("title"), str) else ""
        html = [
            item["html"] for item in record.get("safeHtmlItem") or []
            if isinstance(item, dict) and isinstance(item.get("html"), str)
        ]
        urls = [
            d.get("url") or d.get("name") or ""
            for d in record.get("details") or [] if isinstance(d, dict)
        ]
        if isinstance(record.get("titleUrl"), str):
            urls.append(record["titleUrl"])
        extra: dict[str, Any] = {}
        files = [f for f in record.get("attachedFiles") or [] if isinstance(f, str)]
        if isinstance(record.get("imageFile"), str):
            files.append(record["imageFile"])
        if files:
            extra["files"] = files
        yield from turn_items(
            state, title=title, moment=moment, conv_urls=[u for u in urls if isinstance(u, str)],
            response_html=html, raw=record, index=index, extra_attrs=extra,
        )


def _looks_like_gemini(opener: Opener) -> bool:
    """Content sniffing: names are localized and a Takeout holds one MyActivity per product."""
    try:
        with opener() as raw:
            first, stream = peek_start(raw)
            if first == b"<":
                head = stream.read(_SNIFF_HTML_BYTES).decode("utf-8", errors="replace")
                return "outer-cell" in head and "gemini" in head.lower()
            if first != b"[":
                return False
            for count, record in enumerate(
                    ijson.items(GuardedReader(stream), "item", use_float=True)):
                if not isinstance(record, dict) or not ({"header", "products"} & record.keys()):
                    return False
                if is_gemini_row(record):
                    return True
                if count + 1 >= _SNIFF_RECORDS:
                    return False
    except (*OPEN_ERRORS, ijson.JSONError):
        return False
    return False


def _may_hold_gemini(relative: PurePath) -> bool:
    return relative.suffix.lower() in (*_SUFFIXES, ".zip")


def _file_is_gemini(path: Path) -> bool:
    if path.suffix.lower() == ".zip":
        return bool(_zip_gemini_members(path))
    return _looks_like_gemini(lambda: open_file(path))


def _zip_gemini_members(path: Path) -> list[str]:
    try:
        with ZipArchive(path) as archive:
            return [
                m for m in sorted(archive.namelist())
                if basename(m).lower().endswith(_SUFFIXES)
                and _looks_like_gemini(lambda m=m: archive.open(m))
            ]
    except (OSError, zipfile.BadZipFile):
        return []



adapter = GeminiAdapter()
