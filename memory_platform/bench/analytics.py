"""Analytics benchmark: on a synthetic history of each size, imported for real, time the
lake export (raw-event partitions plus the snapshot tables), `dbt build` of the marts
(DuckDB over the Parquet; every dbt test included) and one weekly report (no LLM: numbers
and charts).

The import is timed too, but only to put the rest in proportion: `bench ingest` is its
benchmark. dbt runs as a subprocess, as dagster-dbt runs it, so its start-up (~seconds of
Python imports and a project parse) is part of the figure. The machine's load average is
recorded at the start and the end: two cores are shared with other work here.
"""

import json
import os
import platform
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from memory_platform import synthetic
from memory_platform.analytics import dbt as dbt_files
from memory_platform.analytics import lake, service
from memory_platform.bench.common import server_url, timed
from memory_platform.bench.ingest import _targets
from memory_platform.ingest import importer as ingest
from memory_platform.ingest import lake as raw_lake
from memory_platform.settings import load_settings
from memory_platform.store import Database


def _raw_lake(db: Database, lake_root: Path) -> tuple[int, int, int]:
    """Every day of events to its Parquet partition: (days, rows, bytes)."""
    with db.connect() as conn:
        first, last = conn.execute("SELECT min(occurred_at), max(occurred_at) FROM events"
                                   ).fetchone()
    day = first.replace(hour=0, minute=0, second=0, microsecond=0)
    days = rows = size = 0
    while day <= last:
        written = raw_lake.write_partition(db, lake_root, day.strftime("%Y-%m-%d"), day,
                                           day + timedelta(days=1))
        days, rows, size = days + 1, rows + written["rows"], size + written["bytes"]
        day += timedelta(days=1)
    return days, rows, size


def _dbt_build(settings, target: Path) -> dict:
    with dbt_files.dbt_environment(settings):
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
               "DBT_LOG_PATH": str(target)}
        result = subprocess.run(
            [dbt_files.dbt_executable(), "build", "--project-dir", str(dbt_files.PROJECT_DIR),
             "--profiles-dir", str(dbt_files.PROJECT_DIR), "--target-path", str(target)],
            env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"dbt build failed: {result.stdout[-3000:]}")
    results = json.loads((target / "run_results.json").read_text())["results"]
    return {"nodes": len(results),
            "tests": sum(r["unique_id"].startswith("test.") for r in results),
            "slowest": sorted(({"node": r["unique_id"].split(".")[-1],
                                "seconds": round(r["execution_time"], 2)} for r in results),
                              key=lambda r: -r["seconds"])[:5]}


def _busiest_week(settings) -> tuple:
    from memory_platform.analytics.sql import connect

    con = connect(settings, need_marts=True)
    try:
        return con.execute("SELECT date_trunc('week', day)::DATE AS monday FROM "
                           "marts.daily_activity GROUP BY 1 ORDER BY sum(turns) DESC, 1 "
                           "LIMIT 1").fetchall()[0][0]
    finally:
        con.close()


def run_size(events: int, workdir: Path, admin_url: str, log: Callable[[str], None]) -> dict:
    root = workdir / f"history-{events}"
    manifest, gen_s = timed(lambda: synthetic.generate_history(root, events, seed=7))
    log(f"  generated {manifest['events']:,} events ({gen_s:.1f} s)")
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    home = workdir / f"home-{events}"
    try:
        url = make_conninfo(admin_url, dbname=name)
        db = Database(url=url)
        settings = load_settings(home=home, database_url=url)
        imported, import_s = timed(lambda: ingest.import_path(db, None, root,
                                                               files=_targets(root)))
        log(f"  import: {imported.events_new:,} events in {import_s:.1f} s (context only)")
        (days, rows, raw_bytes), raw_s = timed(lambda: _raw_lake(db, settings.lake))
        log(f"  lake raw_events: {rows:,} rows in {days} daily files, {raw_bytes / 1e6:.1f} MB, "
            f"{raw_s:.1f} s = {rows / raw_s:,.0f} rows/s")
        snapshots, snap_s = timed(lambda: lake.write_snapshots(db, settings.lake))
        log(f"  lake snapshots: {sum(s['rows'] for s in snapshots):,} rows in {snap_s:.2f} s")
        with tempfile.TemporaryDirectory() as target:
            built, dbt_s = timed(lambda: _dbt_build(settings, Path(target)))
        log(f"  dbt build: {built['nodes']} nodes ({built['tests']} tests) in {dbt_s:.1f} s")
        monday = _busiest_week(settings)
        (report, _path), report_s = timed(lambda: service.build_week(db, settings, monday,
                                                                      None))
        log(f"  report of {report.week} (no LLM): {report_s:.2f} s")
        db.close()
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "events_target": events, "events_imported": imported.events_new,
        "import_seconds": round(import_s, 2),
        "lake_raw_events": {"days": days, "rows": rows, "bytes": raw_bytes,
                            "seconds": round(raw_s, 2), "rows_per_second": round(rows / raw_s)},
        "lake_snapshots": {"tables": {s["table"]: s["rows"] for s in snapshots},
                           "seconds": round(snap_s, 2)},
        "lake_export_seconds": round(raw_s + snap_s, 2),
        "dbt_build_seconds": round(dbt_s, 2), "dbt": built,
        "report_week": report.week, "report_turns": report.numbers["totals"]["turns"],
        "report_seconds": round(report_s, 2),
    }


def run(sizes: list[int], out: Path, log: Callable[[str], None] = print) -> dict:
    dbt_files.ensure_manifest(log)
    workdir = Path(tempfile.mkdtemp(prefix="bench-analytics-"))
    figures = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                           "python": platform.python_version()},
               "load_average_at_start": os.getloadavg(), "sizes": []}
    try:
        admin = server_url(workdir)
        for size in sizes:
            log(f"{size:,} events")
            figures["sizes"].append(run_size(size, workdir, admin, log))
            # Written after each size: a long run that is stopped keeps what it measured.
            figures["load_average_at_end"] = os.getloadavg()
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(figures, indent=1) + "\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    log(f"figures written to {out}")
    return figures
