"""What the faces show of the curator, scoped like the vault (a caller limited to `work`
never sees `personal`'s cuts): cuts by run with their purge countdown, runs (refused ones
loud), the proposed cuts of a verdict with the texts they would remove, purge records, and
restore. Plain functions over a `Database`; the CLI, REST and the dashboard call these.

Every text these return passes privacy.egress.outgoing: credentials masked, personal data
too in a text that holds some (a memory cut as a secret must not be shown in clear by the
very page that lists it). What the archive keeps is unchanged: a restore brings it back.
"""

from datetime import datetime, timedelta, timezone

from memory_platform.curator import archive
from memory_platform.curator.verdict import Verdict
from memory_platform.privacy.egress import outgoing
from memory_platform.privacy.personal import sensitivity
from memory_platform.store import Database
from memory_platform.store import curator as store
from memory_platform.store import curator_archive as archive_store
from memory_platform.store import memories as memory_store
from memory_platform.vault.service import Forbidden, NotFound, check
from memory_platform.vault.tokens import Scope

RESTORE_COMMAND = "memory-platform curator restore {id}"
NOT_LISTED = "not in the listing"
MAX_ID = 2**63 - 1  # PostgreSQL's bigint: a larger id names nothing


def checked_id(value: int, what: str) -> int:
    """`value` as an id the database can hold, or ValueError (bad input, REST 422, the
    CLI's `error:`) saying why: ids run from 1 to bigint's largest, and a larger one must
    not reach a query as a numeric that PostgreSQL then refuses to compare."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_ID:
        raise ValueError(f"{what} {value!r} is not an id (ids run from 1 to {MAX_ID})")
    return value


def _shown(text: str | None) -> str | None:
    """`text` as it may leave the store (None stays None)."""
    if text is None:
        return None
    return outgoing(text, personal=bool(sensitivity(text)))


def _shown_evidence(evidence: list[dict]) -> list[dict]:
    return [{k: _shown(v) if isinstance(v, str) else v for k, v in e.items()} for e in evidence]


def _namespaces(db: Database, scope: Scope, namespace: str | None) -> list[str] | None:
    """The namespaces to read: the one named (checked against the scope), every one the
    scope permits, or None for an unrestricted scope."""
    if namespace is not None:
        check(scope, namespace)
        return [namespace]
    if scope.unrestricted:
        return None
    with db.connect() as conn:
        return [n for n in store.primary_namespaces(conn) if scope.permits(n)]


def cuts(db: Database, scope: Scope, *, namespace: str | None = None,
         curator_run_id: int | None = None, since: datetime | None = None,
         now: datetime | None = None) -> list[dict]:
    """Restorable cuts, newest first: memory id, namespace, the text and category it held,
    reason, related memory, evidence, run, cut_at, restore_until, seconds_left (the purge
    countdown) and the restore command."""
    now = now or datetime.now(timezone.utc)
    if curator_run_id is not None:
        checked_id(curator_run_id, "curator run")
    names = _namespaces(db, scope, namespace)
    with db.connect() as conn:
        rows = archive_store.list_archives(conn, namespaces=names,
                                           curator_run_id=curator_run_id, since=since)
    return [{**r, "text": _shown(r["text"]), "evidence": _shown_evidence(r["evidence"] or []),
             "seconds_left": max(0, int((r["restore_until"] - now).total_seconds())),
             "restorable": r["restore_until"] > now,
             "restore": RESTORE_COMMAND.format(id=r["memory_id"])}
            for r in rows if scope.permits(r["namespace"])]


def cuts_by_run(db: Database, scope: Scope, *, namespace: str | None = None,
                now: datetime | None = None) -> list[dict]:
    """The curator page: each run that cut something (newest first) with its cuts."""
    grouped: dict[int, list[dict]] = {}
    for cut in cuts(db, scope, namespace=namespace, now=now):
        grouped.setdefault(cut["curator_run_id"], []).append(cut)
    with db.connect() as conn:
        found = {r["id"]: r for r in store.list_runs(conn, namespaces=_namespaces(
            db, scope, namespace), statuses=["executed"])}
    return [{**found[pk], "cuts_restorable": items} for pk, items in
            sorted(grouped.items(), key=lambda kv: -kv[0]) if pk in found]


def runs(db: Database, scope: Scope, *, namespace: str | None = None,
         since: datetime | None = None, refused_only: bool = False) -> list[dict]:
    """Curator runs newest first (the verdict itself left out), refused ones included."""
    with db.connect() as conn:
        rows = store.list_runs(conn, namespaces=_namespaces(db, scope, namespace),
                               since=since, refused_only=refused_only)
    return [{**{k: v for k, v in r.items() if k != "verdict"},
             "refusal_detail": _shown(r["refusal_detail"])}
            for r in rows if scope.permits(r["namespace"])]


def refused_runs(db: Database, scope: Scope, *, days: int = 7,
                 now: datetime | None = None) -> list[dict]:
    """Runs refused in the last `days` (breaker, fingerprint, invalid verdict), dry runs
    left out: what the digest and the UI show loudly."""
    now = now or datetime.now(timezone.utc)
    return [r for r in runs(db, scope, since=now - timedelta(days=days), refused_only=True)
            if not r["dry_run"]]


def proposed_cuts(db: Database, scope: Scope, curator_run_id: int) -> dict:
    """A verdict as a person reads it: each proposed cut with the memory id and text it
    would remove, the reason, what it names as original/contradiction, and the evidence;
    merges and contradictions with their sources' texts. A handle the listing did not have
    (a refused verdict may name one: 0, or one past the last) is shown as such, with no
    memory: never as another memory."""
    with db.connect() as conn:
        run = store.get_run(conn, checked_id(curator_run_id, "curator run"))
        if run is None or not scope.permits(run["namespace"]):
            raise NotFound(f"no curator run {curator_run_id}")
        ids = [int(i) for i in run["memory_ids"]]
        verdict = Verdict.model_validate(run["verdict"])

        def memory_of(handle: int | None) -> int | None:
            return ids[handle - 1] if handle is not None and 1 <= handle <= len(ids) else None

        handles = [h for c in verdict.cuts for h in (c.handle, c.of)] + [
            h for p in verdict.merges + verdict.contradictions for h in p.handles]
        wanted = sorted({m for m in map(memory_of, handles) if m is not None})
        memories = memory_store.memories_by_id(conn, wanted)
        archived = archive_store.archived_texts(conn, wanted)

    def text_of(handle: int | None) -> dict | None:
        if handle is None:
            return None
        memory_id = memory_of(handle)
        if memory_id is None:
            return {"handle": handle, "memory_id": None, "text": None,
                    "status": NOT_LISTED}
        memory = memories.get(memory_id, {})
        return {"handle": handle, "memory_id": memory_id,
                "text": _shown(archived.get(memory_id, memory.get("text"))),
                "status": memory.get("status")}

    return {
        **{k: v for k, v in run.items() if k not in ("verdict", "memory_ids", "row_digests")},
        "refusal_detail": _shown(run["refusal_detail"]),
        "cuts": [{**text_of(c.handle), "reason": c.reason, "of": text_of(c.of),
                  "evidence": _shown_evidence([e.model_dump(exclude_none=True)
                                               for e in c.evidence])}
                 for c in verdict.cuts],
        **{kind: [{"text": _shown(p.text), "why": _shown(p.why),
                   "sources": [text_of(h) for h in p.handles]} for p in proposals]
           for kind, proposals in (("merges", verdict.merges),
                                   ("contradictions", verdict.contradictions))},
    }


def purges(db: Database, scope: Scope, *, namespace: str | None = None,
           since: datetime | None = None) -> list[dict]:
    with db.connect() as conn:
        rows = archive_store.list_purges(conn, namespaces=_namespaces(db, scope, namespace),
                                         since=since)
    return [r for r in rows if scope.permits(r["namespace"])]


def restore(db: Database, scope: Scope, memory_id: int, *, actor: str,
            now: datetime | None = None) -> dict:
    """Restore a cut within its window (see archive.restore); one outside the scope reads
    as missing."""
    row = archive.restore(db, checked_id(memory_id, "memory"), actor=actor, scope=scope,
                          now=now)
    return {**row, "text": _shown(row["text"])}


__all__ = ["MAX_ID", "Forbidden", "NotFound", "checked_id", "cuts", "cuts_by_run",
           "proposed_cuts", "purges", "refused_runs", "restore", "runs"]
