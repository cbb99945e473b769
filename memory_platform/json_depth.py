"""How deep a JSON text nests, measured without recursing: the standard library's parser
recurses per level, so 100,000 `[` raise RecursionError (a traceback, not an error a person
can read). Every place that parses JSON it did not write itself and cannot stream (a hook's
stdin, the claude-cli's output) measures first and refuses past its limit."""

import re

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(text: str, limit: int) -> int:
    """How deep `text`'s JSON nests, counted up to `limit + 1` (brackets inside strings are
    text): found without recursing, so any depth is measured safely."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if match.group() in "[{" else -1
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                break
    return deepest
