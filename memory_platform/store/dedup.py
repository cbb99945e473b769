"""SQL of the dedup gate: the day's candidates waiting for a verdict, the verdicts themselves,
and a bulk loader the dedup benchmark uses to fill a vault.

Idempotency lives here: a verdict is keyed by its candidate (`dedup_verdicts.candidate_id`
is the primary key), inserted with ON CONFLICT DO NOTHING, so a re-run or a concurrent run
decides nothing twice and reports only what it inserted.
"""

from collections.abc import Sequence
from datetime import date
from typing import Any

import orjson
import psycopg
from psycopg import sql

# Verdicts that let a candidate go on to staging.
ACCEPTED = ("new", "contradiction")
VERDICTS = ("new", "duplicate", "same_fact", "contradiction")

_CANDIDATE_KEYS = ("id", "text", "namespace", "category")
VERDICT_COLUMNS = (
    "candidate_id", "run_id", "verdict", "decided_by", "neighbour_id",
    "neighbour_candidate_id", "neighbour_text", "similarity", "reason", "thresholds",
    "created_at",
)


def pending_candidates(conn: psycopg.Connection, day: date) -> list[dict]:
    """The day's proposed candidates with no verdict yet, by id. Not capped: a day's
    candidates are few, and a silent cap would leave some undecided without a word."""
    rows = conn.execute(
        """SELECT c.id, c.text, c.namespace, c.category FROM dream_candidates c
           WHERE c.day = %s AND c.status = 'proposed'
             AND NOT EXISTS (SELECT 1 FROM dedup_verdicts v WHERE v.candidate_id = c.id)
           ORDER BY c.id""",
        (day,),
    ).fetchall()
    return [dict(zip(_CANDIDATE_KEYS, r, strict=True)) for r in rows]


def accepted_candidates(conn: psycopg.Connection, day: date) -> list[dict]:
    """The day's candidates already let through (new or contradiction), by id: a re-run after
    a crash compares the rest of the day with them, as the first run would have."""
    rows = conn.execute(
        """SELECT c.id, c.text, c.namespace, c.category FROM dream_candidates c
           JOIN dedup_verdicts v ON v.candidate_id = c.id
           WHERE c.day = %s AND v.verdict = ANY(%s)
           ORDER BY c.id""",
        (day, list(ACCEPTED)),
    ).fetchall()
    return [dict(zip(_CANDIDATE_KEYS, r, strict=True)) for r in rows]


def insert_verdict(
    conn: psycopg.Connection,
    *,
    candidate_id: int,
    run_id: str,
    verdict: str,
    decided_by: str,
    reason: str,
    thresholds: dict[str, Any],
    neighbour_id: int | None = None,
    neighbour_candidate_id: int | None = None,
    neighbour_text: str | None = None,
    similarity: float | None = None,
) -> bool:
    """Record one verdict; False when the candidate already had one (nothing written)."""
    row = conn.execute(
        """INSERT INTO dedup_verdicts (candidate_id, run_id, verdict, decided_by, neighbour_id,
               neighbour_candidate_id, neighbour_text, similarity, reason, thresholds)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)
           ON CONFLICT (candidate_id) DO NOTHING
           RETURNING candidate_id""",
        (candidate_id, run_id, verdict, decided_by, neighbour_id, neighbour_candidate_id,
         neighbour_text, similarity, reason, orjson.dumps(thresholds).decode()),
    ).fetchone()
    return row is not None


def verdicts_for_day(conn: psycopg.Connection, day: date) -> list[dict]:
    """Every verdict on the day's candidates, by candidate id (all of them: no cap)."""
    rows = conn.execute(
        """SELECT v.candidate_id, v.run_id, v.verdict, v.decided_by, v.neighbour_id,
                  v.neighbour_candidate_id, v.neighbour_text, v.similarity, v.reason,
                  v.thresholds, v.created_at
           FROM dedup_verdicts v JOIN dream_candidates c ON c.id = v.candidate_id
           WHERE c.day = %s ORDER BY v.candidate_id""",
        (day,),
    ).fetchall()
    return [dict(zip(VERDICT_COLUMNS, r, strict=True)) for r in rows]


def verdict_counts(conn: psycopg.Connection, day: date) -> dict[str, int]:
    """Verdicts on the day's candidates by kind, every kind present (0 when none)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for verdict, n in conn.execute(
        """SELECT v.verdict, count(*) FROM dedup_verdicts v
           JOIN dream_candidates c ON c.id = v.candidate_id
           WHERE c.day = %s GROUP BY v.verdict""",
        (day,),
    ):
        counts[verdict] = int(n)
    return counts


# --- benchmark support -------------------------------------------------------------------


def insert_bench_memories(
    conn: psycopg.Connection, namespace: str, texts: Sequence[str], *, actor: str
) -> list[int]:
    """Bulk insert hand-sourced memories (and their audit rows, in the same statement, as
    vault.add_memory does) into an existing namespace; return their ids in order. For the
    benchmark's filler vault: one statement per call instead of one per memory."""
    if not texts:
        return []
    rows = conn.execute(
        """WITH ins AS (
               INSERT INTO memories (namespace, text, category, source, review, content_hash)
               SELECT %(ns)s, t.text, 'project', 'hand',
                      CASE WHEN %(ns)s LIKE '%%\\_\\_%%' THEN 'pending' END,
                      encode(sha256(convert_to(t.text, 'UTF8')), 'hex')
               FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(text, n)
               ORDER BY t.n
               RETURNING *),
           audit AS (
               INSERT INTO vault_audit (memory_id, actor, action, after)
               SELECT ins.id, %(actor)s, 'add', to_jsonb(ins) FROM ins)
           SELECT id FROM ins ORDER BY id""",
        {"ns": namespace, "texts": list(texts), "actor": actor},
    ).fetchall()
    return [int(r[0]) for r in rows]


def set_maintenance_work_mem(conn: psycopg.Connection, value: str) -> None:
    """Session setting for a bulk HNSW build (a graph that does not fit builds far slower)."""
    conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(value)))


def analyze_vault(conn: psycopg.Connection) -> None:
    conn.execute("VACUUM ANALYZE memories")
    conn.execute("VACUUM ANALYZE memory_embeddings")
