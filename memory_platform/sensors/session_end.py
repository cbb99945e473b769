"""`session_end_sensor`: a Claude Code session that ended triggers `dream_job` over its days
(ingesting the transcript first), throttled. The decision is `dream.triggers.evaluate`."""

import time
from datetime import datetime, timezone

import dagster as dg

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
from memory_platform.jobs import (
    SESSIONS_TAG,
    THEN_TAG,
    TRIGGER_TAG,
    ingest_raw_events_job,
    range_tags,
)
from memory_platform.llm.providers import llm_not_configured
from memory_platform.resources import CairnResource
from memory_platform.sensors.status import dreams_default_status, dreams_off_note


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
    context: dg.SensorEvaluationContext, cairn: CairnResource
) -> dg.SensorResult:
    """Claude Code sessions that ended (quiet for MEMORY_PLATFORM_SESSION_QUIET_MINUTES, or
    reported by the SessionEnd hook) trigger an ingest run over their days, followed by
    `dream_job` (dream_after_ingest_sensor), which dreams incrementally; at most one per
    MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES, later sessions batched into the next."""
    problem = llm_not_configured()
    if problem:  # the cursor and the queue stay as they are: nothing is lost meanwhile
        return dg.SensorResult(skip_reason=f"the dream needs an LLM: {problem}")
    settings = cairn.settings()
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
