"""`session_end_sensor`: a Claude Code session that ended triggers `dream_job` over its days
(ingesting the transcript first), throttled. The decision is `dream.triggers.evaluate`.

The dream runs after the import of its days: an ingest run tagged `memory-platform/then:
dream` (requested by the nightly schedule and the session-end sensor) that succeeds is
followed by one run of `dream_job` over the same days, with the same trigger tags.

The nightly dream: at 03:00 local time, one run over every day still holding undreamed
events, bounded by a look-back window."""

import time
from datetime import datetime, timedelta, timezone

import dagster as dg

from memory_platform.defs.dream.jobs import dream_job
from memory_platform.defs.ingest.jobs import ingest_raw_events_job
from memory_platform.dream.plan import undreamed_span
from memory_platform.dream.triggers import (
    MAX_QUEUE_FILES,
    DreamRequest,
    Policy,
    dump_cursor,
    evaluate,
    finish_queued,
    hook_transcripts,
    list_transcripts,
    parse_cursor,
    read_queue,
)
from memory_platform.ingest.hooks import queue_dir
from memory_platform.llm.providers import llm_not_configured
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import (
    RANGE_END,
    RANGE_START,
    SESSIONS_TAG,
    THEN_TAG,
    TRIGGER_TAG,
    range_tags,
)
from memory_platform.sensors.dream_switch import (
    dreams_default_status,
    dreams_off_note,
    dreams_schedule_status,
)
from memory_platform.settings import load_settings


def request_tags(request: DreamRequest) -> dict[str, str]:
    """One ingest run over the request's days, then the dream (dream_after_ingest_sensor),
    marked as a session-end dream."""
    return range_tags(request.first, request.last, **{
        TRIGGER_TAG: "session-end", SESSIONS_TAG: str(request.sessions), THEN_TAG: "dream"})


@dg.sensor(
    job=ingest_raw_events_job,
    minimum_interval_seconds=60,
    default_status=dreams_default_status(),
    description="Claude Code sessions that ended trigger the import of their days, then a "
    "dream over them (at most one per MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES)."
    + dreams_off_note(),
)
def session_end_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult:
    """Claude Code sessions that ended (quiet for MEMORY_PLATFORM_SESSION_QUIET_MINUTES, or
    reported by the SessionEnd hook) trigger an ingest run over their days, followed by
    `dream_job` (dream_after_ingest_sensor), which dreams incrementally; at most one per
    MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES, later sessions batched into the next."""
    problem = llm_not_configured()
    if problem:  # the cursor and the queue stay as they are: nothing is lost meanwhile
        return dg.SensorResult(skip_reason=f"the dream needs an LLM: {problem}")
    settings = database.settings()
    policy = Policy.from_settings(settings)
    now = datetime.now(timezone.utc)
    state = parse_cursor(context.cursor)
    queue = queue_dir(settings.home)

    finish_queued(queue, state.queued, now)
    events, bad = read_queue(queue, MAX_QUEUE_FILES, skip=state.queued)
    for problem in bad:
        context.log.warning(f"unreadable hook event moved to failed/: {problem}")
    hooked = []
    for name, event in events:
        refused: list[str] = []
        files = hook_transcripts(event, settings.claude_projects, refused)
        for reason in refused:
            context.log.warning(f"hook event {name}: transcript refused: {reason}")
        if not files:
            context.log.warning(f"hook event {name}: no transcript for session "
                                f"{event['session_id']} at {event.get('transcript_path')}")
        hooked.extend(files)

    started = time.monotonic()
    outcome = evaluate(state, transcripts=list_transcripts(settings.claude_projects),
                       hooked=hooked, now=now, policy=policy)
    state.queued = [name for name, _ in events]
    cursor = dump_cursor(state)
    context.log.info(f"{outcome.message} ({time.monotonic() - started:.1f}s)")
    if not outcome.requests:
        return dg.SensorResult(skip_reason=outcome.message, cursor=cursor)
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=r.run_key, tags=request_tags(r)) for r in outcome.requests],
        cursor=cursor,
    )


# Tags an ingest run hands on to the dream it asked for.
HANDED_ON = ("memory-platform/trigger", "memory-platform/sessions")


def dream_request(run: dg.DagsterRun) -> dg.RunRequest | dg.SkipReason:
    """What to launch after `run` (a successful ingest run)."""
    tags = run.tags
    if tags.get(THEN_TAG) != "dream":
        return dg.SkipReason(f"ingest run {run.run_id} asked for no dream")
    first, last = tags.get(RANGE_START), tags.get(RANGE_END)
    if not (first and last):
        return dg.SkipReason(f"ingest run {run.run_id} has no day range")
    problem = llm_not_configured()
    if problem:
        return dg.SkipReason(f"the dream needs an LLM: {problem}")
    handed = {key: tags[key] for key in HANDED_ON if key in tags}
    # One dream per ingest run: a re-evaluated status event requests nothing twice.
    return dg.RunRequest(run_key=f"dream-after:{run.run_id}",
                         tags=range_tags(first, last, **handed))


@dg.run_status_sensor(
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[ingest_raw_events_job],
    request_job=dream_job,
    default_status=dreams_default_status(),
)
def dream_after_ingest_sensor(context: dg.RunStatusSensorContext):
    """After an ingest run tagged `memory-platform/then: dream` succeeds, one `dream_job` run
    over the same days (off, like every dream trigger, while no LLM is configured)."""
    return dream_request(context.dagster_run)


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
    context: dg.ScheduleEvaluationContext, database: DatabaseResource
) -> dg.RunRequest | dg.SkipReason:
    """Every night at 03:00 (MEMORY_PLATFORM_TIMEZONE, default UTC): one ingest run over the
    partition range from the first day with undreamed events (looking back
    MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS, default 30) to today, then `dream_job` over the same
    days (dream_after_ingest_sensor)."""
    problem = llm_not_configured()
    if problem:
        return dg.SkipReason(f"the dream needs an LLM: {problem}")
    settings = database.settings()
    now = (context.scheduled_execution_time or datetime.now(timezone.utc)).astimezone(
        timezone.utc)
    span = undreamed_span(database.database(), settings, now)
    if span is None:
        since = now.date() - timedelta(days=settings.dream_lookback_days)
        return dg.SkipReason(f"nothing undreamed since {since.isoformat()}")
    start, end = span
    return dg.RunRequest(
        # One run per scheduled night and range: a re-evaluated tick requests nothing twice.
        run_key=f"nightly-dream:{now.date().isoformat()}:{start}..{end}",
        tags=range_tags(start, end, **{TRIGGER_TAG: "nightly", THEN_TAG: "dream"}),
    )
