"""`memory-platform sql` is read-only over the lake and the marts (issue 20, defect 5): its
DuckDB has external access off with only the lake and the warehouse allowed, extension
autoload and autoinstall off, and its configuration locked before anything is attached; an
EXPLAIN runs only a SELECT. Every refusal is a clear error (SQLRefused; on the CLI an
`error:` line and exit 1), never a traceback, and no file outside is read or written. The
weekly report reads through the same connection."""

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from memory_platform.analytics import sql
from memory_platform.settings import load_settings

CLI = str(Path(sys.executable).parent / "memory-platform")
CANARY = "canary-outside-the-lake-7f3e"


@pytest.fixture
def world(tmp_path):
    """A home with a lake day and a warehouse, and files outside both: a text file with
    the canary, a CSV, a Parquet file, and a folder beside the lake whose name starts like
    it (`lake-other`)."""
    home = tmp_path / "home"
    settings = load_settings(home=home)
    day = settings.lake / "raw_events" / "date=2026-03-09"
    day.mkdir(parents=True)
    pl.DataFrame({"id": [1, 2], "source": ["notes", "gemini"]}).write_parquet(
        day / "events.parquet")
    settings.warehouse_file.parent.mkdir(parents=True)
    with duckdb.connect(str(settings.warehouse_file)) as con:
        con.execute("CREATE TABLE daily_activity AS SELECT 7 AS events")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{CANARY}\n")
    (outside / "secret.csv").write_text(f"a,b\n{CANARY},1\n")
    pl.DataFrame({"x": [CANARY]}).write_parquet(outside / "secret.parquet")
    beside = home / "lake-other"
    beside.mkdir()
    (beside / "secret.txt").write_text(f"{CANARY}\n")
    return settings, outside, beside


def _refused(settings, statement: str) -> str:
    with pytest.raises(sql.SQLRefused) as refused:
        sql.query(settings, statement)
    message = str(refused.value)
    assert CANARY not in message and "Traceback" not in message
    return message


def test_sql_reads_the_lake_and_the_marts(world):
    settings, _, _ = world
    assert sql.query(settings, "SELECT count(*) AS n FROM lake.raw_events") == (["n"], [(2,)])
    assert sql.query(settings, "SELECT events FROM marts.daily_activity")[1] == [(7,)]
    lake_file = settings.lake / "raw_events" / "date=2026-03-09" / "events.parquet"
    assert sql.query(settings, f"SELECT count(*) FROM '{lake_file}'")[1] == [(2,)]
    columns, plan = sql.query(settings, "EXPLAIN SELECT count(*) FROM lake.raw_events")
    assert columns == ["explain_key", "explain_value"] and plan[0][0] == "physical_plan"
    _, analyzed = sql.query(settings, "EXPLAIN ANALYZE SELECT count(*) FROM lake.raw_events")
    assert analyzed


@pytest.mark.parametrize("reader", [
    "SELECT * FROM read_text('{file}.txt')",
    "SELECT * FROM read_blob('{file}.txt')",
    "SELECT * FROM read_csv('{file}.csv')",
    "SELECT * FROM '{file}.csv'",
    "SELECT * FROM read_parquet('{file}.parquet')",
    "SELECT * FROM sniff_csv('{file}.csv')",
    "SELECT * FROM glob('{folder}/*')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM glob('/root/*')",
    "SELECT * FROM read_text('{lake}/../outside-of-it.txt')",
    "SELECT * FROM read_text('{beside}/secret.txt')",
    "SELECT * FROM read_text('{lake}/link/secret.txt')",
    "SELECT * FROM read_text('{lake}/linked.txt')",
    "EXPLAIN ANALYZE SELECT * FROM read_text('{file}.txt')",
])
def test_sql_reads_no_file_outside_the_lake_and_the_warehouse(world, reader):
    settings, outside, beside = world
    (settings.home / "outside-of-it.txt").write_text(CANARY)
    (settings.lake / "link").symlink_to(outside)  # symlinks in the lake lead nowhere
    (settings.lake / "linked.txt").symlink_to(outside / "secret.txt")
    statement = reader.format(file=outside / "secret", folder=outside, lake=settings.lake,
                              beside=beside)
    assert "lake and the warehouse" in _refused(settings, statement)


@pytest.mark.parametrize("statement", [
    "EXPLAIN ANALYZE COPY (SELECT 'x') TO '{target}'",
    "EXPLAIN ANALYZE COPY (SELECT 'x') TO '{lake}/planted.csv'",
    "EXPLAIN COPY (SELECT 'x') TO '{target}'",
    "explain analyse copy (select 'x') to '{target}'",
    "EXPLAIN ANALYZE /* a comment */ COPY (SELECT 'x') TO '{target}'",
    "/* first */ EXPLAIN ANALYZE COPY (SELECT 'x') TO '{target}'",
    "EXPLAIN (FORMAT json) COPY (SELECT 'x') TO '{target}'",
    "EXPLAIN ANALYZE INSTALL httpfs",
    "EXPLAIN ANALYZE LOAD httpfs",
    "EXPLAIN ANALYZE SET enable_external_access = true",
    "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
    "EXPLAIN ANALYZE INSERT INTO marts.daily_activity VALUES (1)",
    "SELECT * FROM query('COPY (SELECT 1) TO ''{target}''')",
    "INSTALL httpfs",
    "SET enable_external_access = true",
    "SELECT * FROM read_csv('https://example.com/x.csv')",
])
def test_sql_writes_installs_and_reconfigures_nothing(world, tmp_path, statement):
    settings, _, _ = world
    target = tmp_path / "outside" / "written.csv"
    _refused(settings, statement.format(target=target, lake=settings.lake))
    assert not target.exists() and not (settings.lake / "planted.csv").exists()


def test_the_connection_is_locked_before_anything_is_attached(world):
    """The report and the bench read through sql.connect: the same sandbox, and nothing
    can loosen it afterwards."""
    settings, outside, _ = world
    con = sql.connect(settings, need_marts=True)
    try:
        values = dict(con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access',"
            " 'lock_configuration', 'autoload_known_extensions', "
            "'autoinstall_known_extensions', 'allow_community_extensions')").fetchall())
        assert values == {"enable_external_access": "false", "lock_configuration": "true",
                          "autoload_known_extensions": "false",
                          "autoinstall_known_extensions": "false",
                          "allow_community_extensions": "false"}
        for loosen in ("SET enable_external_access = true", "SET lock_configuration = false",
                       "RESET lock_configuration", f"SET allowed_directories = ['{outside}']"):
            with pytest.raises(duckdb.Error, match="locked"):
                con.execute(loosen)
        with pytest.raises(duckdb.PermissionException):
            con.execute(f"SELECT * FROM read_text('{outside / 'secret.txt'}')")
        assert con.execute("SELECT events FROM marts.daily_activity").fetchall() == [(7,)]
    finally:
        con.close()


def test_a_query_that_runs_too_long_is_stopped(world):
    settings, _, _ = world
    with pytest.raises(sql.SQLRefused, match="longer than 1 s"):
        sql.query(settings, "SELECT count(*) FROM range(1000000000000) a", timeout_s=1)
    with pytest.raises(sql.SQLRefused, match="more than 1,000 rows"):
        sql.query(settings, "SELECT * FROM range(5000)", max_rows=1000)


def test_the_cli_refuses_with_an_error_line(world):
    settings, outside, _ = world
    env = {**os.environ, "MEMORY_PLATFORM_HOME": str(settings.home)}
    for statement in (f"SELECT * FROM read_text('{outside / 'secret.txt'}')",
                      f"EXPLAIN ANALYZE COPY (SELECT 'x') TO '{outside / 'w.csv'}'"):
        done = subprocess.run([CLI, "sql", statement], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stderr.startswith("error:") and "Traceback" not in done.stderr
        assert CANARY not in done.stdout + done.stderr
    assert not (outside / "w.csv").exists()
    slow = subprocess.run([CLI, "sql", "SELECT count(*) FROM range(1000000000000) a",
                           "--timeout", "1"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert slow.returncode == 1 and "longer than 1 s" in slow.stderr, slow.stderr
    ok = subprocess.run([CLI, "sql", "SELECT count(*) AS n FROM lake.raw_events", "--json"],
                        capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0 and '"n": 2' in ok.stdout, ok.stderr
