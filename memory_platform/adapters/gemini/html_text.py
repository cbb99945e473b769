"""Readable text of the response HTML in Gemini My Activity rows."""

import re
from typing import Any

from selectolax.lexbor import LexborHTMLParser, LexborNode

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
