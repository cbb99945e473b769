"""Whether the dream triggers start switched on. The daemon's environment is fixed when it
starts, so without an LLM provider the nightly schedule, the session-end sensor and the
dream-after-ingest sensor are registered stopped, with the reason in their description,
instead of skipping with the same message every minute."""

import dagster as dg

from memory_platform.llm.providers import llm_not_configured


def dreams_default_status() -> dg.DefaultSensorStatus:
    return (dg.DefaultSensorStatus.RUNNING if llm_not_configured() is None
            else dg.DefaultSensorStatus.STOPPED)


def dreams_schedule_status() -> dg.DefaultScheduleStatus:
    return (dg.DefaultScheduleStatus.RUNNING if llm_not_configured() is None
            else dg.DefaultScheduleStatus.STOPPED)


def dreams_off_note() -> str:
    """What the UI says under a dream trigger that starts stopped."""
    problem = llm_not_configured()
    return "" if problem is None else (
        f" Registered stopped: no LLM is configured when the definitions load ({problem})")
