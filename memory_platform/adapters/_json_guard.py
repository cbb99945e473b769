"""The bytes of a streamed JSON export, checked on their way to ijson (yajl).

yajl is fast and streams, but hostile input hurts it three ways (measured, BENCHMARKS.md
"Hostile files"): ijson keeps a path string per nesting level, so memory grows with the square
of the depth (30,000 levels: 2.2 GB); yajl re-lexes a token split across reads from its first
byte on every read, so one long string costs time quadratic in its length (64 MB: 39 s); and
one invalid UTF-8 byte ends the parse, after which nothing more can be read.

`GuardedReader` sits between the file and ijson and tracks, at C speed per chunk (`_json_scan`),
what yajl does not expose: whether a byte is inside a string, the nesting depth, and where each
record of the array ends. With that it
- stops a record nested deeper than `Limits.max_depth` before ijson sees the deep part;
- grows each read to the length of the token still open (re-lexing stays linear) and cuts a
  string longer than `Limits.max_string`, skipping the rest unread;
- replaces invalid UTF-8 with U+FFFD;
- stops a record longer than `Limits.max_record` bytes, counting only what ijson is given
  of it: the skipped rest of a cut string and whitespace outside strings count for nothing
  (a read that is whitespace only reaches ijson as one space);
- after a stop, or a lexical error yajl met inside one record, skips to the next record and
  presents the rest as a fresh array (`resume_after`), so one bad record costs only itself.
Notes and problems carry the 1-based index of the record they concern (None: outside any).
"""

from dataclasses import dataclass
from typing import BinaryIO

from memory_platform.adapters._json_scan import (
    Marks,
    Scanner,
    State,
    bad_utf8,
    incomplete_tail,
    neutral_escapes,
)


@dataclass(frozen=True)
class Limits:
    # Nesting levels inside one record. Real exports nest under 30; orjson serialises at most
    # 254 levels, so whatever is stored stays on its fast path.
    max_depth: int = 250
    # Bytes of one JSON string; longer ones are cut. Far above any real message, and one
    # event stays well inside PostgreSQL's 256 MB jsonb limit.
    max_string: int = 64 << 20
    # Bytes of one record (a whole conversation); longer ones are skipped, which bounds the
    # Python objects built for one record. Counted without what builds none: the cut part
    # of a long string and runs of whitespace (a record after 1 GB of blanks, or holding a
    # cut 1 GB string, was skipped).
    max_record: int = 512 << 20


LIMITS = Limits()

CHUNK = 64 << 10  # what ijson reads at a time
_SKIP_CHUNK = 256 << 10  # nothing goes to yajl while skipping; the exact scan at the end stays short
_JSON_BLANKS = b" \t\r\n"  # JSON's whitespace (bytes.isspace also takes \v and \f)


@dataclass
class Problem:
    """Why the guard stopped feeding ijson, about record `index` (None: outside any)."""

    index: int | None
    message: str


class GuardedReader:
    """A byte stream for `ijson.items(reader, reader.prefix)`; see the module docstring.

    It has `read` and no `readinto`, so ijson asks for bytes and accepts reads of any size.
    `prefix` is "item" (an array of records), "<key>.item" (an array under a top-level key) or
    "" (the document is the one record).
    """

    def __init__(self, source: BinaryIO, prefix: str = "item", limits: Limits | None = None):
        self._source = source
        self.limits = limits or LIMITS
        names = prefix.split(".") if prefix else []
        self.level = len(names)  # depth at which records sit
        self._key = names[-2].encode() if len(names) >= 2 else None
        self.prefix = prefix
        self.problem: Problem | None = None
        self._notes: dict[tuple[int | None, str], list[int]] = {}  # -> [count, first offset]
        self._scan = Scanner(self.level, self._key, self.limits.max_depth)
        self._offset = 0  # absolute offset just past the bytes read from the source
        self._held = b""  # tail held back from the last read (a split escape or character)
        self._eof = False
        self._out: list[bytes] = []
        self._mode = "normal"  # normal | skip_string | skip_record | stopped | done
        self._target = 0  # skip_record: skip until this many records have ended
        self._cut: tuple[int | None, int] | None = None  # (record, start) of a cut string
        self._skip_from = 0  # absolute offset where the skipped part of a cut string begins
        self._last: tuple[bytes, int, State] | None = None  # last chunk, offset, state before

    # The scan's state is `self._scan.st`; the length of the token it left open is what
    # yajl re-lexes on the next read.
    @property
    def _pending(self) -> int:
        return self._scan.pending

    @_pending.setter
    def _pending(self, value: int) -> None:
        self._scan.pending = value

    def _fast(self, neutral: bytes, base: int, check_depth: bool = True) -> bool:
        return self._scan.fast(neutral, base, check_depth)

    def _exact(self, neutral: bytes, base: int) -> Marks:
        return self._scan.exact(neutral, base)

    # --- what ijson and the consumer call ------------------------------------------------

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""  # ijson probes the stream's type with read(0)
        while not self._out:
            if self._mode in ("stopped", "done"):
                return b""
            chunk = self._next_chunk()
            if chunk is None:
                self._mode = "done"
                return b""
            self._process(chunk, self._offset - len(self._held) - len(chunk))
        data = b"".join(self._out)
        self._out = []
        return data

    def resume_after(self, index: int) -> bool:
        """Skip the rest of record `index`; the records after it then read as a new array
        (prefix "item"). False when no record can follow."""
        self.problem = None
        self._out = []
        self._cut = None
        if self.level == 0 or self._last is None:
            self._mode = "done"
            return False
        self._target = index
        self._mode = "skip_record"
        self.prefix = "item"
        chunk, offset, state = self._last
        self._scan.st = state.copy()
        self._process(chunk, offset)
        # skip here, so a record the file ends inside is known now, not by a failing parser
        while self._mode == "skip_record":
            chunk = self._next_chunk()
            if chunk is None:
                self._mode = "done"
                return False
            self._process(chunk, self._offset - len(self._held) - len(chunk))
        return bool(self._out)

    def take_notes(self, up_to: int | None = None) -> list[tuple[int | None, str]]:
        """Notes on records up to `up_to` and outside any record (None: all), oldest first."""
        taken = [key for key in self._notes
                 if up_to is None or key[0] is None or key[0] <= up_to]
        notes = []
        for key in taken:
            count, first = self._notes.pop(key)
            index, kind = key
            if kind == "utf8":
                notes.append((index, f"{count} invalid UTF-8 sequence(s), the first at byte "
                                     f"{first}, replaced by U+FFFD"))
            else:
                notes.append((index, kind))
        return notes

    # --- reading --------------------------------------------------------------------------

    def _next_chunk(self) -> bytes | None:
        # At most half the string limit per read, so an over-long string is always open
        # across a read, where it is cut.
        cap = max(self.limits.max_string // 2, 1)
        if self._mode == "normal":
            # yajl restarts a token split across reads on every read: reading at least as
            # much as the open token holds keeps that linear.
            size = min(max(CHUNK, self._pending), cap)
        else:
            size = min(_SKIP_CHUNK, cap)
        while True:
            if self._eof:
                return None
            data = self._source.read(size)
            if not data:
                self._eof = True
                data, self._held = self._held, b""
                return data or None
            self._offset += len(data)
            data = self._held + data
            # Hold back an incomplete character, and the odd backslash of a trailing run (an
            # escape whose second byte comes next): both are judged whole with the next read.
            # Every piece starts where an escape may start, so pairs in a run are aligned.
            keep = len(data) - incomplete_tail(data)
            run = keep - len(data[:keep].rstrip(b"\\"))
            keep -= run & 1
            self._held = data[keep:]
            if keep:
                return data[:keep]

    def _process(self, data: bytes, offset: int) -> None:
        """Analyse `data` (at absolute `offset`) and queue what ijson gets of it."""
        self._last = (data, offset, self._scan.st.copy())  # for resume_after
        position = 0
        while position < len(data) and self._mode not in ("stopped", "done"):
            if self._mode == "skip_string":
                position = self._skip_string(data, offset, position)
            elif self._mode == "skip_record":
                position = self._skip_record(data, offset, position)
            else:
                position = self._normal(data, offset, position)

    # --- the modes -----------------------------------------------------------------------

    def _normal(self, data: bytes, offset: int, position: int) -> int:
        piece, base = data[position:], offset + position
        if (not self._scan.st.in_string and piece.isspace()
                and not piece.translate(None, _JSON_BLANKS)):
            # between tokens: one space keeps them apart, and none of it counts
            self._scan.pending = 0
            self._scan.st.discount += len(piece)
            self._emit(b" ", False)
            return len(data)
        # the state before this piece: usually the chunk's, already kept for resume_after
        before = self._last[2] if position == 0 else self._scan.st.copy()  # never mutated
        bad = bad_utf8(piece)
        neutral = neutral_escapes(piece)
        if bad or not self._fast(neutral, base):
            self._scan.st = before.copy()
            marks = self._exact(neutral, base)
            if marks.too_deep is not None:
                self._stop_record(piece, base, before, marks, marks.too_deep,
                                  f"nested deeper than {self.limits.max_depth} levels")
                return len(data)
            for at in bad:
                self._note(self._index_at(before, marks, base + at), "utf8", base + at)
            if marks.close is not None and self.prefix == "item" and self.level > 1:
                # a resumed array under a key: what follows the array is not ijson's business
                self._emit(piece[: marks.close - base + 1], bool(bad))
                self._mode = "done"
                return len(data)
        st = self._scan.st
        if st.in_string and base + len(piece) - st.string_start > self.limits.max_string:
            cut = max(self._cut_point(data, offset, st.string_start + self.limits.max_string),
                      position)
            self._emit(data[position:cut], bool(bad))
            self._cut = (st.records_ended + 1 if st.active else None, st.string_start)
            self._skip_from = offset + cut
            self._mode = "skip_string"
            return cut
        st.discount += self._blank_edges(piece, before)
        if st.active and self._too_large(base + len(piece)):
            if st.record_start >= base:  # it began in this piece (fast: at most here)
                self._scan.st = before.copy()
                self._exact(neutral, base)
                st = self._scan.st
            if self._too_large(base + len(piece)):
                # what precedes it in this piece is ijson's: the records before stand
                self._emit(piece[: max(st.record_start - base, 0)], bool(bad))
                self._stop(st.records_ended + 1,
                           f"larger than {self.limits.max_record} bytes")
                return len(data)
        self._emit(piece, bool(bad))
        return len(data)

    def _blank_edges(self, piece: bytes, before: State) -> int:
        """Whitespace at the edges of `piece` that lies outside strings and inside the
        current record: with whitespace-only pieces (none of which counts), a run of
        blanks counts for nothing wherever the reads split it, but for what lies inside
        one read between other bytes (under a read, 64 KiB)."""
        st, blanks = self._scan.st, 0
        if (piece[:1] in _JSON_BLANKS and not before.in_string and before.active
                and st.records_ended == before.records_ended):
            blanks += len(piece) - len(piece.lstrip(_JSON_BLANKS))
        if piece[-1:] in _JSON_BLANKS and not st.in_string:
            blanks += len(piece) - len(piece.rstrip(_JSON_BLANKS))
        return min(blanks, len(piece))

    def _too_large(self, end: int) -> bool:
        st = self._scan.st
        return end - st.record_start - st.discount > self.limits.max_record

    def _skip_string(self, data: bytes, offset: int, position: int) -> int:
        close = neutral_escapes(data[position:]).find(b'"')
        if close < 0:
            return len(data)
        index, start = self._cut or (None, 0)
        length = offset + position + close - start
        self._scan.st.discount += offset + position + close - self._skip_from  # never read
        self._notes.setdefault(
            (index, f"a string of {length} bytes at byte {start} was cut to its first "
                    f"{self.limits.max_string} bytes"), [1, start])
        self._cut = None
        self._mode = "normal"
        self._pending = 0
        return position + close  # the closing quote is read in normal mode, still in string

    def _skip_record(self, data: bytes, offset: int, position: int) -> int:
        piece, base = data[position:], offset + position
        neutral = neutral_escapes(piece)
        before = self._scan.st.copy()
        if (self._fast(neutral, base, check_depth=False) and self._scan.st.active
                and self._scan.st.records_ended < self._target):
            return len(data)
        self._scan.st = before.copy()
        marks = self._exact(neutral, base)
        end = next((at for at, ended in marks.ends if ended >= self._target), None)
        stop = end if end is not None else marks.close
        if stop is None:
            if not self._scan.st.active:
                self._mode = "done"  # not inside an array (never was, or it closed): no more
            return len(data)
        # the state just past the comma (or at the closing bracket), then a fresh array
        self._scan.st = before.copy()
        self._exact(neutral[: stop - base + (end is not None)], base)
        self._scan.st.records_ended = self._target
        self._scan.st.record_start = stop + 1
        self._scan.st.discount = 0
        self._out.append(b"[")
        self._mode = "normal"
        return stop - offset + (end is not None)

    # --- analysis ------------------------------------------------------------------------


    def _index_at(self, before: State, marks: Marks, at: int) -> int | None:
        """1-based index of the record holding absolute offset `at`; None outside the array."""
        if marks.close is not None and marks.close < at:
            return None
        if not before.active and not (self._scan.st.activated and not before.activated):
            return None
        ended = before.records_ended
        for comma, count in marks.ends:
            if comma < at:
                ended = count
        return ended + 1

    def _stop_record(self, piece: bytes, base: int, before: State, marks: Marks, at: int,
                     why: str) -> None:
        """Give ijson what precedes the record holding offset `at`, then end its stream."""
        index = self._index_at(before, marks, at)
        if index is None:  # outside the records: keep what precedes, then stop for good
            end = marks.close + 1 if marks.close is not None and marks.close < at else 0
            self._emit(piece[: max(end - base, 0)], False)
            self.problem = Problem(None, why)
            self._mode = "done"
            return
        start = before.record_start
        for comma, count in marks.ends:
            if count == index - 1:
                start = comma + 1
        if start > base:
            self._emit(piece[: start - base], False)
        self._stop(index, why)

    def _stop(self, index: int, why: str) -> None:
        self.problem = Problem(index, why)
        self._mode = "stopped"

    def _cut_point(self, data: bytes, offset: int, target: int) -> int:
        """Where, near absolute `target` inside a string, the string can end: before any
        backslash run in the last 12 bytes (no escape is split) and not inside a UTF-8
        character. Relative to `data`."""
        cut = max(target - offset, 0)
        slash = data.rfind(b"\\", max(cut - 12, 0), cut)
        if slash >= 0:
            cut = slash
            while cut > 0 and data[cut - 1] == 0x5C:
                cut -= 1
        while 0 < cut < len(data) and 0x80 <= data[cut] < 0xC0:
            cut -= 1
        return cut

    def _emit(self, piece: bytes, repair: bool) -> None:
        if piece:
            self._out.append(piece.decode("utf-8", "replace").encode() if repair else piece)

    def _note(self, index: int | None, kind: str, at: int) -> None:
        entry = self._notes.setdefault((index, kind), [0, at])
        entry[0] += 1
