"""The nightly dream: at 03:00 local time, one run over every day still holding undreamed
events, bounded by a look-back window."""

from datetime import datetime, timedelta, timezone

import dagster as dg

from memory_platform.dream.plan import undreamed_span
from memory_platform.jobs import THEN_TAG, TRIGGER_TAG, ingest_raw_events_job, range_tags
from memory_platform.llm.providers import llm_not_configured
from memory_platform.resources import CairnResource
from memory_platform.sensors.status import dreams_off_note, dreams_schedule_status
from memory_platform.settings import load_settings

NIGHTLY_CRON = "0 3 * * *"


@dg.schedule(
    cron_schedule=NIGHTLY_CRON,
    job=ingest_raw_events_job,
    # Read when definitions load (an environment read, no I/O): Dagster fixes a schedule's
    # zone at definition time.
    execution_timezone=load_settings().timezone,
    default_status=dreams_schedule_status(),
    description="At 03:00 (MEMORY_PLATFORM_TIMEZONE): import the undreamed days, then dream "
    "over them." + dreams_off_note(),
)
def nightly_dream_schedule(
    context: dg.ScheduleEvaluationContext, cairn: CairnResource
) -> dg.RunRequest | dg.SkipReason:
    """Every night at 03:00 (MEMORY_PLATFORM_TIMEZONE, default UTC): one ingest run over the
    partition range from the first day with undreamed events (looking back
    MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS, default 30) to today, then `dream_job` over the same
    days (dream_after_ingest_sensor)."""
    problem = llm_not_configured()
    if problem:
        return dg.SkipReason(f"the dream needs an LLM: {problem}")
    settings = cairn.settings()
    now = (context.scheduled_execution_time or datetime.now(timezone.utc)).astimezone(
        timezone.utc)
    span = undreamed_span(cairn.database(), settings, now)
    if span is None:
        since = now.date() - timedelta(days=settings.dream_lookback_days)
        return dg.SkipReason(f"nothing undreamed since {since.isoformat()}")
    start, end = span
    return dg.RunRequest(
        # One run per scheduled night and range: a re-evaluated tick requests nothing twice.
        run_key=f"nightly-dream:{now.date().isoformat()}:{start}..{end}",
        tags=range_tags(start, end, **{TRIGGER_TAG: "nightly", THEN_TAG: "dream"}),
    )
