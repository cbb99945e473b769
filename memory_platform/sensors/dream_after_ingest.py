"""The dream runs after the import of its days: an ingest run tagged `memory-platform/then:
dream` (requested by the nightly schedule and the session-end sensor) that succeeds is
followed by one run of `dream_job` over the same days, with the same trigger tags."""

import dagster as dg

from memory_platform.jobs import (
    RANGE_END,
    RANGE_START,
    THEN_TAG,
    dream_job,
    ingest_raw_events_job,
    range_tags,
)
from memory_platform.llm.providers import llm_not_configured
from memory_platform.sensors.status import dreams_default_status

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
