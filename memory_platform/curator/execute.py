"""Execute a week's verdict: re-verify, then cut, in one transaction.

Immediately before cutting, with the namespace and every listed memory locked (nothing in
the namespace can change until the commit), the listing's fingerprint is recomputed; if
anything changed since the model was shown it (a review promoted a memory, a person edited
one), nothing is cut and the run records why. The breaker is judged again with the ceiling
in force now. Then each cut is archived with a tombstone, the merges and contradictions are
staged for review, and the run is marked executed; a partition executes once (a unique
index holds it), so re-running a week cuts nothing twice.
"""

from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

from memory_platform.curator import breaker, consolidate
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.listing import fingerprint, row_digest
from memory_platform.curator.verdict import Verdict
from memory_platform.store import Database
from memory_platform.store import curator as store
from memory_platform.store import curator_archive as archive_store


class CuratorRefused(RuntimeError):
    """The run cut nothing, on purpose: an invalid verdict, the breaker, or a namespace that
    changed since the listing. `refusal` names which; the message says why."""

    def __init__(self, message: str, *, refusal: str, run_pk: int | None):
        super().__init__(message)
        self.refusal = refusal
        self.run_pk = run_pk


class NoVerdict(LookupError):
    """No verdict of this week waits to be executed (only dry runs, or none at all)."""


@dataclass
class Execution:
    namespace: str
    week: date
    status: str  # executed | already_executed
    run_pk: int | None = None
    cuts: int = 0
    archived: dict[int, int] = field(default_factory=dict)  # memory id -> archive id
    staged: list[int] = field(default_factory=list)
    restore_until: datetime | None = None

    def as_metadata(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "week": self.week.isoformat(),
                "status": self.status, "curator_run_id": self.run_pk, "cuts": self.cuts,
                "cut_memory_ids": sorted(self.archived), "staged_for_review": self.staged,
                "restore_until": self.restore_until.isoformat() if self.restore_until
                else None}


def execute(db: Database, namespace: str, week: date, *, dagster_run_id: str,
            config: CuratorConfig, now: datetime | None = None) -> Execution:
    """Execute the week's latest verdict. Raises CuratorRefused (after recording the
    refusal) or NoVerdict; returns already_executed for a week done before."""
    now = now or datetime.now(timezone.utc)
    with db.connect() as conn:
        runs = store.partition_runs(conn, namespace, week)
    done = [r for r in runs if r["status"] == "executed"]
    if done:
        return Execution(namespace, week, "already_executed", run_pk=done[-1]["id"])
    real = [r for r in runs if not r["dry_run"]]
    if not real:
        raise NoVerdict(f"no verdict of week {week} for {namespace} to execute"
                        + (" (only dry runs)" if runs else "")
                        + "; materialize curator_verdicts for this partition first")
    latest = real[-1]
    if latest["status"] == "refused":
        raise CuratorRefused(f"curator run {latest['id']} ({namespace}, week {week}) was "
                             f"refused, nothing is cut: {latest['refusal_detail']}",
                             refusal=latest["refusal"], run_pk=latest["id"])
    refusal: CuratorRefused | None = None
    result = Execution(namespace, week, "executed", run_pk=latest["id"])
    with db.connect() as conn:
        with conn.transaction():
            run = store.get_run(conn, latest["id"], lock=True)
            if run["status"] == "executed":  # a concurrent execution got here first
                return Execution(namespace, week, "already_executed", run_pk=run["id"])
            if run["status"] != "proposed":
                raise CuratorRefused(f"curator run {run['id']} is {run['status']}: "
                                     f"{run['refusal_detail']}", refusal=run["refusal"],
                                     run_pk=run["id"])
            refusal = _reverify(conn, run, namespace, config)
            if refusal is None:
                _cut(conn, run, result, dagster_run_id=dagster_run_id, config=config, now=now)
    if refusal is not None:  # recorded and committed: the run says why
        raise refusal
    return result


def _reverify(conn, run: dict, namespace: str, config: CuratorConfig) -> CuratorRefused | None:
    locked = store.lock_listing(conn, namespace)
    if locked is None:
        detail = f"namespace {namespace} no longer exists"
        refusal = "fingerprint"
    elif fingerprint(locked) != run["fingerprint"]:
        detail = "the namespace changed since the model saw it: " + _changes(run, locked)
        refusal = "fingerprint"
    else:
        verdict = Verdict.model_validate(run["verdict"])
        # The ceiling in force now, or the one recorded with the verdict if that was lower.
        judgement = breaker.judge(len(verdict.cuts), run["listed"],
                                  config.ceiling_for(namespace))
        if judgement.max_cuts > run["max_cuts"]:
            judgement = breaker.judge(len(verdict.cuts), run["listed"], float(run["ceiling"]))
        if judgement.passed and len(verdict.cuts) <= run["max_cuts"]:
            return None
        detail = f"circuit breaker: {judgement.explain()}"
        refusal = "breaker"
    store.refuse_run(conn, run["id"], refusal, detail)
    return CuratorRefused(f"curator run {run['id']} ({namespace}, week {run['week']}) cut "
                          f"nothing: {detail}", refusal=refusal, run_pk=run["id"])


def _changes(run: dict, locked: list[dict]) -> str:
    """What changed, by memory id: added, gone, and edited (the row's digest differs from
    the one recorded with the listing; a run recorded before digests were kept falls back
    on edit times, which miss an edit made while the model was judging)."""
    listed = set(run["memory_ids"])
    now_ids = {int(r["id"]) for r in locked}
    if run.get("row_digests"):
        recorded = dict(zip((int(i) for i in run["memory_ids"]), run["row_digests"]))
        changed = sorted(int(r["id"]) for r in locked if int(r["id"]) in recorded
                         and row_digest(r) != recorded[int(r["id"])])
    else:
        changed = sorted(int(r["id"]) for r in locked
                         if int(r["id"]) in listed and r["updated_at"] > run["created_at"])
    parts = []
    for what, ids in (("added or promoted", sorted(now_ids - listed)),
                      ("gone (archived, superseded or ended)", sorted(listed - now_ids)),
                      ("edited", changed)):
        if ids:
            shown = ", ".join(f"#{i}" for i in ids[:10]) + (" ..." if len(ids) > 10 else "")
            parts.append(f"{len(ids)} {what} ({shown})")
    return "; ".join(parts) or "the listed rows differ (validity or update times)"


def _cut(conn, run: dict, result: Execution, *, dagster_run_id: str,
         config: CuratorConfig, now: datetime) -> None:
    verdict = Verdict.model_validate(run["verdict"])
    ids = [int(i) for i in run["memory_ids"]]
    rows = [archive_store.CutRow(
        memory_id=ids[c.handle - 1], handle=c.handle, reason=c.reason,
        related_memory_id=ids[c.of - 1] if c.of is not None else None,
        evidence=[_evidence(e, ids) for e in c.evidence],
        note=None) for c in verdict.cuts]
    result.restore_until = now + config.retention()
    result.archived = archive_store.cut_memories(
        conn, rows, curator_run_id=run["id"], dagster_run_id=dagster_run_id,
        actor=f"curator:{dagster_run_id}", now=now, restore_until=result.restore_until)
    if len(result.archived) != len(rows):
        # Cannot happen under the fingerprint; if it does, the transaction rolls back.
        missing = sorted({r.memory_id for r in rows} - set(result.archived))
        raise RuntimeError(f"memories {missing} were not active when cut; nothing is cut")
    result.cuts = len(rows)
    result.staged = consolidate.stage(conn, namespace=run["namespace"], week=run["week"],
                                      curator_run_id=run["id"], dagster_run_id=dagster_run_id,
                                      verdict=verdict, memory_ids=ids)
    store.mark_executed(conn, run["id"], cuts=result.cuts, staged=len(result.staged),
                        executed_by=dagster_run_id)


def _evidence(evidence, ids: list[int]) -> dict:
    """The evidence as archived: a handle is also resolved to the memory id it stood for
    (handles mean nothing outside their listing)."""
    found = evidence.model_dump(mode="json", exclude_none=True)
    if evidence.handle is not None:
        found["memory_id"] = ids[evidence.handle - 1]
    return found
