"""SQL for the raw substrate: the file catalog, conversations, events and import runs."""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
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
class SourceFile:
    id: int
    kind: str
    path: str
    size_bytes: int
    mtime_ns: int
    sha256: str
    min_event_at: datetime | None
    max_event_at: datetime | None
    event_count: int
    error_count: int
    imported_sha256: str | None
    parsed_bytes: int
    parsed_lines: int
    prefix_sha256: str | None
    last_import_at: datetime | None


_SOURCE_FILE_COLUMNS = (
    "id, kind, path, size_bytes, mtime_ns, sha256, min_event_at, max_event_at, event_count, "
    "error_count, imported_sha256, parsed_bytes, parsed_lines, prefix_sha256, last_import_at"
)


def get_source_file(conn: psycopg.Connection, kind: str, path: str) -> SourceFile | None:
    row = conn.execute(
        f"SELECT {_SOURCE_FILE_COLUMNS} FROM source_files WHERE kind = %s AND path = %s",
        (kind, path),
    ).fetchone()
    return SourceFile(*row) if row else None


def get_source_files(
    conn: psycopg.Connection, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], SourceFile]:
    """The catalog entries of these (kind, path) pairs, in one query."""
    if not keys:
        return {}
    rows = conn.execute(
        f"""SELECT {_SOURCE_FILE_COLUMNS} FROM source_files
            WHERE (kind, path) IN (SELECT * FROM unnest(%b::text[], %b::text[]))""",
        ([kind for kind, _ in keys], [path for _, path in keys]),
    )
    return {(r[1], r[2]): SourceFile(*r) for r in rows}


def list_source_files(conn: psycopg.Connection) -> list[SourceFile]:
    rows = conn.execute(f"SELECT {_SOURCE_FILE_COLUMNS} FROM source_files ORDER BY path, kind")
    return [SourceFile(*r) for r in rows]


def files_overlapping(
    conn: psycopg.Connection, start: datetime, end: datetime
) -> list[SourceFile]:
    """Catalogued files whose event-time range touches [start, end)."""
    rows = conn.execute(
        f"""SELECT {_SOURCE_FILE_COLUMNS} FROM source_files
            WHERE min_event_at < %s AND max_event_at >= %s
            ORDER BY path, kind""",
        (end, start),
    )
    return [SourceFile(*r) for r in rows]


def register_source_file(
    conn: psycopg.Connection, kind: str, path: str, size: int, mtime_ns: int, sha256: str
) -> int:
    """Make sure the file is in the catalog; return its id. Import state is left alone."""
    row = conn.execute(
        """INSERT INTO source_files (kind, path, size_bytes, mtime_ns, sha256)
           VALUES (%s, %s, %s, %s, %s)
           ON CONFLICT (kind, path) DO UPDATE SET size_bytes = EXCLUDED.size_bytes,
               mtime_ns = EXCLUDED.mtime_ns, sha256 = EXCLUDED.sha256
           RETURNING id""",
        (kind, path, size, mtime_ns, sha256),
    ).fetchone()
    assert row is not None
    return row[0]


def register_source_files(
    conn: psycopg.Connection, files: Sequence[tuple[str, str, int, int, str]]
) -> dict[tuple[str, str], int]:
    """register_source_file for many (kind, path, size, mtime_ns, sha256) in one statement;
    returns the ids by (kind, path)."""
    # One row per file: ON CONFLICT DO UPDATE may not touch a row twice in a statement.
    unique = list({(f[0], f[1]): f for f in files}.values())
    if not unique:
        return {}
    columns = [list(column) for column in zip(*unique, strict=True)]
    rows = conn.execute(
        """INSERT INTO source_files (kind, path, size_bytes, mtime_ns, sha256)
           SELECT * FROM unnest(%b::text[], %b::text[], %b::int8[], %b::int8[], %b::text[])
           ON CONFLICT (kind, path) DO UPDATE SET size_bytes = EXCLUDED.size_bytes,
               mtime_ns = EXCLUDED.mtime_ns, sha256 = EXCLUDED.sha256
           RETURNING kind, path, id""",
        columns,
    )
    return {(kind, path): file_id for kind, path, file_id in rows}


def record_scan(
    conn: psycopg.Connection,
    file_id: int,
    min_at: datetime | None,
    max_at: datetime | None,
    event_count: int,
    error_count: int,
) -> None:
    conn.execute(
        """UPDATE source_files SET min_event_at = %s, max_event_at = %s, event_count = %s,
               error_count = %s, last_scan_at = now()
           WHERE id = %s""",
        (min_at, max_at, event_count, error_count, file_id),
    )


@dataclass(frozen=True)
class ImportState:
    """What a complete import of one file leaves in its catalog row."""

    file_id: int
    sha256: str
    size: int
    mtime_ns: int
    parsed_bytes: int
    parsed_lines: int
    prefix_sha256: str | None
    min_at: datetime | None
    max_at: datetime | None
    added_events: int
    full_parse: bool  # False: a resumed (tail-only) parse
    error_count: int


def record_imports(conn: psycopg.Connection, states: Sequence[ImportState]) -> None:
    """Store the state of complete imports, in one statement. A resumed (tail-only) parse
    widens the time range and adds to the counts; a full parse replaces them."""
    latest = list({state.file_id: state for state in states}.values())  # one row per file
    if not latest:
        return
    conn.execute(
        """UPDATE source_files f SET imported_sha256 = u.sha256, sha256 = u.sha256,
               size_bytes = u.size, mtime_ns = u.mtime_ns, parsed_bytes = u.parsed_bytes,
               parsed_lines = u.parsed_lines, prefix_sha256 = u.prefix_sha256,
               min_event_at = CASE WHEN u.full_parse THEN u.min_at
                                   ELSE LEAST(f.min_event_at, u.min_at) END,
               max_event_at = CASE WHEN u.full_parse THEN u.max_at
                                   ELSE GREATEST(f.max_event_at, u.max_at) END,
               event_count = u.added_events
                   + CASE WHEN u.full_parse THEN 0 ELSE f.event_count END,
               error_count = u.error_count
                   + CASE WHEN u.full_parse THEN 0 ELSE f.error_count END,
               last_import_at = now(), last_scan_at = now()
           FROM unnest(%b::int8[], %b::text[], %b::int8[], %b::int8[], %b::int8[], %b::int8[],
                       %b::text[], %b::timestamptz[], %b::timestamptz[], %b::int8[],
                       %b::bool[], %b::int4[])
               AS u(file_id, sha256, size, mtime_ns, parsed_bytes, parsed_lines,
                    prefix_sha256, min_at, max_at, added_events, full_parse, error_count)
           WHERE f.id = u.file_id""",
        [[getattr(state, name) for state in latest] for name in _IMPORT_STATE_FIELDS],
    )


_IMPORT_STATE_FIELDS = (
    "file_id", "sha256", "size", "mtime_ns", "parsed_bytes", "parsed_lines", "prefix_sha256",
    "min_at", "max_at", "added_events", "full_parse", "error_count",
)


def touch_source_file(conn: psycopg.Connection, file_id: int, size: int, mtime_ns: int) -> None:
    """Content unchanged (same sha256) but the file was touched: remember the new stat."""
    conn.execute(
        "UPDATE source_files SET size_bytes = %s, mtime_ns = %s, last_import_at = now() "
        "WHERE id = %s",
        (size, mtime_ns, file_id),
    )


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


def write_events(conn: psycopg.Connection, rows: Sequence[Sequence[Any]]) -> BatchResult:
    """Write rows (STAGE_COLUMNS order; raw/attrs as JSON text): insert what is new and record
    changed content as revisions. Call inside a transaction.

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
    if not _try_copy(conn, fresh, conversation_ids):
        # Some rows are stored already (a re-exported snapshot, records copied into a resumed
        # session): copy the rest, stage those whose content changed, skip the others.
        stored = _stored_hashes(conn, fresh)
        known = [row for row in fresh if (row[0], row[1]) in stored]
        fresh = [row for row in fresh if (row[0], row[1]) not in stored]
        again += [row for row in known if stored[(row[0], row[1])] != row[15]]
        if not _try_copy(conn, fresh, conversation_ids):
            # Another import is storing the same rows right now; the staging path's
            # ON CONFLICT sorts it out.
            return _write_staged(conn, rows, staged)
    new: dict[str, int] = {}
    for row in fresh:
        new[row[0]] = new.get(row[0], 0) + 1
    revised = 0
    if again:
        result = _write_staged(conn, again, {})
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
    conn: psycopg.Connection, rows: Sequence[Sequence[Any]], conversation_ids: dict
) -> bool:
    """COPY rows into `events`, conversation native ids resolved to ids. False, with nothing
    written, if any of them is stored already."""
    if not rows:
        return True
    try:
        with conn.transaction():  # a savepoint: a failed COPY leaves the batch usable
            with _copy_cursor(conn) as cur:
                with cur.copy(
                    f"COPY events ({_EVENT_COLUMNS}) FROM STDIN (FORMAT BINARY)"
                ) as copy:
                    copy.set_types(_EVENT_TYPES)
                    for row in rows:
                        cid = row[2]
                        if cid is not None:
                            cid = conversation_ids[(row[0], cid)]
                        copy.write_row((row[0], row[1], cid, *row[3:]))
    except psycopg.errors.UniqueViolation:
        return False
    return True


def _write_staged(
    conn: psycopg.Connection, rows: Sequence[Sequence[Any]], staged: dict[str, int]
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
                   on_active_branch, attrs, content_hash, source_file_id, source_line)
               SELECT s.source, s.native_id, c.id, s.parent_native_id, s.role, s.kind, s.author,
                   s.occurred_at, s.text, s.raw, s.project, s.git_branch, s.is_sidechain,
                   s.on_active_branch, s.attrs, s.content_hash, s.source_file_id, s.source_line
               FROM stage_events s
               LEFT JOIN conversations c
                   ON c.source = s.source AND c.native_id = s.conversation_native_id
               ON CONFLICT (source, native_id) DO NOTHING
               RETURNING source"""
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


# --- import runs ----------------------------------------------------------------------


def start_import_run(
    conn: psycopg.Connection,
    origin: str,
    kind: str | None,
    target: str,
    window: tuple[datetime, datetime] | None = None,
) -> int:
    row = conn.execute(
        """INSERT INTO import_runs (origin, kind, target, window_start, window_end)
           VALUES (%s, %s, %s, %s, %s) RETURNING id""",
        (origin, kind, target, window[0] if window else None, window[1] if window else None),
    ).fetchone()
    assert row is not None
    return row[0]


def record_import_errors(
    conn: psycopg.Connection, run_id: int, errors: Sequence[tuple[str, int | None, str | None, str]]
) -> None:
    if not errors:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO import_errors (import_run_id, file, line, record_id, message) "
            "VALUES (%s, %s, %s, %s, %s)",
            [(run_id, *e) for e in errors],
        )


def finish_import_run(
    conn: psycopg.Connection,
    run_id: int,
    *,
    status: str,
    files: int,
    events_new: int,
    events_existing: int,
    events_revised: int,
    error_count: int,
) -> None:
    conn.execute(
        """UPDATE import_runs SET finished_at = now(), status = %s, files = %s, events_new = %s,
               events_existing = %s, events_revised = %s, error_count = %s
           WHERE id = %s""",
        (status, files, events_new, events_existing, events_revised, error_count, run_id),
    )


# --- reads for status, the lake and the checks ------------------------------------------


def totals_by_source(conn: psycopg.Connection) -> list[tuple[str, int, int, datetime, datetime]]:
    """(source, events, conversations, first, last) per source."""
    return conn.execute(
        """SELECT source, count(*), count(DISTINCT conversation_id), min(occurred_at),
                  max(occurred_at)
           FROM events GROUP BY source ORDER BY source"""
    ).fetchall()


def totals_by_month(conn: psycopg.Connection) -> list[tuple[str, str, int]]:
    """(YYYY-MM, source, events), months in UTC."""
    return conn.execute(
        """SELECT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month, source, count(*)
           FROM events GROUP BY 1, 2 ORDER BY 1, 2"""
    ).fetchall()


def database_summary(conn: psycopg.Connection) -> dict[str, int]:
    row = conn.execute(
        """SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM conversations),
                  (SELECT count(*) FROM source_files), (SELECT count(*) FROM event_revisions),
                  pg_database_size(current_database())"""
    ).fetchone()
    assert row is not None
    keys = ("events", "conversations", "source_files", "event_revisions", "database_bytes")
    return dict(zip(keys, row, strict=True))


def last_import_under(conn: psycopg.Connection, folder: str) -> datetime | None:
    row = conn.execute(
        "SELECT max(last_import_at) FROM source_files WHERE path LIKE %s",
        (folder.rstrip("/") + "/%",),
    ).fetchone()
    return row[0] if row else None


# Columns a partition read returns; never `raw` unless asked, never a vector.
WINDOW_COLUMNS = (
    "id", "source", "native_id", "conversation_id", "parent_native_id", "role", "kind",
    "author", "occurred_at", "text", "project", "git_branch", "is_sidechain",
    "on_active_branch", "attrs", "content_hash", "source_file_id", "source_line", "ingested_at",
)


def events_in_window(
    conn: psycopg.Connection,
    start: datetime,
    end: datetime,
    columns: Sequence[str] = WINDOW_COLUMNS,
    batch_size: int = 5000,
) -> Iterable[list[tuple]]:
    """Events with start <= occurred_at < end, in pages (server-side cursor)."""
    for name in columns:
        if name not in WINDOW_COLUMNS and name != "raw":
            raise ValueError(f"unknown events column {name!r}")
    with conn.transaction():
        with conn.cursor(name="events_window") as cur:
            cur.itersize = batch_size
            cur.execute(
                f"SELECT {', '.join(columns)} FROM events "
                "WHERE occurred_at >= %s AND occurred_at < %s ORDER BY occurred_at, id",
                (start, end),
            )
            while True:
                rows = cur.fetchmany(batch_size)
                if not rows:
                    break
                yield rows


def window_counts(
    conn: psycopg.Connection, start: datetime, end: datetime
) -> list[tuple[str, int]]:
    return conn.execute(
        """SELECT source, count(*) FROM events
           WHERE occurred_at >= %s AND occurred_at < %s GROUP BY source ORDER BY source""",
        (start, end),
    ).fetchall()


def event_days(conn: psycopg.Connection) -> list[str]:
    """Distinct UTC days that hold events (YYYY-MM-DD), oldest first."""
    rows = conn.execute(
        """SELECT DISTINCT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')
           FROM events ORDER BY 1"""
    )
    return [r[0] for r in rows]
