"""Import export files into cairn: plan each file (skip, resume or parse), parse (adapters), write
(ingest.rows).

Plain functions; the CLI and the Dagster assets are thin layers over `import_path` and
`scan_files`. Guarantees:
- idempotent: a row's identity is (source, native_id); re-importing adds nothing twice, and
  an unchanged file is skipped by its stat and sha256 without parsing;
- resumable: append-only transcripts resume after the last complete line they held;
- crash-safe: events are committed in batches (each its own transaction) and the file's
  import state only with the last batch, so a crash mid-file leaves a consistent database
  and a re-run completes the file;
- loud: every unreadable line or record becomes an `ImportError` naming file and line;
- confined: files are found by `confined.walk` and opened by `confined.open_file` (the
  adapters'), so a symlink out of the imported folder, a FIFO or a device is reported as an
  error, never read.
"""

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memory_platform.adapters import get_adapter
from memory_platform.adapters.base import Checkpoint, Conversation, Event, Item, ParseIssue
from memory_platform.confined.digest import hash_file, hash_prefix
from memory_platform.ingest.catalog import discover
from memory_platform.ingest.report import ImportReport, Progress, RecordError
from memory_platform.ingest.rows import build_row, conversation_row
from memory_platform.ingest.writer import BatchWriter
from memory_platform.store import Database
from memory_platform.store import catalog as catalog_store

log = logging.getLogger(__name__)

UNCHANGED_NOTE = " (the file is unchanged since this was reported)"
CATALOG_CHUNK = 64  # files hashed and registered in the catalog with one statement


def import_path(
    db: Database,
    kind: str | None,
    path: Path,
    *,
    window: tuple[datetime, datetime] | None = None,
    origin: str = "cli",
    progress: Progress | None = None,
    files: list[tuple[str, Path]] | None = None,
    report: ImportReport | None = None,
    machine_id: int | None = None,
) -> ImportReport:
    """Import a file or folder (kind None: sniff each file). With `window`, only events in
    [start, end) are written and the files' resume state is left alone. `files` are the
    targets when the caller discovered them already, and `report` the report that discovery
    filled (what its walk skipped): both are recorded with this run. `machine_id` is the
    machine the files came from (None: this one; a collector's push names its own)."""
    report = report if report is not None else ImportReport()
    path = path.expanduser().resolve()
    targets = files if files is not None else discover(kind, path, report)
    with db.connect() as conn:
        # Catalog writes here (registrations, touched files) are re-derived by the next run
        # if a crash loses them; waiting for a WAL flush on each cost ~1 ms per file.
        conn.execute("SET synchronous_commit = off")
        run_id = catalog_store.start_import_run(conn, origin, kind, str(path), window)
        status = "failed"
        writer = BatchWriter(db, report, progress, machine_id=machine_id)
        try:
            catalog = catalog_store.get_source_files(
                conn, [(file_kind, str(file.resolve())) for file_kind, file in targets])
            # Hashing and registering a chunk of files at a time keeps catalog round trips
            # (slow while the writer thread holds the GIL) out of the per-file path.
            read_in_window: list[int] = []  # files a window import read (status's "last")
            for start in range(0, len(targets), CATALOG_CHUNK):
                plans = [_plan(conn, file_kind, file, window, report, catalog)
                         for file_kind, file in targets[start:start + CATALOG_CHUNK]]
                ids = catalog_store.register_source_files(conn, [
                    (p.kind, p.path, p.hashed, p.stat.st_mtime_ns, p.sha)
                    for p in plans if p is not None], machine_id)
                for plan in plans:
                    if plan is not None:
                        if machine_id is not None:
                            plan.machine_id = machine_id
                        _parse_file(writer, plan, ids[(plan.kind, plan.path)], window, report)
                        if window is not None:
                            read_in_window.append(ids[(plan.kind, plan.path)])
                    if progress:
                        progress("file", 1)
            writer.close()
            catalog_store.mark_imported(conn, read_in_window)
            status = "succeeded"
        finally:
            if status != "succeeded":
                writer.abort()
            # Record the outcome even when a database error aborts the run.
            try:
                catalog_store.record_import_errors(
                    conn, run_id, [(e.file, e.line, e.record_id, e.message) for e in report.errors]
                )
                catalog_store.finish_import_run(
                    conn, run_id, status=status, files=report.files,
                    events_new=report.events_new, events_existing=report.events_existing,
                    events_revised=report.events_revised, error_count=len(report.errors),
                )
            except Exception:
                if status == "succeeded":
                    raise
                log.exception("could not record the failed import run %s", run_id)
    return report


@dataclass
class _Plan:
    """A file to parse, and where to start."""

    kind: str
    file: Path
    path: str
    stat: os.stat_result
    sha: str  # of the first `hashed` bytes
    hashed: int
    resume: bool
    start_offset: int
    start_line: int
    machine_id: int | None = None  # whose records (the catalog's; None: this machine)


def _plan(
    conn, kind: str, file: Path, window, report: ImportReport,
    catalog: dict[tuple[str, str], catalog_store.SourceFile],
) -> _Plan | None:
    """Stat and hash a file; None if it needs no parsing (unchanged, or unreadable)."""
    path = str(file.resolve())
    report.files += 1
    with report.lock:
        entry = report.by_source.setdefault(
            kind, {"files": 0, "events_new": 0, "events_existing": 0})
        entry["files"] += 1
    try:
        stat = file.stat()
    except OSError as exc:  # vanished between discovery and import (Claude Code cleanup)
        report.errors.append(RecordError(path, None, None, f"cannot read file: {exc}"))
        return None
    known = catalog.get((kind, path))
    full = window is None
    if (full and known and known.imported_sha256 and known.size_bytes == stat.st_size
            and known.mtime_ns == stat.st_mtime_ns):
        _skip_unchanged(conn, known, path, report)
        return None
    resume_from = known.parsed_bytes if (full and known and known.parsed_bytes) else 0
    try:
        sha, prefix_sha, hashed = hash_file(file, resume_from)
    except OSError as exc:
        report.errors.append(RecordError(path, None, None, f"cannot read file: {exc}"))
        return None
    if full and known and known.imported_sha256 == sha:
        catalog_store.touch_source_file(conn, known.id, stat.st_size, stat.st_mtime_ns)
        _skip_unchanged(conn, known, path, report)
        return None
    resume = bool(
        full and known and resume_from and hashed >= resume_from
        and prefix_sha == known.prefix_sha256
    )
    if resume:
        report.files_resumed += 1
    return _Plan(
        kind, file, path, stat, sha, hashed, resume,
        start_offset=known.parsed_bytes if resume and known else 0,
        start_line=known.parsed_lines if resume and known else 0,
        machine_id=known.machine_id if known else None,
    )


def _skip_unchanged(conn, known: catalog_store.SourceFile, path: str,
                    report: ImportReport) -> None:
    """An unchanged file is not parsed again; but a file whose last import had errors keeps
    reporting them (exit code 1) until it changes: a failure is never remembered as done."""
    report.files_unchanged += 1
    with report.lock:
        report.count(known.kind, 0, known.event_count)
    if not known.error_count:
        return
    stored = catalog_store.last_errors_of(conn, path)
    for file, line, record_id, message in stored:
        if not message.endswith(UNCHANGED_NOTE):
            message += UNCHANGED_NOTE
        report.errors.append(RecordError(file, line, record_id, message))
    if not stored:  # counted by a catalog scan, which keeps no messages
        report.errors.append(RecordError(
            path, None, None, f"{known.error_count} record(s) could not be read the last "
            f"time this file was parsed{UNCHANGED_NOTE}"))


def _parse_file(
    writer: BatchWriter, plan: _Plan, file_id: int, window, report: ImportReport
) -> None:
    kind, file, path = plan.kind, plan.file, plan.path
    adapter = get_adapter(kind)
    writer.name_file(file_id, path, plan.machine_id)
    full = window is None
    checkpoint: Checkpoint | None = None
    min_at = max_at = None
    parsed = 0
    file_errors = 0
    first_error = len(report.errors)
    items = _items(adapter.parse(file, start_offset=plan.start_offset,
                                 start_line=plan.start_line))
    for item in items:
        if isinstance(item, Event):
            try:
                row = build_row(kind, item, file_id)
            except Exception as exc:  # noqa: BLE001 - reported; one record must not stop the rest
                file_errors += 1
                report.errors.append(RecordError(path, item.line, _id(item.native_id),
                                                 _unstorable(exc)))
                continue
            for note in row.notes:
                file_errors += 1
                report.errors.append(RecordError(path, item.line, _id(item.native_id), note))
            parsed += 1
            at = item.occurred_at
            min_at = at if min_at is None or at < min_at else min_at
            max_at = at if max_at is None or at > max_at else max_at
            if window is not None and not (window[0] <= at < window[1]):
                report.events_outside_window += 1
                continue
            writer.add_row(row.values)
        elif isinstance(item, Conversation):
            try:
                conversation = conversation_row(kind, item)
            except Exception as exc:  # noqa: BLE001 - reported; its events still import
                file_errors += 1
                report.errors.append(RecordError(path, None, _id(item.native_id),
                                                 f"conversation {_unstorable(exc)}"))
                continue
            writer.add_conversation(conversation, path)
        elif isinstance(item, ParseIssue):
            file_errors += 1
            report.errors.append(
                RecordError(item.file, item.line, item.record_id, item.message)
            )
        elif isinstance(item, Checkpoint):
            checkpoint = item
        elif isinstance(item, _Stopped):
            # The rest of this file cannot be read. What was handed to the writer stays (it
            # is valid and idempotent); the file keeps its old import state, so the next run
            # retries it, and the other files go on.
            report.errors.append(RecordError(path, None, None, f"import stopped: {item.why}"))
            return
    if not parsed and not plan.start_line:
        file_errors -= _not_this_kind(report, first_error, path, kind)
    if not full:
        return
    hashed, sha = plan.hashed, plan.sha
    offset = checkpoint.offset if checkpoint else hashed
    prefix = None
    if checkpoint is not None:
        prefix = sha if offset == hashed else hash_prefix(file, offset)
    writer.finish_file(catalog_store.ImportState(
        file_id, sha256=sha, size=hashed, mtime_ns=plan.stat.st_mtime_ns,
        parsed_bytes=offset if checkpoint else 0,
        parsed_lines=checkpoint.line if checkpoint else 0, prefix_sha256=prefix,
        min_at=min_at, max_at=max_at, added_events=parsed, full_parse=not plan.resume,
        error_count=file_errors,
    ))


LABELS = {"claude-code": "a Claude Code transcript", "codex": "a Codex session"}


def _not_this_kind(report: ImportReport, first: int, path: str, kind: str) -> int:
    """A file of another kind (a README, a log) gave no event and only lines that are not
    JSON: one error for the file instead of one per line (issue 22). Returns how many
    errors were folded away."""
    mine = report.errors[first:]
    if len(mine) < 2 or not all(e.file == path and e.message.startswith("malformed JSON")
                                for e in mine):
        return 0
    del report.errors[first:]
    name = path.rsplit("/", 1)[-1]
    report.errors.append(RecordError(
        path, None, None, f"{name} does not look like {LABELS.get(kind, f'a {kind} export')}: "
        f"{len(mine):,} of {len(mine):,} lines are not JSON"))
    return len(mine) - 1


@dataclass
class _Stopped:
    why: str


def _items(parsed: Iterator[Item]) -> Iterator[Item | _Stopped]:
    """The adapter's items, ending with _Stopped when it raises: whatever breaks in one file
    (an unreadable byte, a bug met by hostile input) is that file's error, not the run's."""
    try:
        yield from parsed
    except (OSError, ValueError, UnicodeError) as exc:
        yield _Stopped(str(exc))
    except Exception as exc:  # noqa: BLE001 - reported as the file's error, never swallowed
        log.exception("adapter failed on a file")
        yield _Stopped(f"{type(exc).__name__}: {exc}")


def _unstorable(error: Exception) -> str:
    if isinstance(error, ValueError):
        return f"not stored: {error}"
    return f"not stored ({type(error).__name__}: {error})"


def _id(value) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)
