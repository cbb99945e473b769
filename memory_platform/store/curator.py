"""SQL of the curator's books: the listing a model is shown, its runs (verdicts and what
became of them) and the tombstones == archives invariant. The cuts themselves, restores,
purges and staged proposals are in store/curator_archive.py.

Rules kept here:
- The listing never reads a vector; it reads the columns the model sees and those the
  fingerprint covers (id, content hash, validity, update time).
- `lock_listing` takes the namespace row FOR UPDATE (a memory inserted into the namespace
  takes a KEY SHARE lock on it through its foreign key, so it waits) and every listed row
  FOR UPDATE (an edit, an archive or a supersede waits): between the fingerprint check and
  the commit of the cuts, nothing in the namespace can change.
"""

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

# What the model sees of a memory, and what the fingerprint covers.
LISTING_COLUMNS = (
    "id", "text", "category", "source", "score", "promoted_from", "valid_from", "valid_to",
    "created_at", "updated_at", "content_hash", "superseded_by", "sensitive",
)
FINGERPRINT_COLUMNS = ("id", "content_hash", "valid_from", "valid_to", "superseded_by",
                       "updated_at")

# The memories a curator run weighs: the namespace's current facts. Archived, cut and
# superseded rows are history, not the curator's business.
_CURRENT = """namespace = %(ns)s AND status = 'active' AND review IS NULL
              AND (valid_to IS NULL OR valid_to > now())"""

RUN_COLUMNS = (
    "id", "namespace", "week", "dagster_run_id", "status", "dry_run", "refusal", "refusal_detail",
    "listed", "fingerprint", "ceiling", "max_cuts", "proposed_cuts", "verdict", "chunks",
    "listing_tokens", "repo", "agent", "prompt_version", "cuts", "staged", "executed_by",
    "created_at", "decided_at",
)
_RUN_SELECT = ", ".join(f"r.{c}" for c in RUN_COLUMNS)


# --- the listing --------------------------------------------------------------------------


def current_memories(conn: psycopg.Connection, namespace: str) -> list[dict]:
    """The namespace's current facts, by id: what a curator run lists (no vectors)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {', '.join(LISTING_COLUMNS)} FROM memories WHERE {_CURRENT} ORDER BY id",
            {"ns": namespace},
        ).fetchall()


def lock_listing(conn: psycopg.Connection, namespace: str) -> list[dict] | None:
    """Inside a transaction: lock the namespace and its current facts, and return the
    fingerprint columns of those facts by id (None when the namespace does not exist)."""
    if conn.execute("SELECT 1 FROM vault_namespaces WHERE name = %s FOR UPDATE",
                    (namespace,)).fetchone() is None:
        return None
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {', '.join(FINGERPRINT_COLUMNS)} FROM memories WHERE {_CURRENT} "
            "ORDER BY id FOR UPDATE",
            {"ns": namespace},
        ).fetchall()


def primary_namespaces(conn: psycopg.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT name FROM vault_namespaces WHERE kind = 'primary' ORDER BY name").fetchall()]


# --- runs ---------------------------------------------------------------------------------


def insert_run(conn: psycopg.Connection, *, namespace: str, week: date, dagster_run_id: str,
               status: str, dry_run: bool, refusal: str | None, refusal_detail: str | None,
               memory_ids: Sequence[int], fingerprint: str, ceiling: float, max_cuts: int,
               proposed_cuts: int, verdict: Any, chunks: int, listing_tokens: int,
               repo: str | None, agent: str, prompt_version: str,
               row_digests: Sequence[str] | None = None) -> int:
    row = conn.execute(
        """INSERT INTO curator_runs (namespace, week, dagster_run_id, status, dry_run, refusal,
               refusal_detail, listed, memory_ids, fingerprint, ceiling, max_cuts,
               proposed_cuts, verdict, chunks, listing_tokens, repo, agent, prompt_version,
               row_digests, decided_at)
           VALUES (%(namespace)s, %(week)s, %(run)s, %(status)s, %(dry_run)s, %(refusal)s,
               %(detail)s,
               %(listed)s, %(ids)s::bigint[], %(fingerprint)s, %(ceiling)s, %(max_cuts)s,
               %(proposed)s, %(verdict)s, %(chunks)s, %(tokens)s, %(repo)s, %(agent)s,
               %(prompt)s, %(digests)s::text[], CASE WHEN %(status)s = 'refused' THEN now() END)
           RETURNING id""",
        {"namespace": namespace, "week": week, "run": dagster_run_id, "status": status,
         "dry_run": dry_run, "refusal": refusal, "detail": refusal_detail, "listed": len(memory_ids),
         "ids": [int(i) for i in memory_ids], "fingerprint": fingerprint,
         "ceiling": ceiling, "max_cuts": max_cuts, "proposed": proposed_cuts,
         "verdict": Jsonb(verdict), "chunks": chunks, "tokens": listing_tokens,
         "repo": repo, "agent": agent, "prompt": prompt_version,
         "digests": list(row_digests) if row_digests is not None else None},
    ).fetchone()
    return int(row[0])


def get_run(conn: psycopg.Connection, run_pk: int, *, lock: bool = False) -> dict | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_RUN_SELECT}, r.memory_ids, r.row_digests FROM curator_runs r "
            "WHERE r.id = %s"
            + (" FOR UPDATE" if lock else ""),
            (run_pk,),
        ).fetchone()


def refuse_run(conn: psycopg.Connection, run_pk: int, refusal: str, detail: str) -> None:
    conn.execute(
        """UPDATE curator_runs SET status = 'refused', refusal = %s, refusal_detail = %s,
               decided_at = now() WHERE id = %s""",
        (refusal, detail, run_pk),
    )


def mark_executed(conn: psycopg.Connection, run_pk: int, *, cuts: int, staged: int,
                  executed_by: str) -> None:
    conn.execute(
        """UPDATE curator_runs SET status = 'executed', cuts = %s, staged = %s,
               executed_by = %s, decided_at = now() WHERE id = %s""",
        (cuts, staged, executed_by, run_pk),
    )


def partition_runs(conn: psycopg.Connection, namespace: str, week: date) -> list[dict]:
    """Every run of one (namespace, week) partition, oldest first."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_RUN_SELECT} FROM curator_runs r WHERE r.namespace = %s AND r.week = %s "
            "ORDER BY r.id",
            (namespace, week),
        ).fetchall()


def runs_of(conn: psycopg.Connection, dagster_run_ids: Sequence[str]) -> list[dict]:
    """The curator runs a Dagster run asked for (curator_verdicts) or executed (curator_cuts)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"SELECT {_RUN_SELECT} FROM curator_runs r "
            "WHERE r.dagster_run_id = ANY(%(ids)s) OR r.executed_by = ANY(%(ids)s) "
            "ORDER BY r.id",
            {"ids": list(dagster_run_ids)},
        ).fetchall()


def list_runs(conn: psycopg.Connection, *, namespaces: Sequence[str] | None = None,
              since: datetime | None = None, statuses: Sequence[str] | None = None,
              refused_only: bool = False) -> list[dict]:
    """Runs, newest first, filtered by namespace, creation time and status (all of them:
    no cap)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            f"""SELECT {_RUN_SELECT} FROM curator_runs r
                WHERE (%(ns)s::text[] IS NULL OR r.namespace = ANY(%(ns)s))
                  AND (%(since)s::timestamptz IS NULL OR r.created_at >= %(since)s)
                  AND (%(statuses)s::text[] IS NULL OR r.status = ANY(%(statuses)s))
                  AND (NOT %(refused)s OR r.status = 'refused')
                ORDER BY r.created_at DESC, r.id DESC""",
            {"ns": list(namespaces) if namespaces is not None else None, "since": since,
             "statuses": list(statuses) if statuses is not None else None,
             "refused": refused_only},
        ).fetchall()


# --- tombstones == archives ---------------------------------------------------------------


def pairing_by_namespace(conn: psycopg.Connection) -> list[dict]:
    """Per primary namespace: tombstones (memories with status 'cut'), archives, purged
    tombstones and purge records. Namespaces with nothing cut are listed too."""
    rows = conn.execute(
        """SELECT n.name,
                  (SELECT count(*) FROM memories m
                   WHERE m.namespace = n.name AND m.status = 'cut'),
                  (SELECT count(*) FROM curator_archive a WHERE a.namespace = n.name),
                  (SELECT count(*) FROM curator_purges p WHERE p.namespace = n.name)
           FROM vault_namespaces n WHERE n.kind = 'primary' ORDER BY n.name"""
    ).fetchall()
    return [{"namespace": r[0], "tombstones": int(r[1]), "archives": int(r[2]),
             "purged": int(r[3])} for r in rows]


def unpaired(conn: psycopg.Connection, limit: int = 50) -> list[dict]:
    """Tombstones without their archive, archives whose memory is not a tombstone, and
    archives filed under another namespace than their memory's (must be none)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """(SELECT m.id AS memory_id, m.namespace, 'tombstone without archive' AS problem
                FROM memories m WHERE m.status = 'cut'
                  AND NOT EXISTS (SELECT 1 FROM curator_archive a WHERE a.memory_id = m.id))
               UNION ALL
               (SELECT a.memory_id, a.namespace,
                       'archive of a memory with status ' || m.status
                FROM curator_archive a JOIN memories m ON m.id = a.memory_id
                WHERE m.status <> 'cut')
               UNION ALL
               (SELECT a.memory_id, a.namespace,
                       'archive filed under another namespace than ' || m.namespace
                FROM curator_archive a JOIN memories m ON m.id = a.memory_id
                WHERE m.namespace <> a.namespace)
               ORDER BY memory_id LIMIT %s""",
            (limit,),
        ).fetchall()
