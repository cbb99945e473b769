"""Recording the dashboard's decisions as Dagster runs, after the request that made them.

A click decides in its request (`vault.review`), so the entry is promoted when the
response arrives. `PromotionRecorder` then records the same decision as a run of
`vault_promotion_job` (action `record`) through `memory_platform.launch`, in a niced,
spawned child process, so every promotion still shows up in Dagster with its lineage.

A recording that fails (the database restarting, the child crashing) is retried with a
growing delay (`RETRY_DELAYS_S`), in order, before it counts as failed: a decision queued
while PostgreSQL was down is recorded once it is back, not dropped. What the recorder
reports is split by namespace, so a token limited to `work` never reads an error naming
another namespace's memory.
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
from memory_platform.vault.tokens import Scope

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
    # Waits between attempts at one recording (about 2.5 minutes in all): long enough for
    # the embedded PostgreSQL to be restarted, short enough that a real bug shows soon.
    RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 30.0, 60.0)

    def __init__(self, *, record=None, pool_factory=None):
        """`record` (run in the child) and `pool_factory` replace the Dagster recording and
        the spawned child process in tests."""
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pool = None
        self._record = record or _record
        self._pool_factory = pool_factory
        self._last_submit = 0.0
        self.retrying = False
        self.runs: dict[int, str] = {}  # shadow memory id -> run id
        # per namespace (None: not given): queued, recorded, failed, retried, last error
        self._by_namespace: dict[str | None, dict] = {}

    def _tally(self, namespace: str | None) -> dict:
        return self._by_namespace.setdefault(namespace, {
            "queued": 0, "recorded": 0, "failed": 0, "retried": 0, "last_error": None,
            "last_error_at": 0.0})

    @property
    def recorded(self) -> int:
        return self.status()["recorded"]

    @property
    def failed(self) -> int:
        return self.status()["failed"]

    @property
    def last_error(self) -> str | None:
        return self.status()["last_error"]

    def submit(self, memory_id: int, promoted_id: int, *, actor: str,
               old_memory_id: int | None = None, namespace: str | None = None) -> None:
        """Queue a decision for recording; `namespace` (the entry's) is what the status
        is split by."""
        self._queue.put((memory_id, promoted_id, actor, old_memory_id, namespace))
        with self._lock:
            self._tally(namespace)["queued"] += 1
            self._last_submit = time.monotonic()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="promotion-recorder",
                                                daemon=True)
                self._thread.start()

    def _child(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._pool is None:
            self._pool = self._pool_factory() if self._pool_factory else ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=_child_init)
        return self._pool

    def _work(self) -> None:
        while True:
            memory_id, promoted_id, actor, old_id, namespace = self._queue.get()
            while (quiet := time.monotonic() - self._last_submit) < self.QUIET_S:
                time.sleep(self.QUIET_S - quiet)
            try:
                self._record_with_retries(memory_id, promoted_id, actor, old_id, namespace)
            finally:
                with self._lock:
                    self._tally(namespace)["queued"] -= 1
                self._queue.task_done()

    def _record_with_retries(self, memory_id: int, promoted_id: int, actor: str,
                             old_id: int | None, namespace: str | None) -> None:
        from concurrent.futures.process import BrokenProcessPool

        for attempt in range(len(self.RETRY_DELAYS_S) + 1):
            try:
                run_id = self._child().submit(self._record, memory_id, promoted_id, actor,
                                              old_id).result()
            except Exception as exc:  # noqa: BLE001  (logged with its traceback, retried, shown)
                if isinstance(exc, BrokenProcessPool):
                    self._pool = None  # the next attempt gets a new child
                error = f"memory {memory_id}: {type(exc).__name__}: {exc}"
                last = attempt == len(self.RETRY_DELAYS_S)
                with self._lock:
                    tally = self._tally(namespace)
                    tally["last_error"], tally["last_error_at"] = error, time.monotonic()
                    tally["failed" if last else "retried"] += 1
                    self.retrying = not last
                if last:
                    log.error("recording the decision on memory %s as a Dagster run failed "
                              "%d times; giving up:\n%s", memory_id, attempt + 1,
                              "".join(traceback.format_exception(exc)))
                    return
                delay = self.RETRY_DELAYS_S[attempt]
                log.warning("recording the decision on memory %s failed (%s); retrying in "
                            "%.0f s", memory_id, error, delay)
                time.sleep(delay)
                continue
            with self._lock:
                self._tally(namespace)["recorded"] += 1
                self.runs[memory_id] = run_id
                self.retrying = False
            return

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
                                old_memory_id=a["old_memory_id"],
                                namespace=a.get("namespace"))
            except Exception as exc:  # noqa: BLE001  (logged with its traceback, shown)
                log.error("catching up on unrecorded approvals failed:\n%s",
                          "".join(traceback.format_exception(exc)))
                with self._lock:
                    # not about one namespace's memory: the admin's view only
                    self._tally(None).update(last_error=f"catch-up: {type(exc).__name__}: "
                                                        f"{exc}", last_error_at=time.monotonic())

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

    def status(self, scope: Scope | None = None) -> dict:
        """{queued, recorded, failed, retried, last_error, worker} over the namespaces
        `scope` permits (default: all, the admin's view). Figures of recordings without a
        namespace (and catch-up errors) are the admin's only."""
        scope = scope or Scope.everything()
        with self._lock:
            mine = [t for ns, t in self._by_namespace.items()
                    if scope.unrestricted or (ns is not None and scope.permits(ns))]
            total = {key: sum(t[key] for t in mine)
                     for key in ("queued", "recorded", "failed", "retried")}
            errors = [t["last_error"] for t in sorted(mine, key=lambda t: t["last_error_at"])
                      if t["last_error"]]
            alive = self._thread is not None and self._thread.is_alive()
            busy = self._queue.unfinished_tasks
            worker = ("idle" if not busy else "dead" if not alive
                      else "retrying" if self.retrying else "running")
            return {**total, "last_error": errors[-1] if errors else None, "worker": worker}

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
