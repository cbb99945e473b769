"""The review gate's service layer: what waits for review, and the decisions a person makes
on it. Plain functions over a `Database`; the CLI, the Dagster promotion asset and (later)
the dashboard call them.

A dream stages candidates into `<namespace>__dream` (agents into `<namespace>__ideas`), as
shadow entries with review='pending'. A decision ends that:

    approve    a primary row is written (text maybe edited, namespace maybe changed) with
               promoted_from = the shadow entry, the shadow's provenance and its vector;
               the shadow entry becomes review='approved'
    skip       review='skipped' with an optional reason; the dedup gate keeps comparing new
               candidates with skipped entries, so the dream does not propose them again
    supersede  approve, and the contradicted fact gets valid_to and superseded_by (never
               deleted)

Each decision is one transaction that locks the shadow row and checks it is still pending:
of two decisions on one entry, exactly one wins and the other raises `ReviewConflict`
naming who decided first and when. Every row touched gets a `vault_audit` row.

    overview(db)                              -> [{namespace, pending, oldest_created_at, ...}]
    pending(db, "personal")                   -> (entries, total)
    approve(db, 42, actor="cli:alice", text="edited", namespace="work")
    skip(db, 43, actor="cli:alice", reason="not durable")
    supersede(db, 44, actor="cli:alice", old_memory_id=7)
    bulk_approve(db, [45, 46], actor="cli:alice") -> [{id, outcome, ...}]
"""

import os
from collections.abc import Sequence
from datetime import datetime, timezone

from memory_platform.embeddings import PROVIDERS, Embedder
from memory_platform.store import Database
from memory_platform.store import review as store
from memory_platform.store import vault as vault_store
from memory_platform.vault import VAULT_EMBEDDER_ENV, vault_embedder

PAGE_SIZE = 100
NEAREST_K = 5  # neighbours read to find the nearest current fact


class ReviewConflict(RuntimeError):
    """The entry is no longer pending (someone decided first), or the fact to supersede is
    no longer current. The message says who did what, and when."""

    def __init__(self, message: str, *, memory_id: int, state: str | None = None,
                 actor: str | None = None, at: datetime | None = None):
        super().__init__(message)
        self.memory_id = memory_id
        self.state = state
        self.actor = actor
        self.at = at


class _VaultModel:
    """The vault embedder's model name and dimension, known without loading the model (the
    local model takes seconds to load): a plain approval copies the shadow entry's vector
    inside PostgreSQL and never embeds anything. The model loads only to embed an edit."""

    def __init__(self, embedder: Embedder | None = None):
        self._embedder = embedder
        if embedder is not None:
            self.name, self.dims = embedder.name, embedder.dims
            return
        factory = PROVIDERS.get(os.environ.get(VAULT_EMBEDDER_ENV) or "local")
        name, dims = getattr(factory, "name", None), getattr(factory, "dims", None)
        if isinstance(name, str) and isinstance(dims, int):
            self.name, self.dims = name, dims
        else:  # a provider that only knows its name once built
            self._embedder = vault_embedder()
            self.name, self.dims = self._embedder.name, self._embedder.dims

    def embed(self, text: str):
        if self._embedder is None:
            self._embedder = vault_embedder()
        return self._embedder.embed([vault_store.normalize_text(text)])[0]


# --- what waits --------------------------------------------------------------------------


def overview(db: Database, now: datetime | None = None) -> list[dict]:
    """One entry per primary namespace with pending shadow entries, by name: namespace,
    pending, oldest_created_at, age_seconds (of the oldest), by_shadow {shadow: count}."""
    now = now or datetime.now(timezone.utc)
    with db.connect() as conn:
        rows = store.pending_overview(conn)
    by_primary: dict[str, dict] = {}
    for r in rows:
        entry = by_primary.setdefault(r["primary"], {
            "namespace": r["primary"], "pending": 0, "oldest_created_at": None,
            "by_shadow": {}})
        entry["pending"] += r["pending"]
        entry["by_shadow"][r["shadow"]] = r["pending"]
        if entry["oldest_created_at"] is None or r["oldest_created_at"] < entry[
                "oldest_created_at"]:
            entry["oldest_created_at"] = r["oldest_created_at"]
    for entry in by_primary.values():
        entry["age_seconds"] = max(0.0, (now - entry["oldest_created_at"]).total_seconds())
    return [by_primary[k] for k in sorted(by_primary)]


def _shadows_of(conn, namespace: str) -> tuple[str, list[str]]:
    """(primary, shadow namespaces to read) for a primary or a shadow namespace name."""
    kind, primary = vault_store.parse_namespace(namespace)
    if vault_store.get_namespace(conn, namespace) is None:
        # A typo must not read as an empty backlog.
        known = [n["name"] for n in vault_store.list_namespaces(conn) if n["kind"] == "primary"]
        raise ValueError(f"no vault namespace {namespace!r}; known: "
                         f"{', '.join(known) if known else 'none yet'}")
    if kind != "primary":
        return primary, [namespace]
    return namespace, [vault_store.shadow_of(namespace, k) for k in vault_store.SHADOW_KINDS]


def pending(
    db: Database, namespace: str, *, after_id: int = 0, limit: int = PAGE_SIZE
) -> tuple[list[dict], int]:
    """(one page of pending entries for `namespace`, total pending). `namespace` is a primary
    namespace (its `__dream` and `__ideas` shadows are read) or one shadow namespace. Keyset
    paging: pass the last entry's id as `after_id` for the next page.

    Each entry: id, namespace (the shadow), target_namespace, text, score, why, category,
    source, created_at, valid_from, provenance {dream_run_id, candidate_id,
    source_event_ids}, verdict (the dedup verdict, or None), nearest (the nearest current
    memory of the target namespace with its similarity: the verdict's neighbour when that is
    one, else looked up with the entry's stored vector; None when the namespace is empty),
    contradicts (for a contradiction: the memory it contradicts, with `current`)."""
    if limit <= 0:
        raise ValueError("limit must be positive")
    model = _VaultModel()
    with db.connect() as conn:
        primary, shadows = _shadows_of(conn, namespace)
        with conn.transaction():
            # One snapshot for the page and the total.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            total = store.count_pending(conn, shadows)
            rows = store.pending_page(conn, shadows, after_id=after_id, limit=limit)
            entries = [_entry(conn, row, primary, model) for row in rows]
    return entries, total


def _entry(conn, row: dict, primary: str, model: _VaultModel) -> dict:
    verdict = None
    if row["v_verdict"] is not None:
        verdict = {
            "verdict": row["v_verdict"], "decided_by": row["v_decided_by"],
            "reason": row["v_reason"],
            "similarity": None if row["v_similarity"] is None else float(row["v_similarity"]),
            "neighbour_id": row["v_neighbour_id"],
            "neighbour_candidate_id": row["v_neighbour_candidate_id"],
            "neighbour_text": row["v_neighbour_text"], "run_id": row["v_run_id"],
        }
    neighbour_is_current_primary = (
        row["v_neighbour_id"] is not None and row["nb_namespace"] == primary
        and row["nb_status"] == "active" and row["nb_valid_to"] is None)
    nearest = None
    if neighbour_is_current_primary and row["v_similarity"] is not None:
        nearest = {"id": row["v_neighbour_id"], "namespace": row["nb_namespace"],
                   "text": row["nb_text"], "similarity": float(row["v_similarity"]),
                   "from": "verdict"}
    else:
        nearest = _nearest(conn, row["id"], primary, model)
    contradicts = None
    if row["v_verdict"] == "contradiction" and row["v_neighbour_id"] is not None:
        contradicts = {
            "id": row["v_neighbour_id"], "namespace": row["nb_namespace"],
            "text": row["nb_text"], "category": row["nb_category"],
            "status": row["nb_status"], "review": row["nb_review"],
            "valid_from": row["nb_valid_from"], "valid_to": row["nb_valid_to"],
            "superseded_by": row["nb_superseded_by"],
            # supersede applies to a current fact of the primary namespace only
            "current": bool(neighbour_is_current_primary),
        }
    return {
        "id": row["id"], "namespace": row["namespace"], "target_namespace": primary,
        "text": row["text"], "score": row["score"], "why": row["why"],
        "category": row["category"], "source": row["source"],
        "created_at": row["created_at"], "valid_from": row["valid_from"],
        "provenance": {"dream_run_id": row["dream_run_id"], "candidate_id": row["candidate_id"],
                       "source_event_ids": list(row["source_event_ids"] or [])},
        "verdict": verdict, "nearest": nearest, "contradicts": contradicts,
    }


def _nearest(conn, memory_id: int, primary: str, model: _VaultModel) -> dict | None:
    vector = store.memory_vector(conn, model.name, memory_id)
    if vector is None or vector.shape != (model.dims,):
        return None  # not embedded yet (vault.embed_missing_memories fills it in)
    # reviews=(): primary rows only (active ones), no shadow entry. A superseded fact is
    # still 'active' (kept, with valid_to), so a few are read and the first current kept.
    found = vault_store.nearest_memories(conn, model.name, model.dims, vector, [primary],
                                         k=NEAREST_K, reviews=())
    current = store.current_ids(conn, [hit["id"] for hit in found])
    hit = next((h for h in found if h["id"] in current), None)
    if hit is None:
        return None
    return {"id": hit["id"], "namespace": hit["namespace"], "text": hit["text"],
            "similarity": float(hit["similarity"]), "from": "vector"}


# --- decisions ---------------------------------------------------------------------------


def _peek_shadow(conn, memory_id: int) -> dict:
    row = vault_store.get_memory(conn, memory_id)
    if row is None:
        raise ValueError(f"no memory {memory_id}")
    if row["review"] is None:
        raise ValueError(f"memory {memory_id} is in the primary namespace {row['namespace']!r}; "
                         f"only shadow entries (<namespace>__dream, __ideas) are reviewed")
    return row


def _conflict(conn, row: dict) -> ReviewConflict:
    decided = store.last_decision(conn, row["id"])
    state = row["review"]
    if decided is None:
        return ReviewConflict(f"memory {row['id']} is no longer pending (review: {state})",
                              memory_id=row["id"], state=state)
    by = f"by {decided['actor']} at {decided['at'].isoformat(timespec='seconds')}"
    note = f" ({row['review_note']})" if row.get("review_note") else ""
    return ReviewConflict(f"memory {row['id']} was already {state} {by}{note}",
                          memory_id=row["id"], state=state, actor=decided["actor"],
                          at=decided["at"])


def _lock_pending(conn, memory_id: int) -> dict:
    row = store.lock_memory(conn, memory_id)
    if row is None:
        raise ValueError(f"no memory {memory_id}")
    if row["review"] != "pending":
        raise _conflict(conn, row)
    return row


def _target_namespace(shadow: dict, namespace: str | None) -> str:
    if namespace is None:
        return vault_store.parse_namespace(shadow["namespace"])[1]
    kind, _ = vault_store.parse_namespace(namespace)
    if kind != "primary":
        raise ValueError(f"{namespace!r} is a shadow namespace; approve into a primary one")
    return namespace


def _decide(
    conn,
    memory_id: int,
    *,
    actor: str,
    text: str | None,
    namespace: str | None,
    old_memory_id: int | None,
    model: _VaultModel,
) -> dict:
    if not actor:
        raise ValueError("every decision names its actor")
    if text is not None and not text.strip():
        raise ValueError("an edited memory needs some text")
    shadow = _peek_shadow(conn, memory_id)
    target = _target_namespace(shadow, namespace)
    final_text = text.strip() if text is not None else shadow["text"]
    edited = vault_store.normalize_text(final_text) != vault_store.normalize_text(shadow["text"])
    # Embed an edit before taking any lock: the model may take seconds to load, and the
    # row lock should be held for milliseconds.
    vector = model.embed(final_text) if edited else None
    vault_store.ensure_memory_model(conn, model.name, model.dims)
    vault_store.ensure_namespace(conn, target)
    with conn.transaction():
        shadow = _lock_pending(conn, memory_id)
        old = None
        if old_memory_id is not None:
            old = _lock_current_fact(conn, old_memory_id, target)
        existing = vault_store.find_by_hash(conn, target, final_text)
        if existing is not None and old is None:
            # The namespace already states it: approving adds nothing twice.
            after = store.set_review(conn, memory_id, review="approved", actor=actor,
                                     note=f"already in {target} as memory {existing}",
                                     action="approve")
            return _result("approve", after, existing, target, final_text, edited, False,
                           None, actor)
        promoted = store.insert_promoted(conn, memory_id, namespace=target, text=final_text,
                                         actor=actor)
        if vector is not None or not store.copy_vector(conn, model.name, memory_id,
                                                       promoted["id"]):
            if vector is None:  # the shadow entry was never embedded
                vector = model.embed(final_text)
            vault_store.write_memory_embeddings(conn, model.name, model.dims,
                                                [(promoted["id"], vector)])
        note = None
        if old is not None:
            store.supersede(conn, old["id"], promoted["id"], actor=actor)
            note = f"supersedes memory {old['id']}"
        if edited:
            note = "edited" + (f"; {note}" if note else "")
        after = store.set_review(conn, memory_id, review="approved", note=note, actor=actor,
                                 action="approve")
    return _result("supersede" if old is not None else "approve", after, promoted["id"],
                   target, final_text, edited, True, old["id"] if old else None, actor)


def _lock_current_fact(conn, memory_id: int, namespace: str) -> dict:
    old = store.lock_memory(conn, memory_id)
    if old is None:
        raise ValueError(f"no memory {memory_id} to supersede")
    if old["review"] is not None:
        raise ValueError(f"memory {memory_id} is a shadow entry; only a fact of a primary "
                         f"namespace can be superseded")
    if old["namespace"] != namespace:
        raise ValueError(f"memory {memory_id} is in {old['namespace']!r}, not {namespace!r}: a "
                         f"fact is superseded by one in its own namespace")
    if old["superseded_by"] is not None or old["valid_to"] is not None:
        change = store.last_change(conn, memory_id, "supersede")
        by = (f" by {change['actor']} at {change['at'].isoformat(timespec='seconds')}"
              if change else "")
        raise ReviewConflict(
            f"memory {memory_id} was already superseded"
            + (f" by memory {old['superseded_by']}" if old["superseded_by"] else "") + by,
            memory_id=memory_id, state="superseded",
            actor=change["actor"] if change else None, at=change["at"] if change else None)
    if old["status"] != "active":
        raise ReviewConflict(f"memory {memory_id} is {old['status']}, not a current fact",
                             memory_id=memory_id, state=old["status"])
    return old


def _result(action, shadow, promoted_id, namespace, text, edited, created, superseded_id,
            actor) -> dict:
    return {
        "memory_id": shadow["id"], "action": action, "promoted_id": promoted_id,
        "namespace": namespace, "text": text, "edited": edited, "created": created,
        "superseded_id": superseded_id, "actor": actor, "review_note": shadow["review_note"],
        "provenance": {"shadow_namespace": shadow["namespace"],
                       "dream_run_id": shadow["dream_run_id"],
                       "candidate_id": shadow["candidate_id"],
                       "source_event_ids": list(shadow["source_event_ids"] or []),
                       "score": shadow["score"], "verdict": shadow["verdict"]},
    }


def approve(
    db: Database,
    memory_id: int,
    *,
    actor: str,
    text: str | None = None,
    namespace: str | None = None,
    embedder: Embedder | None = None,
) -> dict:
    """Promote a pending shadow entry into its primary namespace (or `namespace`, another
    primary one), with `text` replacing its text when given (edit, then approve). Returns
    memory_id, action, promoted_id, namespace, text, edited, created (False when the
    namespace already held the same text: nothing is written twice), provenance.
    Raises ReviewConflict when the entry is no longer pending."""
    with db.connect() as conn:
        return _decide(conn, memory_id, actor=actor, text=text, namespace=namespace,
                       old_memory_id=None, model=_VaultModel(embedder))


def supersede(
    db: Database,
    memory_id: int,
    *,
    actor: str,
    old_memory_id: int,
    text: str | None = None,
    embedder: Embedder | None = None,
) -> dict:
    """Approve a pending entry that contradicts `old_memory_id`, a current fact of the same
    primary namespace: the new fact is promoted and the old one gets valid_to = now() and
    superseded_by = the new id, in one transaction. The old row is never deleted.
    Raises ReviewConflict when the entry is no longer pending or the old fact no longer
    current."""
    with db.connect() as conn:
        return _decide(conn, memory_id, actor=actor, text=text, namespace=None,
                       old_memory_id=old_memory_id, model=_VaultModel(embedder))


def skip(db: Database, memory_id: int, *, actor: str, reason: str | None = None) -> dict:
    """Skip a pending entry (review='skipped', review_note=reason). It stays in its shadow
    namespace, where the dedup gate finds it, so the dream does not propose it again.
    Returns the updated row. Raises ReviewConflict when it is no longer pending."""
    if not actor:
        raise ValueError("every decision names its actor")
    reason = reason.strip() if reason and reason.strip() else None
    with db.connect() as conn:
        _peek_shadow(conn, memory_id)
        with conn.transaction():
            _lock_pending(conn, memory_id)
            return store.set_review(conn, memory_id, review="skipped", note=reason,
                                    actor=actor, action="skip")


def bulk_approve(
    db: Database, ids: Sequence[int], *, actor: str, embedder: Embedder | None = None
) -> list[dict]:
    """Approve each entry in its own transaction, in the order given: one entry someone else
    decided first does not stop the rest. One result per id: {id, outcome: 'approved',
    promoted_id, namespace} or {id, outcome: 'conflict' | 'error', message}."""
    model = _VaultModel(embedder)
    results = []
    with db.connect() as conn:
        for memory_id in ids:
            try:
                done = _decide(conn, int(memory_id), actor=actor, text=None, namespace=None,
                               old_memory_id=None, model=model)
            except ReviewConflict as exc:
                results.append({"id": int(memory_id), "outcome": "conflict",
                                "message": str(exc)})
            except ValueError as exc:
                results.append({"id": int(memory_id), "outcome": "error", "message": str(exc)})
            else:
                results.append({"id": int(memory_id), "outcome": "approved",
                                "promoted_id": done["promoted_id"],
                                "namespace": done["namespace"]})
    return results


def audit_trail(db: Database, memory_ids: Sequence[int]) -> list[dict]:
    """Every audit row of the given memories, oldest first."""
    with db.connect() as conn:
        return store.audit_rows(conn, memory_ids)


def backlog_status(db: Database, *, max_pending: int, max_age_days: float,
                   now: datetime | None = None) -> dict:
    """The backlog against its limits: pending, oldest_age_days, by_namespace, too_many,
    too_old, ok."""
    entries = overview(db, now=now)
    pending_total = sum(e["pending"] for e in entries)
    oldest = max((e["age_seconds"] for e in entries), default=None)
    oldest_days = None if oldest is None else oldest / 86400
    too_many = pending_total > max_pending
    too_old = oldest_days is not None and oldest_days > max_age_days
    return {"pending": pending_total, "oldest_age_days": oldest_days,
            "by_namespace": {e["namespace"]: e["pending"] for e in entries},
            "too_many": too_many, "too_old": too_old, "ok": not (too_many or too_old),
            "max_pending": max_pending, "max_age_days": max_age_days}
