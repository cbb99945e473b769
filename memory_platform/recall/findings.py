"""Findings at the review gate: lint's and the wiki intake's, listed and resolved by a
person. Resolving is the only way a finding changes the vault, and every change is audited
(the memory's `vault_audit` row names the actor and the finding).

    supersede  (contradiction, near_duplicate) `old_id` stops holding now: valid_to and
               superseded_by = the other memory of the finding; the row stays
    archive    `memory_id` (one of the finding's) is archived: restorable, never deleted
    keep       nothing changes; the finding is not raised again while the texts stay the
               same (a wiki finding: the held file may be rebuilt)

    resolve(db, 7, "supersede", actor="cli:alice", old_id=42)
"""

from memory_platform.store import Database
from memory_platform.store import recall as store
from memory_platform.store import review as review_store
from memory_platform.vault import service as access
from memory_platform.vault.tokens import Scope

ACTIONS = ("supersede", "archive", "keep")


class FindingConflict(RuntimeError):
    """The finding was already resolved, or its memories changed since."""


def list_findings(db: Database, scope: Scope, *, namespace: str | None = None,
                  status: str | None = "open", kinds: list[str] | None = None) -> list[dict]:
    """Findings in the caller's scope, by id (all of them, no cap)."""
    with db.connect() as conn:
        if namespace is not None:
            access.check(scope, namespace)
            names = [namespace]
        else:
            names = None
        rows = store.findings(conn, namespaces=names, status=status, kinds=kinds)
    return [f for f in rows if scope.permits(f["namespace"])]


def open_counts(db: Database) -> dict[str, dict[str, int]]:
    """namespace -> kind -> open findings."""
    with db.connect() as conn:
        return store.open_counts(conn)


def resolve(db: Database, finding_id: int, action: str, *, actor: str,
            scope: Scope | None = None, memory_id: int | None = None,
            old_id: int | None = None) -> dict:
    """Apply a person's decision on a finding (see the module docstring); returns the
    finding as resolved with `changed` (the memory ids the decision changed)."""
    scope = scope or Scope.everything()
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    if not actor:
        raise ValueError("every decision names its actor")
    finding = _open_finding(db, finding_id, scope)
    ids = list(finding["memory_ids"])
    changed: list[int] = []
    if action == "archive":
        # Archived first (its own audited transaction, idempotent), then the finding
        # closed: a failure leaves the finding open, never closed over nothing done.
        target = memory_id if memory_id is not None else (ids[0] if len(ids) == 1 else None)
        if target is None or target not in ids:
            raise ValueError(f"name the memory to archive: one of {ids}")
        done = access.archive(db, scope, target, actor=f"{actor} (finding {finding_id})")
        changed = [target] if done["changed"] else []
    with db.connect() as conn:
        with conn.transaction():
            finding = store.lock_finding(conn, finding_id)
            if finding["status"] != "open":
                raise FindingConflict(f"finding {finding_id} was already {finding['status']} "
                                      f"by {finding['resolved_by']}")
            if action == "supersede":
                changed = _supersede(conn, finding, ids, old_id, actor)
            store.close_finding(conn, finding_id, {"supersede": "superseded",
                                                   "archive": "archived",
                                                   "keep": "kept"}[action], actor)
        resolved = store.findings(conn, namespaces=[finding["namespace"]], status=None)
    row = next(f for f in resolved if f["id"] == finding_id)
    return {**row, "changed": changed}


def _open_finding(db: Database, finding_id: int, scope: Scope) -> dict:
    with db.connect() as conn:
        finding = store.lock_finding(conn, finding_id)
    if finding is None or not scope.permits(finding["namespace"]):
        raise access.NotFound(f"no finding with id {finding_id}")
    if finding["status"] != "open":
        raise FindingConflict(f"finding {finding_id} was already {finding['status']} by "
                              f"{finding['resolved_by']}")
    return finding


def _supersede(conn, finding: dict, ids: list[int], old_id: int | None, actor: str
               ) -> list[int]:
    if finding["kind"] not in ("contradiction", "near_duplicate") or len(ids) != 2:
        raise ValueError(f"a {finding['kind']} finding cannot be resolved by supersede; use "
                         f"archive or keep")
    if old_id not in ids:
        raise ValueError(f"name the fact that stops holding: old_id, one of {ids}")
    new_id = ids[0] if ids[1] == old_id else ids[1]
    old = review_store.lock_memory(conn, old_id)
    new = review_store.lock_memory(conn, new_id)
    for m in (old, new):
        if m is None or m["status"] != "active" or m["valid_to"] is not None:
            raise FindingConflict(f"memory {m['id'] if m else '?'} is no longer a current "
                                  f"fact; the finding is out of date")
    review_store.supersede(conn, old_id, new_id, actor=f"{actor} (finding {finding['id']})")
    return [old_id]
