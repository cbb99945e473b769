"""Hostile export files, generated: for every adapter, hypothesis builds a file of good records
with one hostile record among them (nesting, a huge string, invalid bytes, a wrong type, raw
garbage) or cuts the file short, and checks what must hold for any input:
- no exception escapes the adapter, and building rows raises only the documented ValueError;
- every good record still imports (all of them; with garbage or a cut, those before it);
- a record nested too deep is named; memory and time per file stay bounded.
Hypothesis' own example database is off (derandomize): the suite is the same on every run.
The importer runs the same files against PostgreSQL for a smaller sample. Sizes are modest
(strings to 2 MB, nesting to 20,000 levels); the regressions in test_hostile_regressions.py and
`memory-platform bench hostile` cover the large ones."""

import json
import time
import tracemalloc
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.hostile import FORMATS, deep, dumps, set_path
from memory_platform.adapters import get_adapter
from memory_platform.adapters.base import Conversation, Event, ParseIssue
from memory_platform.ingest import importer as ingest
from memory_platform.ingest.rows import build_row, conversation_row

odd_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=8,
)
HIGH_BYTES = st.binary(min_size=1, max_size=6).map(lambda b: bytes(x | 0x80 for x in b))
MUTATIONS = st.one_of(
    st.tuples(st.just("deep"), st.integers(255, 1_100) | st.sampled_from([5_000, 20_000])),
    st.tuples(st.just("long"), st.integers(1 << 16, 1 << 19) | st.sampled_from([2 << 20])),
    st.tuples(st.just("bad bytes"), HIGH_BYTES),
    st.tuples(st.just("wrong type"), odd_values),
    st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=12)),
    st.tuples(st.just("cut"), st.floats(0, 1, exclude_max=True)),
)


@dataclass
class Recipe:
    """How to build one hostile file; printed short when hypothesis reports a failure."""

    kind: str
    count: int
    bad: int
    mutation: str
    arg: object
    path: tuple
    nonce: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def __repr__(self) -> str:
        arg = self.arg
        if isinstance(arg, bytes) and len(arg) > 40 or isinstance(arg, str) and len(arg) > 40:
            arg = f"<{type(arg).__name__} of {len(arg)}>"
        return (f"Recipe({self.kind}, {self.count} records, #{self.bad + 1} {self.mutation} "
                f"{arg!r} at {self.path})")

    def build(self) -> tuple[bytes, list[str]]:
        """The file, and the markers of the records that must import."""
        fmt = FORMATS[self.kind]
        records, markers = [], []
        for i in range(self.count):
            marker = f"good{i}x{self.nonce}"
            if i != self.bad:
                records.append(dumps(fmt.build(marker)))
                markers.append(marker)
                continue
            record = fmt.build(f"bad{i}x{self.nonce}@@HOLE@@")
            if self.mutation == "deep":
                body = dumps(set_path(record, self.path, "@@DEEP@@")).replace(
                    b'"@@DEEP@@"', deep(self.arg))
            elif self.mutation == "long":
                body = dumps(record).replace(b"@@HOLE@@", b"z" * self.arg)
            elif self.mutation == "wrong type":
                body = dumps(set_path(record, self.path, self.arg))
            else:  # bytes spliced into the record's text
                spliced = self.arg if isinstance(self.arg, bytes) else b""
                body = dumps(record).replace(b"@@HOLE@@", spliced)
            records.append(body.replace(b"@@HOLE@@", b""))
        data = fmt.join(records)
        if self.mutation in ("garbage", "cut"):
            # what precedes the hostile record must import; JSONL lines after it as well
            if self.kind not in ("claude-code", "codex") or self.mutation == "cut":
                markers = markers[: self.bad]
            if self.mutation == "cut":
                start = data.index(records[self.bad])
                data = data[: start + int(self.arg * (len(data) - start))]
        return data, markers


@st.composite
def recipes(draw, kind: str) -> Recipe:
    count = draw(st.integers(2, 4))
    mutation, arg = draw(MUTATIONS)
    return Recipe(kind, count, draw(st.integers(0, count - 1)), mutation, arg,
                  draw(st.sampled_from(FORMATS[kind].paths)))


def parse_like_the_importer(kind: str, path: Path):
    """Items of the file, and the row-building outcome of each: what the importer does
    before the database. Any exception but the documented ValueError fails the test."""
    items = list(get_adapter(kind).parse(path))
    refused = []
    for item in items:
        try:
            if isinstance(item, Event):
                build_row(kind, item, 1)
            elif isinstance(item, Conversation):
                conversation_row(kind, item)
        except ValueError as error:
            refused.append(str(error))
    return items, refused


def check_file(kind: str, tmp: Path, data: bytes, markers: list[str], mutation: str):
    path = tmp / uuid.uuid4().hex / (FORMATS[kind].filename if kind in FORMATS else "note.md")
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    tracemalloc.start()
    started = time.process_time()
    try:
        items, refused = parse_like_the_importer(kind, path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    seconds = time.process_time() - started
    texts = "\n".join(i.text for i in items if isinstance(i, Event))
    missing = [m for m in markers if m not in texts]
    assert not missing, (missing, [str(i)[-300:] for i in items if isinstance(i, ParseIssue)])
    issues = [i.message for i in items if isinstance(i, ParseIssue)]
    if mutation == "deep":  # named: as too deep, unreadable, or refused when its row is built
        assert issues or refused
    megabytes = len(data) / (1 << 20)
    # bounded: a few copies of the file, never the square of anything in it
    assert peak < (48 + 12 * megabytes) * (1 << 20), (peak, megabytes)
    assert seconds < 5 + 4 * megabytes, (seconds, megabytes)


SUITE = settings(max_examples=30, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("kind", sorted(FORMATS))
@SUITE
@given(data=st.data())
def test_hostile_records_cost_only_themselves(kind, tmp_path, data):
    recipe = data.draw(recipes(kind))
    content, markers = recipe.build()
    check_file(kind, tmp_path, content, markers, recipe.mutation)


notes_hostile = st.one_of(
    HIGH_BYTES, st.binary(max_size=40),
    st.integers(1 << 16, 2 << 20).map(lambda n: b"w" * n),
    st.integers(50, 5000).map(lambda n: b"> " * n + b"quote"),
    st.integers(50, 5000).map(lambda n: b"".join(b"  " * i + b"- x\n" for i in range(n))),
)


@SUITE
@given(hostile=notes_hostile, front=st.sampled_from([
    b"", b"---\ndate: [[[[[[\n---\n", b"---\n" + b"a: [" * 300 + b"\n---\n",
    b"---\ntitle: &t [x, *t]\n---\n", b"---\ndate: 99999-99-99\n---\n"]))
def test_hostile_notes_cost_only_themselves(tmp_path, hostile, front):
    nonce = uuid.uuid4().hex[:8]
    markers = [f"good0x{nonce}", f"good1x{nonce}"]
    content = (front + f"# {markers[0]}\nfine\n\n# bad\n".encode() + hostile
               + f"\n\n# {markers[1]}\nfine\n".encode())
    check_file("notes", tmp_path, content, markers, "notes")


# --- the importer, against PostgreSQL ------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(FORMATS))
@settings(max_examples=6, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_importer_stores_every_good_record(kind, db, tmp_path, data):
    recipe = data.draw(recipes(kind))
    content, markers = recipe.build()
    mutation, bad = recipe.mutation, recipe.bad
    path = tmp_path / uuid.uuid4().hex / FORMATS[kind].filename
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    report = ingest.import_path(db, kind, path)  # raises nothing: errors are reported
    with db.connect() as conn:
        texts = "\n".join(row[0] for row in conn.execute(
            "SELECT e.text FROM events e JOIN source_files f ON f.id = e.source_file_id "
            "WHERE f.path = %s", (str(path),)))
    assert not [m for m in markers if m not in texts], [str(e) for e in report.errors]
    assert all(e.file.startswith(str(path)) for e in report.errors)
    if mutation == "deep":
        assert report.errors and all(
            e.line in (FORMATS[kind].line_of(bad), None) for e in report.errors), json.dumps(
            [e.to_dict() for e in report.errors])
