"""The writer that commits rows in big transactions on its own thread while the parser reads
on. A file's import state is committed with its last rows, so a crash never marks a
half-written file as imported. A row PostgreSQL refuses costs only itself: the batch is
split down to it, it is stored with its raw record replaced by a note of why (or not at all),
and the refusal is reported with the row's file, line and id."""

import queue
import threading
from collections.abc import Sequence
from dataclasses import replace

import orjson
import psycopg

from memory_platform.ingest.report import ImportReport, Progress, RecordError
from memory_platform.ingest.rows import json_text
from memory_platform.store import Database
from memory_platform.store import catalog as catalog_store
from memory_platform.store import events as event_store

BATCH_EVENTS = 5000  # rows per transaction: big enough for COPY to pay off, small enough to redo

# SQLSTATE classes a single row can cause: data exceptions (22) and program limits (54:
# jsonb over 256 MB, nesting past the server's stack). Others (a lost connection, a full
# disk) fail the import as before.
_ROW_ERROR_CLASSES = ("22", "54")
_RAW, _ATTRS, _NATIVE_ID, _FILE_ID, _LINE = 9, 14, 1, 16, 17


def _refused_by_row(error: psycopg.Error) -> bool:
    return (error.sqlstate or "")[:2] in _ROW_ERROR_CLASSES


class BatchWriter:
    """Writes rows from any number of files in big transactions, on its own connection and
    thread, so parsing the next rows overlaps the database's work (the two use different
    cores). A file's import state is written in the transaction holding the file's last
    rows: a crash never marks a half-written file as imported."""

    def __init__(self, db: Database, report: ImportReport, progress: Progress | None,
                 batch_events: int | None = None, machine_id: int | None = None):
        self._db = db
        self._machine_id = machine_id  # whose events these are (None: the local machine)
        self._report = report
        self._progress = progress
        self._batch = batch_events or BATCH_EVENTS
        self._rows: list[tuple] = []
        self._conversations: list[tuple] = []
        self._finished: list[catalog_store.ImportState] = []
        # source_file_id or (source, conversation id) -> path, to name refused rows
        self._paths: dict = {}
        self._machines: dict[int, int] = {}  # source_file_id -> machine, where not the writer's
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name="cairn-writer", daemon=True)
        self._thread.start()

    def name_file(self, file_id: int, path: str, machine_id: int | None = None) -> None:
        """Name a file's rows (for refusals) and the machine they are from (None: the
        writer's)."""
        self._paths[file_id] = path
        if machine_id is not None:
            self._machines[file_id] = machine_id

    def add_row(self, row: tuple) -> None:
        self._rows.append(row)
        if len(self._rows) >= self._batch:
            self._hand_over()

    def add_conversation(self, row: tuple, path: str | None = None) -> None:
        self._conversations.append(row)
        if path is not None:
            self._paths[(row[0], row[1])] = path

    def finish_file(self, state: catalog_store.ImportState) -> None:
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
        by_machine: dict[int | None, list[tuple]] = {}
        for row in rows:
            machine = self._machines.get(row[_FILE_ID], self._machine_id)
            by_machine.setdefault(machine, []).append(row)
        with conn.transaction():
            self._write_conversations(conn, conversations)
            result = _merge([self._write_rows(conn, part, finished, machine)
                             for machine, part in by_machine.items()])
            catalog_store.record_imports(conn, finished)
        with self._report.lock:
            for source, staged in result.staged.items():
                new = result.new.get(source, 0)
                self._report.count(source, new, staged - new)
            self._report.events_revised += result.revised
        if self._progress and rows:
            self._progress("events", len(rows))

    # --- rows PostgreSQL refuses --------------------------------------------------------

    def _write_rows(self, conn, rows: Sequence[tuple], finished,
                    machine: int | None = None) -> event_store.BatchResult:
        """write_events, or when PostgreSQL refuses a row, the rows around it and the refused
        one on its own. The biggest row is the usual suspect (jsonb over 256 MB), so it is
        tried alone first; otherwise the batch is halved until the row is found."""
        try:
            with conn.transaction():
                return event_store.write_events(conn, rows, machine)
        except psycopg.Error as error:
            if not _refused_by_row(error):
                raise
            if len(rows) == 1:
                return self._refused(conn, rows[0], error, finished, machine)
            biggest = max(range(len(rows)), key=lambda i: len(rows[i][_RAW]) + len(rows[i][8]))
            if len(rows[biggest][_RAW]) + len(rows[biggest][8]) > (1 << 20):
                parts = [rows[biggest:biggest + 1], rows[:biggest] + rows[biggest + 1:]]
            else:
                parts = _halves(rows)
        results = [self._write_rows(conn, part, finished, machine) for part in parts if part]
        return _merge(results)

    def _write_conversations(self, conn, rows: Sequence[tuple]) -> None:
        """upsert_conversations; a conversation PostgreSQL refuses is reported and left out
        (its events still get a bare conversation row)."""
        try:
            with conn.transaction():
                event_store.upsert_conversations(conn, rows)
            return
        except psycopg.Error as error:
            if not _refused_by_row(error):
                raise
            if len(rows) == 1:
                reason = " ".join(str(error).split())[:300]
                with self._report.lock:
                    self._report.errors.append(RecordError(
                        self._paths.get((rows[0][0], rows[0][1]), "?"), None, rows[0][1],
                        f"conversation not stored: PostgreSQL refused it ({reason})"))
                return
        for half in _halves(rows):
            if half:
                self._write_conversations(conn, half)

    def _refused(self, conn, row: tuple, error: psycopg.Error, finished,
                 machine: int | None = None) -> event_store.BatchResult:
        """Store the row with a note in place of its raw record; report the refusal."""
        reason = " ".join(str(error).split())[:300]
        stub = list(row)
        stub[_RAW] = json_text({"not_stored": f"PostgreSQL refused the record: {reason}",
                                "json_bytes": len(row[_RAW].encode("utf-8", "replace"))})
        stub[_ATTRS] = json_text({**orjson.loads(row[_ATTRS]), "raw_refused": True})
        try:
            with conn.transaction():
                result = event_store.write_events(conn, [tuple(stub)], machine)
            outcome = "stored with its raw record replaced by this note (attrs.raw_refused)"
        except psycopg.Error as again:
            if not _refused_by_row(again):
                raise
            result = event_store.BatchResult({}, {}, 0)
            outcome = "not stored"
        file_id = row[_FILE_ID]
        message = f"PostgreSQL refused the record ({reason}); {outcome}"
        with self._report.lock:
            self._report.errors.append(RecordError(
                self._paths.get(file_id, f"source file {file_id}"), row[_LINE], row[_NATIVE_ID],
                message))
        for i, state in enumerate(finished):  # its file's state, if committed with it
            if state.file_id == file_id:
                finished[i] = replace(state, error_count=state.error_count + 1)
        return result


def _halves(rows: Sequence) -> list:
    return [rows[: len(rows) // 2], rows[len(rows) // 2:]]


def _merge(results: list[event_store.BatchResult]) -> event_store.BatchResult:
    new: dict[str, int] = {}
    staged: dict[str, int] = {}
    for result in results:
        for source, count in result.new.items():
            new[source] = new.get(source, 0) + count
        for source, count in result.staged.items():
            staged[source] = staged.get(source, 0) + count
    return event_store.BatchResult(new, staged, sum(r.revised for r in results))
