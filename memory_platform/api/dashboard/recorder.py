"""Recording the dashboard's decisions as Dagster runs, after the request that made them.

A click decides in its request (`vault.review`), so the entry is promoted when the
response arrives. `PromotionRecorder` then records the same decision as a run of
`vault_promotion_job` (action `record`) through `memory_platform.launch`, in a niced,
spawned child process, so every promotion still shows up in Dagster with its lineage.
"""

import logging
import os
import queue
import threading
import time
import traceback
from datetime import datetime, timedelta, timezone

from memory_platform.store import Database
from memory_platform.vault import review

log = logging.getLogger(__name__)
# How far back a starting server looks for approvals that never became Dagster runs.
CATCH_UP_DAYS = 14


class PromotionRecorder:
    """Records decisions already made as runs of vault_promotion_job (action `record`), in
    the order they were made, on the instance `memory-platform up` shows.

    One daemon thread drains the queue; it hands each decision to one long-lived child
    process (spawned on first use, niced) that imports Dagster once and executes the runs.
    In this process's own threads, a Dagster run (1.5-3.5 s of Python) held the GIL against
    the request handlers: clicks took 400-3,000 ms instead of ~60 ms (measured, see
    bench_review), and even in a niced child a run competes for the CPU: on this 2-core
    machine clicks took ~450 ms while runs were executing, ~160 ms otherwise. So the worker
    also waits until no decision has come for QUIET_S seconds: a reviewer clearing a backlog
    at speed gets fast clicks, and the runs catch up when they pause. A crashed child is
    replaced for the next decision."""

    QUIET_S = 2.0

    def __init__(self):
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool = None
        self._last_submit = 0.0
        self.recorded = 0
        self.failed = 0
        self.last_error: str | None = None
        self.runs: dict[int, str] = {}  # shadow memory id -> run id

    def submit(self, memory_id: int, promoted_id: int, *, actor: str,
               old_memory_id: int | None = None) -> None:
        self._queue.put((memory_id, promoted_id, actor, old_memory_id))
        with self._lock:
            self._last_submit = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="promotion-recorder",
                                                daemon=True)
                self._thread.start()

    def _child(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_child_init)
        return self._pool

    def _work(self) -> None:
        from concurrent.futures.process import BrokenProcessPool

        while True:
            memory_id, promoted_id, actor, old_id = self._queue.get()
            while (quiet := time.monotonic() - self._last_submit) < self.QUIET_S:
                time.sleep(self.QUIET_S - quiet)
            try:
                run_id = self._child().submit(_record, memory_id, promoted_id, actor,
                                              old_id).result()
                with self._lock:
                    self.recorded += 1
                    self.runs[memory_id] = run_id
            except Exception as exc:  # noqa: BLE001  (logged with its traceback, counted, shown)
                if isinstance(exc, BrokenProcessPool):
                    self._pool = None  # the next decision gets a new child
                log.error("recording the decision on memory %s as a Dagster run failed:\n%s",
                          memory_id, "".join(traceback.format_exception(exc)))
                with self._lock:
                    self.failed += 1
                    self.last_error = f"memory {memory_id}: {type(exc).__name__}: {exc}"
            finally:
                self._queue.task_done()

    def catch_up(self, database: Database, *, days: int = CATCH_UP_DAYS) -> threading.Thread:
        """Record the approvals of the last `days` days that have no successful Dagster run
        (decisions still queued when an earlier server stopped or crashed), in a background
        thread. Only decisions made before now are considered: later ones are this
        recorder's own queue. The child process is started only when there are approvals
        to check."""
        until = datetime.now(timezone.utc)
        since = until - timedelta(days=days)

        def work() -> None:
            try:
                approvals = review.approvals_between(database, since, until)
                if not approvals:
                    return
                missing = self._child().submit(_unrecorded, approvals, since).result()
                if missing:
                    log.warning("recording %d approvals made while no recorder ran "
                                "(memories %s)", len(missing),
                                ", ".join(str(a["memory_id"]) for a in missing))
                for a in missing:
                    self.submit(a["memory_id"], a["promoted_id"], actor=a["actor"],
                                old_memory_id=a["old_memory_id"])
            except Exception as exc:  # noqa: BLE001  (logged with its traceback, shown)
                log.error("catching up on unrecorded approvals failed:\n%s",
                          "".join(traceback.format_exception(exc)))
                with self._lock:
                    self.last_error = f"catch-up: {type(exc).__name__}: {exc}"

        thread = threading.Thread(target=work, name="promotion-catch-up", daemon=True)
        thread.start()
        return thread

    def drain(self, timeout: float) -> bool:
        """Wait until every submitted decision is recorded (or failed); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def status(self) -> dict:
        with self._lock:
            queued = self._queue.unfinished_tasks
            alive = self._thread is not None and self._thread.is_alive()
            worker = "idle" if not queued else "running" if alive else "dead"
            return {"queued": queued, "recorded": self.recorded, "failed": self.failed,
                    "last_error": self.last_error, "worker": worker}

    def close(self) -> None:
        """Stop the child process once it is idle (what is queued is not recorded)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


# The functions below run in the child process: the spawn start method pickles them by
# name, so they stay module-level.


def _child_init() -> None:
    import warnings

    os.nice(10)  # the reviewer's clicks come first; the record can wait a moment
    # beta/preview notices are for developers, as in the CLI
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")


def _unrecorded(approvals: list[dict], since: datetime) -> list[dict]:
    """The approvals without a successful vault_promotion_job run for their entry. Runs
    from a day before `since` count too: a CLI decision is made inside its run, so the run
    starts just before the decision."""
    from memory_platform import launch
    from memory_platform.settings import load_settings

    instance = launch.prepare_instance(load_settings())
    recorded = launch.recorded_memory_ids(instance, since - timedelta(days=1))
    return [a for a in approvals if str(a["memory_id"]) not in recorded]


def _record(memory_id: int, promoted_id: int, actor: str, old_memory_id: int | None) -> str:
    """One run of vault_promotion_job; returns its id."""
    from memory_platform import launch
    from memory_platform.settings import load_settings

    done = launch.promote_via_dagster(load_settings(), memory_id, {
        "action": "record", "actor": actor, "promoted_id": promoted_id,
        "old_memory_id": old_memory_id}, trigger="dashboard")
    return done["run_id"]
