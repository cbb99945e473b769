"""A mem0 store, read from what mem0 itself writes (mem0ai/mem0):

- the `get_all` export: `{"results": [MemoryItem, ...]}` (mem0 1.x, also the Platform's
  paginated answer with `count`/`next`) or a bare list of them (older releases). A
  MemoryItem is `{"id", "memory", "hash", "metadata", "created_at", "updated_at",
  "user_id", "agent_id", "run_id", ...}`; `memory` is the fact.
- its history table (`mem0/memory/storage.py`): the SQLite `~/.mem0/history.db`, table
  `history (id, memory_id, old_memory, new_memory, event, created_at, updated_at,
  is_deleted, actor_id, role)`, one row per ADD, UPDATE or DELETE; or those rows as JSON
  (`Memory.history()`'s list). A memory's current text is `new_memory` of its last row in
  the order mem0 wrote them; one whose last row deletes it is left out (and counted).

The format is told from the bytes: SQLite's header, else JSON. Each record's line in the
JSON file (or its history row) is its provenance; a record that is not an object, has no
text or text that is not a string is a Problem with its line, and the rest import. The
JSON is decoded one record at a time (`raw_decode` at each element), so a syntax error
ends the file at that line with the records before it kept. The SQLite file is read
through the confined reader and opened from memory (`deserialize`), never by its path;
its one SELECT is the only SQL outside `store/` (it reads mem0's file, not our database).
"""

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memory_platform.vault.imports import files
from memory_platform.vault.imports.records import Note, Problem, Record

MAX_BYTES = 64 << 20  # a mem0 store of 64 MiB is ~100k memories
SQLITE_MAGIC = b"SQLite format 3\x00"
HISTORY_COLUMNS = ("id", "memory_id", "old_memory", "new_memory", "event", "created_at",
                   "updated_at", "is_deleted", "actor_id", "role")
_WS = " \t\r\n"


class _Lines:
    """Offsets to 1-based line numbers; counted on from the last offset asked (records are
    asked in order), from the start when asked for an earlier one."""

    def __init__(self, text: str):
        self._text, self._offset, self._line = text, 0, 1

    def __call__(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, 1
        self._line += self._text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _elements(text: str, start: int, label: str, line_of: _Lines
              ) -> Iterator[tuple[int, Any] | Problem]:
    """(line, value) of each element of the JSON array opening at `start`."""
    decoder = json.JSONDecoder()
    i = _skip(text, start + 1)
    if i < len(text) and text[i] == "]":
        return
    while True:
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            yield Problem(label, exc.lineno, f"invalid JSON ({exc.msg}); the file ends here")
            return
        except RecursionError:
            yield Problem(label, line_of(i), "a record nested too deeply; the file ends here")
            return
        except ValueError as exc:  # a number past Python's 4,300 digits, say
            yield Problem(label, line_of(i), f"invalid JSON ({exc}); the file ends here")
            return
        yield line_of(i), value
        i = _skip(text, end)
        if i < len(text) and text[i] == ",":
            i = _skip(text, i + 1)
            continue
        if i < len(text) and text[i] == "]":
            return
        yield Problem(label, line_of(i), "invalid JSON (expected ',' or ']'); the file ends "
                                         "here")
        return


def _array(text: str, label: str, line_of: _Lines) -> int | Problem:
    """Where the records' array opens: the document itself, or its `results` member."""
    i = _skip(text, 0)
    if i < len(text) and text[i] == "[":
        return i
    if i >= len(text) or text[i] != "{":
        return Problem(label, line_of(i), "not a mem0 export: expected a JSON list or an "
                                          "object with \"results\"")
    decoder = json.JSONDecoder()
    i = _skip(text, i + 1)
    while i < len(text) and text[i] == '"':
        try:
            key, i = decoder.raw_decode(text, i)
            i = _skip(text, i)
            if text[i:i + 1] != ":":
                raise json.JSONDecodeError("expected ':'", text, i)
            i = _skip(text, i + 1)
            if key == "results" and text[i:i + 1] == "[":
                return i
            _, i = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):  # JSONDecodeError, a 5,000-digit number
            return Problem(label, line_of(i), "invalid JSON before \"results\"")
        i = _skip(text, i)
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
    return Problem(label, 1, "not a mem0 export: no \"results\" list in the object")


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _from_item(item: dict, label: str, line: int) -> Record | Problem:
    text = item.get("memory")
    if text is None and isinstance(item.get("data"), str):
        text = item["data"]  # a vector-store payload, as mem0 stores it
    if not isinstance(text, str):
        return Problem(label, line, "a record without a \"memory\" text")
    if not text.strip():
        return Problem(label, line, "a record with an empty \"memory\"")
    ident = item.get("id")
    return Record(text.strip(), label, line, "mem0",
                  native_id=str(ident) if isinstance(ident, str | int) else None)


def _current(rows: list[tuple[str, dict]], label: str
             ) -> Iterator[Record | Problem | Note]:
    """The current text of each memory from its history rows (oldest first), as (where,
    row) pairs."""
    last: dict[str, tuple[str, dict]] = {}
    for where, row in rows:
        memory_id = row.get("memory_id")
        if not isinstance(memory_id, str | int):
            yield Problem(label, None, "a history row without a memory_id", where=where)
            continue
        last[str(memory_id)] = (where, row)
    deleted = 0
    for memory_id, (where, row) in last.items():
        event = str(row.get("event") or "").upper()
        if event == "DELETE" or row.get("is_deleted") in (1, True, "1"):
            deleted += 1
            continue
        text = _text(row.get("new_memory"))
        if text is None:
            yield Problem(label, None, f"memory {memory_id}: its last history row "
                                       f"({event or 'no event'}) has no new_memory text",
                          where=where)
            continue
        yield Record(text, label, None, "mem0", native_id=memory_id, where=where)
    if deleted:
        yield Note(label, None, f"{deleted} memories deleted in mem0, left out")


def _history_json(values: list[tuple[int, Any]], label: str) -> Iterator[Record | Problem | Note]:
    rows = [(f"line {line}", value) for line, value in values]
    yield from _current(rows, label)


def _history_sqlite(data: bytes, label: str) -> Iterator[Record | Problem | Note]:
    conn = sqlite3.connect(":memory:")
    try:
        conn.deserialize(data)
        conn.execute("PRAGMA query_only = ON")
        names = {r[1] for r in conn.execute("PRAGMA table_info(history)")}
        if not {"memory_id", "new_memory", "event"} <= names:
            yield Problem(label, None, "not a mem0 history database: no history table with "
                                       "memory_id, new_memory and event")
            return
        wanted = [c for c in HISTORY_COLUMNS if c in names]
        cursor = conn.execute(f"SELECT rowid, {', '.join(wanted)} FROM history ORDER BY rowid")
        rows = [(f"history row {r[0]}", dict(zip(wanted, r[1:], strict=True)))
                for r in cursor]
    except sqlite3.DatabaseError as exc:
        yield Problem(label, None, f"not a readable SQLite database ({exc})")
        return
    finally:
        conn.close()
    yield from _current(rows, label)


def read(path: Path) -> Iterator[Record | Problem | Note]:
    """The memories of a mem0 export or history table at `path`."""
    path = path.absolute()
    label = str(path)
    data = files.read_named(path, MAX_BYTES)
    if data.startswith(SQLITE_MAGIC):
        yield from _history_sqlite(data, label)
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        yield Problem(label, line, "not UTF-8 JSON (nor a SQLite database)")
        return
    line_of = _Lines(text)
    start = _array(text, label, line_of)
    if isinstance(start, Problem):
        yield start
        return
    values: list[tuple[int, Any]] = []
    for element in _elements(text, start, label, line_of):
        if isinstance(element, Problem):
            yield element
            break
        values.append(element)
    history = any(isinstance(v, dict) and "new_memory" in v and "memory_id" in v
                  for _, v in values)
    if history:
        yield from _history_json(values, label)
        return
    for line, value in values:
        if not isinstance(value, dict):
            yield Problem(label, line, f"a record that is not an object "
                                       f"({type(value).__name__})")
            continue
        yield _from_item(value, label, line)
