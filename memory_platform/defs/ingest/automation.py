"""Watch the source folders and ingest the days whose files changed."""

import hashlib
import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg

from memory_platform.days import clamp_to_partitions, extend_history_start, merge_day_ranges
from memory_platform.defs.ingest.jobs import ingest_raw_events_job
from memory_platform.ingest import catalog
from memory_platform.ingest.report import ImportReport
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import PARTITION_TAG, RANGE_END, RANGE_START, range_tags

CURSOR_VERSION = 1
# Scanning a big export parses it; stop after this long and finish on the next tick
# (the cursor only advances for files handled), so a tick never hits the sensor timeout.
SCAN_BUDGET_SECONDS = 30.0
MAX_LOGGED = 20  # entries the walks skipped, logged per tick

def parse_cursor(cursor: str | None) -> dict[str, list[int]]:
    if not cursor:
        return {}
    data = json.loads(cursor)
    if data.get("version") != CURSOR_VERSION:
        return {}  # an older layout: rescan everything (idempotent, so safe)
    return data["files"]


def dump_cursor(files: dict[str, list[int]]) -> str:
    return json.dumps({"version": CURSOR_VERSION, "files": files}, sort_keys=True)


def covered(first: str, last: str, scanned_at: datetime | None,
            runs: list[tuple[datetime, str, str]]) -> bool:
    """Whether a successful import run (start time, first day, last day) that started after
    the catalog read the file as it is now covered all its days: then the file is imported
    and needs no run (the first tick after `memory-platform up`, which imported everything
    before this sensor ever ran)."""
    if scanned_at is None:
        return False
    return any(started > scanned_at and run_first <= first and last <= run_last
               for started, run_first, run_last in runs)


# A run that succeeded, or one under way (`up` serves the UI while its first import runs:
# the sensor's first tick must not import the same files a second time).
IMPORTING = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.STARTED,
             dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED]


def import_runs_since(instance: dg.DagsterInstance, since: datetime
                      ) -> list[tuple[datetime, str, str]]:
    """(start, first day, last day) of the successful (or running) runs that import raw
    events since `since`: range runs carry their range in tags, single-partition runs their key."""
    found = []
    # dream_job by name: the dream's definitions import this domain's, not the other way.
    for job_name in (ingest_raw_events_job.name, "dream_job"):
        records = instance.get_run_records(dg.RunsFilter(
            job_name=job_name, statuses=IMPORTING, created_after=since))
        for record in records:
            tags = record.dagster_run.tags
            first = tags.get(RANGE_START) or tags.get(PARTITION_TAG)
            last = tags.get(RANGE_END) or tags.get(PARTITION_TAG)
            if first and last and record.start_time is not None:
                started = datetime.fromtimestamp(record.start_time, timezone.utc)
                found.append((started, first, last))
    return found


@dg.sensor(
    job=ingest_raw_events_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def source_folders_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult | dg.SkipReason:
    """Watches the Claude Code projects folder, the inbox, the notes folder and the demo
    history. A new or changed file is catalogued (its event-time range), and the days it
    covers are requested as one single-run range per contiguous span."""
    settings = database.settings()
    seen = parse_cursor(context.cursor)
    report = ImportReport()  # what the walks skipped (a symlink out, a FIFO): logged
    targets = catalog.watched_targets(settings, report)
    changed = [
        (kind, path, size, mtime)
        for kind, path, size, mtime in catalog.iter_stat(targets)
        if seen.get(f"{kind}:{path}") != [size, mtime]
    ]
    walked = len(report.errors)
    for error in report.errors[:MAX_LOGGED]:
        context.log.warning(f"not scanned: {error}")
    if not changed:
        return dg.SkipReason(f"no changes in {len(targets)} watched files"
                             + (f"; {len(report.errors)} entries not read (see the log)"
                                if report.errors else ""))

    deadline = time.monotonic() + SCAN_BUDGET_SECONDS
    handled: list[tuple[str, str, int, int]] = []
    ranges: list[tuple[str, str]] = []
    runs: list[tuple[datetime, str, str]] | None = None  # read once, when first needed
    imported = 0
    for kind, path, size, mtime in changed:
        if handled and time.monotonic() > deadline:
            break
        scanned = catalog.scan_files(database.database(), [(kind, Path(path))], report)
        handled.append((kind, path, size, mtime))
        if not scanned:  # unreadable since it was found: logged below
            continue
        result = scanned[0]
        if result.min_at is None or result.max_at is None:
            continue
        moved = extend_history_start(result.min_at.strftime("%Y-%m-%d"))
        if moved:  # an older export: its days exist once the definitions load again
            context.log.warning(f"{path} goes back to {moved}: the daily partitions start "
                                f"there after the definitions reload (the UI's Reload "
                                f"definitions, or the next `memory-platform up`)")
        span = clamp_to_partitions(
            result.min_at.strftime("%Y-%m-%d"), result.max_at.strftime("%Y-%m-%d"),
            datetime.now(timezone.utc),
        )
        if not span:
            continue
        if not result.changed and result.scanned_at is not None:
            if runs is None:
                runs = import_runs_since(context.instance, result.scanned_at - timedelta(
                    days=1))
            if covered(*span, result.scanned_at, runs):
                imported += 1
                continue
        ranges.append(span)

    for error in report.errors[walked:walked + MAX_LOGGED]:
        context.log.warning(f"not scanned: {error}")
    for kind, path, size, mtime in handled:
        seen[f"{kind}:{path}"] = [size, mtime]
    # The run key names the data that triggered it, so a replayed tick requests nothing new.
    fingerprint = hashlib.sha256(
        json.dumps(sorted(handled)).encode()
    ).hexdigest()[:16]
    requests = [
        dg.RunRequest(
            run_key=f"{first}..{last}:{fingerprint}",
            tags=range_tags(first, last),
        )
        for first, last in merge_day_ranges(ranges)
    ]
    context.log.info(
        f"{len(handled)} of {len(changed)} changed files handled ({imported} already "
        f"imported by a run since they last changed); {len(requests)} run(s)"
    )
    return dg.SensorResult(run_requests=requests, cursor=dump_cursor(seen))
