"""Reads of events over a time range, for summaries and timelines. Text only: these
queries never touch embeddings (rule 7)."""

from collections.abc import Iterator
from datetime import datetime

import psycopg

# What a summary reads of each event.
SUMMARY_COLUMNS = ("id", "source", "conversation_id", "occurred_at", "role", "kind", "project",
                   "text")


def filter_sql(filters) -> tuple[str, list]:
    """WHERE fragments for SearchFilters-like objects (source, project, role,
    conversation_id), parameterised."""
    clauses, params = [], []
    for column in ("source", "project", "role", "conversation_id"):
        value = getattr(filters, column, None) if filters is not None else None
        if value is not None:
            clauses.append(f"{column} = %s")
            params.append(value)
    return "".join(f" AND {c}" for c in clauses), params


def events_for_summary(
    conn: psycopg.Connection,
    since: datetime,
    until: datetime,
    filters=None,
    page_size: int = 500,
    kinds: tuple[str, ...] = ("message", "summary"),
) -> Iterator[list[tuple]]:
    """Conversational events in [since, until), oldest first, in pages (keyset pagination,
    so a week of history is never one giant result)."""
    extra, params = filter_sql(filters)
    last = (since, 0)
    while True:
        rows = conn.execute(
            f"""SELECT {', '.join(SUMMARY_COLUMNS)} FROM events
                WHERE (occurred_at, id) > (%s, %s) AND occurred_at < %s
                  AND kind = ANY(%s) AND text <> ''{extra}
                ORDER BY occurred_at, id LIMIT %s""",
            [last[0], last[1], until, list(kinds), *params, page_size],
        ).fetchall()
        if not rows:
            return
        yield rows
        last = (rows[-1][3], rows[-1][0])
