"""After a cut: restore within the window, purge after it, and the invariant that holds
throughout (tombstones == archives, per namespace).

- `restore` puts a cut memory back as it was (text, vectors, status 'active'), by memory
  id, within the retention window; audited as 'curator_restore'. Outside the window, or
  when an active memory of the namespace already states the same text, it is refused with
  the reason.
- `purge` deletes the archives whose window has ended and records each (memory, namespace,
  content hash, reason, when): the memory's tombstone becomes status 'purged'. The vault's
  audit trail and cairn's raw turns are not touched: a purge ends the memory, it does not
  rewrite history.
- `invariant` counts tombstones and archives per namespace and lists any that do not pair.
"""

from datetime import datetime, timezone

from memory_platform.store import Database
from memory_platform.store import curator as store
from memory_platform.store import curator_archive as archive_store
from memory_platform.store import memories as memory_store
from memory_platform.vault.service import Conflict, NotFound
from memory_platform.vault.tokens import Scope

PURGE_BATCH = 1000


class RestoreRefused(Conflict):
    """The cut cannot be restored (window over, purged, or its text is already active)."""


def restore(db: Database, memory_id: int, *, actor: str, scope: Scope | None = None,
            now: datetime | None = None) -> dict:
    """Restore a cut memory by its id. A memory outside `scope` reads as missing."""
    now = now or datetime.now(timezone.utc)
    scope = scope or Scope.everything()
    if not actor:
        raise ValueError("every restore names its actor")
    with db.connect() as conn:
        with conn.transaction():
            found = archive_store.lock_archive(conn, memory_id)
            if found is None or not scope.permits(found["namespace"]):
                _why_not(conn, memory_id, scope)
            if now > found["restore_until"]:
                raise RestoreRefused(
                    f"memory {memory_id} was cut on {found['cut_at']:%Y-%m-%d}; its restore "
                    f"window ended on {found['restore_until']:%Y-%m-%d %H:%M} UTC and the "
                    f"daily purge will delete its archive")
            twin = archive_store.active_twin(conn, found["namespace"], found["content_hash"])
            if twin is not None:
                raise RestoreRefused(f"memory {twin} in {found['namespace']} already states "
                                     f"this; memory {memory_id} stays cut")
            row = archive_store.restore_memory(conn, found["id"], actor=actor)
    return {**row, "restored_from_archive": found["id"], "reason": found["reason"],
            "cut_at": found["cut_at"], "curator_run_id": found["curator_run_id"]}


def _why_not(conn, memory_id: int, scope: Scope) -> None:
    memory = memory_store.get_memory(conn, memory_id)
    if memory is None or not scope.permits(memory["namespace"]):
        raise NotFound(f"no memory with id {memory_id}")
    purged = archive_store.purge_record(conn, memory_id)
    if purged is not None:
        raise RestoreRefused(
            f"memory {memory_id} was purged on {purged['purged_at']:%Y-%m-%d} (cut "
            f"{purged['cut_at']:%Y-%m-%d} as {purged['reason']}); only its record remains "
            f"(content hash {purged['content_hash'][:12]}…)")
    raise RestoreRefused(f"memory {memory_id} is {memory['status']}, not a curator cut"
                         + ("; `vault restore` brings back an archived memory"
                            if memory["status"] == "archived" else ""))


def purge(db: Database, *, purged_by: str, now: datetime | None = None) -> list[dict]:
    """Purge every archive whose window ended by `now`, in batches; return the records."""
    now = now or datetime.now(timezone.utc)
    records: list[dict] = []
    with db.connect() as conn:
        while True:
            with conn.transaction():
                batch = archive_store.purge_due(conn, now=now, purged_by=purged_by,
                                                limit=PURGE_BATCH)
            records.extend(batch)
            if len(batch) < PURGE_BATCH:
                return records


def next_purges(db: Database, *, now: datetime | None = None) -> dict:
    """How many archives are due now and when the next one falls due (for the purge's
    metadata and the dashboard's countdown)."""
    now = now or datetime.now(timezone.utc)
    with db.connect() as conn:
        archives = archive_store.list_archives(conn)
    due = [a for a in archives if a["restore_until"] <= now]
    later = [a["restore_until"] for a in archives if a["restore_until"] > now]
    return {"archived": len(archives), "due": len(due),
            "next_due_at": min(later) if later else None}


def invariant(db: Database) -> dict:
    """{ok, by_namespace [{namespace, tombstones, archives, purged, ok}], unpaired [...]}."""
    with db.connect() as conn:
        with conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            counts = store.pairing_by_namespace(conn)
            unpaired = store.unpaired(conn)
    by_namespace = [{**c, "ok": c["tombstones"] == c["archives"]} for c in counts]
    ok = not unpaired and all(c["ok"] for c in by_namespace)
    return {"ok": ok, "by_namespace": by_namespace, "unpaired": unpaired}
