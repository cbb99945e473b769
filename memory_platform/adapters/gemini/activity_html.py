"""The HTML variant of My Activity (`MyActivity.html`): one `div.outer-cell` per row, the
prompt, a localized local timestamp and the response separated by `<br>`."""

import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

from memory_platform.adapters._json_stream import OPEN_ERRORS, Opener, one_line
from memory_platform.adapters.base import Item, ParseIssue, is_future
from memory_platform.adapters.gemini.rows import FileState, mentions_gemini, turn_items

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
# HTML collapses ASCII whitespace only (an nbsp stays)
_WS = re.compile(r"[ \t\n\r\f]+")
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


def parse_html(opener: Opener, label: str, state: FileState) -> Iterator[Item]:
    """Conversations, Events and ParseIssues of one My Activity HTML file."""
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
            items = list(_html_cell(cell, index, label, state))
        except Exception as error:  # noqa: BLE001 - one odd block must not stop the file
            yield ParseIssue(
                label, index, None,
                f"record {index}: could not be parsed ({type(error).__name__}: "
                f"{one_line(error)})",
            )
            continue
        yield from items


def _html_cell(cell: LexborNode, index: int, label: str, state: FileState) -> Iterator[Item]:
    header = cell.css_first(".header-cell")
    product = header.text(deep=True).strip() if header is not None else ""
    caption = cell.css_first(".mdl-typography--caption")
    caption_text = caption.text(deep=True) if caption is not None else ""
    if not (mentions_gemini(product) or mentions_gemini(caption_text)):
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
    yield from turn_items(
        state, title=title, moment=moment, conv_urls=urls,
        response_html=[response] if response else [], raw=raw, index=index,
        extra_attrs=extra,
    )
