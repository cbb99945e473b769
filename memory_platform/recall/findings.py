"""Findings at the review gate: lint's and the wiki intake's, listed and resolved by a
person. Resolving is the only way a finding changes the vault, and every change is audited
(the memory's `vault_audit` row names the actor and the finding).

    supersede  (contradiction, near_duplicate) `old_id` stops holding now: valid_to and
               superseded_by = the other memory of the finding; the row stays
    archive    `memory_id` (one of the finding's) is archived: restorable, never deleted
    keep       nothing changes; the finding is not raised again while the texts stay the
               same (a wiki finding: the held file may be rebuilt)

    resolve(db, 7, "supersede", actor="cli:alice", old_id=42)

`for_review` is what the dashboard's findings page shows: each open finding with its
memories as they are now (a sensitive one masked, its text kept for a reveal, as the review
page does), the rest of its evidence masked, and the decisions it allows.
"""

from memory_platform.privacy.egress import outgoing
from memory_platform.store import Database
from memory_platform.store import memories as memory_store
from memory_platform.store import recall as store
from memory_platform.store import review as review_store
from memory_platform.vault import service as access
from memory_platform.vault.tokens import Scope

ACTIONS = ("supersede", "archive", "keep")


class FindingConflict(RuntimeError):
    """The finding was already resolved, or its memories changed since."""


def list_findings(db: Database, scope: Scope, *, namespace: str | None = None,
                  status: str | None = "open", kinds: list[str] | None = None) -> list[dict]:
    """Findings in the caller's scope, by id (all of them, no cap), their evidence as it
    may leave the store (_shown: every face lists them through here)."""
    with db.connect() as conn:
        if namespace is not None:
            access.check(scope, namespace)
            names = [namespace]
        else:
            names = None
        rows = store.findings(conn, namespaces=names, status=status, kinds=kinds)
    return [{**f, "evidence": _shown(f["evidence"])} for f in rows
            if scope.permits(f["namespace"])]


def open_counts(db: Database, scope: Scope | None = None) -> dict[str, dict[str, int]]:
    """namespace -> kind -> open findings, in the namespaces `scope` permits (default:
    all)."""
    scope = scope or Scope.everything()
    with db.connect() as conn:
        counts = store.open_counts(conn)
    return {ns: kinds for ns, kinds in counts.items() if scope.permits(ns)}


# Evidence a person learns nothing from: hashes (the fingerprint's parts), and the memories'
# texts as lint read them (shown as they are now, masked when sensitive, see _memory).
_HIDDEN_EVIDENCE = ("memories", "reason", "file_sha256")
# Hashes are not text: masking could take a hex run for a key, and for_review compares them.
_HASHES = ("file_sha256", "content_hash")


def _shown(value, key: str | None = None):
    """Evidence as it leaves the store (privacy.egress): credentials and personal data
    masked in every string, whoever's memory it quotes (a judge's reason or a wiki line
    may quote a sensitive fact); hashes unchanged."""
    if isinstance(value, str):
        return value if key in _HASHES else outgoing(value, personal=True)
    if isinstance(value, list):
        return [_shown(v) for v in value]
    if isinstance(value, dict):
        return {k: _shown(v, k) for k, v in value.items()}
    return value


def _memory(memory_id: int, row: dict | None, scope: Scope, shown: dict) -> dict:
    if row is None or not scope.permits(row["namespace"]):
        return {"id": memory_id, "missing": True}
    return {"id": memory_id, "missing": False, "namespace": row["namespace"],
            "category": row["category"], "topic": row["topic"], "status": row["status"],
            "current": row["status"] == "active" and row["valid_to"] is None,
            "valid_from": row["valid_from"], "sensitive": bool(row["sensitive"]),
            # credentials masked whatever the stored flag says (a pattern may be newer than
            # the row); personal data kept for the reveal of a sensitive one
            "text": outgoing(row["text"]),
            "masked_text": outgoing(row["text"], personal=bool(row["sensitive"])),
            # the text changed since lint read it: the next lint closes the finding
            "changed": memory_id in shown and shown[memory_id] != row["content_hash"]}


def for_review(db: Database, scope: Scope, *, namespace: str | None = None) -> list[dict]:
    """The open findings in scope (list_findings), each with `reason`, `memories` (as they
    are now; see _memory), `evidence` (the rest, masked), `supersede` (the memory ids
    that may be named as the old fact; empty when supersede does not apply), `archive`
    (the ids that may be archived) and `pick` (the memory chosen first: the older fact)."""
    found = list_findings(db, scope, namespace=namespace)
    with db.connect() as conn:
        rows = memory_store.memories_by_id(conn, sorted({i for f in found
                                                         for i in f["memory_ids"]}))
    shown_all = []
    for f in found:
        evidence = f["evidence"]
        shown = {m["id"]: m.get("content_hash") for m in evidence.get("memories", [])}
        memories = [_memory(i, rows.get(i), scope, shown) for i in f["memory_ids"]]
        present = [m for m in memories if not m["missing"]]
        pairs = (f["kind"] in ("contradiction", "near_duplicate") and len(memories) == 2
                 and all(m["current"] for m in present) and len(present) == 2)
        older = sorted(present, key=lambda m: (m["valid_from"], m["id"]))
        shown_all.append({
            "id": f["id"], "namespace": f["namespace"], "kind": f["kind"],
            "created_at": f["created_at"], "run_id": f["run_id"],
            "reason": evidence.get("reason") or "",
            "evidence": {k: v for k, v in evidence.items()
                         if k not in _HIDDEN_EVIDENCE and v is not None},
            "memories": memories,
            "supersede": [m["id"] for m in memories] if pairs else [],
            "archive": [m["id"] for m in present if m["status"] == "active"],
            "pick": older[0]["id"] if older else None})
    return shown_all


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
