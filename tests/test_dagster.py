"""Dagster layer: definitions, partitioned materializations, range backfills, checks, sensor."""

import importlib
import json
import pkgutil
from datetime import datetime, timedelta, timezone

import dagster as dg
import pyarrow.parquet as pq
import pytest

from helpers.transcripts import write_transcript
from memory_platform.days import merge_day_ranges
from memory_platform.definitions import defs
from memory_platform.defs.ingest.automation import source_folders_sensor
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import RANGE_END, RANGE_START
from memory_platform.store import Database

DAY0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _project_objects():
    kinds = (dg.AssetsDefinition, dg.AssetChecksDefinition, dg.SensorDefinition,
             dg.ScheduleDefinition, dg.JobDefinition, type(dg.define_asset_job("probe")))
    found = {}
    package = importlib.import_module("memory_platform.defs")
    modules = [importlib.import_module(info.name)
               for info in pkgutil.walk_packages(package.__path__, "memory_platform.defs.")]
    for module in modules:
        for value in vars(module).values():
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, kinds):
                    found[id(v)] = v
    return list(found.values())


def test_definitions_load_and_register_everything():
    repo = defs.get_repository_def()
    registered_assets = set(defs.resolve_all_asset_keys())
    assert {dg.AssetKey("source_files"), dg.AssetKey("raw_events"),
            dg.AssetKey("raw_events_lake")} <= registered_assets
    check_keys = set(defs.resolve_asset_graph().asset_check_keys)
    for obj in _project_objects():
        if isinstance(obj, dg.AssetChecksDefinition):
            assert set(obj.check_keys) <= check_keys, f"unregistered check {obj.check_keys}"
        elif isinstance(obj, dg.AssetsDefinition):
            assert set(obj.keys) <= registered_assets
        elif isinstance(obj, dg.SensorDefinition):
            assert repo.has_sensor_def(obj.name), obj.name
        elif isinstance(obj, dg.ScheduleDefinition):
            assert repo.has_schedule_def(obj.name), obj.name
        else:
            assert repo.has_job(obj.name), obj.name


@pytest.fixture
def history(home, tmp_path):
    """Three days of a Claude Code session in the watched projects folder."""
    projects = tmp_path / "claude-projects" / "-home-me-proj"
    write_transcript(projects / "s-1.jsonl", 72, step=timedelta(hours=1), start=DAY0)
    return projects


def _events_by_day(db: Database) -> dict[str, int]:
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), count(*) "
            "FROM events GROUP BY 1 ORDER BY 1").fetchall()
    return dict(rows)


def test_two_partitions_then_a_three_day_range(history, db, home):
    instance = dg.DagsterInstance.ephemeral()
    resources = {"database": DatabaseResource()}
    from memory_platform.defs.ingest.assets import raw_events, source_files

    assert dg.materialize([source_files], instance=instance, resources=resources).success
    for day in ("2026-03-01", "2026-03-03"):
        result = dg.materialize([raw_events], partition_key=day, instance=instance,
                                resources=resources, selection=[raw_events])
        assert result.success
    assert _events_by_day(db) == {"2026-03-01": 24, "2026-03-03": 24}

    job = defs.resolve_job_def("ingest_raw_events_job")
    run = job.execute_in_process(
        instance=instance, tags={RANGE_START: "2026-03-01", RANGE_END: "2026-03-03"})
    assert run.success
    assert sum(_events_by_day(db).values()) == 72
    mats = run.asset_materializations_for_node("raw_events")
    assert mats, "a range run materializes raw_events"
    meta = mats[0].metadata
    assert meta["events_new"].value == 24 and meta["files_read"].value == 1
    # one run covered all three partitions
    materialized = instance.get_materialized_partitions(dg.AssetKey("raw_events"))
    assert materialized == {"2026-03-01", "2026-03-02", "2026-03-03"}
    lake = home / "lake" / "raw_events"
    assert sorted(p.name for p in lake.iterdir()) == [
        "date=2026-03-01", "date=2026-03-02", "date=2026-03-03"]
    table = pq.read_table(lake / "date=2026-03-02" / "events.parquet")
    assert table.num_rows == 24 and "raw" in table.column_names
    import duckdb
    total = duckdb.sql(f"SELECT count(*) FROM '{lake}/*/*.parquet'").fetchall()[0][0]
    assert total == 72
    # the same run embedded the three days, so they are searchable
    assert run.asset_materializations_for_node("event_embeddings")
    with db.connect() as conn:
        embedded = conn.execute(
            "SELECT count(DISTINCT event_id) FROM event_embeddings").fetchone()[0]
    assert embedded == 72
    # checks ran with the range and passed on good data
    checks = run.get_asset_check_evaluations()
    assert {c.check_name for c in checks} >= {"timestamps_in_partition_window",
                                             "roles_in_allowed_set", "native_ids_unique",
                                             "no_empty_rows_without_reason"}
    assert all(c.passed for c in checks)


def test_checks_fail_on_bad_data_and_block_the_lake(history, db):
    with db.connect() as conn:  # an empty turn with no reason, as a broken adapter would write
        conn.execute(
            "INSERT INTO events (source, native_id, role, kind, occurred_at, text, raw, "
            "content_hash) VALUES ('notes', 'bad-1', 'user', 'message', %s, '  ', '{}', 'x')",
            (DAY0 + timedelta(hours=5),))
    instance = dg.DagsterInstance.ephemeral()
    job = defs.resolve_job_def("ingest_raw_events_job")
    run = job.execute_in_process(instance=instance, partition_key="2026-03-01",
                                 raise_on_error=False)
    checks = {c.check_name: c for c in run.get_asset_check_evaluations()}
    assert checks["no_empty_rows_without_reason"].passed is False
    assert checks["native_ids_unique"].passed is True
    assert checks["roles_in_allowed_set"].passed is True
    # blocking: the Parquet copy of a partition that failed its checks is not written
    assert not run.asset_materializations_for_node("raw_events_lake")
    assert not run.asset_materializations_for_node("event_embeddings")


def test_quality_expectations_fail_on_bad_frames():
    from memory_platform.ingest import quality

    start = DAY0
    rows = [
        ("notes", "a", "user", start + timedelta(hours=1), "ok", {}),
        ("notes", "a", "robot", start + timedelta(days=2), "", {}),
        ("notes", "b", "user", start + timedelta(hours=2), "", {"empty_reason": "image only"}),
    ]
    outcomes = quality.validate_events(quality.events_frame(rows), start,
                                       start + timedelta(days=1))
    assert {n: o.passed for n, o in outcomes.items()} == {
        "timestamps_in_partition_window": False, "roles_in_allowed_set": False,
        "native_ids_unique": False, "no_empty_rows_without_reason": False}
    assert outcomes["roles_in_allowed_set"].examples == ["robot"]


def test_sensor_requests_changed_days_with_cursor(history, home, db):
    instance = dg.DagsterInstance.ephemeral()
    resources = {"database": DatabaseResource()}
    context = dg.build_sensor_context(instance=instance, resources=resources)
    result = source_folders_sensor(context)
    assert isinstance(result, dg.SensorResult)
    [request] = result.run_requests
    assert (request.tags[RANGE_START], request.tags[RANGE_END]) == ("2026-03-01", "2026-03-03")
    assert request.run_key.startswith("2026-03-01..2026-03-03:")
    cursor = json.loads(result.cursor)
    assert cursor["version"] == 1 and len(cursor["files"]) == 1

    # same files, same cursor: nothing to do
    quiet = source_folders_sensor(dg.build_sensor_context(
        instance=instance, resources=resources, cursor=result.cursor))
    assert isinstance(quiet, dg.SkipReason)

    # the session goes on a day later: a new request for the days the file now covers
    write_transcript(history / "s-1.jsonl", 10, first=72, start=DAY0, step=timedelta(hours=1),
                     mode="a")
    grown = source_folders_sensor(dg.build_sensor_context(
        instance=instance, resources=resources, cursor=result.cursor))
    [again] = grown.run_requests
    assert again.tags[RANGE_END] == "2026-03-04"
    assert again.run_key != request.run_key

    # a second file in the inbox on a distant day: its own range
    inbox = home / "inbox"
    write_transcript(inbox / "old.jsonl", 2, session="s-old",
                     start=datetime(2025, 1, 10, tzinfo=timezone.utc))
    more = source_folders_sensor(dg.build_sensor_context(
        instance=instance, resources=resources, cursor=grown.cursor))
    assert [(r.tags[RANGE_START], r.tags[RANGE_END]) for r in more.run_requests] == [
        ("2025-01-10", "2025-01-10")]


def test_first_tick_after_up_requests_nothing_already_imported(history, home, db):
    """`memory-platform up` catalogs and imports every day before the sensor's first tick;
    that tick must not run the whole ingest again, but a file changed later still is."""
    from memory_platform.defs.ingest.assets import source_files
    from memory_platform.defs.ingest.jobs import ingest_raw_events_job
    from memory_platform.resources.common import range_tags

    instance = dg.DagsterInstance.ephemeral()
    resources = {"database": DatabaseResource()}
    assert dg.materialize([source_files], instance=instance, resources=resources).success
    job = defs.resolve_job_def(ingest_raw_events_job.name)
    assert job.execute_in_process(instance=instance,
                                  tags=range_tags("2026-03-01", "2026-03-03")).success
    first = source_folders_sensor(dg.build_sensor_context(instance=instance,
                                                          resources=resources))
    assert isinstance(first, dg.SensorResult) and first.run_requests == []
    assert len(json.loads(first.cursor)["files"]) == 1

    # a run that covered only part of a file's days does not count
    partial = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(instance=partial,
                                  tags=range_tags("2026-03-01", "2026-03-02")).success
    [request] = source_folders_sensor(dg.build_sensor_context(
        instance=partial, resources=resources)).run_requests
    assert (request.tags[RANGE_START], request.tags[RANGE_END]) == ("2026-03-01", "2026-03-03")

    # the session goes on: the changed file is requested as before
    write_transcript(history / "s-1.jsonl", 10, first=72, start=DAY0, step=timedelta(hours=1),
                     mode="a")
    [grown] = source_folders_sensor(dg.build_sensor_context(
        instance=instance, resources=resources, cursor=first.cursor)).run_requests
    assert (grown.tags[RANGE_START], grown.tags[RANGE_END]) == ("2026-03-01", "2026-03-04")


def test_merge_day_ranges():
    assert merge_day_ranges([("2026-01-05", "2026-01-06"), ("2026-01-01", "2026-01-02"),
                             ("2026-01-03", "2026-01-03"), ("2026-02-01", "2026-02-01")]) == [
        ("2026-01-01", "2026-01-03"), ("2026-01-05", "2026-01-06"), ("2026-02-01", "2026-02-01")]
