"""The weekly report: every Monday at 06:00 (after the nightly dream's 03:00), one run of
`weekly_report_job` for the week that just ended."""

from datetime import datetime, timezone

import dagster as dg

from memory_platform.days import last_complete_week, week_label
from memory_platform.defs.analytics.jobs import weekly_report_job
from memory_platform.resources.common import TRIGGER_TAG
from memory_platform.settings import load_settings

WEEKLY_CRON = "0 6 * * 1"


@dg.schedule(
    cron_schedule=WEEKLY_CRON,
    job=weekly_report_job,
    # Same zone as the nightly dream, so "after the dream" holds wherever the user lives.
    execution_timezone=load_settings().timezone,
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def weekly_report_schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    """Mondays at 06:00 (MEMORY_PLATFORM_TIMEZONE): the lake, the marts and the report of
    the ISO week that ended on Sunday. Runs without an LLM too (the report then says its
    summaries need one)."""
    now = context.scheduled_execution_time or datetime.now(timezone.utc)
    monday = last_complete_week(now)
    return dg.RunRequest(
        run_key=f"weekly-report:{week_label(monday)}",
        partition_key=monday.isoformat(),
        tags={TRIGGER_TAG: "weekly"},
    )
