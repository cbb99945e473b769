"""Ingest assets: the file catalog, the raw events by day, and their Parquet copy.

Thin layer: the work is in `memory_platform.ingest.importer` and `memory_platform.ingest.lake`.
"""

from datetime import timedelta
from pathlib import Path

import dagster as dg

from memory_platform.ingest import catalog, lake
from memory_platform.ingest import importer as ingest
from memory_platform.ingest.report import ImportReport
from memory_platform.progress import Tracker
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import daily_partitions
from memory_platform.store import catalog as catalog_store
from memory_platform.store import event_reads

MAX_ERRORS_IN_METADATA = 20


@dg.asset(group_name="ingest", kinds={"postgres", "python"})
def source_files(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    """Catalog of export and transcript files in the watched folders (Claude Code projects,
    the inbox, notes, the demo history). One row per (kind, path): size, sha256, and the
    event-time range the file covers, which decides the partitions that read it.
    Re-scans only files whose size or mtime changed; writes no events."""
    settings = database.settings()
    report = ImportReport()
    targets = catalog.watched_targets(settings, report)
    results = catalog.scan_files(database.database(), targets, report)
    by_kind: dict[str, int] = {}
    for result in results:
        by_kind[result.kind] = by_kind.get(result.kind, 0) + 1
    changed = sum(r.changed for r in results)
    context.log.info(f"catalog: {len(results)} files, {changed} rescanned")
    for error in report.errors[:MAX_ERRORS_IN_METADATA]:  # parse errors, entries not read
        context.log.warning(str(error))
    return dg.MaterializeResult(
        metadata={
            "files": len(results),
            "files_rescanned": changed,
            "files_by_kind": by_kind,
            "parse_errors": len(report.errors),
            "skipped_unknown_files": len(report.skipped),
            "watched_folders": [str(f) for _, f in settings.watched_folders()],
        }
    )


@dg.asset(
    group_name="ingest",
    kinds={"postgres", "python"},
    partitions_def=daily_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[source_files],
)
def raw_events(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    """Every conversation turn, verbatim, in table `events`. One row is one record of one
    source (a Claude Code JSONL line, a ChatGPT mapping node, a claude.ai message, a Gemini
    prompt or response, a notes section); one partition is one UTC day of event time.
    A run (a day or a backfilled range, in one run) reads only the catalogued files whose
    time range overlaps its window and upserts their events that fall inside it."""
    window = context.partition_time_window
    start, end = window.start, window.end
    db = database.database()
    settings = database.settings()
    # Files may have changed since the catalog was materialized: refresh cheaply first.
    scan = ImportReport()
    catalog.scan_files(db, catalog.watched_targets(settings, scan), scan)
    for error in scan.errors[:MAX_ERRORS_IN_METADATA]:  # parse errors, entries not read
        context.log.warning(f"catalog: {error}")
    with db.connect() as conn:
        overlapping = catalog_store.files_overlapping(conn, start, end)
    present = [(f.kind, Path(f.path)) for f in overlapping if Path(f.path).exists()]
    missing = [f.path for f in overlapping if not Path(f.path).exists()]
    tracker = Tracker("importing raw events", "files", len(present), report=context.log.info)

    def progress(what: str, amount: int) -> None:
        if what == "file":
            tracker.advance(amount)
        else:
            tracker.advance(0, events=amount)

    report = ingest.import_path(
        db, None, settings.home, window=(start, end),
        origin=f"dagster:{context.run.run_id}", files=present, progress=progress,
    )
    tracker.finish()
    for error in report.errors[:MAX_ERRORS_IN_METADATA]:
        context.log.warning(str(error))
    with db.connect() as conn:
        counts = dict(event_reads.window_counts(conn, start, end))
    keys = context.partition_keys
    return dg.MaterializeResult(
        metadata={
            "partitions": f"{keys[0]}..{keys[-1]}" if len(keys) > 1 else keys[0],
            "files_read": len(present),
            "files_missing": len(missing),
            "events_new": report.events_new,
            "events_already_present": report.events_existing,
            "events_revised": report.events_revised,
            "by_source": report.by_source,
            "events_in_window_by_source": counts,
            "events_in_window": sum(counts.values()),
            "errors": len(report.errors),
            "first_errors": dg.MetadataValue.md(
                "\n".join(f"- `{e}`" for e in report.errors[:MAX_ERRORS_IN_METADATA]) or "none"
            ),
        }
    )


@dg.asset(
    group_name="ingest",
    kinds={"parquet", "duckdb"},
    partitions_def=daily_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[raw_events],
)
def raw_events_lake(
    context: dg.AssetExecutionContext, database: DatabaseResource
) -> dg.MaterializeResult:
    """A Parquet copy of each raw-event partition at
    `$MEMORY_PLATFORM_HOME/lake/raw_events/date=YYYY-MM-DD/events.parquet` (verbatim record
    included), readable with DuckDB: `SELECT * FROM 'lake/raw_events/*/*.parquet'`.
    Rewritten whole for each partition, so re-running is idempotent."""
    settings = database.settings()
    db = database.database()
    window = context.partition_time_window
    files = []
    day = window.start
    while day < window.end:
        key = day.strftime("%Y-%m-%d")
        files.append(lake.write_partition(db, settings.lake, key, day,
                                          day + timedelta(days=1)))
        day += timedelta(days=1)
    return dg.MaterializeResult(
        metadata={
            "rows": sum(f["rows"] for f in files),
            "bytes": sum(f["bytes"] for f in files),
            "files": len(files),
            "path": dg.MetadataValue.path(str(settings.lake / "raw_events")),
        }
    )
