"""SQL behind the vault's REST and MCP surfaces: a counted keyset page, edits and archives
with their audit rows, and a batch read of memories by id.

As in store/vault.py, every write of a memory writes its `vault_audit` row in the same
statement, with the row as it was before (`before`) and after (`after`). Nothing here
deletes a memory: DELETE over REST archives it (status 'archived').
"""

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.store import vault as vault_store

_SELECT = sql.SQL(", ").join(sql.SQL("m.{}").format(sql.Identifier(c))
                             for c in vault_store.MEMORY_COLUMNS)


def _memory(row) -> dict:
    return dict(zip(vault_store.MEMORY_COLUMNS, row, strict=True))


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
        total = vault_store.count_memories(conn, namespace, status=status)
        rows = vault_store.list_memories(conn, namespace, after_id=after_id, limit=limit + 1,
                                         status=status)
    more = len(rows) > limit
    items = rows[:limit]
    return items, total, (items[-1]["id"] if more else None)


def lock_memory(conn: psycopg.Connection, memory_id: int) -> tuple[dict, Any] | None:
    """(memory, its row as JSON) locked FOR UPDATE; call inside a transaction."""
    row = conn.execute(
        sql.SQL("SELECT {}, to_jsonb(m) FROM memories m WHERE m.id = %s FOR UPDATE").format(
            _SELECT),
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
    row locked (lock_memory) in the same transaction, passing its JSON as `before`."""
    allowed = {"text", "category", "status"}
    unknown = set(changes) - allowed
    if unknown or not changes:
        raise ValueError(f"cannot change {sorted(unknown) or 'nothing'}")
    if not actor:
        raise ValueError("every vault write names its actor")
    changes = dict(changes)
    if "text" in changes:
        changes["text"] = changes["text"].strip()
        changes["content_hash"] = vault_store.content_hash(changes["text"])
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
        ).format(sets=sets, cols=_SELECT),
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
        sql.SQL("SELECT {} FROM memories m WHERE m.id = ANY(%s)").format(_SELECT),
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
