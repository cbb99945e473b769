"""Reading cairn around one event and by day: an event with its neighbouring turns, and
the per-day, per-source counts of a filter (the timeline). Search itself is search.py."""

from datetime import date, datetime

import psycopg

from memory_platform.privacy.egress import outgoing_counted
from memory_platform.query.connections import on_connection
from memory_platform.query.inputs import as_utc
from memory_platform.query.search import SearchFilters
from memory_platform.store import Database, event_reads, event_search


def get_event(db: Database, event_id: int, *, before: int = 0, after: int = 0) -> dict | None:
    """{"event": ..., "before": [...], "after": [...], "masked": n}: the event (JSON-safe,
    keyed `event_id`, without the raw record, masked) and up to `before`/`after` turns around
    it in its conversation, ordered by (occurred_at, id), oldest first; `masked` counts the
    credentials masked in all of them (the faces say "3 credentials masked"). None if there
    is no such event."""
    def run(conn: psycopg.Connection) -> tuple:
        event = event_reads.get_event(conn, event_id)
        if event is None:
            return None, [], []
        return event, *event_reads.conversation_neighbours(conn, event, max(0, before),
                                                           max(0, after))

    event, earlier, later = on_connection(db, run)
    if event is None:
        return None
    rows = [_json_safe(e) for e in (event, *earlier, *later)]
    shown = [row for row, _ in rows]
    return {"event": shown[0], "before": shown[1:1 + len(earlier)],
            "after": shown[1 + len(earlier):], "masked": sum(hits for _, hits in rows)}


def timeline(
    db: Database,
    *,
    since: datetime | date | str | None,
    until: datetime | date | str | None,
    filters: SearchFilters | None = None,
) -> list[dict]:
    """Events per UTC day, source and machine in [since, until) (and the other filters)."""
    base = filters or SearchFilters()
    f = base.to_store()
    f = event_search.Filter(source=f.source, project=f.project, role=f.role,
                     conversation_id=f.conversation_id,
                     since=as_utc(since, "since") if since is not None else f.since,
                     until=as_utc(until, "until") if until is not None else f.until)
    rows = on_connection(db, lambda conn: event_search.timeline(conn, f))
    return [{"day": day, "source": source, "events": n, "machine": machine}
            for day, source, n, machine in rows]


def _json_safe(row: dict) -> tuple[dict, int]:
    """The row as it leaves the store: JSON-safe, and every string masked (the turn, its
    project path, its author...: a credential can sit in any of them; raw stays in cairn);
    with how many masks that applied."""
    out, masked = {}, 0
    for key, value in row.items():
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, str):
            value, hits = outgoing_counted(value)
            masked += hits
        out["event_id" if key == "id" else key] = value
    return out, masked
