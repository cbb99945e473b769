"""One collection round (scan into the spool, push the spool) and the loop around it, with
the status a person and the next hook read. Exit codes of `memory-platform collect`:

- 0: everything read is on the server;
- 1: the server could not store some records (each is listed: NUL, oversized, unreadable);
- 2: the server is away or refusing for now: the chunks wait in the spool;
- 3: the spool is full: new records are left unread until it drains (nothing is lost
  while the files stay; Claude Code deletes transcripts after 30 days);
- 4: the server refuses this collector (token wrong, revoked, or another machine's).
"""

import random
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import httpx

from memory_platform.collect import push as pusher
from memory_platform.collect import scan, state
from memory_platform.collect.identity import identity
from memory_platform.collect.spool import Spool
from memory_platform.collect.status import REFUSED, status, warning

__all__ = ["AWAY", "FULL", "OK", "RECORDS_REFUSED", "REFUSED", "Collector", "Config",
           "describe", "status", "warning"]

OK, RECORDS_REFUSED, AWAY, FULL = 0, 1, 2, 3
BACKOFF_S = (1, 2, 5, 10, 30, 60, 120, 300)  # waits between tries while the server is away


@dataclass
class Config:
    server: str
    home: Path
    machine: str | None = None  # default: this machine's name (HOME/machine.json)
    token: str | None = None
    spool_bytes: int = 256 << 20
    interval_s: float = 30.0
    roots: list = field(default_factory=list)

    @property
    def state_dir(self) -> Path:
        return Path(self.home) / "collector"


class Collector:
    def __init__(self, config: Config, client: httpx.Client | None = None):
        self.config = config
        me = identity(config.home)
        self.uid = me["uid"]
        self.machine = config.machine or me["name"]
        config.state_dir.mkdir(parents=True, exist_ok=True)
        self.spool = Spool(config.state_dir / "spool", config.spool_bytes)
        self.files_path = config.state_dir / "files.json"
        self.status_path = config.state_dir / "status.json"
        self.files = state.load(self.files_path, {})
        self.client = client or httpx.Client(trust_env=False)
        self.url = pusher.endpoint(config.server, self.machine)

    def save(self) -> None:
        state.save(self.files_path, self.files)

    def round(self) -> tuple[int, dict]:
        """Scan, then push; (exit code, summary)."""
        scanned = scan.spool_changes(self.config.roots, self.files, self.spool, self.save)
        summary: dict = {"machine": self.machine, "server": self.config.server,
                         "files": scanned.files, "files_changed": scanned.files_changed,
                         "chunks_read": scanned.chunks, "bytes_read": scanned.bytes_read,
                         "errors": list(scanned.errors)}
        code = OK
        try:
            pushed = pusher.push(self.client, self.url, self.spool, self.files,
                                 token=self.config.token, uid=self.uid, save=self.save)
        except pusher.Refused as exc:
            code, summary["last_error"] = REFUSED, str(exc)
        except pusher.Away as exc:
            code, summary["last_error"] = AWAY, str(exc)
        else:
            summary.update(chunks_sent=pushed.chunks, events_new=pushed.events_new,
                           events_existing=pushed.events_existing,
                           files_resent=pushed.resent_files, chunks_rejected=pushed.rejected)
            summary["errors"] += pushed.errors
            summary["last_push_at"] = _now()
            if pushed.errors or scanned.errors:
                code = RECORDS_REFUSED
        if scanned.full and code != REFUSED:
            code = FULL
        self._write_status(code, summary, scanned.full)
        return code, summary

    def _write_status(self, code: int, summary: dict, full: bool) -> None:
        previous = state.load(self.status_path, {})
        entries = self.spool.entries()
        status = {**summary, "exit_code": code, "at": _now(), "spool_chunks": len(entries),
                  "spool_bytes": self.spool.bytes, "spool_max_bytes": self.spool.max_bytes,
                  "spool_full": full,
                  "last_push_at": summary.get("last_push_at", previous.get("last_push_at"))}
        state.save(self.status_path, status)

    def once(self, attempts: int = 3) -> tuple[int, dict]:
        """A round, retried (bounded: 1 s, then 2 s) while the server is away."""
        code, summary = self.round()
        for wait in BACKOFF_S[: attempts - 1]:
            if code != AWAY:
                break
            time.sleep(wait)
            code, summary = self.round()
        return code, summary

    def forever(self, stop: threading.Event, report=print) -> None:
        """Rounds every `interval_s` until `stop` is set; while the server is away, the next
        try waits longer each time (capped, with jitter)."""
        failures = 0
        while not stop.is_set():
            code, summary = self.round()
            if code in (AWAY, REFUSED, FULL) or summary["errors"]:
                report(describe(code, summary))
            failures = failures + 1 if code in (AWAY, REFUSED) else 0
            wait = self.config.interval_s
            if failures:
                wait = BACKOFF_S[min(failures, len(BACKOFF_S)) - 1] * random.uniform(0.8, 1.2)
            stop.wait(wait)


def describe(code: int, summary: dict) -> str:
    lines = {
        OK: "collected: {chunks_sent} chunk(s), {events_new} new event(s)",
        RECORDS_REFUSED: "collected, but {n} record(s) or file(s) could not be stored",
        AWAY: "the server is away ({last_error}); chunks wait in the spool",
        FULL: "the spool is full: new records are left unread until the server takes it",
        REFUSED: "the server refuses this collector: {last_error}",
    }
    text = lines[code].format_map({"n": len(summary["errors"]), **_Blank(summary)})
    return "\n".join([text, *summary["errors"][:50]])


class _Blank(dict):
    def __missing__(self, key):
        return "?"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
