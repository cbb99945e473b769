"""SQL of a cut's life: archive + tombstone, restore, purge; and the merges and
contradictions a run staged for review.

- A cut is one statement per batch: the memory row as it was (to_jsonb) and the verdict's
  reason and evidence into `curator_archive`, its vectors into `curator_archive_vectors`
  (and out of `memory_embeddings`), the row itself turned into a tombstone (status 'cut',
  a text saying how to restore it) and a `vault_audit` row per memory (action 'cut',
  before/after). Nothing is deleted from `memories`: audit rows, promotions and dedup
  verdicts keep pointing at the tombstone.
- A restore reverses exactly that, in one statement; a purge deletes the archive (its
  vectors cascade), turns the tombstone into status 'purged' and writes a `curator_purges`
  record (memory, namespace, content hash, reason, when).
- PostgreSQL checks at commit that tombstones and archives pair up (migration 0006).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

ARCHIVE_COLUMNS = (
    "id", "memory_id", "namespace", "curator_run_id", "dagster_run_id", "handle", "reason",
    "related_memory_id", "evidence", "note", "content_hash", "cut_at", "restore_until",
)
_ARCHIVE_SELECT = ", ".join(f"a.{c}" for c in ARCHIVE_COLUMNS)

TOMBSTONE_TEXT = "[cut by the curator; `memory-platform curator restore {id}` within the window]"
PURGED_TEXT = "[purged by the curator]"


@dataclass(frozen=True)
class CutRow:
    memory_id: int
    handle: int
    reason: str
    related_memory_id: int | None
    evidence: list[dict]
    note: str | None


def cut_memories(conn: psycopg.Connection, cuts: Sequence[CutRow], *, curator_run_id: int,
                 dagster_run_id: str, actor: str, now: datetime,
                 restore_until: datetime) -> dict[int, int]:
    """Archive and tombstone `cuts` (memories locked by the caller, in its transaction);
    return {memory_id: archive_id}. A memory that is not active is left alone (absent from
    the result): the caller compares."""
    if not cuts:
        return {}
    rows = conn.execute(
        r"""WITH input AS (
                SELECT * FROM unnest(%(ids)s::bigint[], %(handles)s::int[],
                                     %(reasons)s::text[], %(related)s::bigint[],
                                     %(evidence)s::jsonb[], %(notes)s::text[])
                       AS i(memory_id, handle, reason, related, evidence, note)),
            target AS (
                SELECT m.* FROM memories m JOIN input i ON i.memory_id = m.id
                WHERE m.status = 'active'),
            arch AS (
                INSERT INTO curator_archive (memory_id, namespace, curator_run_id,
                    dagster_run_id, handle, reason, related_memory_id, evidence, note,
                    memory, content_hash, cut_at, restore_until)
                SELECT t.id, t.namespace, %(run)s, %(dagster)s, i.handle, i.reason,
                       i.related, i.evidence, i.note, to_jsonb(t), t.content_hash,
                       %(now)s, %(until)s
                FROM target t JOIN input i ON i.memory_id = t.id
                RETURNING id, memory_id),
            vec AS (
                INSERT INTO curator_archive_vectors (archive_id, model, dims, embedding,
                                                     created_at)
                SELECT arch.id, me.model, me.dims, me.embedding, me.created_at
                FROM arch JOIN memory_embeddings me ON me.memory_id = arch.memory_id),
            dropped AS (
                DELETE FROM memory_embeddings me USING target t WHERE me.memory_id = t.id),
            upd AS (
                UPDATE memories m
                SET status = 'cut', updated_at = now(),
                    text = replace(%(tomb)s, '{id}', m.id::text)
                FROM target t WHERE m.id = t.id
                RETURNING m.*),
            audit AS (
                INSERT INTO vault_audit (memory_id, actor, action, before, after)
                SELECT upd.id, %(actor)s, 'cut', to_jsonb(t), to_jsonb(upd)
                FROM upd JOIN target t ON t.id = upd.id)
            SELECT memory_id, id FROM arch""",
        {"ids": [c.memory_id for c in cuts], "handles": [c.handle for c in cuts],
         "reasons": [c.reason for c in cuts],
         "related": [c.related_memory_id for c in cuts],
         "evidence": [Jsonb(c.evidence) for c in cuts], "notes": [c.note for c in cuts],
         "run": curator_run_id, "dagster": dagster_run_id, "now": now,
         "until": restore_until, "tomb": TOMBSTONE_TEXT, "actor": actor},
    ).fetchall()
    return {int(m): int(a) for m, a in rows}


def lock_archive(conn: psycopg.Connection, memory_id: int) -> dict | None:
    """The archive of a cut memory, locked (with its memory row) for a restore."""
    with conn.cursor(row_factory=dict_row) as cur:
        found = cur.execute(
            f"""SELECT {_ARCHIVE_SELECT}, a.memory->>'text' AS text,
                       a.memory->>'category' AS category
                FROM curator_archive a WHERE a.memory_id = %s FOR UPDATE""",
            (memory_id,),
        ).fetchone()
    if found is not None:
        conn.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (memory_id,))
    return found


def active_twin(conn: psycopg.Connection, namespace: str, content_hash: str) -> int | None:
    row = conn.execute(
        """SELECT id FROM memories WHERE namespace = %s AND content_hash = %s
             AND status = 'active' ORDER BY id LIMIT 1""",
        (namespace, content_hash),
    ).fetchone()
    return int(row[0]) if row else None


def restore_memory(conn: psycopg.Connection, archive_id: int, *, actor: str) -> dict:
    """Put an archived memory back (text, vectors, status 'active'), delete its archive and
    write the audit row (action 'curator_restore'). Call with the archive locked."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            """WITH a AS (SELECT * FROM curator_archive WHERE id = %(archive)s),
                    vec AS (
                        INSERT INTO memory_embeddings (memory_id, model, dims, embedding)
                        SELECT a.memory_id, v.model, v.dims, v.embedding
                        FROM a JOIN curator_archive_vectors v ON v.archive_id = a.id
                        ON CONFLICT (model, memory_id) DO UPDATE
                        SET dims = EXCLUDED.dims, embedding = EXCLUDED.embedding,
                            created_at = now()),
                    before AS (SELECT m.* FROM memories m JOIN a ON a.memory_id = m.id),
                    upd AS (
                        UPDATE memories m SET status = 'active', text = a.memory->>'text',
                                              updated_at = now()
                        FROM a WHERE m.id = a.memory_id AND m.status = 'cut'
                        RETURNING m.*),
                    audit AS (
                        INSERT INTO vault_audit (memory_id, actor, action, before, after)
                        SELECT upd.id, %(actor)s, 'curator_restore',
                               (SELECT to_jsonb(b) FROM before b), to_jsonb(upd) FROM upd),
                    gone AS (DELETE FROM curator_archive d USING a WHERE d.id = a.id)
               SELECT upd.id, upd.namespace, upd.text, upd.category, upd.status FROM upd""",
            {"archive": archive_id, "actor": actor},
        ).fetchone()
    if row is None:
        raise LookupError(f"archive {archive_id} has no tombstone to restore")
    return row


def purge_due(conn: psycopg.Connection, *, now: datetime, purged_by: str,
              limit: int = 1000) -> list[dict]:
    """Purge up to `limit` archives whose window ended by `now`: record, delete the archive
    (vectors cascade), tombstone -> status 'purged', audit action 'purge'. Returns the purge
    records written. Call in a transaction; loop until it returns fewer than `limit`."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """WITH due AS (
                   SELECT * FROM curator_archive WHERE restore_until <= %(now)s
                   ORDER BY id LIMIT %(limit)s FOR UPDATE SKIP LOCKED),
               rec AS (
                   INSERT INTO curator_purges (memory_id, archive_id, namespace, content_hash,
                       reason, curator_run_id, cut_at, restore_until, purged_at, purged_by)
                   SELECT memory_id, id, namespace, content_hash, reason, curator_run_id,
                          cut_at, restore_until, %(now)s, %(by)s FROM due
                   RETURNING *),
               gone AS (DELETE FROM curator_archive a USING due WHERE a.id = due.id),
               before AS (SELECT m.* FROM memories m JOIN due ON due.memory_id = m.id),
               upd AS (
                   UPDATE memories m SET status = 'purged', text = %(purged)s,
                                         updated_at = now()
                   FROM due WHERE m.id = due.memory_id RETURNING m.*),
               audit AS (
                   INSERT INTO vault_audit (memory_id, actor, action, before, after)
                   SELECT upd.id, %(by)s, 'purge', to_jsonb(b), to_jsonb(upd)
                   FROM upd JOIN before b ON b.id = upd.id)
               SELECT id, memory_id, archive_id, namespace, content_hash, reason,
                      curator_run_id, cut_at, restore_until, purged_at, purged_by
               FROM rec ORDER BY memory_id""",
            {"now": now, "limit": limit, "by": purged_by, "purged": PURGED_TEXT},
        ).fetchall()


def purge_record(conn: psycopg.Connection, memory_id: int) -> dict | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT * FROM curator_purges WHERE memory_id = %s ORDER BY id DESC LIMIT 1",
            (memory_id,),
        ).fetchone()


def list_archives(conn: psycopg.Connection, *, namespaces: Sequence[str] | None = None,
                  curator_run_id: int | None = None, since: datetime | None = None
                  ) -> list[dict]:
    """Restorable cuts (archives) with the text they hold, newest first; no vectors read,
    no cap."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"""SELECT {_ARCHIVE_SELECT}, a.memory->>'text' AS text,
                       a.memory->>'category' AS category, r.week
                FROM curator_archive a JOIN curator_runs r ON r.id = a.curator_run_id
                WHERE (%(ns)s::text[] IS NULL OR a.namespace = ANY(%(ns)s))
                  AND (%(run)s::bigint IS NULL OR a.curator_run_id = %(run)s)
                  AND (%(since)s::timestamptz IS NULL OR a.cut_at >= %(since)s)
                ORDER BY a.cut_at DESC, a.memory_id""",
            {"ns": list(namespaces) if namespaces is not None else None,
             "run": curator_run_id, "since": since},
        ).fetchall()


def archived_texts(conn: psycopg.Connection, memory_ids: Sequence[int]) -> dict[int, str]:
    """The texts cut memories held (their tombstones show a placeholder)."""
    rows = conn.execute(
        "SELECT memory_id, memory->>'text' FROM curator_archive WHERE memory_id = ANY(%s)",
        ([int(i) for i in memory_ids],),
    ).fetchall()
    return {int(m): t for m, t in rows}


def list_purges(conn: psycopg.Connection, *, namespaces: Sequence[str] | None = None,
                since: datetime | None = None) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT * FROM curator_purges
               WHERE (%(ns)s::text[] IS NULL OR namespace = ANY(%(ns)s))
                 AND (%(since)s::timestamptz IS NULL OR purged_at >= %(since)s)
               ORDER BY purged_at DESC, id DESC""",
            {"ns": list(namespaces) if namespaces is not None else None, "since": since},
        ).fetchall()


# --- consolidation proposals ---------------------------------------------------------------


def find_proposal(conn: psycopg.Connection, *, namespace: str, week, kind: str,
                  source_memory_ids: Sequence[int]) -> dict | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT * FROM curator_proposals WHERE namespace = %s AND week = %s
                 AND kind = %s AND source_memory_ids = %s::bigint[]""",
            (namespace, week, kind, sorted(int(i) for i in source_memory_ids)),
        ).fetchone()


def insert_proposal(conn: psycopg.Connection, *, curator_run_id: int, namespace: str, week,
                    kind: str, source_memory_ids: Sequence[int], shadow_memory_id: int
                    ) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """INSERT INTO curator_proposals (curator_run_id, namespace, week, kind,
                   source_memory_ids, shadow_memory_id)
               VALUES (%s, %s, %s, %s, %s::bigint[], %s) RETURNING *""",
            (curator_run_id, namespace, week, kind, sorted(int(i) for i in source_memory_ids),
             shadow_memory_id),
        ).fetchone()


def proposal_for_shadow(conn: psycopg.Connection, shadow_memory_id: int) -> dict | None:
    """The curator proposal a review entry stands for (None for a dream's own entries)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            "SELECT * FROM curator_proposals WHERE shadow_memory_id = %s",
            (shadow_memory_id,),
        ).fetchone()
