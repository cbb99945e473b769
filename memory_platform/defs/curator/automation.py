"""The curator's automation: namespaces as partitions, the weekly run, the daily purge.

- `curator_namespaces_sensor` keeps the `namespace` dimension of the curator's partitions
  equal to the vault's primary namespaces (adding new ones; a namespace is never deleted,
  so its history of runs stays readable in the UI).
- `weekly_curator_schedule`: Sunday 04:00 local time, one run of `curator_job` per
  namespace for the week that has just begun (run key per namespace and week: a
  re-evaluated tick requests nothing twice).
- `daily_curator_purge_schedule`: 04:30 local time, `curator_purge_job`.
"""

from datetime import datetime, timezone

import dagster as dg

from memory_platform.curator.config import week_of
from memory_platform.curator.listing import namespaces
from memory_platform.defs.curator.jobs import curator_job, curator_purge_job
from memory_platform.llm.providers import llm_not_configured
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import (
    CURATOR_NAMESPACES_NAME,
    TRIGGER_TAG,
    curator_key,
    curator_namespaces,
)
from memory_platform.sensors.dream_switch import dreams_off_note, dreams_schedule_status
from memory_platform.settings import load_settings

WEEKLY_CRON = "0 4 * * 0"  # Sunday 04:00, after the nightly dream at 03:00
PURGE_CRON = "30 4 * * *"


@dg.sensor(
    name="curator_namespaces_sensor",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Adds a curator partition for each new primary vault namespace.",
)
def curator_namespaces_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult | dg.SkipReason:
    wanted = namespaces(database.database())
    have = set(context.instance.get_dynamic_partitions(CURATOR_NAMESPACES_NAME))
    missing = [n for n in wanted if n not in have]
    if not missing:
        return dg.SkipReason(f"{len(wanted)} namespaces, all partitions present")
    context.log.info(f"adding curator partitions: {', '.join(missing)}")
    return dg.SensorResult(dynamic_partitions_requests=[
        curator_namespaces.build_add_request(missing)])


@dg.schedule(
    cron_schedule=WEEKLY_CRON,
    job=curator_job,
    # Read when definitions load (an environment read, no I/O), as the nightly dream's.
    execution_timezone=load_settings().timezone,
    # Like the dream's triggers: registered stopped, saying why, while no LLM is configured.
    default_status=dreams_schedule_status(),
    description="Sunday 04:00 (MEMORY_PLATFORM_TIMEZONE): one curator run per vault "
    "namespace for the week." + dreams_off_note(),
)
def weekly_curator_schedule(
    context: dg.ScheduleEvaluationContext,
) -> list[dg.RunRequest] | dg.SkipReason:
    """Every Sunday at 04:00 (MEMORY_PLATFORM_TIMEZONE): one `curator_job` run per vault
    namespace (the partitions `curator_namespaces_sensor` added) for the week starting that
    day. The breaker refuses in these runs as in any other."""
    problem = llm_not_configured()
    if problem:
        return dg.SkipReason(f"the curator needs an LLM: {problem}")
    moment = context.scheduled_execution_time or datetime.now(timezone.utc)
    week = week_of(moment, load_settings().timezone).isoformat()
    names = sorted(context.instance.get_dynamic_partitions(CURATOR_NAMESPACES_NAME))
    if not names:
        return dg.SkipReason("no vault namespace has a curator partition yet "
                             "(curator_namespaces_sensor adds them)")
    return [dg.RunRequest(run_key=f"weekly-curator:{name}:{week}",
                          partition_key=curator_key(name, week),
                          tags={TRIGGER_TAG: "weekly"})
            for name in names]


@dg.schedule(
    cron_schedule=PURGE_CRON,
    job=curator_purge_job,
    execution_timezone=load_settings().timezone,
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def daily_curator_purge_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """Every day at 04:30: purge the archives whose restore window has ended."""
    moment = context.scheduled_execution_time or datetime.now(timezone.utc)
    return dg.RunRequest(run_key=f"curator-purge:{moment.date().isoformat()}",
                         tags={TRIGGER_TAG: "daily-purge"})
