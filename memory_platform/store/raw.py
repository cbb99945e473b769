"""SQL for the raw substrate: the file catalog, conversations, events and import runs."""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

# Columns staged per event, in COPY order. Kept in one place so the writer and the SQL agree.
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


def record_import(
    conn: psycopg.Connection,
    file_id: int,
    *,
    sha256: str,
    size: int,
    mtime_ns: int,
    parsed_bytes: int,
    parsed_lines: int,
    prefix_sha256: str | None,
    min_at: datetime | None,
    max_at: datetime | None,
    added_events: int,
    full_parse: bool,
    error_count: int,
) -> None:
    """Store the state of a complete import. A resumed (tail-only) parse widens the time
    range and adds to the count; a full parse replaces them."""
    if full_parse:
        conn.execute(
            """UPDATE source_files SET imported_sha256 = %s, sha256 = %s, size_bytes = %s,
                   mtime_ns = %s, parsed_bytes = %s, parsed_lines = %s, prefix_sha256 = %s,
                   min_event_at = %s, max_event_at = %s, event_count = %s, error_count = %s,
                   last_import_at = now(), last_scan_at = now()
               WHERE id = %s""",
            (sha256, sha256, size, mtime_ns, parsed_bytes, parsed_lines, prefix_sha256,
             min_at, max_at, added_events, error_count, file_id),
        )
    else:
        conn.execute(
            """UPDATE source_files SET imported_sha256 = %s, sha256 = %s, size_bytes = %s,
                   mtime_ns = %s, parsed_bytes = %s, parsed_lines = %s, prefix_sha256 = %s,
                   min_event_at = LEAST(min_event_at, %s), max_event_at = GREATEST(max_event_at, %s),
                   event_count = event_count + %s, error_count = error_count + %s,
                   last_import_at = now(), last_scan_at = now()
               WHERE id = %s""",
            (sha256, sha256, size, mtime_ns, parsed_bytes, parsed_lines, prefix_sha256,
             min_at, max_at, added_events, error_count, file_id),
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
    if not rows:
        return
    with conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO conversations (source, native_id, title, project, started_at, attrs)
               VALUES (%s, %s, %s, %s, %s, %s)
               ON CONFLICT (source, native_id) DO UPDATE SET
                   title = COALESCE(conversations.title, EXCLUDED.title),
                   project = COALESCE(conversations.project, EXCLUDED.project),
                   started_at = LEAST(conversations.started_at, EXCLUDED.started_at),
                   attrs = EXCLUDED.attrs || conversations.attrs""",
            [(src, n, t, p, s, Jsonb(a)) for src, n, t, p, s, a in rows],
        )


def write_events(conn: psycopg.Connection, rows: Sequence[Sequence[Any]]) -> BatchResult:
    """Stage rows (STAGE_COLUMNS order; raw/attrs as JSON text) with COPY, then insert what is
    new and record changed content as revisions. Call inside a transaction: the staging
    table empties itself on commit."""
    staged: dict[str, int] = {}
    for row in rows:
        staged[row[0]] = staged.get(row[0], 0) + 1
    if not rows:
        return BatchResult({}, {}, 0)
    conn.execute(_STAGE_DDL)
    with conn.cursor() as cur:
        with cur.copy(f"COPY stage_events ({', '.join(STAGE_COLUMNS)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        # A temp table has no statistics: without them the planner hash-joins the whole
        # events table for every batch.
        cur.execute("ANALYZE stage_events (source, native_id, conversation_native_id)")
        # Events may name a conversation the adapter never described (Gemini day groups,
        # truncated exports): create a bare row so the foreign key always resolves.
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
