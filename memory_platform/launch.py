"""Launching Dagster runs from the other faces, in one place.

- `prepare_instance`: the Dagster instance `memory-platform up` serves, beside the data.
- `run_job`: a job executed in this process on that instance, so a run started from the CLI
  (or the dashboard) shows in the UI with its lineage like a scheduled one.
- `bring_up` / `serve_ui`: `memory-platform up` (import the watched folders through the
  ingest job, with a demo history and demo vault on a machine with none; then `dagster dev`).
- `run_dream`: `memory-platform dream` over a range of days.
- `promote_via_dagster`: one review decision as a run of `vault_promotion_job`.
- `run_curate` / `run_curator_purge`: `memory-platform curate` (one `curator_job` or
  `curator_dry_run_job` run per namespace) and `memory-platform curator purge`.
- `run_weekly_report`: `memory-platform report`, one run of `weekly_report_job` for a week.

Importing this module loads the definitions (Dagster itself); faces import it only in the
commands that launch something.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg

from memory_platform import progress, synthetic
from memory_platform.days import clamp_to_partitions, days_of_keys, week_label
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


def run_job(job,
            instance: dg.DagsterInstance, *, tags: Mapping[str, str] | None = None,
            run_config: Mapping[str, Any] | None = None, partition_key: str | None = None,
            quiet: Mapping[str, Any] = QUIET,
            raise_on_error: bool = True) -> dg.ExecuteInProcessResult:
    """Execute one of the project's jobs (an object from jobs.py) in this process on
    `instance`, with the project's resources. Raises on a failed step (the run is recorded
    as failed) unless `raise_on_error` is False (the caller reads the outcome)."""
    resolved = defs.resolve_job_def(job.name)
    return resolved.execute_in_process(
        instance=instance, tags=dict(tags or {}), partition_key=partition_key,
        run_config={**(run_config or {}), **quiet}, raise_on_error=raise_on_error)


def has_own_history(settings: Settings) -> bool:
    for folder in (settings.claude_projects, settings.inbox, settings.notes):
        if folder is not None and folder.exists() and any(p.is_file() for p in folder.rglob("*")):
            return True
    return False


def bring_up(
    settings: Settings, demo: bool | None = None, log: Callable[[str], None] = print
) -> dict:
    """Start the database, catalog the watched folders (a generated demo history, and a demo
    vault for the curator, on a machine with none), and import every day they cover in one
    run of the ingest job."""
    from datetime import datetime, timezone

    from memory_platform.defs.ingest.assets import source_files

    database = Database.from_settings(settings)
    log(f"database: {'external' if settings.database_url else f'embedded in {settings.pgdata}'}")
    database.url()  # start the embedded server now, so later failures are not about it
    if demo is None:
        demo = not has_own_history(settings)
    if demo and not settings.demo.exists():
        manifest = synthetic.generate_demo(settings.demo)
        log(f"no AI history found: generated a demo history ({manifest['events']} events) "
            f"in {settings.demo}")
    if demo:  # and a demo vault for the curator, into an empty vault only (vault/demo.py)
        from memory_platform.vault.demo import seed_demo_vault

        seed_demo_vault(database, settings, log=log)
    instance = prepare_instance(settings)
    log("cataloguing source files…")
    result = dg.materialize([source_files], instance=instance,
                            resources=defs.resources, run_config=QUIET)
    if not result.success:
        raise RuntimeError("materializing source_files failed; see `dagster dev` run logs")
    span = catalog.event_day_span(database)
    partitions = 0
    if span:
        span = clamp_to_partitions(*span, datetime.now(timezone.utc))
        if span:
            log(f"importing raw events {span[0]} .. {span[1]} (one run)…")
            with progress.listening(log):
                run = run_job(ingest_raw_events_job, instance, tags=range_tags(*span))
            if not run.success:
                raise RuntimeError("the ingest run failed; see `dagster dev` run logs")
            partitions = len(days_of_keys(*span))
    return {**catalog.database_summary(database), "partitions": partitions}


# `dagster dev` still works but says `dg dev` supersedes it, in every start; that is
# Dagster's roadmap, not the user's concern.
_CHILD_WARNINGS = "ignore:Function `dev_command` is superseded"
UI_START_TIMEOUT = 180.0
STOP_GRACE = 30.0


def _default_signals() -> None:
    """In the `dagster dev` child: SIGINT and SIGTERM back to their defaults. Started in the
    background (`memory-platform up &`, nohup) a process inherits SIGINT ignored, and
    Dagster maps SIGTERM to SIGINT's handler: the whole tree would ignore both."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def serve_ui(settings: Settings, host: str = "127.0.0.1", port: int = 3000,
             log: Callable[[str], None] = print) -> int:
    """`dagster dev` on the project's definitions, with Dagster's storage beside the data.
    Says where the UI is once its port answers. SIGINT or SIGTERM to this process stops the
    whole tree (webserver, daemon, code server) and waits for it; a tree that does not stop
    within STOP_GRACE seconds is terminated, then killed. Returns the child's exit code."""
    env = {**os.environ, "DAGSTER_HOME": str(settings.dagster_home),
           "PYTHONWARNINGS": _CHILD_WARNINGS}
    command = [
        sys.executable, "-m", "dagster", "dev", "-m", "memory_platform.definitions",
        "-h", host, "-p", str(port),
    ]
    # Its own session: a signal meant for the tree goes through here, once, and the group
    # can be ended as a whole if it does not stop by itself.
    child = subprocess.Popen(command, env=env, start_new_session=True,
                             preexec_fn=_default_signals)
    stopping = threading.Event()

    def forward(signum, frame) -> None:
        stopping.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGINT)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        deadline = time.monotonic() + UI_START_TIMEOUT
        while child.poll() is None and not stopping.is_set():
            if _answers(host, port):
                log(f"Dagster UI: http://{host}:{port}  (Ctrl-C or SIGTERM to stop)")
                break
            if time.monotonic() > deadline:
                log(f"the Dagster UI did not answer on {host}:{port} within "
                    f"{UI_START_TIMEOUT:.0f} s; still waiting (see the lines above)")
                deadline = float("inf")
            time.sleep(0.5)
        while child.poll() is None and not stopping.wait(1.0):
            pass
        return _stop(child) if stopping.is_set() else child.returncode
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop(child: subprocess.Popen) -> int:
    """Wait for a tree that was asked to stop; terminate, then kill, what lingers."""
    for sig, grace in ((None, STOP_GRACE), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        if sig is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, sig)
        if _group_gone(child, grace):
            break
    child.wait()
    return 0 if child.returncode in (0, -signal.SIGINT, 130) else child.returncode


def _group_gone(child: subprocess.Popen, timeout: float) -> bool:
    """Whether every process of the child's group has exited within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        child.poll()  # reap the leader: a zombie still counts as a member of its group
        try:
            os.killpg(child.pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


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
