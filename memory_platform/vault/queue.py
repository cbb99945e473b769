"""What waits for review: the pending shadow entries of a namespace with what a person needs
to decide (score, why, provenance, the dedup verdict, the nearest current memory, the fact a
contradiction contradicts), the backlog per namespace and against its limits. Read-only;
the decisions are in `vault/review.py`."""

from datetime import datetime, timezone

from memory_platform.privacy.egress import outgoing
from memory_platform.store import Database, memory_search
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import review as store
from memory_platform.vault.memories import VaultModel

PAGE_SIZE = 100
NEAREST_K = 5  # neighbours read to find the nearest current fact


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
    kind, primary = namespace_store.parse_namespace(namespace)
    if namespace_store.get_namespace(conn, namespace) is None:
        # A typo must not read as an empty backlog.
        known = [n["name"] for n in namespace_store.list_namespaces(conn) if n["kind"] == "primary"]
        raise ValueError(f"no vault namespace {namespace!r}; known: "
                         f"{', '.join(known) if known else 'none yet'}")
    if kind != "primary":
        return primary, [namespace]
    return namespace, [namespace_store.shadow_of(namespace, k)
                       for k in namespace_store.SHADOW_KINDS]


def pending_ids(db: Database) -> list[int]:
    """The ids of every shadow entry waiting for review."""
    with db.connect() as conn:
        return store.pending_ids(conn)


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
    model = VaultModel()
    with db.connect() as conn:
        primary, shadows = _shadows_of(conn, namespace)
        with conn.transaction():
            # One snapshot for the page and the total.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            total = store.count_pending(conn, shadows)
            rows = store.pending_page(conn, shadows, after_id=after_id, limit=limit)
            entries = [_entry(conn, row, primary, model) for row in rows]
    return entries, total


def _entry(conn, row: dict, primary: str, model: VaultModel) -> dict:
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
                   "text": _neighbour(row["nb_text"]), "similarity": float(row["v_similarity"]),
                   "from": "verdict"}
    else:
        nearest = _nearest(conn, row["id"], primary, model)
    contradicts = None
    if row["v_verdict"] == "contradiction" and row["v_neighbour_id"] is not None:
        contradicts = {
            "id": row["v_neighbour_id"], "namespace": row["nb_namespace"],
            "text": _neighbour(row["nb_text"]), "category": row["nb_category"],
            "status": row["nb_status"], "review": row["nb_review"],
            "valid_from": row["nb_valid_from"], "valid_to": row["nb_valid_to"],
            "superseded_by": row["nb_superseded_by"],
            # supersede applies to a current fact of the primary namespace only
            "current": bool(neighbour_is_current_primary),
        }
    return {
        "id": row["id"], "namespace": row["namespace"], "target_namespace": primary,
        # credentials masked whatever the stored flag says; personal data kept for the
        # reviewer's reveal of a sensitive one (privacy.egress)
        "text": outgoing(row["text"]), "score": row["score"], "why": row["why"] and outgoing(row["why"]),
        "category": row["category"], "source": row["source"], "topic": row["topic"],
        # Personal data is shown masked until the reviewer reveals it.
        "sensitive": bool(row["sensitive"]),
        "masked_text": outgoing(row["text"], personal=bool(row["sensitive"])),
        "created_at": row["created_at"], "valid_from": row["valid_from"],
        "provenance": {"dream_run_id": row["dream_run_id"], "candidate_id": row["candidate_id"],
                       "source_event_ids": list(row["source_event_ids"] or [])},
        "verdict": verdict, "nearest": nearest, "contradicts": contradicts,
    }


def _neighbour(text: str) -> str:
    """Another memory quoted next to the one reviewed: shown masked as evidence is
    (privacy.egress), it has no reveal of its own."""
    return outgoing(text, personal=True)


def _nearest(conn, memory_id: int, primary: str, model: VaultModel) -> dict | None:
    vector = store.memory_vector(conn, model.name, memory_id)
    if vector is None or vector.shape != (model.dims,):
        return None  # not embedded yet (vault.embed_missing_memories fills it in)
    # reviews=(): primary rows only (active ones), no shadow entry. A superseded fact is
    # still 'active' (kept, with valid_to), so a few are read and the first current kept.
    found = memory_search.nearest_memories(conn, model.name, model.dims, vector, [primary],
                                           k=NEAREST_K, reviews=())
    current = store.current_ids(conn, [hit["id"] for hit in found])
    hit = next((h for h in found if h["id"] in current), None)
    if hit is None:
        return None
    return {"id": hit["id"], "namespace": hit["namespace"], "text": _neighbour(hit["text"]),
            "similarity": float(hit["similarity"]), "from": "vector"}


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
