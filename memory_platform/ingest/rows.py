"""Rows for the events table, and the writer that commits them in big transactions on its
own thread while the parser reads on. A file's import state is committed with its last
rows, so a crash never marks a half-written file as imported."""

import hashlib
import json
import queue
import threading

import orjson

from memory_platform.adapters.base import ROLES, Event
from memory_platform.ingest.report import ImportReport, Progress
from memory_platform.store import Database
from memory_platform.store import catalog as catalog_store
from memory_platform.store import events as event_store

BATCH_EVENTS = 5000  # rows per transaction: big enough for COPY to pay off, small enough to redo


def pg_text(value: str | None) -> str | None:
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


def json_text(value) -> str:
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
    raw = json_text(event.raw)
    text = pg_text(event.text) or ""
    digest = hashlib.sha256(raw.encode("utf-8"))
    digest.update(b"\x1f")
    digest.update(text.encode("utf-8"))
    return (
        source,
        pg_text(event.native_id),
        pg_text(event.conversation_id),
        pg_text(event.parent_id),
        role,
        event.kind,
        pg_text(event.author),
        event.occurred_at,
        text,
        raw,
        pg_text(event.project),
        pg_text(event.git_branch),
        event.is_sidechain,
        event.on_active_branch,
        json_text(attrs),
        digest.hexdigest()[:32],
        source_file_id,
        event.line,
    )


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
        self._finished: list[catalog_store.ImportState] = []
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
        with conn.transaction():
            event_store.upsert_conversations(conn, conversations)
            result = event_store.write_events(conn, rows)
            catalog_store.record_imports(conn, finished)
        with self._report.lock:
            for source, staged in result.staged.items():
                new = result.new.get(source, 0)
                self._report.count(source, new, staged - new)
            self._report.events_revised += result.revised
        if self._progress and rows:
            self._progress("events", len(rows))
