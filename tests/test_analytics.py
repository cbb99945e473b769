"""analytics end to end over the demo history: the lake, `dbt build` of the marts through
Dagster (every dbt test an asset check, all passing; two failing on planted bad data), the
dream funnel equal to the database's counts, the curator's history and the portfolio equal
to the database's (empty first, as on a fresh install, then planted by their services),
and the weekly report deterministic and rendered without network."""

import json
import re
import socket
import uuid
from datetime import date, datetime, timedelta, timezone

import dagster as dg
import duckdb
import polars as pl
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from helpers.curator import DUPLICATE, NOW, TRUE_CONFIG, acme_namespace, cut_two, run_week
from helpers.curator import WEEK as CURATOR_WEEK
from helpers.curator_portfolio import check_curator_and_portfolio
from memory_platform import synthetic
from memory_platform.analytics import lake, service, sql
from memory_platform.curator import archive
from memory_platform.curator.execute import execute
from memory_platform.definitions import defs
from memory_platform.defs.analytics.assets import analytics_marts, lake_snapshots, weekly_report
from memory_platform.defs.analytics.jobs import weekly_report_job
from memory_platform.defs.dream.assets import DREAM_ASSETS
from memory_platform.defs.ingest.assets import raw_events, raw_events_lake, source_files
from memory_platform.dream.propose import DreamAnswer, ProposedMemory
from memory_platform.ingest import lake as raw_lake
from memory_platform.llm import ScriptedProvider
from memory_platform.query.summarize import ChunkPoints, Highlight, Point, RangeSummary
from memory_platform.resources import DatabaseResource, DigestNotifier, LLMFactory
from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.store import lake as lake_store
from memory_platform.vault import review

TODAY = date(2026, 3, 15)  # the demo's story ends the day before
FIRST, LAST = "2026-03-04", "2026-03-14"
WEEK = "2026-W11"
MONDAY = "2026-03-09"
REPEATED = "The user keeps database migrations numbered and checksummed."
# Written by the curator and the orchard: empty in the demo world until the test plants them.
CURATOR_AND_ORCHARD = ("curator_runs", "curator_cuts", "curator_purges", "orchard_snapshots")


def dreamer(call) -> str:
    """Per dream prompt: a memory unique to its first turn (score 8), the same durable fact
    every time (so the gate rejects the repeats), and a low-scored one. The judge: 'new'."""
    if call.system and "Score each for durability" in call.system:
        ids = [int(i) for i in re.findall(r"^\[(\d+)\]", call.prompt, re.M)]
        if not ids:
            return DreamAnswer(memories=[]).model_dump_json()
        return DreamAnswer(memories=[
            ProposedMemory(text=f"Fact number {ids[0]} about the project's build.", score=8,
                           category="project", why="durable", source_event_ids=[ids[0]]),
            ProposedMemory(text=REPEATED, score=7, category="project", why="repeated",
                           source_event_ids=[ids[0]]),
            ProposedMemory(text="The user said thanks.", score=2, category="user",
                           why="chit-chat", source_event_ids=[ids[-1]]),
        ]).model_dump_json()
    return json.dumps({"relation": "new", "reason": "different facts"})


def summarizer(call) -> str:
    """Map: one point citing the chunk's first event (and an id no event has). Reduce: a
    summary whose highlight keeps every cited id."""
    ids = [int(i) for i in re.findall(r"\[(\d+)\]", call.prompt)]
    if call.prompt.startswith("Events from"):
        return ChunkPoints(points=[Point(text=f"Worked on event {ids[0]}",
                                         event_ids=[ids[0]])]).model_dump_json()
    return RangeSummary(summary="A week of steady work.", highlights=[
        Highlight(text="The main thread", event_ids=[*ids[:2], 999_999_999])]).model_dump_json()


@pytest.fixture(scope="module")
def world(pg_admin_url, tmp_path_factory):
    """The demo history imported, its days dreamed with a scripted model and some entries
    reviewed (approve, approve with an edit, skip): one database for the module."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_conninfo(pg_admin_url, dbname=name)
    home = tmp_path_factory.mktemp("analytics") / "home"
    (home / "dagster").mkdir(parents=True)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEMORY_PLATFORM_HOME", str(home))
        env.setenv("MEMORY_PLATFORM_DATABASE_URL", url)
        env.setenv("MEMORY_PLATFORM_CLAUDE_PROJECTS", str(home / "no-claude-projects"))
        env.setenv("DAGSTER_HOME", str(home / "dagster"))
        env.delenv("MEMORY_PLATFORM_NOTES", raising=False)
        env.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
        synthetic.generate_demo(home / "demo", today=TODAY)
        db = Database(url=url)
        instance = dg.DagsterInstance.ephemeral()
        resources = {"database": DatabaseResource(), "llm": LLMFactory(ScriptedProvider(dreamer)),
                     "notifier": DigestNotifier()}
        assert dg.materialize([source_files], instance=instance, resources=resources).success
        tags = {"dagster/asset_partition_range_start": FIRST,
                "dagster/asset_partition_range_end": LAST}
        # as the real jobs: the days' import, then the dream over them
        setup = dg.Definitions(
            assets=[source_files, raw_events, raw_events_lake, *DREAM_ASSETS],
            jobs=[dg.define_asset_job("demo_import", selection=[raw_events, raw_events_lake]),
                  dg.define_asset_job("demo_dream", selection=DREAM_ASSETS)],
            resources=resources)
        for job in ("demo_import", "demo_dream"):
            assert setup.resolve_job_def(job).execute_in_process(
                instance=instance, tags=tags).success
        with db.connect() as conn:
            pending = [r[0] for r in conn.execute(
                "SELECT id FROM memories WHERE review = 'pending' ORDER BY id").fetchall()]
        assert len(pending) >= 4
        review.approve(db, pending[0], actor="test")
        review.approve(db, pending[1], actor="test", text="An edited fact.")
        review.skip(db, pending[2], actor="test")
        yield {"db": db, "home": home, "instance": instance, "settings": load_settings()}
        db.close()
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def collected_on_a_second_machine(db, settings) -> dict[str, int]:
    """One conversation's events moved to a machine 'laptop' (as a collector's pushes would
    have recorded them) and their days' lake files rewritten; the events per machine name."""
    with db.connect() as conn:
        laptop = conn.execute("INSERT INTO machines (name) VALUES ('laptop') "
                              "RETURNING id").fetchone()[0]
        conn.execute("UPDATE events SET machine_id = %s WHERE conversation_id = "
                     "(SELECT min(conversation_id) FROM events)", (laptop,))
        days = [r[0] for r in conn.execute(
            "SELECT DISTINCT (occurred_at AT TIME ZONE 'UTC')::date FROM events "
            "WHERE machine_id = %s", (laptop,)).fetchall()]
        counts = dict(conn.execute("SELECT m.name, count(*) FROM events e JOIN machines m "
                                   "ON m.id = e.machine_id GROUP BY 1").fetchall())
    for day in days:
        start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        raw_lake.write_partition(db, settings.lake, day.isoformat(), start,
                                 start + timedelta(days=1))
    assert len(counts) == 2 and counts["laptop"] > 0
    return counts


def build(world, llm, *, selection=None, raise_on_error=True, partition_key=MONDAY):
    resources = {**defs.resources, "llm": LLMFactory(llm) if llm else LLMFactory()}
    job = dg.Definitions(assets=defs.assets, resources=resources, jobs=[weekly_report_job]
                         ).resolve_job_def(weekly_report_job.name)
    return job.execute_in_process(instance=world["instance"], partition_key=partition_key,
                                  asset_selection=selection, raise_on_error=raise_on_error)


def test_weekly_job_builds_the_marts_with_every_test_passing_and_a_deterministic_report(
        world, monkeypatch, tmp_path):
    """One world, in order: dbt build through Dagster with every test passing (the curator
    and orchard tables empty), funnel equal to the database, report deterministic and
    offline, served locally; then curator records and orchard snapshots planted, their marts
    equal to the database and in the report; then planted bad data failing two dbt tests."""
    db, settings = world["db"], world["settings"]
    llm = ScriptedProvider(summarizer)

    # no network while the report is made (loopback, where PostgreSQL is, stays open)
    real_connect = socket.socket.connect

    def loopback_only(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in (
                "127.0.0.1", "::1", "localhost"):
            raise AssertionError(f"the report tried to reach {address}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    by_machine = collected_on_a_second_machine(db, settings)
    run = build(world, llm)
    assert run.success
    checks = run.get_asset_check_evaluations()
    assert len(checks) == len(analytics_marts.check_specs) >= 30
    assert [c.check_name for c in checks if not c.passed] == []
    materialized = {m.asset_key.to_user_string() for m in run.get_asset_materialization_events()
                    for m in [m.event_specific_data.materialization]}
    assert {"dream_funnel", "daily_activity", "vault_health", "llm_spend", "memories_lake",
            "curator_history", "portfolio_weeks", "curator_cuts_lake", "orchard_snapshots_lake",
            "weekly_report"} <= materialized

    # the lake holds what PostgreSQL held (the report's own calls came after its snapshot)
    with db.connect() as conn:
        for table in lake.TABLES:
            if table == "curator_cuts":  # no table of its own: cuts of the executed verdicts
                count = lake_store.row_count(conn, table)
            else:
                where = " WHERE run_id IS DISTINCT FROM %s" if table == "llm_calls" else ""
                count = conn.execute(f"SELECT count(*) FROM {table}{where}",
                                     (run.run_id,) if where else ()).fetchone()[0]
            assert duckdb.sql(f"SELECT count(*) FROM "
                              f"'{lake.snapshot_path(settings.lake, table)}'"
                              ).fetchall()[0][0] == count, table
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        db_funnel = conn.execute("""
            SELECT count(*), count(*) FILTER (WHERE c.status = 'proposed'),
                   count(*) FILTER (WHERE v.verdict IN ('duplicate', 'same_fact')),
                   count(m.id), count(*) FILTER (WHERE m.review = 'skipped'),
                   count(*) FILTER (WHERE m.review = 'pending')
            FROM dream_candidates c LEFT JOIN dedup_verdicts v ON v.candidate_id = c.id
            LEFT JOIN memories m ON m.candidate_id = c.id""").fetchone()
        by_day = dict(conn.execute(
            "SELECT day, count(*) FROM dream_candidates GROUP BY day").fetchall())

    # the funnel's counts are the database's
    columns, rows = service.run_sql(settings, """
        SELECT sum(candidates), sum(above_threshold), sum(duplicates_rejected), sum(staged),
               sum(skipped), sum(pending), sum(approved), sum(edited)
        FROM marts.dream_funnel""")
    totals = rows[0]
    assert tuple(int(v) for v in totals[:6]) == db_funnel
    assert (int(totals[6]), int(totals[7])) == (1, 1)  # one approved as staged, one edited
    assert db_funnel[2] >= 1 and db_funnel[3] >= 3
    _, per_day = service.run_sql(settings, "SELECT dream_day, sum(candidates) "
                                           "FROM marts.dream_funnel GROUP BY 1")
    assert {d: int(n) for d, n in per_day} == by_day
    _, turns = service.run_sql(settings, "SELECT sum(events) FROM marts.daily_activity")
    assert turns[0][0] == events
    # every event counted on the machine it was collected on (the lake says its name)
    _, machines = service.run_sql(settings, "SELECT machine, sum(events) "
                                            "FROM marts.daily_activity GROUP BY 1")
    assert {m: int(n) for m, n in machines} == by_machine
    _, nights = service.run_sql(settings, "SELECT sum(turns_read) FROM marts.dream_nights")
    assert nights[0][0] > 0

    # a fresh install has no curator run and no orchard snapshot: their lake files are
    # empty with the snapshot's schema, and the marts over them build (every check passed)
    for table in CURATOR_AND_ORCHARD:
        path = lake.snapshot_path(settings.lake, table)
        described = duckdb.sql(f"DESCRIBE SELECT * FROM '{path}'").fetchall()
        assert [d[0] for d in described] == list(lake.SCHEMAS[table]), table
        assert duckdb.sql(f"SELECT count(*) FROM '{path}'").fetchall() == [(0,)], table
    _, empty = service.run_sql(settings, "SELECT (SELECT count(*) FROM marts.curator_history),"
                                         " (SELECT count(*) FROM marts.portfolio_weeks)")
    assert empty == [(0, 0)]

    # the report: files, metadata with the charts inline, summaries with checked citations
    folder = settings.reports_folder / WEEK
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert set(files) == {"report.md", "report.json", "activity.png", "funnel.png",
                          "vault.png", "spend.png"}
    assert all(files[f"{n}.png"].startswith(b"\x89PNG") for n in ("activity", "funnel"))
    markdown = files["report.md"].decode()
    assert markdown.startswith(f"# Week {WEEK} (2026-03-09 .. 2026-03-15)")
    assert "A week of steady work." in markdown and "## Dream" in markdown
    assert "999999999" not in markdown  # an invented citation is dropped and counted
    assert "The curator has no record this week" in markdown
    assert "No orchard snapshot of this week" in markdown
    meta = run.asset_materializations_for_node("weekly_report")[0].metadata
    assert "data:image/png;base64," in meta["report"].value
    assert meta["summaries"].value == "done" and meta["llm_calls"].value == len(llm.calls) > 0
    stored = service.read_report(settings, WEEK)
    assert stored["numbers"]["totals"]["turns"] > 0
    assert all(p["invalid_citations"] == 1 for p in stored["summaries"]["projects"])

    # deterministic: the same week rebuilt from the same marts gives the same bytes
    again = build(world, ScriptedProvider(summarizer), selection=[weekly_report.key])
    assert again.success
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == files

    # without an LLM: numbers and charts, and a report that says the summaries need one
    bare = build(world, None, selection=[weekly_report.key])
    assert bare.success
    text = (folder / "report.md").read_text()
    assert "Summaries of what was done need an LLM" in text
    assert "![Dream funnel](funnel.png)" in text
    assert (folder / "funnel.png").read_bytes() == files["funnel.png"]

    # served locally: the list, the page with its charts, nothing from another host
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from memory_platform.api.access import Rules, caller_resolver
    from memory_platform.api.reports import reports_router

    app = FastAPI()  # the reports router alone: create_app would also start the dashboard's
    app.include_router(reports_router(Rules(caller_resolver(db, None))))  # recorder catch-up
    client = TestClient(app)
    assert WEEK in client.get("/reports").text
    page = client.get(f"/reports/{WEEK}")
    assert page.status_code == 200 and "<table>" in page.text
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert f"/reports/{WEEK}/funnel.png" in sources
    assert not [s for s in sources if "://" in s or s.startswith("//")]
    chart = client.get(f"/reports/{WEEK}/funnel.png")
    assert chart.headers["content-type"] == "image/png" and chart.content == files["funnel.png"]
    assert client.get(f"/reports/{WEEK}/..%2Freport.json").status_code == 404
    assert client.get("/reports/2020-W01").status_code == 404

    # curator records and an orchard snapshot planted: their marts and the report's sections
    check_curator_and_portfolio(world, build, tmp_path)

    # planted bad data (in this test, so the module builds its world once per worker): an
    # event from a source no adapter writes fails accepted_values on daily_activity.source,
    # a snapshot with a status orchard does not have fails it on portfolio_weeks.status, as
    # asset checks, and the step fails; every other check still passes
    day = datetime(2026, 3, 10, tzinfo=timezone.utc)
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO events (source, native_id, role, kind, occurred_at, text, raw, "
            "content_hash) VALUES ('myspace', 'planted-1', 'user', 'message', %s, 'hi', "
            "'{}', 'x')", (day + timedelta(hours=3),))
        conn.execute(
            "INSERT INTO orchard_snapshots (week, project_id, name, namespace, status, "
            "priority, blockers, archived, milestones, sessions, turns, run_id) "
            "SELECT week - 7, project_id, name, namespace, 'abandoned', priority, '{}', "
            "archived, 0, 0, 0, 'planted-2' FROM orchard_snapshots WHERE name = 'Atlas'")
    try:
        raw_lake.write_partition(db, settings.lake, "2026-03-10", day, day + timedelta(days=1))
        run = build(world, None, raise_on_error=False,
                    selection=[*lake_snapshots.keys, *analytics_marts.keys])
        assert not run.success
        failed = [c for c in run.get_asset_check_evaluations() if not c.passed]
        assert sorted((c.asset_key.to_user_string(), c.check_name) for c in failed) == [
            ("daily_activity", "accepted_values_daily_activity_source__claude_code__claude_ai"
                               "__chatgpt__gemini__notes__codex"),
            ("portfolio_weeks", "accepted_values_portfolio_weeks_status__active__paused__"
                                "blocked__done__idea")]
    finally:
        with db.connect() as conn:
            conn.execute("DELETE FROM events WHERE native_id = 'planted-1'")
            conn.execute("DELETE FROM orchard_snapshots WHERE run_id = 'planted-2'")
        raw_lake.write_partition(db, settings.lake, "2026-03-10", day, day + timedelta(days=1))


def test_the_lake_keeps_every_cut_with_its_reason_and_fate(db, tmp_path):
    """A cut restored, cut again by a later week and purged: three rows in curator_cuts, the
    restored one with its reason although its archive row is gone."""
    acme = acme_namespace(db, tmp_path)
    first = cut_two(db, acme).run_pk  # contradicted (the port) and duplicate
    duplicate = acme["ids"][2]
    archive.restore(db, duplicate, actor="test")
    later = CURATOR_WEEK + timedelta(days=7)
    run_week(db, acme, lambda h: {"cuts": [{
        "handle": h[DUPLICATE], "reason": "duplicate", "of": h[TRUE_CONFIG],
        "evidence": [{"handle": h[TRUE_CONFIG], "note": "same statement"}]}]},
        week=later, run_id="run-2")
    second = execute(db, "acme", later, dagster_run_id="run-2", config=acme["config"]).run_pk
    assert len(archive.purge(db, purged_by="test", now=NOW + timedelta(days=30))) == 2

    written = lake.write_snapshot(db, tmp_path / "lake", "curator_cuts")
    cuts = pl.read_parquet(written["path"])
    assert cuts.schema == pl.Schema(lake.SCHEMAS["curator_cuts"])
    assert cuts.select("curator_run_id", "memory_id", "reason", "related_memory_id", "state"
                       ).rows() == [
        (first, acme["ids"][0], "contradicted", None, "purged"),
        (first, duplicate, "duplicate", acme["ids"][1], "restored"),
        (second, duplicate, "duplicate", acme["ids"][1], "purged")]
    fates = cuts.select(pl.col("restored_at").is_not_null(), pl.col("purged_at").is_not_null())
    assert fates.rows() == [(False, True), (True, False), (False, True)]
    assert (cuts["cut_at"] <= cuts["restored_at"]).to_list()[1]
    with db.connect() as conn:  # the cut time is the 'cut' audit row's
        audit = conn.execute("SELECT at FROM vault_audit WHERE action = 'cut' "
                             "ORDER BY id").fetchall()
    assert sorted(cuts["cut_at"].to_list()) == [a for (a,) in audit]
    again = lake.write_snapshot(db, tmp_path / "lake", "curator_cuts")
    assert again["rows"] == 3 and pl.read_parquet(again["path"]).equals(cuts)


def test_sql_is_read_only(tmp_path):
    settings = load_settings(home=tmp_path)
    day = settings.lake / "raw_events" / "date=2026-03-09"
    day.mkdir(parents=True)
    pl.DataFrame({"id": [1, 2], "source": ["notes", "gemini"]}).write_parquet(
        day / "events.parquet")
    for statement in ("CREATE TABLE x (a int)", "COPY (SELECT 1) TO '/tmp/x.csv'",
                      "SELECT 1; SELECT 2", "ATTACH '/tmp/other.duckdb'"):
        with pytest.raises(sql.SQLRefused):
            sql.query(settings, statement)
    with pytest.raises(sql.SQLRefused, match="lake.raw_events"):
        sql.query(settings, "SELECT * FROM no_such_table")
    columns, rows = sql.query(settings, "SELECT count(*) AS n FROM lake.raw_events")
    assert columns == ["n"] and rows[0] == (2,)
    with pytest.raises(FileNotFoundError, match="no marts"):
        sql.connect(settings, need_marts=True)


def test_iso_weeks_and_the_weekly_schedule():
    from memory_platform.days import last_complete_week, parse_week, week_label
    from memory_platform.defs.analytics.automation import weekly_report_schedule

    assert parse_week("2026-W11") == parse_week("2026-03-12") == date(2026, 3, 9)
    assert week_label(date(2026, 3, 9)) == WEEK and week_label(date(2027, 1, 4)) == "2027-W01"
    with pytest.raises(ValueError, match="2026-W48"):
        parse_week("last week")
    monday_morning = datetime(2026, 3, 16, 6, tzinfo=timezone.utc)
    assert last_complete_week(monday_morning) == date(2026, 3, 9)
    request = weekly_report_schedule(dg.build_schedule_context(
        scheduled_execution_time=monday_morning))
    assert request.partition_key == MONDAY and request.run_key == f"weekly-report:{WEEK}"


def test_charts_are_the_same_bytes_for_the_same_numbers():
    from memory_platform.analytics import charts

    days = [date(2026, 3, 9) + timedelta(days=i) for i in range(7)]
    series = {"chatgpt": [1, 2, 0, 0, 3, 0, 1], "notes": [0, 1, 1, 0, 0, 0, 0]}
    first = charts.stacked_bars("t", days, series, "turns")
    assert first.startswith(b"\x89PNG") and b"matplotlib" not in first
    assert charts.stacked_bars("t", days, dict(reversed(series.items())), "turns") == first
    assert charts.stacked_bars("t", days, {"chatgpt": [0] * 7}, "turns") != first
