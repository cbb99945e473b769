"""SQL that reads the raw events: totals for status, a partition's window of events for the
lake and the checks, and the rows behind search results (hits, an event with its
conversation context). Every query names its columns: no vector is ever read here, and
`raw` only when asked for."""

from collections.abc import Iterable, Sequence
from datetime import datetime

import psycopg

# Columns of an event as these reads return it: never `raw` unless asked, never a vector.
EVENT_COLUMNS = (
    "id", "source", "native_id", "conversation_id", "parent_native_id", "role", "kind",
    "author", "occurred_at", "text", "project", "git_branch", "is_sidechain",
    "on_active_branch", "attrs", "content_hash", "source_file_id", "source_line", "ingested_at",
)
_EVENT_SELECT = ", ".join(f"e.{c}" for c in EVENT_COLUMNS)
# The name of the machine an event was collected on (migration 0011), for the reads behind
# answers (a hit, an event in its conversation) and the lake (its name, not the row id).
_MACHINE = "(SELECT m.name FROM machines m WHERE m.id = e.machine_id) AS machine"
_SHOWN_COLUMNS = (*EVENT_COLUMNS, "machine")
_SHOWN_SELECT = f"{_EVENT_SELECT}, {_MACHINE}"


# --- totals for status ----------------------------------------------------------------


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


# --- a partition's window: the lake and the checks ------------------------------------


def events_in_window(
    conn: psycopg.Connection,
    start: datetime,
    end: datetime,
    columns: Sequence[str] = EVENT_COLUMNS,
    batch_size: int = 5000,
    json_as_text: bool = False,
) -> Iterable[list[tuple]]:
    """Events with start <= occurred_at < end, in pages (server-side cursor). With
    `json_as_text`, the jsonb columns (raw, attrs) come as PostgreSQL's JSON text instead of
    parsed Python objects: a copy that only writes them out (the lake) saves parsing and
    re-serializing every record in Python, which was most of its time."""
    for name in columns:
        if name not in EVENT_COLUMNS and name not in ("raw", "machine"):
            raise ValueError(f"unknown events column {name!r}")
    selected = [f"{c}::text AS {c}" if json_as_text and c in ("raw", "attrs")
                else _MACHINE if c == "machine" else f"e.{c}" for c in columns]
    with conn.transaction():
        with conn.cursor(name="events_window") as cur:
            cur.itersize = batch_size
            cur.execute(
                f"SELECT {', '.join(selected)} FROM events e "
                "WHERE e.occurred_at >= %s AND e.occurred_at < %s ORDER BY e.occurred_at, e.id",
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




# --- search results: hits and an event in its conversation ----------------------------

# Columns of a hit, in this order (fetch_hits). No `raw`, no vectors.
HIT_COLUMNS = (
    "id", "source", "conversation_id", "occurred_at", "role", "kind", "project", "author",
    "text", "machine",
)
_HIT_SELECT = ", ".join(f"e.{c}" for c in HIT_COLUMNS[:-1]) + ", " + _MACHINE


def fetch_hits(conn: psycopg.Connection, ids: Sequence[int]) -> dict[int, tuple]:
    """HIT_COLUMNS rows by id (no vectors, no raw record)."""
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT {_HIT_SELECT} FROM events e WHERE e.id = ANY(%s)", (list(ids),)
    )
    return {r[0]: r for r in rows}


def get_event(conn: psycopg.Connection, event_id: int) -> dict | None:
    row = conn.execute(
        f"SELECT {_SHOWN_SELECT} FROM events e WHERE e.id = %s", (event_id,)
    ).fetchone()
    return dict(zip(_SHOWN_COLUMNS, row, strict=True)) if row else None


def conversation_neighbours(
    conn: psycopg.Connection, event: dict, before: int, after: int
) -> tuple[list[dict], list[dict]]:
    """Up to `before` turns preceding and `after` turns following the event in its
    conversation, ordered by (occurred_at, id); oldest first in both lists."""
    if event["conversation_id"] is None:
        return [], []
    key = {"c": event["conversation_id"], "t": event["occurred_at"], "id": event["id"]}
    earlier: list[dict] = []
    later: list[dict] = []
    if before > 0:
        rows = conn.execute(
            f"""SELECT {_SHOWN_SELECT} FROM events e
                WHERE e.conversation_id = %(c)s AND (e.occurred_at, e.id) < (%(t)s, %(id)s)
                ORDER BY e.occurred_at DESC, e.id DESC LIMIT %(n)s""",
            {**key, "n": before},
        ).fetchall()
        earlier = [dict(zip(_SHOWN_COLUMNS, r, strict=True)) for r in reversed(rows)]
    if after > 0:
        rows = conn.execute(
            f"""SELECT {_SHOWN_SELECT} FROM events e
                WHERE e.conversation_id = %(c)s AND (e.occurred_at, e.id) > (%(t)s, %(id)s)
                ORDER BY e.occurred_at, e.id LIMIT %(n)s""",
            {**key, "n": after},
        ).fetchall()
        later = [dict(zip(_SHOWN_COLUMNS, r, strict=True)) for r in rows]
    return earlier, later


def newest_turn(conn: psycopg.Connection, kinds: Sequence[str]) -> tuple[int, str] | None:
    """(id, text) of the newest event of `kinds` with text (bench first-contact)."""
    row = conn.execute(
        "SELECT id, text FROM events WHERE kind = ANY(%s) AND text ~ '\\S' "
        "ORDER BY occurred_at DESC, id DESC LIMIT 1", (list(kinds),)).fetchone()
    return (row[0], row[1]) if row else None
