"""Where strings, nesting and records are in a piece of a JSON document, for the guard
(`_json_guard`). Two ways over the same state: `Scanner.fast` uses only C-speed primitives
(translate, replace, itertools) and gives up on pieces where the records' array opens or
closes or nesting passes the limit; `Scanner.exact` walks every structural byte in Python and
notes positions. They agree on every piece (tests/adapters/test_json_guard.py)."""

import codecs
import re
import threading
from dataclasses import dataclass, field
from itertools import accumulate, compress

_QUOTE, _COMMA, _COLON, _OPEN_ARRAY = ord('"'), ord(","), ord(":"), ord("[")
_OPENERS, _CLOSERS = frozenset(b"[{"), frozenset(b"]}")
_STRUCTURE = re.compile(rb'["\[\]{},:]')
_NOT_QUOTE_OR_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{},')
_DELTA = [0] * 256
for _byte in b"[{":
    _DELTA[_byte] = 1
for _byte in b"]}":
    _DELTA[_byte] = -1
_IS_COMMA = [0] * 256
_IS_COMMA[_COMMA] = 1
# What numbers and literals are made of: a chunk's tail of these is a token yajl re-lexes.
_TOKEN_BYTES = b"0123456789+-.eEtrufalsn"


def neutral_escapes(data: bytes) -> bytes:
    """`data` with escaped backslashes and quotes blanked (same length), so every quote left
    delimits a string. Pairs match left to right, as JSON reads them; callers never split a
    run of backslashes."""
    if b'\\"' not in data:
        return data  # no quote follows a backslash
    if b"\\\\" not in data:
        return data.replace(b'\\"', b"__")  # no backslash is escaped: each \" is an escape
    return data.replace(b"\\\\", b"__").replace(b'\\"', b"__")


_bad_found = threading.local()


def _record_bad(error: UnicodeDecodeError) -> tuple[str, int]:
    _bad_found.list.append(error.start)
    return "\ufffd", error.end


codecs.register_error("memory-platform-json-guard", _record_bad)


def bad_utf8(data: bytes) -> list[int]:
    """Offsets of the invalid UTF-8 sequences in `data` (empty, cheaply, for valid text)."""
    if data.isascii():
        return []
    try:
        data.decode("utf-8")
        return []
    except UnicodeDecodeError:
        pass
    _bad_found.list = []
    data.decode("utf-8", "memory-platform-json-guard")
    return _bad_found.list


def incomplete_tail(data: bytes) -> int:
    """Bytes at the end of `data` that start a UTF-8 character the next read completes."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return 0
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4 if byte < 0xF8 else 1
            return back if needed > back else 0
    return 0


@dataclass(slots=True)
class State:
    in_string: bool = False
    depth: int = 0
    string_start: int = 0  # absolute offset of the open string's first content byte
    activated: bool = False  # the array of records has opened
    active: bool = False  # ... and not closed yet
    records_ended: int = 0
    record_start: int = 0  # absolute offset at or before which the current record began
    discount: int = 0  # bytes since record_start that count toward no record's size
    last_string: bytes | None = None  # the last short string at the array's parent level
    after_key: bytes | None = None  # key whose value comes next at the parent level
    key_head: bytes = b""  # the start of a parent-level string the last piece ended in

    def copy(self) -> "State":
        return State(self.in_string, self.depth, self.string_start, self.activated,
                      self.active, self.records_ended, self.record_start, self.discount,
                      self.last_string, self.after_key, self.key_head)


@dataclass
class Marks:
    """What an exact scan of one piece found, at absolute offsets."""

    ends: list[tuple[int, int]] = field(default_factory=list)  # (comma, records ended)
    close: int | None = None  # the array's closing bracket
    too_deep: int | None = None  # first bracket nested deeper than the limit


class Scanner:
    """The state of one document's scan: records sit at depth `level`, under `key` when
    `level` is 2 or more; `pending` is the length of the token open at the end of the last
    piece (what yajl will re-lex)."""

    def __init__(self, level: int, key: bytes | None, max_depth: int) -> None:
        self.level, self._key, self.max_depth = level, key, max_depth
        self.st = State(activated=level == 0, active=level == 0)
        self.pending = 0

    def fast(self, neutral: bytes, base: int, check_depth: bool = True) -> bool:
        """Advance the state over `neutral` with C-speed primitives. False (state half
        updated) when the piece needs the exact scan: the array opens or closes in it, or
        it nests too deep."""
        st = self.st
        if not st.activated:
            return False
        # Quotes and structure only; a string without brackets or commas in it is then an
        # adjacent pair of quotes, and dropping pairs keeps every other byte's parity.
        compact = neutral.translate(None, _NOT_QUOTE_OR_STRUCTURE)
        quotes = compact.count(b'"')
        if st.in_string:
            compact = b'"' + compact
        compact = compact.replace(b'""', b"")
        if b'"' in compact:
            structure = b"".join(compact.split(b'"')[0::2])
        else:
            structure = compact
        ended = 0
        if structure:
            path = list(accumulate(map(_DELTA.__getitem__, structure), initial=st.depth))
            if st.active and min(path) < self.level:
                return False
            opens = structure.count(b"[") + structure.count(b"{")
            if (check_depth and st.depth + opens > self.level + self.max_depth
                    and max(path) > self.level + self.max_depth):
                return False
            if st.active:
                ended = list(compress(path[1:], map(_IS_COMMA.__getitem__, structure))
                             ).count(self.level)
            st.depth = path[-1]
        if quotes & 1:
            st.in_string = not st.in_string
        if quotes and st.in_string:
            st.string_start = base + neutral.rfind(b'"') + 1
        if ended:
            st.records_ended += ended
            st.record_start = base  # the last record began in this piece: an upper bound
            st.discount = 0
        if st.in_string:
            self.pending = base + len(neutral) - st.string_start
        else:
            self.pending = len(neutral) - len(neutral.rstrip(_TOKEN_BYTES))
        return True

    def exact(self, neutral: bytes, base: int) -> Marks:
        """Advance the state over `neutral` one structural byte at a time, noting where
        records end, where the array closes and the first bracket nested too deep."""
        st, marks = self.st, Marks()
        level, limit, parent = self.level, self.level + self.max_depth, self.level - 1
        for match in _STRUCTURE.finditer(neutral):
            at = match.start()
            byte = neutral[at]
            if st.in_string:
                if byte == _QUOTE:
                    st.in_string = False
                    start = st.string_start - base
                    if st.depth == parent and at - start <= 256:
                        # a key may have begun in the last piece (reads split anywhere)
                        st.last_string = (neutral[start:at] if start >= 0
                                          else st.key_head + neutral[:at])
                continue
            if byte == _QUOTE:
                st.in_string = True
                st.string_start = base + at + 1
                st.last_string = None
                st.key_head = b""
                if st.depth == parent:
                    st.after_key = None  # a string value, or the next key
            elif byte in _OPENERS:
                if (not st.activated and st.depth == parent and byte == _OPEN_ARRAY
                        and (level == 1 or st.after_key == self._key)):
                    st.activated = st.active = True
                    st.record_start = base + at + 1
                    st.discount = 0
                st.depth += 1
                if st.depth > limit and marks.too_deep is None:
                    marks.too_deep = base + at
                if st.depth == level:
                    st.after_key = None
            elif byte in _CLOSERS:
                st.depth -= 1
                if st.active and st.depth < level:
                    st.active = False
                    marks.close = base + at
            elif byte == _COMMA:
                if st.active and st.depth == level:
                    st.records_ended += 1
                    st.record_start = base + at + 1
                    st.discount = 0
                    marks.ends.append((base + at, st.records_ended))
                elif st.depth == parent:
                    st.after_key = None
            elif byte == _COLON and st.depth == parent:
                st.after_key = st.last_string
        if st.in_string and st.depth == parent and not st.activated:
            start = st.string_start - base
            head = neutral[start:] if start >= 0 else st.key_head + neutral
            st.key_head = head[:257]
        tail = neutral[neutral.rfind(b'"') + 1:] if not st.in_string else b""
        self.pending = self.open_token(tail, base + len(neutral))
        return marks

    def open_token(self, tail: bytes, end: int) -> int:
        """Length of the token still open at absolute offset `end`."""
        if self.st.in_string:
            return end - self.st.string_start
        return len(tail) - len(tail.rstrip(_TOKEN_BYTES))

