"""SQL of the source-file catalog and the import runs: which export files are known, what a
complete import of each left behind (hashes, parsed prefix, event-time range, counts), and
one row per import run with its errors."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg


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
    last_scan_at: datetime | None
    machine_id: int = 1  # whose records it holds (migration 0011; 1: this machine)


_SOURCE_FILE_COLUMNS = (
    "id, kind, path, size_bytes, mtime_ns, sha256, min_event_at, max_event_at, event_count, "
    "error_count, imported_sha256, parsed_bytes, parsed_lines, prefix_sha256, last_import_at, "
    "last_scan_at, machine_id"
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
    conn: psycopg.Connection, files: Sequence[tuple[str, str, int, int, str]],
    machine_id: int | None = None,
) -> dict[tuple[str, str], int]:
    """register_source_file for many (kind, path, size, mtime_ns, sha256) in one statement;
    returns the ids by (kind, path). New files hold `machine_id`'s records (None: this
    machine's); a known file keeps the machine it was registered with."""
    # One row per file: ON CONFLICT DO UPDATE may not touch a row twice in a statement.
    unique = list({(f[0], f[1]): f for f in files}.values())
    if not unique:
        return {}
    columns = [list(column) for column in zip(*unique, strict=True)]
    rows = conn.execute(
        """INSERT INTO source_files (kind, path, size_bytes, mtime_ns, sha256, machine_id)
           SELECT *, COALESCE(%b::int8, 1)
           FROM unnest(%b::text[], %b::text[], %b::int8[], %b::int8[], %b::text[])
           ON CONFLICT (kind, path) DO UPDATE SET size_bytes = EXCLUDED.size_bytes,
               mtime_ns = EXCLUDED.mtime_ns, sha256 = EXCLUDED.sha256
           RETURNING kind, path, id""",
        [machine_id, *columns],
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


def mark_imported(conn: psycopg.Connection, file_ids: Sequence[int]) -> None:
    """A window import (a daily partition: what `up` and the sensor run) read these files
    for the events inside its window: that is when they were last imported, for status's
    "not imported for a week". Their content state (imported sha256, parsed bytes) stays
    for whole-file imports to say."""
    if file_ids:
        conn.execute("UPDATE source_files SET last_import_at = now() WHERE id = ANY(%s)",
                     (list(file_ids),))


def last_import_under(conn: psycopg.Connection, folder: str) -> datetime | None:
    row = conn.execute(
        "SELECT max(last_import_at) FROM source_files WHERE path LIKE %s",
        (folder.rstrip("/") + "/%",),
    ).fetchone()
    return row[0] if row else None


def files_with_errors(conn: psycopg.Connection) -> list[dict]:
    """Catalogued files whose last parse had errors: {kind, path, errors, last_import_at}."""
    rows = conn.execute(
        "SELECT kind, path, error_count, last_import_at FROM source_files "
        "WHERE error_count > 0 ORDER BY path, kind").fetchall()
    return [{"kind": k, "path": p, "errors": n, "last_import_at": at} for k, p, n, at in rows]


def last_errors_of(conn: psycopg.Connection, path: str
                   ) -> list[tuple[str, int | None, str | None, str]]:
    """(file, line, record_id, message) of the latest import run that recorded errors for
    `path` (a zip's members are named `<path>!<member>`)."""
    return conn.execute(
        """WITH mine AS (
               SELECT * FROM import_errors WHERE file = %(path)s OR file LIKE %(members)s)
           SELECT file, line, record_id, message FROM mine
           WHERE import_run_id = (SELECT max(import_run_id) FROM mine) ORDER BY id""",
        {"path": path, "members": path.replace("%", r"\%").replace("_", r"\_") + "!%"},
    ).fetchall()


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


def import_counts(conn: psycopg.Connection) -> dict[str, int]:
    """How far imports got, for a progress line: files catalogued, files with events
    stored (a range run's import records no per-file state), the events the catalog says
    they hold, and the events stored."""
    row = conn.execute(
        """SELECT count(*),
                  (SELECT count(DISTINCT source_file_id) FROM events
                   WHERE source_file_id IS NOT NULL),
                  coalesce(sum(event_count), 0), (SELECT count(*) FROM events)
           FROM source_files"""
    ).fetchone()
    assert row is not None
    keys = ("files", "files_imported", "events_expected", "events")
    return dict(zip(keys, (int(v) for v in row), strict=True))
