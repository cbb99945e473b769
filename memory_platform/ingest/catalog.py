"""The catalog of source files: which files the watched folders hold (`discover`), their
sha256 and event-time range (`scan_files`, no events written), and totals over what was
imported. The sensor and the `source_files` asset read it to decide which days to import."""

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memory_platform.adapters import KINDS, UnknownFormat, detect_kind, get_adapter
from memory_platform.adapters.base import Event, ParseIssue
from memory_platform.ingest.report import ImportFailed, ImportReport, RecordError
from memory_platform.store import Database, event_reads
from memory_platform.store import catalog as catalog_store

# Files that sit beside real exports and hold no conversation turns.
COMPANION_FILES = {
    "user.json", "users.json", "user_settings.json", "message_feedback.json",
    "model_comparisons.json", "shared_conversations.json", "export_manifest.json",
    "memories.json", "chat.html", "sessions-index.json", "history.jsonl",
    "group_chats.json", "shopping.json", "sora.json", "conversations.json.index",
}



def discover(kind: str | None, path: Path, report: ImportReport) -> list[tuple[str, Path]]:
    """(kind, file) pairs under `path`. With kind None every file is sniffed (the inbox)."""
    if not path.exists():
        raise ImportFailed(f"{path}: no such file or folder")
    if kind is not None:
        if kind not in KINDS:
            raise ImportFailed(f"unknown source kind {kind!r}; expected one of {', '.join(KINDS)}")
        return [(kind, f) for f in get_adapter(kind).discover(path)]
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    found: list[tuple[str, Path]] = []
    for file in files:
        if file.name in COMPANION_FILES or file.name.startswith("."):
            continue
        try:
            found.append((detect_kind(file), file))
        except UnknownFormat as exc:
            report.skipped.append(str(exc))
    return found


def hash_file(path: Path, prefix_bytes: int = 0) -> tuple[str, str | None, int]:
    """sha256 of the whole file and of its first `prefix_bytes` bytes, in one read.
    Returns (sha256, prefix sha256 or None, bytes hashed)."""
    digest = hashlib.sha256()
    prefix = None
    done = 0
    with path.open("rb") as fh:
        while True:
            want = 1 << 20
            if prefix is None and prefix_bytes and done < prefix_bytes:
                want = min(want, prefix_bytes - done)
            chunk = fh.read(want)
            if not chunk:
                break
            digest.update(chunk)
            done += len(chunk)
            if prefix is None and prefix_bytes and done == prefix_bytes:
                prefix = digest.copy().hexdigest()
    return digest.hexdigest(), prefix, done


def hash_prefix(path: Path, length: int) -> str:
    return hash_file(path, length)[1] or hashlib.sha256().hexdigest()


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
    only files whose stat changed since the last scan or import; writes no events."""
    results = []
    with db.connect() as conn:
        for kind, file in targets:
            path = str(file.resolve())
            stat = file.stat()
            known = catalog_store.get_source_file(conn, kind, path)
            if (known and known.size_bytes == stat.st_size and known.mtime_ns == stat.st_mtime_ns
                    and known.min_event_at is not None):
                results.append(ScanResult(kind, path, known.id, False, known.min_event_at,
                                          known.max_event_at, known.event_count,
                                          known.error_count, known.last_scan_at))
                continue
            sha, _, hashed = hash_file(file)
            file_id = catalog_store.register_source_file(conn, kind, path, hashed,
                                                         stat.st_mtime_ns, sha)
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
            results.append(ScanResult(kind, path, file_id, True, min_at, max_at, count, errors))
    return results


def watched_targets(settings, report: ImportReport | None = None) -> list[tuple[str, Path]]:
    """Every file in the watched folders (those that exist), with its kind."""
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
