"""SQL of the review gate: what waits for review, and the decisions that promote, skip or
supersede it.

Rules kept here:
- A decision locks the shadow row (`SELECT ... FOR UPDATE`) in the caller's transaction and
  the caller checks it is still pending: of two concurrent decisions on one entry, the second
  waits for the first to commit, then sees the new review state and refuses.
- Every statement that changes a memory writes its `vault_audit` row (actor, action, before,
  after) in the same statement, as store/memories.py does: the trail cannot miss a row.
- Nothing is deleted. A superseded fact keeps its row, with `valid_to` and `superseded_by`.
- Vectors are copied inside PostgreSQL (shadow row to promoted row); the one vector read into
  Python is a shadow entry's own, to look up its nearest memories.
"""

from collections.abc import Sequence

import numpy as np
import orjson
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from memory_platform.privacy.personal import sensitivity
from memory_platform.store.memories import MEMORY_COLUMNS, content_hash

_COLS = sql.SQL(", ").join(sql.SQL("m.{}").format(sql.Identifier(c)) for c in MEMORY_COLUMNS)

# Decisions that end a shadow entry's review, as written to vault_audit.
DECISION_ACTIONS = ("approve", "skip")


# --- reads -------------------------------------------------------------------------------


def pending_overview(conn: psycopg.Connection) -> list[dict]:
    """Per shadow namespace with pending entries: its primary, the count and the oldest
    staging time. Empty shadows are left out (the overview lists what waits)."""
    rows = conn.execute(
        """SELECT n.primary_of, n.name, count(*), min(m.created_at)
           FROM memories m JOIN vault_namespaces n ON n.name = m.namespace
           WHERE m.review = 'pending' AND n.kind <> 'primary'
           GROUP BY n.primary_of, n.name ORDER BY n.primary_of, n.name"""
    ).fetchall()
    return [{"primary": r[0], "shadow": r[1], "pending": int(r[2]), "oldest_created_at": r[3]}
            for r in rows]


def pending_ids(conn: psycopg.Connection) -> list[int]:
    """Every pending shadow entry's id, ascending. Ids only: cheap at any backlog size."""
    return [int(r[0]) for r in conn.execute(
        "SELECT id FROM memories WHERE review = 'pending' ORDER BY id").fetchall()]


def count_pending(conn: psycopg.Connection, shadows: Sequence[str]) -> int:
    return int(conn.execute(
        "SELECT count(*) FROM memories WHERE namespace = ANY(%s) AND review = 'pending'",
        (list(shadows),),
    ).fetchone()[0])


def pending_page(
    conn: psycopg.Connection, shadows: Sequence[str], *, after_id: int, limit: int
) -> list[dict]:
    """One keyset page of pending entries in the given shadow namespaces, by id: each memory's
    columns, its dedup verdict (`v_*`, NULL without one) and the verdict's neighbour memory
    as it is now (`nb_*`: it may have been superseded or archived since)."""
    query = sql.SQL(
        """SELECT {cols},
                  v.verdict AS v_verdict, v.decided_by AS v_decided_by, v.reason AS v_reason,
                  v.similarity AS v_similarity, v.neighbour_id AS v_neighbour_id,
                  v.neighbour_candidate_id AS v_neighbour_candidate_id,
                  v.neighbour_text AS v_neighbour_text, v.run_id AS v_run_id,
                  nb.namespace AS nb_namespace, nb.text AS nb_text, nb.status AS nb_status,
                  nb.review AS nb_review, nb.category AS nb_category,
                  nb.valid_from AS nb_valid_from, nb.valid_to AS nb_valid_to,
                  nb.superseded_by AS nb_superseded_by
           FROM memories m
           LEFT JOIN dedup_verdicts v ON v.candidate_id = m.candidate_id
           LEFT JOIN memories nb ON nb.id = v.neighbour_id
           WHERE m.namespace = ANY(%(ns)s) AND m.review = 'pending' AND m.id > %(after)s
           ORDER BY m.id LIMIT %(limit)s"""
    ).format(cols=_COLS)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(query, {"ns": list(shadows), "after": after_id,
                                   "limit": limit}).fetchall()


def memory_vector(conn: psycopg.Connection, model: str, memory_id: int) -> np.ndarray | None:
    """A memory's stored vector for `model` (None when it has none)."""
    row = conn.execute(
        "SELECT embedding::text FROM memory_embeddings WHERE model = %s AND memory_id = %s",
        (model, memory_id),
    ).fetchone()
    return None if row is None else np.asarray(orjson.loads(row[0]), dtype=np.float32)


def current_ids(conn: psycopg.Connection, ids: Sequence[int]) -> set[int]:
    """Which of these memories hold now (no valid_to: not superseded or expired)."""
    return {int(r[0]) for r in conn.execute(
        "SELECT id FROM memories WHERE id = ANY(%s) AND valid_to IS NULL",
        ([int(i) for i in ids],),
    ).fetchall()}


def last_decision(conn: psycopg.Connection, memory_id: int) -> dict | None:
    """The latest review decision recorded for a memory: action, actor, at."""
    row = conn.execute(
        """SELECT action, actor, at FROM vault_audit
           WHERE memory_id = %s AND action = ANY(%s) ORDER BY at DESC, id DESC LIMIT 1""",
        (memory_id, list(DECISION_ACTIONS)),
    ).fetchone()
    return dict(zip(("action", "actor", "at"), row, strict=True)) if row else None


def approvals_between(conn: psycopg.Connection, start, end) -> list[dict]:
    """Shadow entries approved in [start, end), oldest decision first: the entry
    (memory_id), who approved it and when, the memory the approval wrote or found already
    there (promoted_id), and the fact it superseded (old_memory_id, else None)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            r"""SELECT s.id AS memory_id, a.actor, a.at,
                      coalesce(p.id, substring(s.review_note FROM 'as memory (\d+)$')::bigint)
                          AS promoted_id,
                      o.id AS old_memory_id
               FROM memories s
               JOIN LATERAL (SELECT actor, at FROM vault_audit
                             WHERE memory_id = s.id AND action = 'approve'
                             ORDER BY at DESC, id DESC LIMIT 1) a ON true
               LEFT JOIN memories p ON p.promoted_from = s.id
               LEFT JOIN memories o ON o.superseded_by = p.id
               WHERE s.review = 'approved' AND a.at >= %s AND a.at < %s
               ORDER BY a.at, s.id""",
            (start, end),
        ).fetchall()


def last_change(conn: psycopg.Connection, memory_id: int, action: str) -> dict | None:
    row = conn.execute(
        """SELECT actor, at FROM vault_audit WHERE memory_id = %s AND action = %s
           ORDER BY at DESC, id DESC LIMIT 1""",
        (memory_id, action),
    ).fetchone()
    return dict(zip(("actor", "at"), row, strict=True)) if row else None


def audit_rows(conn: psycopg.Connection, memory_ids: Sequence[int]) -> list[dict]:
    """The audit trail of the given memories, oldest first (all of it: no cap)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT id, memory_id, actor, action, before, after, at FROM vault_audit
               WHERE memory_id = ANY(%s) ORDER BY id""",
            ([int(i) for i in memory_ids],),
        ).fetchall()


# --- decisions (call inside a transaction) ----------------------------------------------


def lock_memory(conn: psycopg.Connection, memory_id: int) -> dict | None:
    """The memory's row, locked until the transaction ends. A concurrent decision on the same
    row waits here, then reads the row as the winner left it."""
    row = conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.id = %s FOR UPDATE").format(_COLS),
        (memory_id,),
    ).fetchone()
    return dict(zip(MEMORY_COLUMNS, row, strict=True)) if row else None


def insert_promoted(
    conn: psycopg.Connection, shadow_id: int, *, namespace: str, text: str, actor: str
) -> dict:
    """The primary row for a shadow entry: its text (maybe edited), and the shadow's
    category, source and provenance, `promoted_from` = the shadow, valid from when the
    shadow's fact began to hold, its category and topic. Audit action 'promote'. Returns
    the new row; `sensitive` is computed from the (maybe edited) text."""
    kinds = list(sensitivity(text))
    query = sql.SQL(
        """WITH ins AS (
               INSERT INTO memories (namespace, text, category, source, status, review,
                   dream_run_id, source_event_ids, score, why, verdict, promoted_from,
                   valid_from, content_hash, topic, sensitive, sensitive_kinds)
               SELECT %(namespace)s, %(text)s, s.category, s.source, 'active', NULL,
                      s.dream_run_id, s.source_event_ids, s.score, s.why, s.verdict, s.id,
                      s.valid_from, %(hash)s, s.topic, %(sensitive)s, %(kinds)s::text[]
               FROM memories s WHERE s.id = %(shadow)s
               RETURNING *),
           audit AS (
               INSERT INTO vault_audit (memory_id, actor, action, after)
               SELECT ins.id, %(actor)s, 'promote', to_jsonb(ins) FROM ins)
           SELECT {cols} FROM ins m"""
    ).format(cols=_COLS)
    row = conn.execute(query, {"namespace": namespace, "text": text.strip(),
                               "hash": content_hash(text), "shadow": shadow_id,
                               "actor": actor, "sensitive": bool(kinds),
                               "kinds": kinds}).fetchone()
    if row is None:
        raise LookupError(f"memory {shadow_id} vanished while being promoted")
    return dict(zip(MEMORY_COLUMNS, row, strict=True))


def copy_vector(conn: psycopg.Connection, model: str, from_id: int, to_id: int) -> bool:
    """Give `to_id` the vector `from_id` has for `model`, inside PostgreSQL. False when
    `from_id` has none (the caller embeds instead)."""
    cur = conn.execute(
        """INSERT INTO memory_embeddings (memory_id, model, dims, embedding)
           SELECT %s, me.model, me.dims, me.embedding FROM memory_embeddings me
           WHERE me.model = %s AND me.memory_id = %s
           ON CONFLICT (model, memory_id) DO UPDATE
           SET dims = EXCLUDED.dims, embedding = EXCLUDED.embedding, created_at = now()""",
        (to_id, model, from_id),
    )
    return cur.rowcount > 0


def _audited_update(set_clause: sql.Composable, action: str) -> sql.Composable:
    # The `before` CTE reads the statement's snapshot, i.e. the row as it was before the
    # UPDATE in the same statement: one statement writes the change and its audit row.
    return sql.SQL(
        """WITH before AS (SELECT * FROM memories WHERE id = %(id)s),
                upd AS (UPDATE memories SET {set_clause}, updated_at = now()
                        WHERE id = %(id)s RETURNING *),
                audit AS (
                    INSERT INTO vault_audit (memory_id, actor, action, before, after)
                    SELECT upd.id, %(actor)s, {action}, (SELECT to_jsonb(b) FROM before b),
                           to_jsonb(upd)
                    FROM upd)
           SELECT {cols} FROM upd m"""
    ).format(set_clause=set_clause, action=sql.Literal(action), cols=_COLS)


def set_review(
    conn: psycopg.Connection, memory_id: int, *, review: str, note: str | None, actor: str,
    action: str,
) -> dict:
    """End a shadow entry's review ('approved' or 'skipped') with an optional note."""
    row = conn.execute(
        _audited_update(sql.SQL("review = %(review)s, review_note = %(note)s"), action),
        {"id": memory_id, "review": review, "note": note, "actor": actor},
    ).fetchone()
    return dict(zip(MEMORY_COLUMNS, row, strict=True))


def supersede(conn: psycopg.Connection, old_id: int, new_id: int, *, actor: str) -> dict:
    """The old fact stops holding when the new one began to (the new row's valid_from, the
    time of the turns it came from), not when someone reviewed it: valid_to and
    superseded_by are set, the row stays. A new fact dated before the old one began ends
    the old one where it began (valid_to never precedes valid_from)."""
    row = conn.execute(
        _audited_update(sql.SQL("valid_to = greatest((SELECT n.valid_from FROM memories n "
                                "WHERE n.id = %(new)s), valid_from), "
                                "superseded_by = %(new)s"), "supersede"),
        {"id": old_id, "new": new_id, "actor": actor},
    ).fetchone()
    return dict(zip(MEMORY_COLUMNS, row, strict=True))

