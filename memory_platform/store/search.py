"""SQL for embeddings and search: the embeddings table, the per-model HNSW indexes, the two
candidate pools (dense and full-text), and the reads behind hits, context and timelines.

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
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import orjson
import psycopg
from psycopg import sql

# Columns of a hit, in this order (fetch_hits). No `raw`, no vectors.
HIT_COLUMNS = (
    "id", "source", "conversation_id", "occurred_at", "role", "kind", "project", "author",
    "text",
)
_HIT_SELECT = ", ".join(f"e.{c}" for c in HIT_COLUMNS)

# pgvector 0.6: an HNSW scan returns at most ef_search rows, and ef_search caps at 1000.
MAX_EF_SEARCH = 1000

_MODEL_LOCK_KEY = 0x656D62656464  # "embedd": serialises index creation per database


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
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MODEL_LOCK_KEY,))
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


def has_vectors(conn: psycopg.Connection, model: str) -> bool:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM event_embeddings WHERE model = %s)", (model,)
    ).fetchone()
    return bool(row and row[0])


# --- writing embeddings ------------------------------------------------------------------


def _to_embed_where(start: datetime | None, end: datetime | None) -> sql.Composable:
    where = [
        sql.SQL("e.text ~ '\\S'"),  # blank text has nothing to embed
        sql.SQL(
            "NOT EXISTS (SELECT 1 FROM event_embeddings ee "
            "WHERE ee.model = %(model)s AND ee.event_id = e.id)"
        ),
    ]
    if start is not None:
        where.append(sql.SQL("e.occurred_at >= %(start)s"))
    if end is not None:
        where.append(sql.SQL("e.occurred_at < %(end)s"))
    return sql.SQL(" AND ").join(where)


def events_to_embed(
    conn: psycopg.Connection,
    model: str,
    *,
    start: datetime | None,
    end: datetime | None,
    after_id: int,
    limit: int,
    context_turns: int = 0,
    context_chars: int = 300,
) -> list[tuple[int, str, str]]:
    """(id, text, context) of events with non-blank text and no vectors for `model`, by id,
    after `after_id` (keyset paging), optionally with start <= occurred_at < end. `context`
    is the end of the `context_turns` preceding turns of the conversation (oldest first,
    at most `context_chars` each), or '' when not asked for."""
    context = sql.SQL("''")
    if context_turns > 0:
        context = sql.SQL(
            "COALESCE((SELECT string_agg(right(p.text, {chars}), E'\\n' ORDER BY p.occurred_at, "
            "p.id) FROM (SELECT q.text, q.occurred_at, q.id FROM events q "
            "WHERE q.conversation_id = e.conversation_id "
            "AND (q.occurred_at, q.id) < (e.occurred_at, e.id) AND q.text ~ '\\S' "
            "ORDER BY q.occurred_at DESC, q.id DESC LIMIT {turns}) p), '')"
        ).format(chars=sql.Literal(context_chars), turns=sql.Literal(context_turns))
    query = sql.SQL(
        "SELECT e.id, e.text, {context} FROM events e WHERE e.id > %(after)s AND {where} "
        "ORDER BY e.id LIMIT %(limit)s"
    ).format(context=context, where=_to_embed_where(start, end))
    return conn.execute(
        query, {"after": after_id, "model": model, "start": start, "end": end, "limit": limit}
    ).fetchall()


def count_to_embed(
    conn: psycopg.Connection, model: str, *, start: datetime | None, end: datetime | None
) -> int:
    query = sql.SQL("SELECT count(*) FROM events e WHERE {}").format(
        _to_embed_where(start, end))
    return conn.execute(query, {"model": model, "start": start, "end": end}).fetchone()[0]


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


# --- filters -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Filter:
    """Row filters on events (alias `e`). Every field optional; all given ones must hold."""

    source: str | None = None
    project: str | None = None
    role: str | None = None
    conversation_id: int | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive

    @property
    def empty(self) -> bool:
        return all(getattr(self, f) is None for f in self.__dataclass_fields__)


def filter_clause(f: Filter | None) -> tuple[sql.Composable, dict[str, Any]]:
    """(`AND ...` fragment or empty, parameters) for a WHERE that already has a condition."""
    if f is None:
        return sql.SQL(""), {}
    parts: list[sql.Composable] = []
    params: dict[str, Any] = {}
    for name, column, op in (
        ("source", "source", "="), ("project", "project", "="), ("role", "role", "="),
        ("conversation_id", "conversation_id", "="), ("since", "occurred_at", ">="),
        ("until", "occurred_at", "<"),
    ):
        value = getattr(f, name)
        if value is not None:
            parts.append(sql.SQL(" AND e.{} {} {}").format(
                sql.Identifier(column), sql.SQL(op), sql.Placeholder(f"f_{name}")))
            params[f"f_{name}"] = value
    return sql.Composed(parts), params


def estimate_filtered(conn: psycopg.Connection, f: Filter) -> int:
    """The planner's estimate of events matching the filter: costs no scan. Good enough to
    choose between exact search over the subset and an oversampled HNSW probe."""
    clause, params = filter_clause(f)
    query = sql.SQL("EXPLAIN (FORMAT JSON) SELECT e.id FROM events e WHERE true{}").format(
        clause)
    plan = conn.execute(query, params).fetchone()[0]
    return int(plan[0]["Plan"]["Plan Rows"])


def count_filtered(conn: psycopg.Connection, f: Filter, cap: int) -> int:
    """Events matching the filter, counted exactly up to `cap` (stops scanning there)."""
    clause, params = filter_clause(f)
    query = sql.SQL(
        "SELECT count(*) FROM (SELECT 1 FROM events e WHERE true{} LIMIT %(cap)s) s"
    ).format(clause)
    return conn.execute(query, {**params, "cap": cap}).fetchone()[0]


# --- stage one: candidate pools ----------------------------------------------------------


_session_ef: "weakref.WeakKeyDictionary[psycopg.Connection, int]" = weakref.WeakKeyDictionary()


def _set_ef_search(conn: psycopg.Connection, ef: int) -> None:
    """Size the HNSW probe. On an idle autocommit connection (the search service keeps one
    per thread) it is a session setting, sent only when it changes: a SET LOCAL needs
    BEGIN, SET and COMMIT round trips on every search. Inside a caller's transaction it is
    SET LOCAL, so it ends with that transaction."""
    ef = max(10, min(MAX_EF_SEARCH, ef))
    if conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        if _session_ef.get(conn) != ef:
            conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef)))
            _session_ef[conn] = ef
        return
    conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))


def dense_ann_sql(
    model: str, dims: int, filters: sql.Composable | None = None
) -> sql.Composable:
    """The HNSW probe: nearest chunks by the index, then (when filtered) the filter applied to
    the probe's events only. Distances are the cosine distance of the best chunk."""
    expr = vector_expr(dims)
    probe = sql.SQL(
        "SELECT ee.event_id, {expr} <=> %(q)s::vector({d}) AS distance "
        "FROM event_embeddings ee WHERE ee.model = {m} "
        "ORDER BY {expr} <=> %(q)s::vector({d}) LIMIT %(probe)s"
    ).format(expr=expr, d=sql.Literal(dims), m=sql.Literal(model))
    if filters is None:
        return sql.SQL(
            "SELECT nn.event_id, min(nn.distance) AS distance FROM ({probe}) nn "
            "GROUP BY nn.event_id ORDER BY 2, 1 LIMIT %(pool)s"
        ).format(probe=probe)
    return sql.SQL(
        "WITH nn AS MATERIALIZED ({probe}) "
        "SELECT nn.event_id, min(nn.distance) AS distance FROM nn "
        "JOIN events e ON e.id = nn.event_id WHERE true{filters} "
        "GROUP BY nn.event_id ORDER BY 2, 1 LIMIT %(pool)s"
    ).format(probe=probe, filters=filters)


def dense_exact_sql(model: str, dims: int, filters: sql.Composable) -> sql.Composable:
    """Exact distances over the filtered subset only (used when the filter is selective: an
    HNSW probe would have to be huge to leave k rows after filtering). The distance is
    computed where the row is read (OFFSET 0 keeps the subquery from being flattened):
    otherwise the planner sorted whole rows, 1.5 kB vectors included, by event before
    aggregating, and spilled to disk (133 ms for a week of 1M events)."""
    return sql.SQL(
        "SELECT d.event_id, min(d.distance) AS distance FROM ("
        "SELECT ee.event_id, {expr} <=> %(q)s::vector({d}) AS distance "
        "FROM events e JOIN event_embeddings ee ON ee.model = {m} AND ee.event_id = e.id "
        "WHERE true{filters} OFFSET 0) d GROUP BY d.event_id ORDER BY 2, 1 LIMIT %(pool)s"
    ).format(expr=vector_expr(dims), d=sql.Literal(dims), m=sql.Literal(model), filters=filters)


def dense_pool(
    conn: psycopg.Connection,
    model: str,
    dims: int,
    query_vector: np.ndarray,
    pool: int,
    f: Filter | None = None,
    *,
    exact: bool = False,
    probe: int | None = None,
) -> list[tuple[int, float]]:
    """(event_id, cosine distance) nearest first, one row per event (its best chunk)."""
    filtered = f is not None and not f.empty
    clause, params = filter_clause(f)
    if exact:
        query = dense_exact_sql(model, dims, clause)
    else:
        query = dense_ann_sql(model, dims, clause if filtered else None)
    probe = max(probe or pool, pool)
    params = {**params, "q": vector_literal(query_vector), "pool": pool, "probe": probe}
    if not exact:
        _set_ef_search(conn, probe)
    return [(int(i), float(d)) for i, d in conn.execute(query, params)]


def lexeme_frequencies(conn: psycopg.Connection) -> tuple[dict[str, float], float]:
    """Fraction of events containing each frequent lexeme, from the planner's statistics
    (ANALYZE keeps the most common elements of `text_search`), and the floor frequency
    below which lexemes are not listed. Empty before the first ANALYZE."""
    row = conn.execute(
        """SELECT most_common_elems::text::text[], most_common_elem_freqs
           FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'events'
             AND attname = 'text_search'"""
    ).fetchone()
    if not row or row[0] is None:
        return {}, 0.0
    elems, freqs = row
    # most_common_elem_freqs: one per element, then min, max and null frequency.
    table = dict(zip(elems, freqs[: len(elems)], strict=True))
    return table, float(freqs[len(elems)]) if len(freqs) > len(elems) else 0.0


def query_lexemes(conn: psycopg.Connection, text: str) -> list[str]:
    """The query's lexemes as the events' tsvector normalises them (english config)."""
    row = conn.execute(
        "SELECT tsvector_to_array(to_tsvector('english'::regconfig, %s))", (text,)
    ).fetchone()
    return list(row[0]) if row and row[0] else []


def lexeme_counts(conn: psycopg.Connection, lexemes: Sequence[str],
                  f: Filter) -> tuple[int, dict[str, int]]:
    """(events matching the filter, {lexeme: how many of them contain it}), counted over the
    filtered rows: for small subsets only (a conversation, a few days)."""
    clause, params = filter_clause(f)
    counts = sql.SQL(", ").join(
        sql.SQL("count(*) FILTER (WHERE e.text_search @@ {}::tsquery)").format(
            sql.Literal(_tsquery_literal(lex)))
        for lex in lexemes
    )
    query = sql.SQL("SELECT count(*), {} FROM events e WHERE true{}").format(counts, clause)
    row = conn.execute(query, params).fetchone()
    return int(row[0]), dict(zip(lexemes, (int(n) for n in row[1:]), strict=True))


def _keyword_score(weights: dict[str, float]) -> sql.Composable:
    """Summed weight (IDF) of the query lexemes an event contains, plus ts_rank_cd
    (proximity, length-normalised, below 1) as a tie-break. Evaluated only on rows the GIN
    index matched, or on a given candidate list."""
    idf = sql.SQL(" + ").join(
        sql.SQL("CASE WHEN e.text_search @@ {}::tsquery THEN {} ELSE 0 END").format(
            sql.Literal(_tsquery_literal(lex)), sql.Literal(round(w, 6)))
        for lex, w in weights.items()
    )
    return sql.SQL("({}) + ts_rank_cd(e.text_search, %(tsq)s::tsquery, 1)").format(idf)


def or_tsquery(lexemes: Sequence[str]) -> str:
    return " | ".join(_tsquery_literal(lex) for lex in lexemes)


def and_tsquery(lexemes: Sequence[str]) -> str:
    return " & ".join(_tsquery_literal(lex) for lex in lexemes)


def keyword_pool(
    conn: psycopg.Connection,
    weights: dict[str, float],
    pool: int,
    f: Filter | None = None,
    *,
    require_all: bool = False,
) -> list[tuple[int, float]]:
    """(event_id, score) best first from the GIN index: events matching ANY of the lexemes
    (an OR query: a natural-language question rarely shares every word with its answer),
    or ALL of them with `require_all`, scored over the matching rows only."""
    if not weights:
        return []
    clause, params = filter_clause(f)
    query = sql.SQL(
        "SELECT e.id, {score} AS score FROM events e "
        "WHERE e.text_search @@ %(match)s::tsquery{filters} ORDER BY 2 DESC, 1 LIMIT %(pool)s"
    ).format(score=_keyword_score(weights), filters=clause)
    lexemes = list(weights)
    rows = conn.execute(query, {**params, "tsq": or_tsquery(lexemes), "pool": pool,
                                "match": (and_tsquery if require_all else or_tsquery)(lexemes)})
    return [(int(i), float(s)) for i, s in rows]


def keyword_scores(
    conn: psycopg.Connection, weights: dict[str, float], ids: Sequence[int]
) -> dict[int, float]:
    """The keyword score of given candidates (stage two), 0 where nothing matches."""
    if not weights or not ids:
        return {}
    query = sql.SQL("SELECT e.id, {score} FROM events e WHERE e.id = ANY(%(ids)s)").format(
        score=_keyword_score(weights))
    rows = conn.execute(query, {"tsq": or_tsquery(list(weights)), "ids": list(ids)})
    return {int(i): float(s) for i, s in rows}


def dense_scores(
    conn: psycopg.Connection, model: str, dims: int, query_vector: np.ndarray,
    ids: Sequence[int],
) -> dict[int, tuple[float, int, int]]:
    """Stage two: cosine distance of each candidate's nearest chunk, with that chunk's span,
    computed over the candidates' rows only (primary-key lookups)."""
    if not ids:
        return {}
    query = sql.SQL(
        "SELECT DISTINCT ON (ee.event_id) ee.event_id, {expr} <=> %(q)s::vector({d}), "
        "ee.span_start, ee.span_end "
        "FROM event_embeddings ee WHERE ee.model = {m} AND ee.event_id = ANY(%(ids)s) "
        "ORDER BY ee.event_id, 2"
    ).format(m=sql.Literal(model), expr=vector_expr(dims), d=sql.Literal(dims))
    rows = conn.execute(query, {"ids": list(ids), "q": vector_literal(query_vector)})
    return {int(r[0]): (float(r[1]), r[2], r[3]) for r in rows}


def _tsquery_literal(lexeme: str) -> str:
    # A quoted tsquery operand: quotes and backslashes escaped, taken verbatim (no
    # re-normalisation, so a lexeme from to_tsvector matches itself).
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def table_io_blocks(conn: psycopg.Connection, table: str) -> int:
    """Blocks of `table` (heap, TOAST, indexes) read or hit so far, from the statistics
    views: a benchmark shows a read moved no bytes of a table by comparing two calls."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        """SELECT COALESCE(heap_blks_read, 0) + COALESCE(heap_blks_hit, 0)
                  + COALESCE(toast_blks_read, 0) + COALESCE(toast_blks_hit, 0)
                  + COALESCE(idx_blks_read, 0) + COALESCE(idx_blks_hit, 0)
                  + COALESCE(tidx_blks_read, 0) + COALESCE(tidx_blks_hit, 0)
           FROM pg_statio_user_tables WHERE relname = %s""",
        (table,),
    ).fetchone()
    return int(row[0]) if row else 0


# --- reads: hits, context, timeline ------------------------------------------------------


def fetch_hits(conn: psycopg.Connection, ids: Sequence[int]) -> dict[int, tuple]:
    """HIT_COLUMNS rows by id (no vectors, no raw record)."""
    if not ids:
        return {}
    rows = conn.execute(
        f"SELECT {_HIT_SELECT} FROM events e WHERE e.id = ANY(%s)", (list(ids),)
    )
    return {r[0]: r for r in rows}


EVENT_COLUMNS = (
    "id", "source", "native_id", "conversation_id", "parent_native_id", "role", "kind",
    "author", "occurred_at", "text", "project", "git_branch", "is_sidechain",
    "on_active_branch", "attrs", "content_hash", "source_file_id", "source_line",
    "ingested_at",
)
_EVENT_SELECT = ", ".join(f"e.{c}" for c in EVENT_COLUMNS)


def get_event(conn: psycopg.Connection, event_id: int) -> dict | None:
    row = conn.execute(
        f"SELECT {_EVENT_SELECT} FROM events e WHERE e.id = %s", (event_id,)
    ).fetchone()
    return dict(zip(EVENT_COLUMNS, row, strict=True)) if row else None


def conversation_neighbours(
    conn: psycopg.Connection, event: dict, before: int, after: int
) -> tuple[list[dict], list[dict]]:
    """Up to `before` turns preceding and `after` turns following the event in its
    conversation, ordered by (occurred_at, id); oldest first in both lists."""
    if event["conversation_id"] is None:
        return [], []
    key = {"c": event["conversation_id"], "t": event["occurred_at"], "id": event["id"]}
    earlier: list[dict] = []
    later: list[dict] = []
    if before > 0:
        rows = conn.execute(
            f"""SELECT {_EVENT_SELECT} FROM events e
                WHERE e.conversation_id = %(c)s AND (e.occurred_at, e.id) < (%(t)s, %(id)s)
                ORDER BY e.occurred_at DESC, e.id DESC LIMIT %(n)s""",
            {**key, "n": before},
        ).fetchall()
        earlier = [dict(zip(EVENT_COLUMNS, r, strict=True)) for r in reversed(rows)]
    if after > 0:
        rows = conn.execute(
            f"""SELECT {_EVENT_SELECT} FROM events e
                WHERE e.conversation_id = %(c)s AND (e.occurred_at, e.id) > (%(t)s, %(id)s)
                ORDER BY e.occurred_at, e.id LIMIT %(n)s""",
            {**key, "n": after},
        ).fetchall()
        later = [dict(zip(EVENT_COLUMNS, r, strict=True)) for r in rows]
    return earlier, later


def timeline(conn: psycopg.Connection, f: Filter) -> list[tuple[str, str, int]]:
    """(UTC day YYYY-MM-DD, source, events) for events matching the filter."""
    clause, params = filter_clause(f)
    query = sql.SQL(
        "SELECT to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, e.source, "
        "count(*) FROM events e WHERE true{} GROUP BY 1, 2 ORDER BY 1, 2"
    ).format(clause)
    return conn.execute(query, params).fetchall()
