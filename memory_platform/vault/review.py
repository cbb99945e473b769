"""The review gate's service layer: what waits for review, and the decisions a person makes
on it. Plain functions over a `Database`; the CLI, the Dagster promotion asset and the
review dashboard call them.

A dream stages candidates into `<namespace>__dream` (agents into `<namespace>__ideas`), as
shadow entries with review='pending'. A decision ends that:

    approve    a primary row is written (text maybe edited, namespace maybe changed) with
               promoted_from = the shadow entry, the shadow's provenance and its vector;
               the shadow entry becomes review='approved'
    skip       review='skipped' with an optional reason; the dedup gate keeps comparing new
               candidates with skipped entries, so the dream does not propose them again
    supersede  approve, and the contradicted fact gets superseded_by and valid_to = the new
               fact's valid_from (when it began to hold, not when it was reviewed); never
               deleted

Each decision is one transaction that locks the shadow row and checks it is still pending:
of two decisions on one entry, exactly one wins and the other raises `ReviewConflict`
naming who decided first and when. Every row touched gets a `vault_audit` row.

What waits (overview, pending entries, backlog) is read by `vault/queue.py`.

    approve(db, 42, actor="cli:alice", text="edited", namespace="work")
    skip(db, 43, actor="cli:alice", reason="not durable")
    supersede(db, 44, actor="cli:alice", old_memory_id=7)
    bulk_approve(db, [45, 46], actor="cli:alice") -> [{id, outcome, ...}]
    approvals_between(db, since, until) -> [{memory_id, actor, at, promoted_id, ...}]
"""

from collections.abc import Sequence
from datetime import datetime

from memory_platform.query.embeddings import Embedder
from memory_platform.store import Database, memory_embeddings
from memory_platform.store import curator_archive as curator_store
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import review as store
from memory_platform.vault.memories import VaultModel


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


def _peek_shadow(conn, memory_id: int) -> dict:
    row = memory_store.get_memory(conn, memory_id)
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
        return namespace_store.parse_namespace(shadow["namespace"])[1]
    kind, _ = namespace_store.parse_namespace(namespace)
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
    model: VaultModel,
) -> dict:
    if not actor:
        raise ValueError("every decision names its actor")
    if text is not None and not text.strip():
        raise ValueError("an edited memory needs some text")
    shadow = _peek_shadow(conn, memory_id)
    target = _target_namespace(shadow, namespace)
    final_text = text.strip() if text is not None else shadow["text"]
    edited = memory_store.normalize_text(final_text) != memory_store.normalize_text(shadow["text"])
    # Embed an edit before taking any lock: the model may take seconds to load, and the
    # row lock should be held for milliseconds.
    vector = model.embed(final_text) if edited else None
    memory_embeddings.ensure_memory_model(conn, model.name, model.dims)
    namespace_store.ensure_namespace(conn, target)
    with conn.transaction():
        shadow = _lock_pending(conn, memory_id)
        old = None
        if old_memory_id is not None:
            old = _lock_current_fact(conn, old_memory_id, target)
        existing = memory_store.find_by_hash(conn, target, final_text)
        if existing is not None and old is None:
            # The namespace already states it: approving adds nothing twice.
            sources = _supersede_sources(conn, memory_id, target, existing, actor)
            # The note ends with "as memory N": store/review.approvals_between reads it.
            after = store.set_review(conn, memory_id, review="approved", actor=actor,
                                     note=_sources_note(sources).lstrip("; ")
                                     + ("; " if sources else "")
                                     + f"already in {target} as memory {existing}",
                                     action="approve")
            return {**_result("approve", after, existing, target, final_text, edited, False,
                              None, actor), "superseded_sources": sources}
        promoted = store.insert_promoted(conn, memory_id, namespace=target, text=final_text,
                                         actor=actor)
        if vector is not None or not store.copy_vector(conn, model.name, memory_id,
                                                       promoted["id"]):
            if vector is None:  # the shadow entry was never embedded
                vector = model.embed(final_text)
            memory_embeddings.write_memory_embeddings(conn, model.name, model.dims,
                                                      [(promoted["id"], vector)])
        note = None
        if old is not None:
            store.supersede(conn, old["id"], promoted["id"], actor=actor)
            note = f"supersedes memory {old['id']}"
        sources = _supersede_sources(conn, memory_id, target, promoted["id"], actor)
        if sources:
            note = (note + "; " if note else "") + _sources_note(sources).lstrip("; ")
        if edited:
            note = "edited" + (f"; {note}" if note else "")
        after = store.set_review(conn, memory_id, review="approved", note=note, actor=actor,
                                 action="approve")
    return {**_result("supersede" if old is not None else "approve", after, promoted["id"],
                      target, final_text, edited, True, old["id"] if old else None, actor),
            "superseded_sources": sources}


def _supersede_sources(conn, memory_id: int, target: str, new_id: int, actor: str
                       ) -> list[int]:
    """A curator merge or contradiction (curator_proposals), approved: the sources it names
    that are still current facts of the target namespace are superseded by the approved
    one. A source already ended, edited away or cut is left as it is."""
    proposal = curator_store.proposal_for_shadow(conn, memory_id)
    if proposal is None:
        return []
    superseded = []
    for source_id in proposal["source_memory_ids"]:
        if source_id == new_id:
            continue
        source = store.lock_memory(conn, source_id)
        if (source is not None and source["namespace"] == target and source["review"] is None
                and source["status"] == "active" and source["valid_to"] is None
                and source["superseded_by"] is None):
            store.supersede(conn, source_id, new_id, actor=actor)
            superseded.append(int(source_id))
    return superseded


def _sources_note(sources: list[int]) -> str:
    return f"; supersedes memories {', '.join(str(i) for i in sources)}" if sources else ""


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
                       old_memory_id=None, model=VaultModel(embedder))


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
    primary namespace: the new fact is promoted and the old one gets valid_to = the new
    fact's valid_from (when the turns it came from happened, not the review's time) and
    superseded_by = the new id, in one transaction. The old row is never deleted.
    Raises ReviewConflict when the entry is no longer pending or the old fact no longer
    current."""
    with db.connect() as conn:
        return _decide(conn, memory_id, actor=actor, text=text, namespace=None,
                       old_memory_id=old_memory_id, model=VaultModel(embedder))


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
    model = VaultModel(embedder)
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


def approvals_between(db: Database, start: datetime, end: datetime) -> list[dict]:
    """The shadow entries approved in [start, end), oldest decision first, each {memory_id,
    actor, at, promoted_id (the memory the approval wrote, or the one already stating it),
    old_memory_id (the fact it superseded, else None)}: what a face that decided in its
    own request hands to Dagster afterwards (the dashboard's catch-up on a restart)."""
    if start >= end:
        raise ValueError(f"an empty window: {start.isoformat()} is not before {end.isoformat()}")
    with db.connect() as conn:
        return store.approvals_between(conn, start, end)


def check_decision(*, action: str, text: str | None = None, namespace: str | None = None,
                   old_memory_id: int | None = None, promoted_id: int | None = None) -> None:
    """Refuse a decision that cannot succeed, before anything is launched for it."""
    if namespace is not None:
        kind, _ = namespace_store.parse_namespace(namespace)
        if kind != "primary":
            raise ValueError(f"{namespace!r} is a shadow namespace; approve into a primary one")
    if text is not None and not text.strip():
        raise ValueError("an edited memory needs some text")
    if action == "supersede" and old_memory_id is None:
        raise ValueError("action 'supersede' needs old_memory_id, the fact it replaces")
    if action == "record" and promoted_id is None:
        raise ValueError("action 'record' needs promoted_id, the memory the decision wrote")


def recorded_decision(db: Database, memory_id: int, *, promoted_id: int,
                      old_memory_id: int | None = None) -> tuple[dict, str]:
    """The decision already made on `memory_id` (by a face that decided in its own request),
    checked against the database, in the shape `approve` returns, and who made it. Raises
    ValueError when the database does not show that decision: nothing is recorded that did
    not happen."""
    with db.connect() as conn:
        shadow = memory_store.get_memory(conn, memory_id)
        promoted = memory_store.get_memory(conn, promoted_id)
        decided = store.last_decision(conn, memory_id)
        old = (memory_store.get_memory(conn, old_memory_id)
               if old_memory_id is not None else None)
    if shadow is None or shadow["review"] != "approved" or decided is None:
        raise ValueError(f"memory {memory_id} is not approved "
                         f"(review: {shadow and shadow['review']}); nothing to record")
    note = shadow["review_note"] or ""
    created = promoted is not None and promoted["promoted_from"] == memory_id
    if promoted is None or not (created or f"memory {promoted_id}" in note):
        raise ValueError(f"memory {promoted_id} is not what approving memory "
                         f"{memory_id} wrote")
    if old is not None and old["superseded_by"] != promoted_id:
        raise ValueError(f"memory {old_memory_id} was not superseded by memory {promoted_id}")
    done = {
        "memory_id": memory_id, "action": "supersede" if old is not None else "approve",
        "promoted_id": promoted["id"], "namespace": promoted["namespace"],
        "text": promoted["text"], "edited": note.startswith("edited"), "created": created,
        "superseded_id": old["id"] if old is not None else None,
        "provenance": {"shadow_namespace": shadow["namespace"],
                       "dream_run_id": shadow["dream_run_id"],
                       "candidate_id": shadow["candidate_id"],
                       "source_event_ids": list(shadow["source_event_ids"] or []),
                       "score": shadow["score"], "verdict": shadow["verdict"]},
    }
    return done, decided["actor"]
