"""Which days to dream: from the first day still holding undreamed turns (looking back
MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS) to today. The nightly schedule, the session-end
sensor's window and a bare `memory-platform dream` all plan with these functions."""

from datetime import date, datetime, timedelta, timezone

from memory_platform.days import clamp_to_partitions
from memory_platform.settings import Settings
from memory_platform.store import Database
from memory_platform.store.dream import candidate_counts_in, first_undreamed_day, staged_in_days


def nightly_range(first_undreamed: date | None, now: datetime) -> tuple[str, str] | None:
    """(first_day, last_day) to dream: from the first undreamed day to today (UTC, the
    partitions' calendar), inside the partition range; None when nothing is left."""
    if first_undreamed is None:
        return None
    return clamp_to_partitions(first_undreamed.isoformat(), "9999-12-31", now)


def undreamed_span(db: Database, settings: Settings,
                   now: datetime | None = None) -> tuple[str, str] | None:
    """(first, last) partition keys covering what is not dreamed yet within the look-back
    window; None when everything in it is dreamed."""
    now = now or datetime.now(timezone.utc)
    since = now.date() - timedelta(days=settings.dream_lookback_days)
    with db.connect() as conn:
        first = first_undreamed_day(conn, since)
    return nightly_range(first, now)


def dream_outcome(db: Database, days: list[date]) -> dict:
    """What dreaming `days` produced: candidates by status and how many were staged."""
    with db.connect() as conn:
        counts = candidate_counts_in(conn, days)
        staged = staged_in_days(conn, days)
    return {"candidates": counts, "staged": len(staged)}
