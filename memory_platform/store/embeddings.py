"""SQL of embeddings: the registry of embedding models (one name, one dimension), the
per-model HNSW index of event vectors, and the writes that fill `event_embeddings`.

Rule kept here: the `embedding` column is read only inside a distance expression (scoring)
or copied server-side (reusing a vector). Every query names its columns.

The model name and its dimension are written into the SQL as literals, never parameters:
a per-model HNSW index is a partial expression index (`embedding::vector(D) ... WHERE
model = 'm'`), and the planner can only use it when the query carries that exact
expression and a predicate it can prove at plan time (a prepared generic plan with
`model = $1` cannot).
"""

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import orjson
import psycopg
from psycopg import sql

# pgvector 0.6: an HNSW scan returns at most ef_search rows, and ef_search caps at 1000.
MAX_EF_SEARCH = 1000

# "embedd": serialises index creation per database, for event and memory vectors alike.
MODEL_LOCK_KEY = 0x656D62656464


# --- models and the per-model index ----------------------------------------------------


def hnsw_index_name(table: str, model: str, slug_chars: int) -> str:
    """A stable, valid identifier (< 63 bytes) for `table`'s HNSW index of one model."""
    slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:slug_chars]
    digest = hashlib.sha256(model.encode()).hexdigest()[:8]
    return f"{table}_hnsw_{slug}_{digest}"


def index_name(model: str) -> str:
    return hnsw_index_name("event_embeddings", model, 32)


def vector_expr(dims: int) -> sql.Composable:
    """The indexed expression; queries must spell it exactly like this."""
    return sql.SQL("ee.embedding::vector({})").format(sql.Literal(int(dims)))


def model_dims(conn: psycopg.Connection, model: str) -> int | None:
    row = conn.execute("SELECT dims FROM embedding_models WHERE model = %s", (model,)).fetchone()
    return row[0] if row else None


def ensure_model(
    conn: psycopg.Connection, model: str, dims: int, *, maintenance_work_mem: str | None = None
) -> None:
    """Register the model and create its HNSW index if missing. A model name always means
    one dimension: asking for another is an error, not a silent second space.
    `maintenance_work_mem` (e.g. "1GB") speeds a first build over many stored rows: an HNSW
    graph that does not fit in it is built far more slowly."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MODEL_LOCK_KEY,))
        if maintenance_work_mem:
            conn.execute(sql.SQL("SET LOCAL maintenance_work_mem = {}").format(
                sql.Literal(maintenance_work_mem)))
        known = model_dims(conn, model)
        if known is not None and known != dims:
            raise ValueError(
                f"embedding model {model!r} is registered with {known} dimensions, not {dims}"
            )
        if known is None:
            conn.execute(
                "INSERT INTO embedding_models (model, dims) VALUES (%s, %s)", (model, dims)
            )
        conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {} ON event_embeddings USING hnsw "
                "((embedding::vector({})) vector_cosine_ops) WHERE model = {}"
            ).format(sql.Identifier(index_name(model)), sql.Literal(dims), sql.Literal(model))
        )


def list_models(conn: psycopg.Connection) -> list[tuple[str, int, int]]:
    """(model, dims, rows) per registered model."""
    return conn.execute(
        """SELECT m.model, m.dims,
                  (SELECT count(*) FROM event_embeddings ee WHERE ee.model = m.model)
           FROM embedding_models m ORDER BY m.model"""
    ).fetchall()


def _backfill_key(model: str) -> int:
    return int.from_bytes(hashlib.sha256(f"backfill\x1f{model}".encode()).digest()[:8],
                          "big", signed=True)


def try_backfill_lock(conn: psycopg.Connection, model: str) -> bool:
    """Take the session lock of `model`'s backfill if free (one backfill per model at a
    time; released by release_backfill_lock, or by PostgreSQL when the session ends)."""
    return bool(conn.execute("SELECT pg_try_advisory_lock(%s)",
                             (_backfill_key(model),)).fetchone()[0])


def release_backfill_lock(conn: psycopg.Connection, model: str) -> None:
    conn.execute("SELECT pg_advisory_unlock(%s)", (_backfill_key(model),))


def count_vectors(conn: psycopg.Connection, model: str, cap: int) -> int:
    """Rows of `model`, counted exactly up to `cap` (the scan stops there: cheap on a
    small table, bounded on a big one)."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM event_embeddings WHERE model = %s LIMIT %s) s",
        (model, cap)).fetchone()
    return row[0] if row else 0


def has_vectors(conn: psycopg.Connection, model: str) -> bool:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM event_embeddings WHERE model = %s)", (model,)
    ).fetchone()
    return bool(row and row[0])


# --- writing embeddings ------------------------------------------------------------------


# Marks a row whose vector stands in for the model's own: the plain turn, without the
# context a context model adds (query/backfill.py writes them first on a big backlog, so
# turns are searchable by meaning sooner, and replaces them). Never equal to a real input
# hash, so never reused for one.
INTERIM_PREFIX = "interim:"


@dataclass(frozen=True)
class Backlog:
    """Which events a backfill step reads: start <= occurred_at < end when given, of one of
    `kinds` (with `other_kinds`, of none of them), and whether an event holding only interim
    rows counts as missing (`upgrade_interim`)."""

    start: datetime | None = None
    end: datetime | None = None
    kinds: tuple[str, ...] | None = None
    other_kinds: bool = False
    upgrade_interim: bool = False


def _to_embed_where(b: Backlog) -> sql.Composable:
    missing = sql.SQL(
        "NOT EXISTS (SELECT 1 FROM event_embeddings ee "
        "WHERE ee.model = %(model)s AND ee.event_id = e.id)")
    if b.upgrade_interim:
        missing = sql.SQL(
            "NOT EXISTS (SELECT 1 FROM event_embeddings ee WHERE ee.model = %(model)s "
            "AND ee.event_id = e.id AND ee.content_hash NOT LIKE %(interim)s)")
    # blank text has nothing to embed
    return sql.SQL(" AND ").join([sql.SQL("e.text ~ '\\S'"), missing, *_backlog_filters(b)])


def _backlog_filters(b: Backlog) -> list[sql.Composable]:
    where = []
    if b.start is not None:
        where.append(sql.SQL("e.occurred_at >= %(start)s"))
    if b.end is not None:
        where.append(sql.SQL("e.occurred_at < %(end)s"))
    if b.kinds is not None:
        where.append(sql.SQL("e.kind <> ALL(%(kinds)s)") if b.other_kinds
                     else sql.SQL("e.kind = ANY(%(kinds)s)"))
    return where


def _params(model: str, b: Backlog) -> dict:
    return {"model": model, "start": b.start, "end": b.end, "interim": INTERIM_PREFIX + "%",
            "kinds": list(b.kinds) if b.kinds is not None else None}


@dataclass(frozen=True)
class ToEmbed:
    id: int
    occurred_at: datetime
    kind: str
    text: str
    context: str  # the end of the preceding turns, or '' when not asked for


def events_to_embed(
    conn: psycopg.Connection,
    model: str,
    backlog: Backlog,
    *,
    before: tuple[datetime, int] | None,
    limit: int,
    context_turns: int = 0,
    context_chars: int = 300,
) -> list[ToEmbed]:
    """Events of the backlog with non-blank text and no vectors for `model` (or only interim
    ones, when the backlog upgrades them), newest first (by occurred_at, then id), strictly
    before `before` = (occurred_at, id) of the previous page's last row (keyset paging).
    `context` is the end of the `context_turns` preceding turns of the conversation (oldest
    first, at most `context_chars` each)."""
    context = sql.SQL("''")
    if context_turns > 0:
        context = sql.SQL(
            "COALESCE((SELECT string_agg(right(p.text, {chars}), E'\\n' ORDER BY p.occurred_at, "
            "p.id) FROM (SELECT q.text, q.occurred_at, q.id FROM events q "
            "WHERE q.conversation_id = e.conversation_id "
            "AND (q.occurred_at, q.id) < (e.occurred_at, e.id) AND q.text ~ '\\S' "
            "ORDER BY q.occurred_at DESC, q.id DESC LIMIT {turns}) p), '')"
        ).format(chars=sql.Literal(context_chars), turns=sql.Literal(context_turns))
    keyset = sql.SQL("")
    if before is not None:
        # The plain bound lets the occurred_at index drive the scan; the row comparison
        # breaks ties by id.
        keyset = sql.SQL(" AND e.occurred_at <= %(at)s "
                         "AND (e.occurred_at, e.id) < (%(at)s, %(id)s)")
    query = sql.SQL(
        "SELECT e.id, e.occurred_at, e.kind, e.text, {context} FROM events e "
        "WHERE {where}{keyset} ORDER BY e.occurred_at DESC, e.id DESC LIMIT %(limit)s"
    ).format(context=context, where=_to_embed_where(backlog), keyset=keyset)
    params = {**_params(model, backlog), "limit": limit,
              "at": before[0] if before else None, "id": before[1] if before else None}
    return [ToEmbed(*row) for row in conn.execute(query, params)]


def count_to_embed(conn: psycopg.Connection, model: str, backlog: Backlog) -> int:
    query = sql.SQL("SELECT count(*) FROM events e WHERE {}").format(_to_embed_where(backlog))
    return conn.execute(query, _params(model, backlog)).fetchone()[0]


def count_embedded(conn: psycopg.Connection, model: str, backlog: Backlog) -> int:
    """Events of the backlog with text and at least one vector (interim or real) for
    `model`: what a search by meaning can find."""
    where = [sql.SQL("e.text ~ '\\S'"), sql.SQL(
        "EXISTS (SELECT 1 FROM event_embeddings ee "
        "WHERE ee.model = %(model)s AND ee.event_id = e.id)"), *_backlog_filters(backlog)]
    query = sql.SQL("SELECT count(*) FROM events e WHERE {}").format(
        sql.SQL(" AND ").join(where))
    return conn.execute(query, _params(model, backlog)).fetchone()[0]


def interim_events(conn: psycopg.Connection, model: str, event_ids: Sequence[int]) -> set[int]:
    """Which of these events hold interim rows for `model`."""
    if not event_ids:
        return set()
    rows = conn.execute(
        "SELECT DISTINCT event_id FROM event_embeddings WHERE model = %s "
        "AND event_id = ANY(%s) AND content_hash LIKE %s",
        (model, list(event_ids), INTERIM_PREFIX + "%"))
    return {int(r[0]) for r in rows}


def delete_interim(conn: psycopg.Connection, model: str, event_ids: Sequence[int]) -> int:
    """Drop the interim rows of these events (before their real vectors are written)."""
    if not event_ids:
        return 0
    cur = conn.execute(
        "DELETE FROM event_embeddings WHERE model = %s AND event_id = ANY(%s) "
        "AND content_hash LIKE %s", (model, list(event_ids), INTERIM_PREFIX + "%"))
    return cur.rowcount


def count_blank_events(
    conn: psycopg.Connection, start: datetime | None, end: datetime | None
) -> int:
    row = conn.execute(
        """SELECT count(*) FROM events e
           WHERE e.text !~ '\\S'
             AND (%(start)s::timestamptz IS NULL OR e.occurred_at >= %(start)s)
             AND (%(end)s::timestamptz IS NULL OR e.occurred_at < %(end)s)""",
        {"start": start, "end": end},
    ).fetchone()
    return row[0] if row else 0


def known_hashes(conn: psycopg.Connection, model: str, hashes: Sequence[str]) -> set[str]:
    """Which of these input hashes already have a vector for `model` (reads no vectors)."""
    if not hashes:
        return set()
    rows = conn.execute(
        """SELECT DISTINCT ee.content_hash FROM event_embeddings ee
           WHERE ee.model = %s AND ee.content_hash = ANY(%s)""",
        (model, list(hashes)),
    )
    return {r[0] for r in rows}


@dataclass(frozen=True)
class ChunkRow:
    event_id: int
    chunk: int
    span_start: int
    span_end: int
    content_hash: str


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form, "[0.1,-0.2,...]". orjson writes a float32 array in C, an order
    of magnitude faster than formatting floats in Python (a 1M-event backfill)."""
    return orjson.dumps(np.ascontiguousarray(vector, dtype=np.float32),
                        option=orjson.OPT_SERIALIZE_NUMPY).decode()


def write_embeddings(
    conn: psycopg.Connection,
    model: str,
    dims: int,
    computed: Sequence[tuple[ChunkRow, np.ndarray]],
    reused: Sequence[ChunkRow],
) -> int:
    """Insert chunks with fresh vectors (COPY), then chunks whose input hash has a stored
    vector, copied server-side (no vector crosses the wire twice). Idempotent: a row that is
    there already is left alone. Call inside a transaction. Returns rows inserted."""
    inserted = 0
    if computed:
        conn.execute(
            """CREATE TEMP TABLE IF NOT EXISTS stage_embeddings (
                   event_id bigint, chunk int, span_start int, span_end int,
                   content_hash text, embedding vector) ON COMMIT DELETE ROWS"""
        )
        with conn.cursor() as cur:
            with cur.copy(
                "COPY stage_embeddings (event_id, chunk, span_start, span_end, content_hash, "
                "embedding) FROM STDIN"
            ) as copy:
                for row, vector in computed:
                    copy.write_row((row.event_id, row.chunk, row.span_start, row.span_end,
                                    row.content_hash, vector_literal(vector)))
            cur.execute(
                """INSERT INTO event_embeddings (event_id, model, chunk, span_start, span_end,
                       dims, content_hash, embedding)
                   SELECT s.event_id, %s, s.chunk, s.span_start, s.span_end, %s,
                          s.content_hash, s.embedding
                   FROM stage_embeddings s
                   ON CONFLICT (model, event_id, chunk) DO NOTHING""",
                (model, dims),
            )
            inserted += cur.rowcount
    if reused:
        cur = conn.execute(
            """INSERT INTO event_embeddings (event_id, model, chunk, span_start, span_end, dims,
                   content_hash, embedding)
               SELECT u.event_id, %(model)s, u.chunk, u.span_start, u.span_end, %(dims)s,
                      u.content_hash, src.embedding
               FROM unnest(%(ids)s::int8[], %(chunks)s::int4[], %(starts)s::int4[],
                           %(ends)s::int4[], %(hashes)s::text[])
                    AS u(event_id, chunk, span_start, span_end, content_hash)
               CROSS JOIN LATERAL (
                   SELECT r.embedding FROM event_embeddings r
                   WHERE r.model = %(model)s AND r.content_hash = u.content_hash LIMIT 1) src
               ON CONFLICT (model, event_id, chunk) DO NOTHING""",
            {
                "model": model, "dims": dims,
                "ids": [r.event_id for r in reused], "chunks": [r.chunk for r in reused],
                "starts": [r.span_start for r in reused], "ends": [r.span_end for r in reused],
                "hashes": [r.content_hash for r in reused],
            },
        )
        inserted += cur.rowcount
    return inserted


def vector_coverage(conn: psycopg.Connection, model: str) -> tuple[int, int]:
    """(events with text and at least one vector of `model`, events with text and none),
    in one scan: what a search by meaning covers, and what only keyword search finds."""
    row = conn.execute(
        "SELECT count(*) FILTER (WHERE v.has), count(*) FILTER (WHERE NOT v.has) "
        "FROM events e CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM event_embeddings ee "
        "WHERE ee.model = %s AND ee.event_id = e.id) AS has) v WHERE e.text ~ '\\S'",
        (model,)).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)
