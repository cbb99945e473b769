"""`memory-platform up`: bring the whole thing up on the embedded default.

Imports what the watched folders hold (a generated demo history on a machine with no AI
history of its own), materializes it through Dagster so the UI shows every partition, then
serves `dagster dev` on the project's definitions.
"""

import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import dagster as dg

from memory_platform.config import Settings
from memory_platform.store import Database
from memory_platform.store import raw as store


def has_own_history(settings: Settings) -> bool:
    for folder in (settings.claude_projects, settings.inbox, settings.notes):
        if folder is not None and folder.exists() and any(p.is_file() for p in folder.rglob("*")):
            return True
    return False


def prepare_instance(settings: Settings) -> dg.DagsterInstance:
    """Dagster's own storage lives beside the data, separate from the application database."""
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    config = settings.dagster_home / "dagster.yaml"
    if not config.exists():
        # A personal memory store does not phone home; edit this file to change it. The
        # LLM-calling assets share the `llm` pool: one at a time, so spend stays bounded.
        config.write_text("telemetry:\n  enabled: false\n"
                          "concurrency:\n  pools:\n    default_limit: 1\n")
    os.environ["DAGSTER_HOME"] = str(settings.dagster_home)
    return dg.DagsterInstance.get()


# Dagster's step-by-step DEBUG lines would bury what `up` has to say; warnings still show.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def bring_up(
    settings: Settings, demo: bool | None = None, log: Callable[[str], None] = print
) -> dict:
    from memory_platform.assets.cairn import source_files
    from memory_platform.definitions import defs
    from memory_platform.resources import CairnResource
    from memory_platform.sensors.sources import RANGE_END, RANGE_START, clamp_to_partitions

    database = Database.from_settings(settings)
    log(f"database: {'external' if settings.database_url else f'embedded in {settings.pgdata}'}")
    database.url()  # start the embedded server now, so later failures are not about it
    if demo is None:
        demo = not has_own_history(settings)
    if demo and not settings.demo.exists():
        from memory_platform import synthetic

        manifest = synthetic.generate_demo(settings.demo)
        log(f"no AI history found: generated a demo history ({manifest['events']} events) "
            f"in {settings.demo}")
    instance = prepare_instance(settings)
    resources = {"cairn": CairnResource()}
    log("cataloguing source files…")
    result = dg.materialize(
        [source_files], instance=instance, resources=resources, run_config=QUIET
    )
    if not result.success:
        raise RuntimeError("materializing source_files failed; see `dagster dev` run logs")
    with database.connect() as conn:
        files = store.list_source_files(conn)
    starts = [f.min_event_at for f in files if f.min_event_at is not None]
    ends = [f.max_event_at for f in files if f.max_event_at is not None]
    partitions = 0
    if starts:
        span = clamp_to_partitions(
            min(starts).strftime("%Y-%m-%d"), max(ends).strftime("%Y-%m-%d"),
            datetime.now(timezone.utc),
        )
        if span:
            log(f"importing raw events {span[0]} .. {span[1]} (one run)…")
            job = defs.resolve_job_def("ingest_raw_events_job")
            run = job.execute_in_process(
                instance=instance, tags={RANGE_START: span[0], RANGE_END: span[1]},
                run_config=QUIET, raise_on_error=True,
            )
            if not run.success:
                raise RuntimeError("the ingest run failed; see `dagster dev` run logs")
            partitions = (datetime.fromisoformat(span[1]) - datetime.fromisoformat(span[0])).days + 1
    with database.connect() as conn:
        summary = store.database_summary(conn)
    return {**summary, "partitions": partitions}


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 3000) -> int:
    env = {**os.environ, "DAGSTER_HOME": str(settings.dagster_home)}
    command = [
        sys.executable, "-m", "dagster", "dev", "-m", "memory_platform.definitions",
        "-h", host, "-p", str(port),
    ]
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0


def undreamed_span(settings: Settings) -> tuple[str, str] | None:
    """(first, last) partition keys covering what is not dreamed yet, looking back at most
    MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS, as the nightly schedule does; None when everything
    in that window is dreamed."""
    from datetime import timedelta

    from memory_platform.schedules import dream_lookback_days, nightly_range
    from memory_platform.store import dream as dream_store

    now = datetime.now(timezone.utc)
    since = now.date() - timedelta(days=dream_lookback_days())
    with Database.from_settings(settings).connect() as conn:
        first = dream_store.first_undreamed_day(conn, since)
    return nightly_range(first, now)


def run_dream(
    settings: Settings, first: str, last: str, log: Callable[[str], None] = print
) -> dict:
    """Run `dream_job` over [first, last] (partition keys) in this process, on the instance
    `dagster dev` shows, so the run and its lineage appear in the UI like a scheduled one."""
    from memory_platform.definitions import defs
    from memory_platform.llm.providers import provider_from_env
    from memory_platform.sensors.sources import RANGE_END, RANGE_START
    from memory_platform.store import dream as dream_store

    provider_from_env()  # no provider: stop now with the settings to set, not mid-run
    instance = prepare_instance(settings)
    job = defs.resolve_job_def("dream_job")
    log(f"dreaming {first} .. {last} (one run)…")
    run = job.execute_in_process(
        instance=instance,
        tags={RANGE_START: first, RANGE_END: last, "memory-platform/trigger": "cli"},
        run_config=QUIET, raise_on_error=True,
    )
    if not run.success:
        raise RuntimeError(f"the dream run {run.run_id} failed; see `dagster dev` run logs")
    from memory_platform.dream import days_in

    start = datetime.fromisoformat(first).replace(tzinfo=timezone.utc)
    days = days_in(start, datetime.fromisoformat(last).replace(tzinfo=timezone.utc)
                   + timedelta(days=1))
    with Database.from_settings(settings).connect() as conn:
        counts = dream_store.candidate_counts_in(conn, days)
        staged = dream_store.staged_in_days(conn, days)
    digest = run.asset_materializations_for_node("dream_digest")
    path = digest[-1].metadata["path"].value if digest else None
    return {"run_id": run.run_id, "first": first, "last": last, "candidates": counts,
            "staged": len(staged), "digest": path}
