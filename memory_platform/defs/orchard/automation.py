"""The orchard's schedules: a daily discovery of projects in the events (proposals only) and the
weekly snapshot of the portfolio, each Monday for the week that just ended."""

from datetime import datetime, timedelta, timezone

import dagster as dg

from memory_platform.defs.orchard.jobs import discover_projects_job, snapshot_orchard_job
from memory_platform.resources.common import TRIGGER_TAG
from memory_platform.settings import load_settings

# Weeks are ISO weeks in UTC (orchard/snapshots.py): the schedule runs on UTC's clock, so a
# week has always ended when its snapshot is taken, whatever MEMORY_PLATFORM_TIMEZONE is.
WEEKLY_CRON = "0 5 * * 1"
DISCOVERY_CRON = "30 4 * * *"


@dg.schedule(
    cron_schedule=WEEKLY_CRON,
    job=snapshot_orchard_job,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Mondays at 05:00 UTC: the orchard's snapshot of the week that just ended.",
)
def weekly_orchard_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """One run per week: the snapshot partition of the previous ISO week (its Monday)."""
    now = (context.scheduled_execution_time or datetime.now(timezone.utc)).astimezone(
        timezone.utc)
    monday = now.date() - timedelta(days=now.weekday() + 7)
    key = monday.isoformat()
    # The run key is the week: a replayed tick requests nothing twice.
    return dg.RunRequest(run_key=f"orchard-snapshot:{key}", partition_key=key,
                         tags={TRIGGER_TAG: "weekly"})


@dg.schedule(
    cron_schedule=DISCOVERY_CRON,
    job=discover_projects_job,
    # Read when definitions load (an environment read, no I/O), as the nightly dream does.
    execution_timezone=load_settings().timezone,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily at 04:30 (MEMORY_PLATFORM_TIMEZONE): propose projects found in the events. "
    "Nothing is created until a person accepts a proposal.",
)
def daily_project_discovery_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """One discovery run a day (proposals are refreshed in place, so a rerun is harmless)."""
    day = (context.scheduled_execution_time or datetime.now(timezone.utc)).date()
    return dg.RunRequest(run_key=f"project-discovery:{day.isoformat()}",
                         tags={TRIGGER_TAG: "daily"})
