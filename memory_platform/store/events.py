"""SQL that writes the raw events: conversations, events and, when a stored event comes back
with other content, its revisions. One batch at a time, inside the caller's transaction."""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.types.json import set_json_dumps

# Columns staged per event, in COPY order. Kept in one place so the writer and the SQL agree.
# The PostgreSQL types (STAGE_TYPES) are those of the binary COPY.
STAGE_COLUMNS = (
    "source",
    "native_id",
    "conversation_native_id",
    "parent_native_id",
    "role",
    "kind",
    "author",
    "occurred_at",
    "text",
    "raw",
    "project",
    "git_branch",
    "is_sidechain",
    "on_active_branch",
    "attrs",
    "content_hash",
    "source_file_id",
    "source_line",
)
STAGE_TYPES = (
    "text", "text", "text", "text", "text", "text", "text", "timestamptz", "text", "jsonb",
    "text", "text", "bool", "bool", "jsonb", "text", "int8", "int4",
)

_STAGE_DDL = """
CREATE TEMP TABLE IF NOT EXISTS stage_events (
    source text, native_id text, conversation_native_id text, parent_native_id text,
    role text, kind text, author text, occurred_at timestamptz, text text, raw jsonb,
    project text, git_branch text, is_sidechain boolean, on_active_branch boolean,
    attrs jsonb, content_hash text, source_file_id bigint, source_line integer
) ON COMMIT DELETE ROWS
"""


@dataclass(frozen=True)
class BatchResult:
    new: dict[str, int]  # per source
    staged: dict[str, int]  # per source
    revised: int


def upsert_conversations(conn: psycopg.Connection, rows: Sequence[tuple]) -> None:
    """rows: (source, native_id, title, project, started_at, attrs dict). Fills gaps, never
    overwrites what an earlier import stored."""
    # One statement for the whole batch (a statement per row costs a round trip each), so
    # repeats are merged here first, as applying them one after another would: the first
    # title/project wins, the earliest start, and earlier attrs keys win.
    merged: dict[tuple[str, str], list] = {}
    for source, native_id, title, project, started_at, attrs in rows:
        key = (source, native_id)
        entry = merged.get(key)
        if entry is None:
            merged[key] = [title, project, started_at, attrs]
            continue
        entry[0] = entry[0] if entry[0] is not None else title
        entry[1] = entry[1] if entry[1] is not None else project
        if started_at is not None and (entry[2] is None or started_at < entry[2]):
            entry[2] = started_at
        entry[3] = {**attrs, **entry[3]}
    if not merged:
        return
    values = list(merged.values())
    conn.execute(
        """INSERT INTO conversations (source, native_id, title, project, started_at, attrs)
           SELECT source, native_id, title, project, started_at, attrs::jsonb
           FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::timestamptz[],
                       %b::text[]) AS u(source, native_id, title, project, started_at, attrs)
           ON CONFLICT (source, native_id) DO UPDATE SET
               title = COALESCE(conversations.title, EXCLUDED.title),
               project = COALESCE(conversations.project, EXCLUDED.project),
               started_at = LEAST(conversations.started_at, EXCLUDED.started_at),
               attrs = EXCLUDED.attrs || conversations.attrs""",
        (
            [key[0] for key in merged], [key[1] for key in merged], [v[0] for v in values],
            [v[1] for v in values], [v[2] for v in values],
            [json.dumps(v[3]) for v in values],
        ),
    )


def write_events(conn: psycopg.Connection, rows: Sequence[Sequence[Any]],
                 machine_id: int | None = None) -> BatchResult:
    """Write rows (STAGE_COLUMNS order; raw/attrs as JSON text): insert what is new and record
    changed content as revisions. Call inside a transaction. New events belong to
    `machine_id` (None: the local machine, the column's default); a stored event keeps the
    machine that brought it first, as it keeps its first content.

    New rows (the bulk of any import) are copied straight into `events`; only rows stored
    already with other content, or repeated within the batch, go through the staging table,
    whose INSERT ... SELECT costs the server about as much again as the COPY. Which rows are
    stored is looked up only when the optimistic COPY hits one."""
    staged: dict[str, int] = {}
    for row in rows:
        staged[row[0]] = staged.get(row[0], 0) + 1
    if not rows:
        return BatchResult({}, {}, 0)
    fresh: list[Sequence[Any]] = []
    again: list[Sequence[Any]] = []  # repeats: the staging path compares them with the first
    seen: set[tuple[str, str]] = set()
    for row in rows:
        key = (row[0], row[1])
        (again if key in seen else fresh).append(row)
        seen.add(key)
    conversation_ids = _conversation_ids(conn, fresh)
    if not _try_copy(conn, fresh, conversation_ids, machine_id):
        # Some rows are stored already (a re-exported snapshot, records copied into a resumed
        # session): copy the rest, stage those whose content changed, skip the others.
        stored = _stored_hashes(conn, fresh)
        known = [row for row in fresh if (row[0], row[1]) in stored]
        fresh = [row for row in fresh if (row[0], row[1]) not in stored]
        again += [row for row in known if stored[(row[0], row[1])] != row[15]]
        if not _try_copy(conn, fresh, conversation_ids, machine_id):
            # Another import is storing the same rows right now; the staging path's
            # ON CONFLICT sorts it out.
            return _write_staged(conn, rows, staged, machine_id)
    new: dict[str, int] = {}
    for row in fresh:
        new[row[0]] = new.get(row[0], 0) + 1
    revised = 0
    if again:
        result = _write_staged(conn, again, {}, machine_id)
        for source, count in result.new.items():
            new[source] = new.get(source, 0) + count
        revised = result.revised
    return BatchResult(new=new, staged=staged, revised=revised)


def _stored_hashes(
    conn: psycopg.Connection, rows: Sequence[Sequence[Any]]
) -> dict[tuple[str, str], str]:
    """content_hash of the rows' identities that `events` already holds."""
    # Binary parameters: dumping and parsing thousands of strings as array text costs more
    # than the lookups.
    found = conn.execute(
        """SELECT e.source, e.native_id, e.content_hash
           FROM unnest(%b::text[], %b::text[]) AS k(source, native_id)
           JOIN events e ON e.source = k.source AND e.native_id = k.native_id""",
        ([row[0] for row in rows], [row[1] for row in rows]),
    ).fetchall()
    return {(source, native_id): digest for source, native_id, digest in found}


def _conversation_ids(
    conn: psycopg.Connection, rows: Sequence[Sequence[Any]]
) -> dict[tuple[str, str], int]:
    """Ids of the conversations the rows name. Events may name a conversation the adapter
    never described (Gemini day groups, truncated exports): those get a bare row."""
    bare: dict[tuple[str, str], list] = {}  # key -> [project, started_at], minimum of each
    for row in rows:
        native_id = row[2]
        if native_id is None:
            continue
        key = (row[0], native_id)
        project, at = row[10], row[7]
        entry = bare.get(key)
        if entry is None:
            bare[key] = [project, at]
            continue
        if project is not None and (entry[0] is None or project < entry[0]):
            entry[0] = project
        if at < entry[1]:
            entry[1] = at
    if not bare:
        return {}
    sources = [key[0] for key in bare]
    native_ids = [key[1] for key in bare]
    conn.execute(
        """INSERT INTO conversations (source, native_id, project, started_at)
           SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::timestamptz[])
           ON CONFLICT (source, native_id) DO NOTHING""",
        (sources, native_ids, [e[0] for e in bare.values()], [e[1] for e in bare.values()]),
    )
    found = conn.execute(
        """SELECT c.source, c.native_id, c.id
           FROM unnest(%b::text[], %b::text[]) AS k(source, native_id)
           JOIN conversations c ON c.source = k.source AND c.native_id = k.native_id""",
        (sources, native_ids),
    ).fetchall()
    return {(source, native_id): cid for source, native_id, cid in found}


_EVENT_COLUMNS = ", ".join(
    "conversation_id" if name == "conversation_native_id" else name for name in STAGE_COLUMNS
)
_EVENT_TYPES = tuple(
    "int8" if name == "conversation_native_id" else kind
    for name, kind in zip(STAGE_COLUMNS, STAGE_TYPES, strict=True)
)


def _copy_cursor(conn: psycopg.Connection) -> psycopg.Cursor:
    """A cursor for binary COPY of rows whose jsonb values are JSON text already."""
    cur = conn.cursor()
    # Binary COPY halves the client's cost of formatting rows. Its jsonb dumper serialises
    # the Python value: pass the text through instead of quoting it as a JSON string.
    set_json_dumps(_json_passthrough, cur)
    return cur


def _json_passthrough(text: str) -> str:
    return text


def _try_copy(
    conn: psycopg.Connection, rows: Sequence[Sequence[Any]], conversation_ids: dict,
    machine_id: int | None = None,
) -> bool:
    """COPY rows into `events`, conversation native ids resolved to ids. False, with nothing
    written, if any of them is stored already."""
    if not rows:
        return True
    try:
        with conn.transaction():  # a savepoint: a failed COPY leaves the batch usable
            with _copy_cursor(conn) as cur:
                machine = () if machine_id is None else (machine_id,)
                columns = _EVENT_COLUMNS + (", machine_id" if machine else "")
                with cur.copy(f"COPY events ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                    copy.set_types(_EVENT_TYPES + (("int8",) if machine else ()))
                    for row in rows:
                        cid = row[2]
                        if cid is not None:
                            cid = conversation_ids[(row[0], cid)]
                        copy.write_row((row[0], row[1], cid, *row[3:], *machine))
    except psycopg.errors.UniqueViolation:
        return False
    return True


def _write_staged(
    conn: psycopg.Connection, rows: Sequence[Sequence[Any]], staged: dict[str, int],
    machine_id: int | None = None,
) -> BatchResult:
    """The general path: stage the rows with COPY, insert what is new, then record changed
    content as revisions."""
    conn.execute(_STAGE_DDL)
    with _copy_cursor(conn) as cur:
        with cur.copy(
            f"COPY stage_events ({', '.join(STAGE_COLUMNS)}) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(STAGE_TYPES)
            for row in rows:
                copy.write_row(row)
        # A temp table has no statistics: without them the planner hash-joins the whole
        # events table for every batch.
        cur.execute("ANALYZE stage_events (source, native_id, conversation_native_id)")
        # See _conversation_ids.
        cur.execute(
            """INSERT INTO conversations (source, native_id, project, started_at)
               SELECT source, conversation_native_id, min(project), min(occurred_at)
               FROM stage_events WHERE conversation_native_id IS NOT NULL
               GROUP BY source, conversation_native_id
               ON CONFLICT (source, native_id) DO NOTHING"""
        )
        cur.execute(
            """INSERT INTO events (source, native_id, conversation_id, parent_native_id, role,
                   kind, author, occurred_at, text, raw, project, git_branch, is_sidechain,
                   on_active_branch, attrs, content_hash, source_file_id, source_line,
                   machine_id)
               SELECT s.source, s.native_id, c.id, s.parent_native_id, s.role, s.kind, s.author,
                   s.occurred_at, s.text, s.raw, s.project, s.git_branch, s.is_sidechain,
                   s.on_active_branch, s.attrs, s.content_hash, s.source_file_id, s.source_line,
                   COALESCE(%s::int8, 1)
               FROM stage_events s
               LEFT JOIN conversations c
                   ON c.source = s.source AND c.native_id = s.conversation_native_id
               ON CONFLICT (source, native_id) DO NOTHING
               RETURNING source""",
            (machine_id,),  # NULL: the local machine (row 1, migration 0011)
        )
        new: dict[str, int] = {}
        for (source,) in cur.fetchall():
            new[source] = new.get(source, 0) + 1
        if sum(new.values()) == len(rows):  # nothing was there before, so nothing changed
            return BatchResult(new=new, staged=staged, revised=0)
        cur.execute(
            """INSERT INTO event_revisions (event_id, content_hash, occurred_at, text, raw,
                   source_file_id, source_line)
               SELECT e.id, s.content_hash, s.occurred_at, s.text, s.raw, s.source_file_id,
                   s.source_line
               FROM stage_events s
               JOIN events e ON e.source = s.source AND e.native_id = s.native_id
               WHERE e.content_hash <> s.content_hash
               ON CONFLICT (event_id, content_hash) DO NOTHING"""
        )
        revised = cur.rowcount
    return BatchResult(new=new, staged=staged, revised=revised)
