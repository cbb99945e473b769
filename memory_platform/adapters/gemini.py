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
"""

import json
import logging
import re
import zipfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePath
from typing import Any

import ijson
from selectolax.lexbor import LexborHTMLParser, LexborNode

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
    Conversation,
    Event,
    Item,
    ParseIssue,
    clean_text,
    discover_files,
    is_future,
    parse_iso,
    short_hash,
)

log = logging.getLogger(__name__)

# Known localized prompt verbs. Anything else is handled by the generic "Verb: prompt" rule.
PROMPT_PREFIXES = ("Prompted ", "Eingegebener Prompt: ")
_BARE_PROMPT_TITLES = frozenset({"Prompted", "Eingegebener Prompt:"})
_GENERIC_VERB_WINDOW = 40
_CONV_URL = re.compile(r"gemini\.google\.com/(?:u/\d+/)?app/([A-Za-z0-9_-]+)")
_SNIFF_RECORDS = 50
_SNIFF_HTML_BYTES = 1 << 20
_OWN = frozenset({"Google Takeout My Activity"})
_SUFFIXES = (".json", ".html", ".htm")


# --- HTML to readable text ------------------------------------------------------------

_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "-comment"})
_PARAGRAPH_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol",
     "figure", "hr", "dl"}
)
_LINE_TAGS = frozenset(
    {"div", "li", "tr", "dt", "dd", "section", "article", "header", "footer", "figcaption",
     "caption", "thead", "tbody", "tfoot"}
)
# HTML collapses ASCII whitespace only (an nbsp stays)
_WS = re.compile(r"[ \t\n\r\f]+")
_WS_TO_SPACE = str.maketrans("\t\n\r\f", "    ")
_SPACES = re.compile(r" {2,}")


def _collapse(value: str) -> str:
    # translate + a rare regex is several times faster than one regex over every space
    value = value.translate(_WS_TO_SPACE)
    return _SPACES.sub(" ", value) if "  " in value else value


class _TextWriter:
    """Collects text with paragraph/line breaks that never pile up."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.at_line_start = True

    def text(self, value: str, pre: bool) -> None:
        if not pre:
            value = _collapse(value)
            if self.at_line_start:
                value = value.lstrip(" ")
        if value:
            self.parts.append(value)
            self.at_line_start = value.endswith("\n")

    def newline(self, count: int) -> None:
        if not self.parts:
            return
        tail = "".join(self.parts[-3:])
        have = len(tail) - len(tail.rstrip("\n"))
        if have < count:
            if self.parts[-1].endswith(" "):
                self.parts[-1] = self.parts[-1].rstrip(" ")
            self.parts.append("\n" * (count - have))
        self.at_line_start = True

    def result(self) -> str:
        return "".join(self.parts).strip("\n")


def html_to_text(html: str) -> str:
    """Readable text of response HTML: block structure kept as line breaks, lists as
    `- item`, table cells separated by ` | `, script/style dropped, entities decoded."""
    if not html or not html.strip():
        return ""
    tree = LexborHTMLParser(html)
    root = tree.body
    if root is None:
        return ""
    writer = _TextWriter()
    lists: list[list[Any]] = []  # [tag, counter] per open ul/ol
    cells: list[int] = []  # cells seen per open table row
    pre_depth = 0
    # iterative walk: deep HTML must not hit the recursion limit
    stack: list[tuple[LexborNode, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        tag = node.tag
        if leaving:
            if tag == "pre":
                pre_depth -= 1
            if tag in ("ul", "ol") and lists:
                lists.pop()
                if lists:
                    writer.newline(1)
                    continue
            if tag == "tr" and cells:
                cells.pop()
            if tag in _PARAGRAPH_TAGS:
                writer.newline(2)
            elif tag in _LINE_TAGS:
                writer.newline(1)
            continue
        if tag == "-text":
            writer.text(node.text_content or "", pre_depth > 0)
            continue
        if tag in _SKIP_TAGS or tag is None:
            continue
        if tag == "br":
            writer.newline(1)
            continue
        if tag == "img":
            alt = node.attributes.get("alt")
            writer.text(f"[image: {alt}]" if alt else "[image]", False)
            continue
        if tag in ("ul", "ol") and lists:
            writer.newline(1)  # a nested list continues its parent item
        elif tag in _PARAGRAPH_TAGS:
            writer.newline(2)
        elif tag in _LINE_TAGS:
            writer.newline(1)
        if tag == "pre":
            pre_depth += 1
        elif tag in ("ul", "ol"):
            lists.append([tag, 0])
        elif tag == "li":
            marker = "- "
            if lists:
                lists[-1][1] += 1
                if lists[-1][0] == "ol":
                    marker = f"{lists[-1][1]}. "
            writer.text("  " * max(len(lists) - 1, 0) + marker, True)
            writer.at_line_start = True
        elif tag == "tr":
            cells.append(0)
        elif tag in ("td", "th"):
            if cells:
                if cells[-1]:
                    writer.text(" | ", True)
                cells[-1] += 1
        stack.append((node, True))
        children = list(node.iter(include_text=True))
        for child in reversed(children):
            stack.append((child, False))
    return writer.result()


# --- shared row logic -----------------------------------------------------------------

def _mentions_gemini(value: Any) -> bool:
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
        or _mentions_gemini(record.get("products"))
        or _mentions_gemini(record.get("header"))
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


class _FileState:
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


def _turn_items(
    state: _FileState,
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


# --- HTML variant ---------------------------------------------------------------------

_LOCAL_FORMATS = (
    "%b %d, %Y, %I:%M:%S %p",
    "%b %d, %Y, %I:%M %p",
    "%B %d, %Y, %I:%M:%S %p",
    "%d %b %Y, %H:%M:%S",
    "%d %B %Y, %H:%M:%S",
    "%d.%m.%Y, %H:%M:%S",
    "%d.%m.%Y %H:%M:%S",
    "%d/%m/%Y, %H:%M:%S",
    "%m/%d/%Y, %I:%M:%S %p",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y/%m/%d %H:%M:%S",
)
_TIME_AND_ZONE = re.compile(
    r"^(?P<body>.*?\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp]\.?\s?[Mm]\.?)?)\s*(?P<zone>.*)$"
)
_OFFSET = re.compile(r"^(?:UTC|GMT)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$")


def parse_local_time(value: str) -> tuple[datetime | None, bool]:
    """My Activity HTML timestamp -> (aware UTC datetime, zone known). Zone abbreviations
    such as CET are ambiguous, so only UTC/GMT and numeric offsets count as known; the rest
    is read as UTC and flagged."""
    text = value.replace("\u202f", " ").replace("\xa0", " ").strip()
    match = _TIME_AND_ZONE.match(text)
    if not match:
        return None, False
    body = _WS.sub(" ", match.group("body")).replace(".M.", "M").replace("a.m", "AM")
    body = body.replace("p.m", "PM")
    zone = match.group("zone").strip()
    parsed: datetime | None = None
    for fmt in _LOCAL_FORMATS:
        try:
            parsed = datetime.strptime(body, fmt)
            break
        except ValueError:
            continue
    if parsed is None:
        return None, False
    if zone.upper() in ("UTC", "GMT", "Z"):
        return parsed.replace(tzinfo=timezone.utc), True
    offset = _OFFSET.match(zone)
    if offset:
        sign = -1 if offset.group(1) == "-" else 1
        delta = timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3) or 0))
        tz = timezone(sign * delta)
        return parsed.replace(tzinfo=tz).astimezone(timezone.utc), True
    return parsed.replace(tzinfo=timezone.utc), False


def _node_html(node: LexborNode) -> str:
    return node.html or ""


def _node_text(node: LexborNode) -> str:
    if node.is_text_node:
        return node.text_content or ""
    return node.text(deep=True) if node.tag != "br" else "\n"


# --- adapter --------------------------------------------------------------------------

class GeminiAdapter:
    source = "gemini"

    def __init__(self) -> None:
        # rows of other products per file of the last parse (they are not ours to import)
        self.skipped_foreign: dict[str, int] = {}

    def discover(self, path: Path) -> Iterator[Path]:
        # every name: My Activity files are localized, so only the suffix is known
        return discover_files(path, {"*": _file_is_gemini}, _may_hold_gemini)

    def parse(self, path: Path, start_offset: int = 0, start_line: int = 0) -> Iterator[Item]:
        path = Path(path)
        if is_zip(path):
            yield from self._parse_zip(path)
        else:
            yield from self._parse_any(lambda: open(path, "rb"), str(path))

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
        state = _FileState()
        if first == b"<":
            yield from self._parse_html(opener, label, state)
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

    # --- JSON ---

    def _parse_json(self, opener: Opener, label: str, state: _FileState) -> Iterator[Item]:
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
        self, record: Any, index: int, label: str, state: _FileState
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
        yield from _turn_items(
            state, title=title, moment=moment, conv_urls=[u for u in urls if isinstance(u, str)],
            response_html=html, raw=record, index=index, extra_attrs=extra,
        )

    # --- HTML ---

    def _parse_html(self, opener: Opener, label: str, state: _FileState) -> Iterator[Item]:
        try:
            with opener() as raw:
                data = raw.read()
        except OPEN_ERRORS as error:
            yield ParseIssue(label, None, None, f"cannot read: {one_line(error)}")
            return
        # the HTML variant is a few MB at most; selectolax needs it whole anyway
        tree = LexborHTMLParser(data.decode("utf-8", errors="replace"))
        cells = tree.css("div.outer-cell")
        if not cells:
            yield ParseIssue(
                label, None, None, "does not look like a My Activity HTML file (no div.outer-cell)"
            )
            return
        for index, cell in enumerate(cells, 1):
            try:
                items = list(self._html_cell(cell, index, label, state))
            except Exception as error:  # noqa: BLE001 - one odd block must not stop the file
                yield ParseIssue(
                    label, index, None,
                    f"record {index}: could not be parsed ({type(error).__name__}: "
                    f"{one_line(error)})",
                )
                continue
            yield from items

    def _html_cell(
        self, cell: LexborNode, index: int, label: str, state: _FileState
    ) -> Iterator[Item]:
        header = cell.css_first(".header-cell")
        product = header.text(deep=True).strip() if header is not None else ""
        caption = cell.css_first(".mdl-typography--caption")
        caption_text = caption.text(deep=True) if caption is not None else ""
        if not (_mentions_gemini(product) or _mentions_gemini(caption_text)):
            state.foreign += 1
            return
        state.ours += 1
        content = cell.css_first(".content-cell")
        if content is None:
            yield ParseIssue(label, index, None, f"record {index}: block without a content cell")
            return
        # segments between <br>: prompt lines, then the timestamp, then the response HTML
        segments: list[list[LexborNode]] = [[]]
        for child in content.iter(include_text=True):
            if child.tag == "br":
                segments.append([])
            else:
                segments[-1].append(child)
        stamp_at, moment, zone_known, stamp_text = None, None, False, ""
        for position, segment in enumerate(segments):
            if position == 0 or not segment:
                continue
            candidate = "".join(_node_text(n) for n in segment).strip()
            if len(candidate) > 80:
                continue
            moment, zone_known = parse_local_time(candidate)
            if moment is not None:
                stamp_at, stamp_text = position, candidate
                break
        raw = {"html": cell.html, "product": product}
        if stamp_at is None or moment is None:
            yield ParseIssue(label, index, None, f"record {index}: no readable timestamp; skipped")
            return
        if is_future(moment):
            yield ParseIssue(
                label, index, None, f"record {index}: time {stamp_text!r} is in the future; skipped"
            )
            return
        title = "\n".join(
            "".join(_node_text(n) for n in segment) for segment in segments[:stamp_at]
        ).strip()
        response_nodes = segments[stamp_at + 1:]
        response = "<br>".join(
            "".join(_node_html(n) for n in segment) for segment in response_nodes
        ).strip()
        response = re.sub(r"^(?:<br>)+|(?:<br>)+$", "", response)
        urls = [
            a.attributes.get("href") or ""
            for a in cell.css("a")
        ]
        extra: dict[str, Any] = {"local_time": stamp_text}
        if not zone_known:
            extra["time_zone_unknown"] = True
        yield from _turn_items(
            state, title=title, moment=moment, conv_urls=urls,
            response_html=[response] if response else [], raw=raw, index=index,
            extra_attrs=extra,
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
            for count, record in enumerate(ijson.items(stream, "item", use_float=True)):
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
    return _looks_like_gemini(lambda: open(path, "rb"))


def _zip_gemini_members(path: Path) -> list[str]:
    try:
        with zipfile.ZipFile(path) as archive:
            return [
                m for m in sorted(archive.namelist())
                if basename(m).lower().endswith(_SUFFIXES)
                and _looks_like_gemini(lambda m=m: archive.open(m))
            ]
    except (OSError, zipfile.BadZipFile):
        return []


adapter = GeminiAdapter()
