"""Launching Dagster runs from the other faces, in one place.

- `prepare_instance`: the Dagster instance `memory-platform up` serves, beside the data.
- `run_job`: a job executed in this process on that instance, so a run started from the CLI
  (or the dashboard) shows in the UI with its lineage like a scheduled one.
- `first_import` / `bring_up`: `memory-platform up`'s import of the watched folders as
  Dagster runs (after first_contact.prepare; supervisor.py serves the UI meanwhile).
- `run_dream`: `memory-platform dream` over a range of days.
- `promote_via_dagster`: one review decision as a run of `vault_promotion_job`.
- `run_curate` / `run_curator_purge`: `memory-platform curate` (one `curator_job` or
  `curator_dry_run_job` run per namespace) and `memory-platform curator purge`.
- `run_weekly_report`: `memory-platform report`, one run of `weekly_report_job` for a week.

Importing this module loads the definitions (Dagster itself); faces import it only in the
commands that launch something.
"""

import os
from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg

from memory_platform import first_contact, progress
from memory_platform.days import days_of_keys, week_label
from memory_platform.definitions import defs
from memory_platform.defs.analytics.jobs import weekly_report_job
from memory_platform.defs.curator.jobs import (
    DRY_RUN,
    curator_dry_run_job,
    curator_job,
    curator_purge_job,
)
from memory_platform.defs.dream.jobs import dream_job
from memory_platform.defs.ingest.jobs import ingest_raw_events_job
from memory_platform.defs.vault.assets import PromotionConfig, vault_promotions
from memory_platform.defs.vault.jobs import vault_promotion_job
from memory_platform.dream.plan import undreamed_span
from memory_platform.ingest import catalog
from memory_platform.llm.providers import provider_from_env
from memory_platform.resources.common import (
    ACTOR_TAG,
    CURATOR_NAMESPACES_NAME,
    DECISION_TAG,
    MEMORY_TAG,
    PENDING_PARTITIONS_NAME,
    TRIGGER_TAG,
    curator_key,
    range_tags,
)
from memory_platform.settings import Settings
from memory_platform.store import Database
from memory_platform.vault import review

# Dagster's step-by-step DEBUG lines would bury what the CLI has to say; warnings still show.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
SILENT = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def prepare_instance(settings: Settings) -> dg.DagsterInstance:
    """Dagster's own storage lives beside the data, separate from the application database
    (its dagster.yaml: first_contact.write_instance_config)."""
    first_contact.write_instance_config(settings)
    os.environ["DAGSTER_HOME"] = str(settings.dagster_home)
    return dg.DagsterInstance.get()


def run_job(job,
            instance: dg.DagsterInstance, *, tags: Mapping[str, str] | None = None,
            run_config: Mapping[str, Any] | None = None, partition_key: str | None = None,
            quiet: Mapping[str, Any] = QUIET, raise_on_error: bool = True,
            asset_selection: list[dg.AssetKey] | None = None) -> dg.ExecuteInProcessResult:
    """Execute one of the project's jobs (an object from jobs.py) in this process on
    `instance`, with the project's resources. Raises on a failed step (the run is recorded
    as failed) unless `raise_on_error` is False (the caller reads the outcome); only
    `asset_selection` of its assets (with their checks) when given."""
    resolved = defs.resolve_job_def(job.name)
    return resolved.execute_in_process(
        instance=instance, tags=dict(tags or {}), partition_key=partition_key,
        run_config={**(run_config or {}), **quiet}, raise_on_error=raise_on_error,
        asset_selection=asset_selection)


def first_import(settings: Settings, span: tuple[str, str] | None,
                 log: Callable[[str], None] = print, every: float = 5.0,
                 heart: progress.Heartbeat | None = None) -> dict:
    """The first import as two Dagster runs the UI shows (ingest_raw_events_job over the
    whole span in one run: raw_events and its checks, raw_events_lake; then the same job's
    event_embeddings, turns first), with a progress line every `every` seconds (files,
    events, turns with vectors, rate, time left) from the database (`heart`: one already
    beating, started before this module loaded Dagster). Returns the database summary and
    the partitions imported."""
    if heart is None:
        with first_contact.beating(settings, log, every) as heart:
            return first_import(settings, span, log=log, heart=heart)
    from memory_platform.defs.ingest.assets import source_files

    database = Database.from_settings(settings)
    instance = prepare_instance(settings)
    # The catalog's asset, for the UI's lineage (first_contact.prepare scanned already:
    # this re-reads only what changed since).
    result = dg.materialize([source_files], instance=instance,
                            resources=defs.resources, run_config=QUIET)
    if not result.success:
        raise RuntimeError("materializing source_files failed; see its run in the UI")
    if not span:
        return {**catalog.database_summary(database), "partitions": 0}
    tags = range_tags(*span, **{TRIGGER_TAG: "up"})
    log(f"importing raw events {span[0]} .. {span[1]} (one run; watch it in the UI)…")
    for phase, keys in (("import", IMPORT_ASSETS), ("vectors", EMBED_ASSETS)):
        heart.phase = phase
        run = run_job(ingest_raw_events_job, instance, tags=tags,
                      asset_selection=[dg.AssetKey(k) for k in keys])
        if not run.success:
            raise RuntimeError(f"the {phase} run {run.run_id} failed; see it in the UI")
    return {**catalog.database_summary(database), "partitions": len(days_of_keys(*span))}


IMPORT_ASSETS = ("raw_events", "raw_events_lake")
EMBED_ASSETS = ("event_embeddings",)


def bring_up(settings: Settings, demo: bool | None = None,
             log: Callable[[str], None] = print) -> dict:
    """`up --no-serve`: first_contact.prepare, then first_import in the foreground."""
    prepared = first_contact.prepare(settings, demo=demo, log=log)
    return first_import(settings, prepared["span"], log=log)


def run_dream(
    settings: Settings, first: str, last: str, log: Callable[[str], None] = print
) -> dict:
    """Run `dream_job` over [first, last] (partition keys) in this process, on the instance
    `dagster dev` shows, so the run and its lineage appear in the UI like a scheduled one."""
    from memory_platform.dream.plan import dream_outcome

    provider_from_env()  # no provider: stop now with the settings to set, not mid-run
    instance = prepare_instance(settings)
    tags = range_tags(first, last, **{TRIGGER_TAG: "cli"})
    with progress.listening(log):
        log(f"importing {first} .. {last} first…")
        ingest = run_job(ingest_raw_events_job, instance, tags=tags)
        if not ingest.success:
            raise RuntimeError(f"the ingest run {ingest.run_id} failed; see `dagster dev` "
                               f"run logs")
        log(f"dreaming {first} .. {last} (one run)…")
        run = run_job(dream_job, instance, tags=tags)
    if not run.success:
        raise RuntimeError(f"the dream run {run.run_id} failed; see `dagster dev` run logs")
    digest = run.asset_materializations_for_node("dream_digest")
    path = digest[-1].metadata["path"].value if digest else None
    return {"run_id": run.run_id, "first": first, "last": last,
            **dream_outcome(Database.from_settings(settings), days_of_keys(first, last)),
            "digest": path}


def dream_span(settings: Settings) -> tuple[str, str] | None:
    """What a bare `memory-platform dream` covers: the nightly schedule's range."""
    return undreamed_span(Database.from_settings(settings), settings)


def promote_via_dagster(
    settings_or_instance: Settings | dg.DagsterInstance,
    memory_id: int,
    decision: PromotionConfig | Mapping[str, Any] | None = None,
    *,
    trigger: str = "cli",
) -> dict:
    """Apply a decision to one pending entry as a run of `vault_promotion_job`, executed in
    this process on the instance the Dagster UI shows (a `Settings`, whose
    `$MEMORY_PLATFORM_HOME/dagster` is prepared as `memory-platform dream` does, or a
    `DagsterInstance`). The entry's partition is added first if the sensor has not yet.
    Returns the decision (as review.approve does) plus run_id. Raises ReviewConflict when
    the entry was already decided (the run is recorded as failed with that message)."""
    if isinstance(settings_or_instance, dg.DagsterInstance):
        instance = settings_or_instance
    else:
        instance = prepare_instance(settings_or_instance)
    if decision is None:
        decision = PromotionConfig()
    elif not isinstance(decision, PromotionConfig):
        decision = PromotionConfig(**dict(decision))
    review.check_decision(action=decision.action, text=decision.text,
                          namespace=decision.namespace, old_memory_id=decision.old_memory_id,
                          promoted_id=decision.promoted_id)
    key = str(int(memory_id))
    # The partition must exist before a run can target it. Adding it here, on the face's
    # launch path, is the same request the sensor makes on its next tick (idempotent).
    if not instance.has_dynamic_partition(PENDING_PARTITIONS_NAME, key):
        instance.add_dynamic_partitions(PENDING_PARTITIONS_NAME, [key])
    tags = {TRIGGER_TAG: trigger, DECISION_TAG: decision.action, MEMORY_TAG: key}
    if decision.actor:
        tags[ACTOR_TAG] = decision.actor
    config = decision.model_dump(exclude_none=True)
    run = run_job(vault_promotion_job, instance, partition_key=key, tags=tags, quiet=SILENT,
                  run_config={"ops": {vault_promotions.op.name: {"config": config}}})
    events = run.asset_materializations_for_node(vault_promotions.op.name)
    metadata = {k: getattr(v, "value", v) for k, v in events[-1].metadata.items()}
    return {**metadata, "run_id": run.run_id}


def recorded_memory_ids(instance: dg.DagsterInstance, since) -> set[str]:
    """Entries whose decision already has a successful promotion run since `since`."""
    runs = instance.get_run_records(dg.RunsFilter(
        job_name=vault_promotion_job.name, statuses=[dg.DagsterRunStatus.SUCCESS],
        created_after=since))
    return {r.dagster_run.tags.get(MEMORY_TAG) for r in runs}


def run_curate(settings: Settings, *, namespace: str | None = None, dry_run: bool = False,
               now=None, log: Callable[[str], None] = print) -> list[dict]:
    """One run of `curator_job` (or `curator_dry_run_job`) per namespace (every primary one,
    or `namespace`) for the current week, in this process on the instance the Dagster UI
    shows. Returns each namespace's outcome (curator.outcome.of_run): what was proposed,
    cut, refused and why. A refusal is an outcome, not an exception; a run that failed for
    another reason raises with its step's error."""
    from datetime import datetime, timezone

    from memory_platform.curator import outcome
    from memory_platform.curator.config import CuratorConfig, week_of
    from memory_platform.curator.listing import namespaces

    provider_from_env()  # no provider: stop now with the settings to set, not mid-run
    database = Database.from_settings(settings)
    known = namespaces(database)
    if namespace is not None and namespace not in known:
        raise ValueError(f"no primary vault namespace {namespace!r}; known: "
                         f"{', '.join(known) if known else 'none yet'}")
    names = [namespace] if namespace is not None else known
    config = CuratorConfig.load(settings)
    for name in names:
        config.repo_for(name)  # a broken repository tie: stop before any run, saying which
    instance = prepare_instance(settings)
    week = week_of(now or datetime.now(timezone.utc), settings.timezone).isoformat()
    outcomes = []
    for name in names:
        # The partition must exist before a run can target it; the sensor would add it on
        # its next tick (the same, idempotent request).
        if not instance.has_dynamic_partition(CURATOR_NAMESPACES_NAME, name):
            instance.add_dynamic_partitions(CURATOR_NAMESPACES_NAME, [name])
        log(f"curating {name}, week {week}{' (dry run)' if dry_run else ''}…")
        # SILENT: a refusal is an expected outcome, read back from curator_runs and shown by
        # the caller, not Dagster's ERROR line with a stack trace; a step that failed for
        # another reason is in the outcome's errors (its innermost message).
        run = run_job(curator_dry_run_job if dry_run else curator_job, instance,
                      partition_key=curator_key(name, week), tags={TRIGGER_TAG: "cli"},
                      run_config=DRY_RUN if dry_run else None, quiet=SILENT,
                      raise_on_error=False)
        outcomes.append(outcome.of_run(database, run.run_id, name, week, success=run.success,
                                       errors=_step_errors(run)))
    return outcomes


def _step_errors(run: dg.ExecuteInProcessResult) -> list[str]:
    """Each failed step's own error (Dagster wraps it: the innermost cause says why)."""
    found = []
    for event in run.all_events:
        if event.is_step_failure:
            error = event.step_failure_data.error
            while error.cause is not None:
                error = error.cause
            found.append(str(error.message).strip())
    return found


def run_curator_purge(settings: Settings) -> dict:
    """`curator_purge_job` in this process on the UI's instance; its metadata."""
    instance = prepare_instance(settings)
    run = run_job(curator_purge_job, instance, tags={TRIGGER_TAG: "cli"})
    events = run.asset_materializations_for_node("curator_purge")
    return {**{k: getattr(v, "value", v) for k, v in events[-1].metadata.items()},
            "run_id": run.run_id}


def run_weekly_report(settings: Settings, monday, log: Callable[[str], None] = print) -> dict:
    """One run of `weekly_report_job` for the week starting `monday` (a date), in this
    process, on the instance the Dagster UI shows: the lake's snapshots, `dbt build` of the
    marts (their tests as checks) and the report. Works without an LLM (the report then says
    its summaries need one). Returns run_id, week, path and what the report asset recorded."""
    instance = prepare_instance(settings)
    log(f"building the report of {week_label(monday)}: lake, marts (dbt build), report…")
    run = run_job(weekly_report_job, instance, partition_key=monday.isoformat(),
                  tags={TRIGGER_TAG: "cli"})
    events = run.asset_materializations_for_node("weekly_report")
    metadata = {k: getattr(v, "value", v) for k, v in events[-1].metadata.items()
                if k != "report"}
    return {"run_id": run.run_id, **metadata}
