"""The catalog of source files: which files the watched folders hold (`discover`), their
sha256 and event-time range (`scan_files`, no events written), and totals over what was
imported. The sensor and the `source_files` asset read it to decide which days to import."""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memory_platform.adapters import (
    COMPANION_FILES,
    KINDS,
    UnknownFormat,
    detect_kind,
    get_adapter,
)
from memory_platform.adapters.base import Event, ParseIssue
from memory_platform.confined import Listing, show, walk
from memory_platform.confined.digest import hash_file
from memory_platform.ingest.report import ImportFailed, ImportReport, RecordError
from memory_platform.store import Database, event_reads
from memory_platform.store import catalog as catalog_store


def discover(kind: str | None, path: Path, report: ImportReport) -> list[tuple[str, Path]]:
    """(kind, file) pairs under `path`, by real path. With kind None every file is sniffed
    (the inbox). The folder is walked by `confined.walk`: a symlink out of it, a FIFO, a
    socket or a device is not read, and each is reported as an import error."""
    if not path.exists():
        raise ImportFailed(f"{path}: no such file or folder")
    if kind is not None:
        if kind not in KINDS:
            raise ImportFailed(f"unknown source kind {kind!r}; expected one of {', '.join(KINDS)}")
        listing = get_adapter(kind).discover(path)
        _report_skips(listing, report)
        return [(kind, f) for f in listing]
    listing = walk(path)
    _report_skips(listing, report)
    found: list[tuple[str, Path]] = []
    for file in listing:
        if file.name in COMPANION_FILES or file.name.startswith("."):
            continue
        try:
            found.append((detect_kind(file), file))
        except UnknownFormat as exc:
            report.skipped.append(str(exc))
        except OSError as exc:  # gone, or swapped for a symlink or a FIFO since the walk
            report.errors.append(RecordError(show(file), None, None, f"cannot read: {exc}"))
    return found


def _report_skips(listing: Listing, report: ImportReport) -> None:
    for skip in listing.skipped:
        report.errors.append(RecordError(skip.path, None, None, f"not imported: {skip.reason}"))


@dataclass
class ScanResult:
    kind: str
    path: str
    file_id: int
    changed: bool
    min_at: datetime | None
    max_at: datetime | None
    events: int
    errors: int
    # When the catalog last read this file in its current state (None: never scanned);
    # a run started after it has seen the file as it is.
    scanned_at: datetime | None = None


def scan_files(
    db: Database, targets: list[tuple[str, Path]], report: ImportReport | None = None
) -> list[ScanResult]:
    """Bring the catalog up to date for these files: sha256 and event-time range. Parses
    only files whose stat changed since the last scan or import; writes no events. A file
    that cannot be read (gone, or swapped for a symlink or a FIFO since it was found) is
    reported in `report` and left out of the results; the others are scanned."""
    results = []
    with db.connect() as conn:
        for kind, file in targets:
            try:
                results.append(_scan_one(conn, kind, file, report))
            except (OSError, ValueError) as exc:
                if report is not None:
                    report.errors.append(RecordError(show(file), None, None,
                                                     f"cannot read file: {exc}"))
    return results


def _scan_one(conn, kind: str, file: Path, report: ImportReport | None) -> ScanResult:
    path = str(file.resolve())
    stat = file.stat()
    known = catalog_store.get_source_file(conn, kind, path)
    if (known and known.size_bytes == stat.st_size and known.mtime_ns == stat.st_mtime_ns
            and known.min_event_at is not None):
        return ScanResult(kind, path, known.id, False, known.min_event_at, known.max_event_at,
                          known.event_count, known.error_count, known.last_scan_at)
    sha, _, hashed = hash_file(file)
    file_id = catalog_store.register_source_file(conn, kind, path, hashed, stat.st_mtime_ns,
                                                 sha)
    min_at = max_at = None
    count = errors = 0
    for item in get_adapter(kind).parse(file):
        if isinstance(item, Event) and item.occurred_at is not None:
            count += 1
            at = item.occurred_at
            min_at = at if min_at is None or at < min_at else min_at
            max_at = at if max_at is None or at > max_at else max_at
        elif isinstance(item, ParseIssue):
            errors += 1
            if report is not None:
                report.errors.append(
                    RecordError(item.file, item.line, item.record_id, item.message))
    catalog_store.record_scan(conn, file_id, min_at, max_at, count, errors)
    return ScanResult(kind, path, file_id, True, min_at, max_at, count, errors)


def watched_targets(settings, report: ImportReport | None = None) -> list[tuple[str, Path]]:
    """Every file in the watched folders (those that exist), with its kind; what the walks
    skipped is in `report`'s errors."""
    report = report if report is not None else ImportReport()
    targets: list[tuple[str, Path]] = []
    for kind, folder in settings.watched_folders():
        if folder.exists():
            targets.extend(discover(kind, folder, report))
    return targets


def iter_stat(targets: list[tuple[str, Path]]) -> Iterator[tuple[str, str, int, int]]:
    """(kind, path, size, mtime_ns) for each target that still exists."""
    for kind, file in targets:
        try:
            st = os.stat(file)
        except FileNotFoundError:
            continue
        yield kind, str(file.resolve()), st.st_size, st.st_mtime_ns


def event_day_span(db: Database) -> tuple[str, str] | None:
    """(first day, last day) of the events the catalogued files hold; None when none do."""
    with db.connect() as conn:
        files = catalog_store.list_source_files(conn)
    starts = [f.min_event_at for f in files if f.min_event_at is not None]
    ends = [f.max_event_at for f in files if f.max_event_at is not None]
    if not starts:
        return None
    return min(starts).strftime("%Y-%m-%d"), max(ends).strftime("%Y-%m-%d")


def database_summary(db: Database) -> dict:
    """events, conversations, source_files, database_bytes."""
    with db.connect() as conn:
        return event_reads.database_summary(conn)


def totals(db: Database) -> dict:
    """summary (events, conversations, source_files, event_revisions, database_bytes),
    by_source {source: {events, conversations, first, last}}, by_month [{month, source,
    events}] (months in UTC)."""
    with db.connect() as conn:
        summary = event_reads.database_summary(conn)
        sources = event_reads.totals_by_source(conn)
        months = event_reads.totals_by_month(conn)
    return {
        "summary": summary,
        "by_source": {s: {"events": n, "conversations": c, "first": f, "last": last}
                      for s, n, c, f, last in sources},
        "by_month": [{"month": m, "source": s, "events": n} for m, s, n in months],
    }


def last_import_under(db: Database, folder: Path) -> datetime | None:
    """When a file under `folder` was last imported (None: never)."""
    with db.connect() as conn:
        return catalog_store.last_import_under(conn, str(folder))


def files_with_errors(db: Database) -> list[dict]:
    """Files whose last parse had errors: {kind, path, errors, last_import_at}."""
    with db.connect() as conn:
        return catalog_store.files_with_errors(conn)
