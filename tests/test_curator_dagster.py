"""The curator through Dagster. The breaker must refuse in every launch path, at exactly the
ceiling it must not: the weekly schedule, a backfill, materializations from the UI (the
verdict and the cuts as separate runs, where no blocking check of the first run can stop
the second), and the CLI (in-process on the UI's instance, with a fake `claude`). Also: the
namespace sensor, re-running a week, the purge job, and a broken invariant blocking cuts."""

import os
from datetime import datetime, timedelta, timezone

import dagster as dg
import pytest
from typer.testing import CliRunner

from helpers.curator import (
    ACME,
    answering,
    install_fake_claude,
    make_repo,
    seed,
    stale_cuts,
    write_routing,
)
from memory_platform.curator import archive
from memory_platform.curator.config import CuratorConfig, week_of
from memory_platform.curator.execute import execute
from memory_platform.curator.propose import propose
from memory_platform.defs.curator.assets import CURATOR_ASSETS, curator_cuts, curator_verdicts
from memory_platform.defs.curator.automation import (
    curator_namespaces_sensor,
    daily_curator_purge_schedule,
    weekly_curator_schedule,
)
from memory_platform.defs.curator.checks import curator_checks
from memory_platform.defs.curator.jobs import curator_dry_run_job, curator_job, curator_purge_job
from memory_platform.defs.vault.assets import VAULT_ASSETS
from memory_platform.llm import ScriptedProvider
from memory_platform.resources import CuratorAgents, DatabaseResource
from memory_platform.resources.common import CURATOR_NAMESPACES_NAME, curator_key

# Dagster 1.13 tags a run request of a multi-partitioned asset with
# `dagster/partition/<dimension>`, which its own tag validation then calls non-compliant
# (two '/') with a DeprecationWarning; the project's filter turns Dagster's deprecation
# warnings into errors. The warning is about Dagster's tags, not an API we call.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Non-compliant tag keys like \\['dagster/partition/:DeprecationWarning")

SUNDAY = datetime(2026, 11, 29, 4, 0, tzinfo=timezone.utc)
WEEK = "2026-11-29"
KEY = curator_key("acme", WEEK)
AT_CEILING, ONE_OVER = 4, 5  # of 10 memories, ceiling 40%


@pytest.fixture
def curated(home, db, tmp_path, monkeypatch):
    repo = make_repo(tmp_path)
    monkeypatch.setenv("MEMORY_PLATFORM_ROUTING", str(write_routing(home, {"acme": repo["path"]})))
    ids = seed(db, "acme", ACME)
    plan = {"cuts": AT_CEILING}
    model = ScriptedProvider(answers=answering(lambda h: stale_cuts(plan["cuts"])(h)))
    defs = dg.Definitions(
        assets=[*VAULT_ASSETS, *CURATOR_ASSETS], asset_checks=curator_checks,
        jobs=[curator_job, curator_dry_run_job, curator_purge_job],
        sensors=[curator_namespaces_sensor],
        schedules=[weekly_curator_schedule, daily_curator_purge_schedule],
        resources={"database": DatabaseResource(), "curator_agents": CuratorAgents(model)})
    # A persistent instance (as the UI's): a schedule evaluation needs an instance ref.
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    return {"defs": defs, "instance": instance, "plan": plan, "model": model, "ids": ids,
            "repo": repo}


def archived(db) -> int:
    with db.connect() as conn:
        return conn.execute("SELECT count(*) FROM curator_archive").fetchone()[0]


def checks_of(result) -> dict[str, bool]:
    return {f"{e.asset_key.to_user_string()}:{e.check_name}": e.passed
            for e in result.get_asset_check_evaluations()}


def add_partitions_with_the_sensor(setup):
    context = dg.build_sensor_context(instance=setup["instance"])
    result = curator_namespaces_sensor(context, database=DatabaseResource())
    [request] = result.dynamic_partitions_requests
    assert list(request.partition_keys) == ["acme"]
    setup["instance"].add_dynamic_partitions(CURATOR_NAMESPACES_NAME, request.partition_keys)
    again = curator_namespaces_sensor(dg.build_sensor_context(instance=setup["instance"]),
                                      database=DatabaseResource())
    assert isinstance(again, dg.SkipReason)


def launch_schedule(setup, monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_PROVIDER", "openai-compatible")
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_MODEL", "scripted-anyway")
    add_partitions_with_the_sensor(setup)
    context = dg.build_schedule_context(instance=setup["instance"],
                                        scheduled_execution_time=SUNDAY,
                                        repository_def=setup["defs"].get_repository_def())
    data = weekly_curator_schedule.evaluate_tick(context)
    [request] = data.run_requests
    assert request.partition_key == KEY and request.run_key == f"weekly-curator:acme:{WEEK}"
    job = setup["defs"].resolve_job_def(curator_job.name)
    return [job.execute_in_process(instance=setup["instance"], partition_key=request.partition_key,
                                   tags=request.tags, raise_on_error=False)]


def launch_backfill(setup, monkeypatch):
    setup["instance"].add_dynamic_partitions(CURATOR_NAMESPACES_NAME, ["acme"])
    # a backfill runs the selected assets per partition (one partition a run, the policy)
    return [dg.materialize([curator_verdicts, curator_cuts, *curator_checks],
                           partition_key=KEY, instance=setup["instance"],
                           resources=setup["defs"].resources,
                           tags={"dagster/backfill": "bf-test"}, raise_on_error=False)]


def launch_ui(setup, monkeypatch):
    """The UI: a click materializes curator_verdicts, a later click curator_cuts alone."""
    setup["instance"].add_dynamic_partitions(CURATOR_NAMESPACES_NAME, ["acme"])
    first = dg.materialize([curator_verdicts, *curator_checks], partition_key=KEY,
                           instance=setup["instance"], resources=setup["defs"].resources,
                           selection=[curator_verdicts], raise_on_error=False)
    second = dg.materialize([curator_cuts], partition_key=KEY, instance=setup["instance"],
                            resources=setup["defs"].resources, raise_on_error=False)
    return [first, second]


@pytest.mark.parametrize("launch", [launch_schedule, launch_backfill, launch_ui],
                         ids=["schedule", "backfill", "ui"])
@pytest.mark.parametrize("cuts", [AT_CEILING, ONE_OVER], ids=["at-ceiling", "one-over"])
def test_the_breaker_holds_in_every_dagster_launch_path(curated, db, monkeypatch, launch, cuts):
    curated["plan"]["cuts"] = cuts
    runs = launch(curated, monkeypatch)
    last = runs[-1]
    if cuts == AT_CEILING:
        assert all(r.success for r in runs)
        assert archived(db) == AT_CEILING
        assert last.asset_materializations_for_node("curator_cuts")[0].metadata[
            "cuts"].value == AT_CEILING
        return
    assert not last.success
    assert archived(db) == 0
    assert last.asset_materializations_for_node("curator_cuts") == []
    if launch is launch_ui:
        # the second click's run has no blocking check to stop it: curator_cuts refuses
        failure = next(e for e in last.all_events if e.is_step_failure)
        error = failure.step_failure_data.error
        assert "circuit breaker" in error.to_string() and "nothing is cut" in error.to_string()
        assert checks_of(runs[0])["curator_verdicts:cut_ratio_within_ceiling"] is False
    else:
        assert checks_of(last)["curator_verdicts:cut_ratio_within_ceiling"] is False
        step_events = [e for e in last.all_events if e.step_key and "curator_cuts" in e.step_key]
        assert not any(e.event_type_value == "STEP_START" for e in step_events)


@pytest.mark.parametrize("cuts", [AT_CEILING, ONE_OVER], ids=["at-ceiling", "one-over"])
def test_the_breaker_holds_from_the_cli(curated, db, home, tmp_path, monkeypatch, cuts):
    from memory_platform.cli.main import app

    fake = install_fake_claude(tmp_path / "bin", plan_name="four_stale" if cuts == AT_CEILING
                               else "five_stale")
    monkeypatch.setenv("PATH", f"{fake['bin']}{os.pathsep}{os.environ['PATH']}")
    for key, value in {**fake["env"], "MEMORY_PLATFORM_LLM_PROVIDER": "claude-cli"}.items():
        monkeypatch.setenv(key, value)
    done = CliRunner().invoke(app, ["curate", "--namespace", "acme"])
    week = week_of(datetime.now(timezone.utc), "UTC").isoformat()
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    [record] = instance.get_run_records(dg.RunsFilter(job_name="curator_job"))
    assert record.dagster_run.tags["memory-platform/trigger"] == "cli"
    assert record.dagster_run.tags["dagster/partition"] == f"acme|{week}"
    if cuts == AT_CEILING:
        assert done.exit_code == 0, done.output
        assert archived(db) == AT_CEILING
        assert "executed; 4 cuts proposed of 10 memories" in done.output
        assert "memory-platform curator restore" in done.output
        return
    assert done.exit_code == 1, done.output
    assert archived(db) == 0
    assert "refused" in done.output and "circuit breaker" in done.output
    assert record.dagster_run.status == dg.DagsterRunStatus.FAILURE


def test_cli_dry_run_shows_reasons_and_evidence_and_cuts_nothing(curated, db, tmp_path,
                                                                  monkeypatch):
    from memory_platform.cli.main import app

    fake = install_fake_claude(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake['bin']}{os.pathsep}{os.environ['PATH']}")
    for key, value in {**fake["env"], "MEMORY_PLATFORM_LLM_PROVIDER": "claude-cli"}.items():
        monkeypatch.setenv(key, value)
    done = CliRunner().invoke(app, ["curate", "--dry-run"])
    assert done.exit_code == 0, done.output
    assert "acme (week" in done.output and "dry_run" in done.output
    assert "[contradicted]" in done.output and "config/server.toml:3" in done.output
    assert "merge of" in done.output
    assert archived(db) == 0
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE namespace = 'acme__dream'"
                            ).fetchone()[0] == 0


def test_rerunning_a_weeks_partition_cuts_nothing_twice(curated, db):
    curated["instance"].add_dynamic_partitions(CURATOR_NAMESPACES_NAME, ["acme"])
    job = curated["defs"].resolve_job_def(curator_job.name)
    first = job.execute_in_process(instance=curated["instance"], partition_key=KEY)
    calls = len(curated["model"].calls)
    again = job.execute_in_process(instance=curated["instance"], partition_key=KEY)
    assert first.success and again.success
    assert len(curated["model"].calls) == calls  # not even asked again
    assert archived(db) == AT_CEILING
    meta = again.asset_materializations_for_node("curator_cuts")[0].metadata
    assert meta["status"].value == "already_executed" and meta["cuts"].value == 0
    verdicts = first.asset_materializations_for_node("curator_verdicts")[0].metadata
    assert verdicts["llm_calls"].value == 1 and verdicts["prompt_version"].value
    assert verdicts["llm_credential_sources"].value == {"none (scripted)": 1}
    assert checks_of(again)["curator_cuts:tombstones_match_archives"] is True


def test_a_broken_invariant_stops_the_cut_step(curated, db):
    config = CuratorConfig(repos={"acme": curated["repo"]["path"]})
    propose(db, "acme", datetime(2026, 11, 22).date(), agent=lambda: curated["model"],
            dagster_run_id="earlier", config=config, repo=curated["repo"]["path"])
    execute(db, "acme", datetime(2026, 11, 22).date(), dagster_run_id="earlier",
            config=config)
    with db.connect() as conn:
        conn.execute("ALTER TABLE curator_archive DISABLE TRIGGER curator_pairing_on_archive")
        conn.execute("DELETE FROM curator_archive WHERE id = (SELECT min(id) FROM "
                     "curator_archive)")
        conn.execute("ALTER TABLE curator_archive ENABLE TRIGGER curator_pairing_on_archive")
    curated["instance"].add_dynamic_partitions(CURATOR_NAMESPACES_NAME, ["acme"])
    result = curated["defs"].resolve_job_def(curator_job.name).execute_in_process(
        instance=curated["instance"], partition_key=KEY, raise_on_error=False)
    assert not result.success
    assert checks_of(result)["curator_verdicts:tombstones_match_archives"] is False
    assert result.asset_materializations_for_node("curator_cuts") == []
    assert archived(db) == AT_CEILING - 1


def test_the_daily_purge_job_purges_expired_archives(curated, db):
    config = CuratorConfig(repos={"acme": curated["repo"]["path"]})
    long_ago = datetime.now(timezone.utc) - timedelta(days=20)
    propose(db, "acme", datetime(2026, 11, 8).date(), agent=lambda: curated["model"],
            dagster_run_id="old", config=config, repo=curated["repo"]["path"], now=long_ago)
    execute(db, "acme", datetime(2026, 11, 8).date(), dagster_run_id="old", config=config,
            now=long_ago)
    data = daily_curator_purge_schedule.evaluate_tick(
        dg.build_schedule_context(instance=curated["instance"], scheduled_execution_time=SUNDAY,
                                  repository_def=curated["defs"].get_repository_def()))
    [request] = data.run_requests
    result = curated["defs"].resolve_job_def(curator_purge_job.name).execute_in_process(
        instance=curated["instance"], tags=request.tags)
    meta = result.asset_materializations_for_node("curator_purge")[0].metadata
    assert meta["purged"].value == AT_CEILING and meta["archives_left"].value == 0
    assert checks_of(result)["curator_purge:tombstones_match_archives"] is True
    assert archived(db) == 0 and archive.invariant(db)["ok"]
