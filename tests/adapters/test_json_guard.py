"""The guard between export files and ijson (adapters/_json_guard.py): it must never change
what a well-formed file reads as, wherever the reads split it, and must find record
boundaries exactly, however strings, escapes and brackets are mixed. Hypothesis runs
derandomized and without its example database: the same examples on every run."""

import io
import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_platform.adapters._json_guard import GuardedReader, Limits
from memory_platform.adapters._json_scan import neutral_escapes
from memory_platform.adapters._json_stream import RecordNote, iter_records

# Strings full of what confuses a naive scanner: quotes, backslashes, brackets, commas.
tricky_text = st.text(alphabet=st.sampled_from(list('ab"\\[]{},:\n\u00e9\U0001F600 ')),
                      max_size=40)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | tricky_text,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(tricky_text, children, max_size=5),
    max_leaves=30,
)


class Trickle(io.RawIOBase):
    """A source whose reads return random short pieces, so every byte boundary is met."""

    def __init__(self, data: bytes, seed: int) -> None:
        self._data, self._at, self._rng = data, 0, random.Random(seed)

    def read(self, size: int = -1) -> bytes:
        step = self._rng.choice([1, 2, 3, 5, 7, 50, size])
        piece = self._data[self._at:self._at + step]
        self._at += len(piece)
        return piece


def read_all(data: bytes, prefix: str = "item", seed: int = 0, limits: Limits | None = None):
    return list(iter_records(Trickle(data, seed), prefix, limits))


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(json_values, max_size=6), seed=st.integers(0, 1000),
       ascii_only=st.booleans())
def test_well_formed_arrays_read_unchanged_at_any_split(records, seed, ascii_only):
    data = json.dumps(records, ensure_ascii=ascii_only).encode()
    got = read_all(data, seed=seed)
    assert got == list(enumerate(records, 1))


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(records=st.lists(json_values, max_size=5), seed=st.integers(0, 1000))
def test_records_under_a_key_read_unchanged(records, seed):
    data = json.dumps({"before": {"x": ["conversations"]}, "conversations": records,
                       "after": [1, 2]}).encode()
    assert read_all(data, "conversations.item", seed) == list(enumerate(records, 1))


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(records=st.lists(json_values, min_size=1, max_size=6), bad=st.data(),
       seed=st.integers(0, 1000))
def test_a_too_deep_record_costs_only_itself(records, bad, seed):
    index = bad.draw(st.integers(0, len(records)))
    depth = bad.draw(st.integers(9, 40))
    parts = [json.dumps(r).encode() for r in records]
    parts.insert(index, b'{"k": "[[[\\"", "v": ' + b"[" * depth + b"]" * depth + b"}")
    got = read_all(b"[" + b", ".join(parts) + b"]", seed=seed, limits=Limits(max_depth=8))
    expected = [(i + 1 + (i >= index), r) for i, r in enumerate(records)]
    assert [g for g in got if not isinstance(g, RecordNote)] == expected
    [note] = [g for g in got if isinstance(g, RecordNote)]
    assert note.index == index + 1 and note.skipped and "nested deeper than 8" in note.message


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(records=st.lists(json_values, min_size=1, max_size=5), seed=st.integers(0, 1000))
def test_lexical_errors_cost_only_their_record(records, seed):
    parts = [json.dumps(r).encode() for r in records]
    parts.insert(1, b'{"n": 123456789012345678901234567890}')  # yajl: integer overflow
    got = read_all(b"[" + b",".join(parts) + b"]", seed=seed)
    assert [g for g in got if not isinstance(g, RecordNote)] == [
        (i + 1 + (i >= 1), r) for i, r in enumerate(records)]
    [note] = [g for g in got if isinstance(g, RecordNote)]
    assert note.index == 2 and note.skipped and "integer overflow" in note.message


class ExactOnly(GuardedReader):
    """The reference: every piece analysed byte by structural byte."""

    def _fast(self, neutral, base, check_depth=True):
        return False


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(records=st.lists(json_values, max_size=6), seed=st.integers(0, 1000),
       depth=st.integers(2, 6))
def test_fast_analysis_agrees_with_the_exact_scan(records, seed, depth):
    data = json.dumps(records, ensure_ascii=False).encode()
    readers = [cls(Trickle(data, seed), "item", Limits(max_depth=depth))
               for cls in (GuardedReader, ExactOnly)]
    for reader in readers:
        while reader.read(65536):
            pass
    fast, exact = readers
    assert (fast.problem, fast._scan.st.depth, fast._scan.st.in_string, fast._scan.st.records_ended) == (
        exact.problem, exact._scan.st.depth, exact._scan.st.in_string, exact._scan.st.records_ended)


def test_long_string_is_cut_at_a_clean_boundary_and_named():
    text = "\u00e9" * 5000 + '\\"' * 10
    data = json.dumps([{"a": 1}, {"s": text, "t": "after"}, {"b": 2}], ensure_ascii=False)
    got = read_all(data.encode(), limits=Limits(max_string=1001))
    notes = [g for g in got if isinstance(g, RecordNote)]
    records = [g for g in got if not isinstance(g, RecordNote)]
    assert [n.index for n in notes] == [2] and "was cut to its first 1001 bytes" in notes[0].message
    assert records[0] == (1, {"a": 1}) and records[2] == (3, {"b": 2})
    cut = records[1][1]
    assert cut["t"] == "after" and text.startswith(cut["s"]) and 490 <= len(cut["s"]) <= 501


def test_invalid_utf8_is_replaced_and_named_per_record():
    data = b'[{"a": "ok"}, {"a": "x\xff\xfey", "b": "\xc3"}, {"a": "\xe9t\xe9"}]'
    got = read_all(data)
    assert got[0] == (1, {"a": "ok"})
    assert got[1] == RecordNote(2, "3 invalid UTF-8 sequence(s), the first at byte 22, "
                                   "replaced by U+FFFD")
    assert got[2] == (2, {"a": "x\ufffd\ufffdy", "b": "\ufffd"})
    assert got[3].index == 3 and got[4] == (3, {"a": "\ufffdt\ufffd"})


def test_neutral_blanks_exactly_the_escaped_quotes():
    for raw in [r'"a\"b"', r'"a\\"', r'"a\\\"b"', r'"\\\\"', '"plain"']:
        value = json.loads(raw)
        blanked = neutral_escapes(raw.encode())
        assert len(blanked) == len(raw) and blanked.count(b'"') == 2, (raw, blanked, value)


def test_reads_grow_with_an_open_token():
    sizes = []

    class Recorder(io.BytesIO):
        def read(self, size=-1):
            sizes.append(size)
            return super().read(size)

    data = b'["' + b"z" * (8 << 20) + b'"]'
    reader = GuardedReader(Recorder(data))
    while reader.read(65536):
        pass
    assert max(sizes) >= 2 << 20  # grew with the string instead of 64 KiB at a time
    assert len(sizes) < 20


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(records=st.lists(json_values, min_size=1, max_size=5), bad=st.data(),
       seed=st.integers(0, 1000))
def test_a_too_deep_record_under_a_key_costs_only_itself(records, bad, seed):
    index = bad.draw(st.integers(0, len(records)))
    parts = [json.dumps(r).encode() for r in records]
    parts.insert(index, b"[" * 30 + b"]" * 30)
    data = (b'{"meta": {"n": [1, [2]]}, "conversations": [' + b", ".join(parts)
            + b'], "after": [[[[[[[[[[[[1]]]]]]]]]]]]}')
    got = read_all(data, "conversations.item", seed, Limits(max_depth=20))
    assert [g for g in got if not isinstance(g, RecordNote)] == [
        (i + 1 + (i >= index), r) for i, r in enumerate(records)]
    [note] = [g for g in got if isinstance(g, RecordNote)]
    assert note.index == index + 1 and note.skipped


# --- what counts toward a record's size (issue 20, defect 9) ---------------------------------


def test_whitespace_outside_strings_counts_toward_no_record():
    # Runs longer than a read (64 KiB) count for nothing wherever the reads split them;
    # one inside a single read counts (bounded by the read).
    blank = b" \n\t\r" * (1 << 17)  # 512 KiB, five times the record limit
    data = (b'[{"a": 1},' + blank + b'{"b": 2},\n{"c":' + blank + b'3}' + blank + b',' + blank
            + b'{"d": "' + b"x" * 100 + b'"}]')
    limits = Limits(max_record=100_000)
    for seed in (0, 1, 2):
        got = read_all(data, seed=seed, limits=limits)
        assert got == [(1, {"a": 1}), (2, {"b": 2}), (3, {"c": 3}), (4, {"d": "x" * 100})]
    with_reads = list(iter_records(io.BytesIO(data), "item", limits))  # 64 KiB reads
    assert with_reads == got


def test_a_file_may_start_with_any_amount_of_whitespace():
    from memory_platform.adapters._json_stream import peek_start

    first, stream = peek_start(io.BytesIO(b"\xef\xbb\xbf" + b" \n" * (3 << 20) + b'[{"a": 1}]'))
    assert first == b"[" and list(iter_records(stream)) == [(1, {"a": 1})]
    first, _ = peek_start(io.BytesIO(b" " * (3 << 20)))
    assert first == b""  # blank is blank, however long


def test_a_cut_string_counts_only_its_kept_part():
    # what follows the cut string reaches past the read that ends it: the size is checked
    data = json.dumps([{"a": 1}, {"s": "y" * 50_000, "t": "after", "u": "v" * 900,
                                  "w": ["z" * 900] * 5}, {"b": 2}]).encode()
    got = read_all(data, limits=Limits(max_string=1_000, max_record=10_000))
    records = [g for g in got if not isinstance(g, RecordNote)]
    notes = [g for g in got if isinstance(g, RecordNote)]
    assert [i for i, _ in records] == [1, 2, 3]  # before: record 2 dropped as too large
    assert records[1][1]["t"] == "after" and len(records[1][1]["s"]) <= 1_000
    assert [(n.index, n.skipped) for n in notes] == [(2, False)]
    assert "was cut to its first 1000 bytes" in notes[0].message


def test_a_record_whose_content_is_too_large_is_still_skipped():
    limits = Limits(max_string=1_000, max_record=10_000)
    # many kept strings (of spaces: whitespace inside strings is content) and many cut ones
    for middle in ({f"k{i}": " " * 900 for i in range(20)},
                   {f"k{i}": "z" * 5_000 for i in range(20)}):
        data = json.dumps([{"a": 1}, middle, {"b": 2}]).encode()
        got = read_all(data, limits=limits)
        records = [g for g in got if not isinstance(g, RecordNote)]
        skipped = [g for g in got if isinstance(g, RecordNote) and g.skipped]
        assert [i for i, _ in records] == [1, 3]
        assert [(n.index, n.message) for n in skipped] == [(2, "larger than 10000 bytes")]


def test_the_records_before_a_too_large_one_in_the_same_read_stand():
    # records 1, 2 and the start of 3 in the first 64 KiB read: the stop used to drop the
    # whole read, records 1 and 2 with it
    data = json.dumps([{"a": 1}, {"b": 2}, {"big": ["z" * 900] * 100}, {"c": 3}]).encode()
    got = list(iter_records(io.BytesIO(data), "item", Limits(max_record=10_000)))
    assert got == [(1, {"a": 1}), (2, {"b": 2}),
                   RecordNote(3, "larger than 10000 bytes", skipped=True), (4, {"c": 3})]
