"""The nightly dream: at 03:00 local time, one run over every day still holding undreamed
events, bounded by a look-back window."""

import os
from datetime import date, datetime, timedelta, timezone

import dagster as dg

from memory_platform.llm.providers import llm_not_configured
from memory_platform.resources import CairnResource
from memory_platform.sensors.sources import RANGE_END, RANGE_START, clamp_to_partitions
from memory_platform.store.dream import first_undreamed_day

DREAM_JOB = "dream_job"  # defined with the dream assets; targeted by name
TRIGGER_TAG = "memory-platform/trigger"
DEFAULT_TIMEZONE = "UTC"
DEFAULT_LOOKBACK_DAYS = 30
NIGHTLY_CRON = "0 3 * * *"


def env_int(name: str, default: int, minimum: int = 1) -> int:
    """An integer setting from the environment; a bad value is an error naming the variable."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise ValueError(f"{name}={raw!r} must be at least {minimum}")
    return value


def dream_timezone() -> str:
    """MEMORY_PLATFORM_TIMEZONE: the IANA zone the nightly dream's 03:00 is in."""
    return os.environ.get("MEMORY_PLATFORM_TIMEZONE", "").strip() or DEFAULT_TIMEZONE


def dream_lookback_days() -> int:
    """MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS: how far back an unattended dream (schedule or
    sensor) reaches. Older history is dreamed by an explicit backfill or
    `memory-platform dream --since`, so automation never fans out across years."""
    return env_int("MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS", DEFAULT_LOOKBACK_DAYS)


def nightly_range(
    first_undreamed: date | None, now: datetime
) -> tuple[str, str] | None:
    """(first_day, last_day) to dream: from the first undreamed day to today (UTC, the
    partitions' calendar), inside the partition range; None when nothing is left."""
    if first_undreamed is None:
        return None
    return clamp_to_partitions(first_undreamed.isoformat(), "9999-12-31", now)


@dg.schedule(
    cron_schedule=NIGHTLY_CRON,
    job_name=DREAM_JOB,
    # Read when definitions load (an environment read, no I/O): Dagster fixes a schedule's
    # zone at definition time.
    execution_timezone=dream_timezone(),
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def nightly_dream_schedule(
    context: dg.ScheduleEvaluationContext, cairn: CairnResource
) -> dg.RunRequest | dg.SkipReason:
    """Every night at 03:00 (MEMORY_PLATFORM_TIMEZONE, default UTC): one run of `dream_job`
    over the partition range from the first day with undreamed events (looking back
    MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS, default 30) to today."""
    problem = llm_not_configured()
    if problem:
        return dg.SkipReason(f"the dream needs an LLM: {problem}")
    now = (context.scheduled_execution_time or datetime.now(timezone.utc)).astimezone(
        timezone.utc)
    since = now.date() - timedelta(days=dream_lookback_days())
    with cairn.database().connect() as conn:
        first = first_undreamed_day(conn, since)
    span = nightly_range(first, now)
    if span is None:
        return dg.SkipReason(f"nothing undreamed since {since.isoformat()}")
    start, end = span
    return dg.RunRequest(
        # One run per scheduled night and range: a re-evaluated tick requests nothing twice.
        run_key=f"nightly-dream:{now.date().isoformat()}:{start}..{end}",
        tags={RANGE_START: start, RANGE_END: end, TRIGGER_TAG: "nightly"},
    )
