"""What an import reports: per-record errors (file, line, record id, message), totals per
source, and the files it could not recognise. Shared by the importer, the catalog scan and
every face that prints an import's outcome."""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field


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
