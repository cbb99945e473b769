"""SQL of the memories' vectors: the per-model HNSW index over `memory_embeddings`, writing a
memory's vector, and the memories still to embed.

Model name and dimension are SQL literals, never parameters: the per-model HNSW index is a
partial expression index the planner can only use when the query spells the same
expression and a predicate it can prove at plan time (see store/embeddings.py).
"""

from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg import sql

from memory_platform.store import embeddings


def memory_index_name(model: str) -> str:
    """Per model, distinct from the event index (a shorter slug: the prefix is longer)."""
    return embeddings.hnsw_index_name("memory_embeddings", model, 28)


def vector_expr(dims: int) -> sql.Composable:
    """The indexed expression; queries must spell it exactly like this."""
    return sql.SQL("me.embedding::vector({})").format(sql.Literal(int(dims)))


def ensure_memory_model(conn: psycopg.Connection, model: str, dims: int) -> None:
    """Register the model (one name, one dimension) and create the memories' HNSW index for
    it. Cheap when both exist: CREATE INDEX IF NOT EXISTS would still take a lock on the
    table that blocks concurrent writers, so existence is checked first."""
    known = embeddings.model_dims(conn, model)
    if known is not None and known != dims:
        raise ValueError(
            f"embedding model {model!r} is registered with {known} dimensions, not {dims}")
    name = memory_index_name(model)
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]
    if known is not None and exists:
        return
    embeddings.ensure_model(conn, model, dims)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (embeddings.MODEL_LOCK_KEY,))
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON memory_embeddings USING hnsw "
                "((embedding::vector({})) vector_cosine_ops) WHERE model = {}"
            ).format(sql.Identifier(name), sql.Literal(int(dims)), sql.Literal(model))
        )


def write_memory_embeddings(
    conn: psycopg.Connection,
    model: str,
    dims: int,
    rows: Sequence[tuple[int, np.ndarray]],
) -> int:
    """Store one vector per (model, memory); a memory re-embedded after an edit replaces its
    vector. Returns rows written."""
    if not rows:
        return 0
    params = []
    for memory_id, vector in rows:
        vector = np.asarray(vector, dtype=np.float32)
        if vector.shape != (dims,):
            raise ValueError(f"memory {memory_id}: vector of shape {vector.shape}, "
                             f"model {model!r} has {dims} dimensions")
        params.append((int(memory_id), model, dims, embeddings.vector_literal(vector)))
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            """INSERT INTO memory_embeddings (memory_id, model, dims, embedding)
               VALUES (%s, %s, %s, %s::vector)
               ON CONFLICT (model, memory_id) DO UPDATE
               SET dims = EXCLUDED.dims, embedding = EXCLUDED.embedding, created_at = now()""",
            params,
        )
    return len(params)


def memories_to_embed(
    conn: psycopg.Connection, model: str, *, after_id: int = 0, limit: int = 500
) -> list[tuple[int, str]]:
    """(id, text) of memories with no vector for `model`, by id after `after_id`. A
    curator's tombstone (status 'cut' or 'purged') has no vector on purpose: its text is a
    placeholder, its vectors are in the archive or gone."""
    return conn.execute(
        """SELECT m.id, m.text FROM memories m
           WHERE m.id > %s AND m.status NOT IN ('cut', 'purged') AND NOT EXISTS (
               SELECT 1 FROM memory_embeddings me
               WHERE me.model = %s AND me.memory_id = m.id)
           ORDER BY m.id LIMIT %s""",
        (after_id, model, limit),
    ).fetchall()
