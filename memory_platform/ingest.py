"""Import export files into cairn: discover, parse (adapters), write (store.raw).

Plain functions; the CLI and the Dagster assets are thin layers over `import_path` and
`scan_files`. Guarantees:
- idempotent: a row's identity is (source, native_id); re-importing adds nothing twice, and
  an unchanged file is skipped by its stat and sha256 without parsing;
- resumable: append-only transcripts resume after the last complete line they held;
- crash-safe: events are committed in batches (each its own transaction) and the file's
  import state only with the last batch, so a crash mid-file leaves a consistent database
  and a re-run completes the file;
- loud: every unreadable line or record becomes an `ImportError` naming file and line.
"""

import hashlib
import json
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import orjson

from memory_platform.adapters import KINDS, UnknownFormat, detect_kind, get_adapter
from memory_platform.adapters.base import ROLES, Checkpoint, Conversation, Event, ParseIssue
from memory_platform.store import Database
from memory_platform.store import raw as store

log = logging.getLogger(__name__)

BATCH_EVENTS = 5000  # rows per transaction: big enough for COPY to pay off, small enough to redo
CATALOG_CHUNK = 64  # files hashed and registered in the catalog with one statement

# Files that sit beside real exports and hold no conversation turns.
COMPANION_FILES = {
    "user.json", "users.json", "user_settings.json", "message_feedback.json",
    "model_comparisons.json", "shared_conversations.json", "export_manifest.json",
    "memories.json", "chat.html", "sessions-index.json", "history.jsonl",
    "group_chats.json", "shopping.json", "sora.json", "conversations.json.index",
}


class ImportFailed(RuntimeError):
    """The import could not start (missing path, unknown kind); nothing was written."""


@dataclass
class RecordError:
    file: str
    line: int | None
    record_id: str | None
    message: str

    def to_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "record_id": self.record_id,
                "message": self.message}

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        if self.record_id:
            where += f" (record {self.record_id})"
        return f"{where}: {self.message}"


@dataclass
class ImportReport:
    files: int = 0
    files_unchanged: int = 0
    files_resumed: int = 0
    events_new: int = 0
    events_existing: int = 0
    events_revised: int = 0
    events_outside_window: int = 0
    errors: list[RecordError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files not recognised as any export
    by_source: dict[str, dict[str, int]] = field(default_factory=dict)
    # The writer thread updates counts while the parser thread adds files.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, source: str, new: int, existing: int) -> None:
        entry = self.by_source.setdefault(source, {"files": 0, "events_new": 0,
                                                    "events_existing": 0})
        entry["events_new"] += new
        entry["events_existing"] += existing
        self.events_new += new
        self.events_existing += existing

    def to_dict(self) -> dict:
        return {
            "files": self.files,
            "files_unchanged": self.files_unchanged,
            "files_resumed": self.files_resumed,
            "events_new": self.events_new,
            "events_existing": self.events_existing,
            "events_revised": self.events_revised,
            "events_outside_window": self.events_outside_window,
            "by_source": self.by_source,
            "errors": [e.to_dict() for e in self.errors],
            "skipped": self.skipped,
        }


Progress = Callable[[str, int], None]  # (event name, amount): "file", "events"


# --- discovery ----------------------------------------------------------------------------


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


# --- hashing -------------------------------------------------------------------------------


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


# --- rows ------------------------------------------------------------------------------------


def _pg_text(value: str | None) -> str | None:
    """PostgreSQL text holds neither NUL nor lone surrogates; replace them visibly."""
    if value is None:
        return None
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _json_text(value) -> str:
    try:
        data = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        # Lone surrogates or huge ints: fall back to the slow path and replace what
        # cannot be stored rather than lose the record.
        data = json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "replace")
    if b"\\u0000" in data:
        # jsonb rejects \u0000; keep an escaped backslash followed by "u0000" intact.
        text = data.decode("utf-8")
        out, i = [], 0
        while True:
            j = text.find("\\u0000", i)
            if j < 0:
                out.append(text[i:])
                break
            backslashes = len(text[:j]) - len(text[:j].rstrip("\\"))
            out.append(text[i:j])
            out.append("\\u0000" if backslashes % 2 else "\\ufffd")
            i = j + 6
        return "".join(out)
    return data.decode("utf-8")


def event_row(source: str, event: Event, source_file_id: int | None = None) -> tuple:
    if event.occurred_at is None or event.occurred_at.tzinfo is None:
        raise ValueError(f"adapter {source} produced an event without an aware timestamp")
    role = event.role
    attrs = event.attrs
    if role not in ROLES:
        attrs = {**attrs, "original_role": role}
        role = "other"
    raw = _json_text(event.raw)
    text = _pg_text(event.text) or ""
    digest = hashlib.sha256(raw.encode("utf-8"))
    digest.update(b"\x1f")
    digest.update(text.encode("utf-8"))
    return (
        source,
        _pg_text(event.native_id),
        _pg_text(event.conversation_id),
        _pg_text(event.parent_id),
        role,
        event.kind,
        _pg_text(event.author),
        event.occurred_at,
        text,
        raw,
        _pg_text(event.project),
        _pg_text(event.git_branch),
        event.is_sidechain,
        event.on_active_branch,
        _json_text(attrs),
        digest.hexdigest()[:32],
        source_file_id,
        event.line,
    )


# --- import ----------------------------------------------------------------------------------


class BatchWriter:
    """Writes rows from any number of files in big transactions, on its own connection and
    thread, so parsing the next rows overlaps the database's work (the two use different
    cores). A file's import state is written in the transaction holding the file's last
    rows: a crash never marks a half-written file as imported."""

    def __init__(self, db: Database, report: ImportReport, progress: Progress | None,
                 batch_events: int | None = None):
        self._db = db
        self._report = report
        self._progress = progress
        self._batch = batch_events or BATCH_EVENTS
        self._rows: list[tuple] = []
        self._conversations: list[tuple] = []
        self._finished: list[store.ImportState] = []
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="cairn-writer", daemon=True)
        self._thread.start()

    def add_row(self, row: tuple) -> None:
        self._rows.append(row)
        if len(self._rows) >= self._batch:
            self._hand_over()

    def add_conversation(self, row: tuple) -> None:
        self._conversations.append(row)

    def finish_file(self, state: store.ImportState) -> None:
        """Record the file's import state in the transaction that commits its last rows."""
        self._finished.append(state)

    def _hand_over(self) -> None:
        if self._error is not None:
            raise self._error
        self._queue.put((self._rows, self._conversations, self._finished))
        self._rows, self._conversations, self._finished = [], [], []

    def close(self) -> None:
        """Write what is left and wait for the writer; re-raise its error, if any."""
        try:
            if self._rows or self._conversations or self._finished:
                self._hand_over()
        finally:
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            raise self._error

    def abort(self) -> None:
        self._rows, self._conversations, self._finished = [], [], []
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        try:
            with self._db.connect() as conn:
                conn.execute("SET synchronous_commit = off")
                while (job := self._queue.get()) is not None:
                    if self._error is not None:
                        continue  # drain, so the producer never blocks on a dead writer
                    try:
                        self._write(conn, *job)
                    except BaseException as exc:  # handed to the producer by close()
                        self._error = exc
        except BaseException as exc:  # could not even connect
            self._error = exc
            while self._queue.get() is not None:
                pass

    def _write(self, conn, rows, conversations, finished) -> None:
        with conn.transaction():
            store.upsert_conversations(conn, conversations)
            result = store.write_events(conn, rows)
            store.record_imports(conn, finished)
        with self._report.lock:
            for source, staged in result.staged.items():
                new = result.new.get(source, 0)
                self._report.count(source, new, staged - new)
            self._report.events_revised += result.revised
        if self._progress and rows:
            self._progress("events", len(rows))


def import_path(
    db: Database,
    kind: str | None,
    path: Path,
    *,
    window: tuple[datetime, datetime] | None = None,
    origin: str = "cli",
    progress: Progress | None = None,
    files: list[tuple[str, Path]] | None = None,
) -> ImportReport:
    """Import a file or folder (kind None: sniff each file). With `window`, only events in
    [start, end) are written and the files' resume state is left alone."""
    report = ImportReport()
    path = path.expanduser().resolve()
    targets = files if files is not None else discover(kind, path, report)
    with db.connect() as conn:
        # Catalog writes here (registrations, touched files) are re-derived by the next run
        # if a crash loses them; waiting for a WAL flush on each cost ~1 ms per file.
        conn.execute("SET synchronous_commit = off")
        run_id = store.start_import_run(conn, origin, kind, str(path), window)
        status = "failed"
        writer = BatchWriter(db, report, progress)
        try:
            catalog = store.get_source_files(
                conn, [(file_kind, str(file.resolve())) for file_kind, file in targets])
            # Hashing and registering a chunk of files at a time keeps catalog round trips
            # (slow while the writer thread holds the GIL) out of the per-file path.
            for start in range(0, len(targets), CATALOG_CHUNK):
                plans = [_plan(conn, file_kind, file, window, report, catalog)
                         for file_kind, file in targets[start:start + CATALOG_CHUNK]]
                ids = store.register_source_files(conn, [
                    (p.kind, p.path, p.hashed, p.stat.st_mtime_ns, p.sha)
                    for p in plans if p is not None])
                for plan in plans:
                    if plan is not None:
                        _parse_file(writer, plan, ids[(plan.kind, plan.path)], window, report)
                    if progress:
                        progress("file", 1)
            writer.close()
            status = "succeeded"
        finally:
            if status != "succeeded":
                writer.abort()
            # Record the outcome even when a database error aborts the run.
            try:
                store.record_import_errors(
                    conn, run_id, [(e.file, e.line, e.record_id, e.message) for e in report.errors]
                )
                store.finish_import_run(
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


def _plan(
    conn, kind: str, file: Path, window, report: ImportReport,
    catalog: dict[tuple[str, str], store.SourceFile],
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
        report.files_unchanged += 1
        with report.lock:
            report.count(kind, 0, known.event_count)
        return None
    resume_from = known.parsed_bytes if (full and known and known.parsed_bytes) else 0
    try:
        sha, prefix_sha, hashed = hash_file(file, resume_from)
    except OSError as exc:
        report.errors.append(RecordError(path, None, None, f"cannot read file: {exc}"))
        return None
    if full and known and known.imported_sha256 == sha:
        store.touch_source_file(conn, known.id, stat.st_size, stat.st_mtime_ns)
        report.files_unchanged += 1
        with report.lock:
            report.count(kind, 0, known.event_count)
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
    )


def _parse_file(
    writer: BatchWriter, plan: _Plan, file_id: int, window, report: ImportReport
) -> None:
    kind, file, path = plan.kind, plan.file, plan.path
    adapter = get_adapter(kind)
    full = window is None
    checkpoint: Checkpoint | None = None
    min_at = max_at = None
    parsed = 0
    file_errors = 0
    try:
        for item in adapter.parse(file, start_offset=plan.start_offset,
                                  start_line=plan.start_line):
            if isinstance(item, Event):
                try:
                    row = event_row(kind, item, file_id)
                except ValueError as exc:
                    file_errors += 1
                    report.errors.append(RecordError(path, item.line, item.native_id, str(exc)))
                    continue
                parsed += 1
                at = item.occurred_at
                min_at = at if min_at is None or at < min_at else min_at
                max_at = at if max_at is None or at > max_at else max_at
                if window is not None and not (window[0] <= at < window[1]):
                    report.events_outside_window += 1
                    continue
                writer.add_row(row)
            elif isinstance(item, Conversation):
                writer.add_conversation((
                    kind, _pg_text(item.native_id), _pg_text(item.title),
                    _pg_text(item.project), item.started_at, item.attrs,
                ))
            elif isinstance(item, ParseIssue):
                file_errors += 1
                report.errors.append(
                    RecordError(item.file, item.line, item.record_id, item.message)
                )
            elif isinstance(item, Checkpoint):
                checkpoint = item
    except (OSError, ValueError, UnicodeError) as exc:
        # The rest of this file cannot be read. What was handed to the writer stays (it is
        # valid and idempotent); the file keeps its old import state, so the next run
        # retries it, and the other files go on.
        report.errors.append(RecordError(path, None, None, f"import stopped: {exc}"))
        return
    if not full:
        return
    hashed, sha = plan.hashed, plan.sha
    offset = checkpoint.offset if checkpoint else hashed
    prefix = None
    if checkpoint is not None:
        prefix = sha if offset == hashed else hash_prefix(file, offset)
    writer.finish_file(store.ImportState(
        file_id, sha256=sha, size=hashed, mtime_ns=plan.stat.st_mtime_ns,
        parsed_bytes=offset if checkpoint else 0,
        parsed_lines=checkpoint.line if checkpoint else 0, prefix_sha256=prefix,
        min_at=min_at, max_at=max_at, added_events=parsed, full_parse=not plan.resume,
        error_count=file_errors,
    ))


# --- catalog scan (Dagster's source_files asset and the sensor) ----------------------------


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
            known = store.get_source_file(conn, kind, path)
            if (known and known.size_bytes == stat.st_size and known.mtime_ns == stat.st_mtime_ns
                    and known.min_event_at is not None):
                results.append(ScanResult(kind, path, known.id, False, known.min_event_at,
                                          known.max_event_at, known.event_count,
                                          known.error_count))
                continue
            sha, _, hashed = hash_file(file)
            file_id = store.register_source_file(conn, kind, path, hashed, stat.st_mtime_ns, sha)
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
            store.record_scan(conn, file_id, min_at, max_at, count, errors)
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
