"""SQL of the vault's memories: adding, reading, listing and counting them, a counted keyset
page, edits and archives, and each memory's audit trail.

Rules kept here:
- Every write of a memory writes its `vault_audit` row in the same statement, with the row
  as it was before (`before`) and after (`after`): the audit trail cannot miss a row.
- Nothing here deletes a memory: DELETE over REST archives it (status 'archived').
- No vector is read: a memory's embedding lives in `memory_embeddings`
  (store/memory_embeddings.py), which listing never touches.
"""

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.privacy.personal import sensitivity
from memory_platform.store.namespaces import ensure_namespace, parse_namespace

# The closed set (migration 0007). `episode`: something that happened on a day, and where a
# memory goes when the classifier is unsure (vault/topics.py), never into a wrong topic.
CATEGORIES = ("user", "feedback", "project", "reference", "decision", "episode")
# A topic is a short slug; NULL means "not classified yet" (recall's backfill fills it).
TOPIC_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,47}$")
SOURCES = ("hand", "dream", "import", "agent")
REVIEWS = ("pending", "approved", "skipped")

# Columns of a memory, in this order; there is no vector among them.
MEMORY_COLUMNS = (
    "id", "namespace", "text", "category", "source", "status", "review", "review_note",
    "dream_run_id", "candidate_id", "source_event_ids", "score", "why", "verdict",
    "promoted_from", "valid_from", "valid_to", "superseded_by", "created_at", "updated_at",
    "content_hash", "topic", "sensitive", "sensitive_kinds",
)
_MEMORY_SELECT = sql.SQL(", ").join(sql.SQL("m.{}").format(sql.Identifier(c))
                                     for c in MEMORY_COLUMNS)


def _memory(row) -> dict:
    return dict(zip(MEMORY_COLUMNS, row, strict=True))


def normalize_text(text: str) -> str:
    """Whitespace collapsed and trimmed: two memories that differ only in spacing hash alike."""
    return " ".join(text.split())


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8", "surrogatepass")).hexdigest()


def check_topic(topic: str | None) -> None:
    if topic is not None and not TOPIC_RE.match(topic):
        raise ValueError(f"invalid topic {topic!r}: a slug of lowercase letters, digits and "
                         f"'-', at most 48 characters")


def add_memory(
    conn: psycopg.Connection,
    *,
    namespace: str,
    text: str,
    category: str = "user",
    source: str = "hand",
    actor: str,
    review: str | None = None,
    dream_run_id: str | None = None,
    candidate_id: int | None = None,
    source_event_ids: Sequence[int] = (),
    score: int | None = None,
    why: str | None = None,
    verdict: str | None = None,
    promoted_from: int | None = None,
    valid_from: datetime | None = None,
    topic: str | None = None,
) -> tuple[int, bool]:
    """Insert a memory (creating its namespace on first write) and its audit row; return
    (id, created). Staging a dream candidate twice returns the first row's id with
    created=False. Shadow entries start as review='pending' unless told otherwise.
    The database, not this function, refuses a dream row in a primary namespace.
    `sensitive` is computed here from the text, so no write path can forget it."""
    kind, _ = parse_namespace(namespace)
    if not text or not text.strip():
        raise ValueError("a memory needs some text")
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}; use one of {', '.join(CATEGORIES)}")
    if source not in SOURCES:
        raise ValueError(f"unknown source {source!r}; use one of {', '.join(SOURCES)}")
    if review is None and kind != "primary":
        review = "pending"
    if review is not None and review not in REVIEWS:
        raise ValueError(f"unknown review state {review!r}; use one of {', '.join(REVIEWS)}")
    if not actor:
        raise ValueError("every vault write names its actor")
    check_topic(topic)
    kinds = list(sensitivity(text))
    params = {
        "namespace": namespace, "text": text.strip(), "category": category, "source": source,
        "review": review, "dream_run_id": dream_run_id, "candidate_id": candidate_id,
        "source_event_ids": [int(i) for i in source_event_ids], "score": score, "why": why,
        "verdict": verdict, "promoted_from": promoted_from, "valid_from": valid_from,
        "content_hash": content_hash(text), "actor": actor, "topic": topic,
        "sensitive": bool(kinds), "kinds": kinds,
    }
    with conn.transaction():
        ensure_namespace(conn, namespace)
        # The audit row is written by the same statement as the memory: one cannot exist
        # without the other. ON CONFLICT covers candidate_id only (NULLs never conflict).
        row = conn.execute(
            """WITH ins AS (
                   INSERT INTO memories (namespace, text, category, source, review,
                       dream_run_id, candidate_id, source_event_ids, score, why, verdict,
                       promoted_from, valid_from, content_hash, topic, sensitive,
                       sensitive_kinds)
                   VALUES (%(namespace)s, %(text)s, %(category)s, %(source)s, %(review)s,
                       %(dream_run_id)s, %(candidate_id)s, %(source_event_ids)s::bigint[],
                       %(score)s, %(why)s, %(verdict)s, %(promoted_from)s,
                       COALESCE(%(valid_from)s::timestamptz, now()), %(content_hash)s,
                       %(topic)s, %(sensitive)s, %(kinds)s::text[])
                   ON CONFLICT (candidate_id) DO NOTHING
                   RETURNING *),
               audit AS (
                   INSERT INTO vault_audit (memory_id, actor, action, after)
                   SELECT ins.id, %(actor)s, 'add', to_jsonb(ins) FROM ins)
               SELECT id FROM ins""",
            params,
        ).fetchone()
        if row is not None:
            return int(row[0]), True
        existing = conn.execute(
            "SELECT id FROM memories WHERE candidate_id = %s", (candidate_id,)
        ).fetchone()
    if existing is None:  # cannot happen: the conflict was on this candidate_id
        raise RuntimeError(f"candidate {candidate_id} conflicted but has no memory")
    return int(existing[0]), False


def get_memory(conn: psycopg.Connection, memory_id: int) -> dict | None:
    row = conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.id = %s").format(_MEMORY_SELECT),
        (memory_id,),
    ).fetchone()
    return dict(zip(MEMORY_COLUMNS, row, strict=True)) if row else None


def find_by_hash(conn: psycopg.Connection, namespace: str, text: str) -> int | None:
    """The id of an active memory in `namespace` with the same normalized text, if any."""
    row = conn.execute(
        """SELECT id FROM memories
           WHERE namespace = %s AND content_hash = %s AND status = 'active'
           ORDER BY id LIMIT 1""",
        (namespace, content_hash(text)),
    ).fetchone()
    return int(row[0]) if row else None


def _list_where(status: str | None, review: str | None) -> tuple[sql.Composable, dict]:
    parts = [sql.SQL("m.namespace = %(namespace)s")]
    params: dict[str, Any] = {}
    if status is not None:
        parts.append(sql.SQL("m.status = %(status)s"))
        params["status"] = status
    if review is not None:
        parts.append(sql.SQL("m.review = %(review)s"))
        params["review"] = review
    return sql.SQL(" AND ").join(parts), params


def list_memories(
    conn: psycopg.Connection,
    namespace: str,
    *,
    after_id: int = 0,
    limit: int = 500,
    status: str | None = "active",
    review: str | None = None,
) -> list[dict]:
    """One page of a namespace's memories by id, after `after_id` (keyset paging: pass the
    last id of a page to get the next). status=None lists every status."""
    where, params = _list_where(status, review)
    rows = conn.execute(
        sql.SQL("SELECT {cols} FROM memories m WHERE {where} AND m.id > %(after)s "
                "ORDER BY m.id LIMIT %(limit)s").format(cols=_MEMORY_SELECT, where=where),
        {**params, "namespace": namespace, "after": after_id, "limit": limit},
    ).fetchall()
    return [dict(zip(MEMORY_COLUMNS, r, strict=True)) for r in rows]


def count_memories(
    conn: psycopg.Connection,
    namespace: str,
    *,
    status: str | None = "active",
    review: str | None = None,
) -> int:
    where, params = _list_where(status, review)
    row = conn.execute(sql.SQL("SELECT count(*) FROM memories m WHERE {}").format(where),
                       {**params, "namespace": namespace}).fetchone()
    return int(row[0])


# --- the scoped surfaces (REST and MCP): pages, edits, archives ---------------------------


def page(
    conn: psycopg.Connection,
    namespace: str,
    *,
    after_id: int,
    limit: int,
    status: str | None,
) -> tuple[list[dict], int, int | None]:
    """(items, total, next_after_id) for one page of a namespace, by id after `after_id`.
    The count and the page come from one snapshot, so `total` agrees with what paging
    returns; next_after_id is None exactly when no row follows this page."""
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        total = count_memories(conn, namespace, status=status)
        rows = list_memories(conn, namespace, after_id=after_id, limit=limit + 1,
                             status=status)
    more = len(rows) > limit
    items = rows[:limit]
    return items, total, (items[-1]["id"] if more else None)


def lock_memory(conn: psycopg.Connection, memory_id: int) -> tuple[dict, Any] | None:
    """(memory, its row as JSON) locked FOR UPDATE; call inside a transaction."""
    row = conn.execute(
        sql.SQL("SELECT {}, to_jsonb(m) FROM memories m WHERE m.id = %s FOR UPDATE").format(
            _MEMORY_SELECT),
        (memory_id,),
    ).fetchone()
    return (_memory(row[:-1]), row[-1]) if row else None


def update_memory(
    conn: psycopg.Connection,
    memory_id: int,
    *,
    changes: dict[str, Any],
    action: str,
    actor: str,
    before: Any,
) -> dict:
    """Apply `changes` (column -> value; text also refreshes content_hash) to one memory and
    write its audit row (action, actor, before, after) in the same statement. Call with the
    row locked (lock_memory) in the same transaction, passing its JSON as `before`.
    A new text also refreshes `sensitive` (and what kinds it holds)."""
    allowed = {"text", "category", "status", "topic"}
    unknown = set(changes) - allowed
    if unknown or not changes:
        raise ValueError(f"cannot change {sorted(unknown) or 'nothing'}")
    if not actor:
        raise ValueError("every vault write names its actor")
    changes = dict(changes)
    if "category" in changes and changes["category"] not in CATEGORIES:
        raise ValueError(f"unknown category {changes['category']!r}; use one of "
                         f"{', '.join(CATEGORIES)}")
    if "topic" in changes:
        check_topic(changes["topic"])
    if "text" in changes:
        changes["text"] = changes["text"].strip()
        changes["content_hash"] = content_hash(changes["text"])
        changes["sensitive_kinds"] = list(sensitivity(changes["text"]))
        changes["sensitive"] = bool(changes["sensitive_kinds"])
    sets = sql.SQL(", ").join(
        [sql.SQL("{} = {}").format(sql.Identifier(k), sql.Placeholder(k)) for k in changes]
        + [sql.SQL("updated_at = now()")])
    row = conn.execute(
        sql.SQL(
            """WITH upd AS (
                   UPDATE memories m SET {sets} WHERE m.id = %(id)s RETURNING m.*),
               audit AS (
                   INSERT INTO vault_audit (memory_id, actor, action, before, after)
                   SELECT upd.id, %(actor)s, %(action)s, %(before)s, to_jsonb(upd) FROM upd)
               SELECT {cols} FROM upd m"""
        ).format(sets=sets, cols=_MEMORY_SELECT),
        {**changes, "id": memory_id, "actor": actor, "action": action,
         "before": Jsonb(before)},
    ).fetchone()
    if row is None:
        raise LookupError(f"no memory with id {memory_id}")
    return _memory(row)


def memories_by_id(conn: psycopg.Connection, ids: Sequence[int]) -> dict[int, dict]:
    """Memories by id (no vectors); ids that do not exist are absent."""
    if not ids:
        return {}
    rows = conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.id = ANY(%s)").format(_MEMORY_SELECT),
        ([int(i) for i in ids],),
    ).fetchall()
    return {int(r[0]): _memory(r) for r in rows}


def audit_of(conn: psycopg.Connection, memory_id: int) -> list[dict]:
    """A memory's audit trail, oldest first."""
    rows = conn.execute(
        """SELECT id, memory_id, actor, action, before, after, at FROM vault_audit
           WHERE memory_id = %s ORDER BY at, id""",
        (memory_id,),
    ).fetchall()
    keys = ("id", "memory_id", "actor", "action", "before", "after", "at")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def sensitive_ids(conn: psycopg.Connection, ids: Sequence[int]) -> set[int]:
    """Those of `ids` whose memory is marked sensitive (for the reads that do not select
    the flag: search hits)."""
    if not ids:
        return set()
    rows = conn.execute("SELECT id FROM memories WHERE id = ANY(%s) AND sensitive",
                        (list(ids),)).fetchall()
    return {r[0] for r in rows}
