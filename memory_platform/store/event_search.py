"""SQL of search over events, in two stages: the candidate pools (dense, from the per-model
HNSW index or exact over a filtered subset; keyword, from the GIN index on `text_search`)
and the stage-two scores of given candidates, with the row filters they share and the
day-by-day timeline of a filter.

Rule kept here: the `embedding` column is read only inside a distance expression. Model
name and dimension are SQL literals, never parameters (see store/embeddings.py): the
planner uses a per-model partial index only for a predicate it can prove at plan time.
"""

import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from memory_platform.store.embeddings import MAX_EF_SEARCH, vector_expr, vector_literal

# A query is searched by its first MAX_QUERY_LEXEMES distinct stems (a question has a few
# dozen; a pasted page has thousands). Every stem becomes a term of the score expressions
# and a count of the IDF, and PostgreSQL refuses a query of more than 1,664 output columns
# or nested too deep: a 5,000-word query answered 503. The stems are read from the first
# QUERY_SCAN_CHARS characters (to_tsvector refuses a result over 1 MB).
MAX_QUERY_LEXEMES = 64
QUERY_SCAN_CHARS = 100_000

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


# pgvector 0.8 scans an HNSW index iteratively: a filtered scan goes on past ef_search until
# the LIMIT holds rows that pass the filter (hnsw.max_scan_tuples bounds it). Before 0.8 the
# filter can only be applied to the probe's rows, hence the oversampled probe.
ITERATIVE_SCAN_VERSION = (0, 8)
_iterative: "weakref.WeakKeyDictionary[psycopg.Connection, bool]" = weakref.WeakKeyDictionary()


def pgvector_version(text: str | None) -> tuple[int, ...]:
    """'0.6.2' -> (0, 6, 2); () for no version or one that is not dotted numbers."""
    match = re.fullmatch(r"(\d+(?:\.\d+)*)(?:-.*)?", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()


def iterative_scans(conn: psycopg.Connection) -> bool:
    """Whether the server's pgvector (0.8+) scans HNSW indexes iteratively; asked once per
    connection (pgserver's 0.6.2 does not)."""
    known = _iterative.get(conn)
    if known is None:
        row = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        version = pgvector_version(row[0] if row else None)
        known = _iterative[conn] = bool(version) and version >= ITERATIVE_SCAN_VERSION
    return known


def dense_ann_sql(
    model: str, dims: int, filters: sql.Composable | None = None, *, iterative: bool = False
) -> sql.Composable:
    """The HNSW probe: nearest chunks by the index, then (when filtered) the filter applied to
    the probe's events only; with `iterative` (pgvector 0.8+) the filter is inside the
    index scan, which goes on until the probe's LIMIT holds rows that pass it. Distances are
    the cosine distance of the best chunk."""
    expr = vector_expr(dims)
    if iterative and filters is not None:
        return sql.SQL(
            "WITH nn AS MATERIALIZED ("
            "SELECT ee.event_id, {expr} <=> %(q)s::vector({d}) AS distance "
            "FROM event_embeddings ee JOIN events e ON e.id = ee.event_id "
            "WHERE ee.model = {m}{filters} "
            "ORDER BY {expr} <=> %(q)s::vector({d}) LIMIT %(probe)s) "
            "SELECT nn.event_id, min(nn.distance) AS distance FROM nn "
            "GROUP BY nn.event_id ORDER BY 2, 1 LIMIT %(pool)s"
        ).format(expr=expr, d=sql.Literal(dims), m=sql.Literal(model), filters=filters)
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
    iterative = filtered and not exact and iterative_scans(conn)
    if exact:
        query = dense_exact_sql(model, dims, clause)
    else:
        query = dense_ann_sql(model, dims, clause if filtered else None, iterative=iterative)
    probe = max(probe or pool, pool)
    params = {**params, "q": vector_literal(query_vector), "pool": pool, "probe": probe}
    if not exact:
        _set_ef_search(conn, probe)
    if iterative:  # relaxed_order: rows may come slightly out of order; the query sorts them
        local = "" if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE \
            else "LOCAL "
        conn.execute(f"SET {local}hnsw.iterative_scan = relaxed_order")
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


def query_lexemes(conn: psycopg.Connection, text: str,
                  limit: int = MAX_QUERY_LEXEMES) -> list[str]:
    """The query's first `limit` distinct lexemes, in query order, as the events' tsvector
    normalises them (english config); read from its first QUERY_SCAN_CHARS characters."""
    rows = conn.execute(
        "SELECT lexeme FROM unnest(to_tsvector('english'::regconfig, left(%s, %s))) "
        "ORDER BY positions[1], lexeme LIMIT %s", (text, QUERY_SCAN_CHARS, limit)).fetchall()
    return [r[0] for r in rows]


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


def lexeme_counts_capped(conn: psycopg.Connection, lexemes: Sequence[str],
                         cap: int) -> dict[str, int]:
    """Events containing each lexeme, counted up to `cap` through the GIN index: the
    frequencies search uses before the table has statistics."""
    counts = sql.SQL(", ").join(
        sql.SQL("(SELECT count(*) FROM (SELECT 1 FROM events e WHERE e.text_search @@ "
                "{}::tsquery LIMIT {}) s)").format(sql.Literal(_tsquery_literal(lex)),
                                                   sql.Literal(int(cap)))
        for lex in lexemes)
    row = conn.execute(sql.SQL("SELECT {}").format(counts)).fetchone()
    return dict(zip(lexemes, (int(n) for n in row), strict=True))


def identifier_matches(conn: psycopg.Connection, token: str, f: Filter | None,
                       limit: int) -> list[int]:
    """Up to `limit` events (matching the filter) whose text holds `token` as a whole
    word, case-insensitively. The GIN index finds the events holding its lexemes in
    sequence (the english parser splits some identifiers: TICKET-1234 is 'ticket' then
    '-1234', some_func_name is 'func' then 'name'); the text is then checked for the
    exact string between non-word characters, so "func name" in prose is not
    some_func_name, and getUserByIds (stemmed like getUserById) is not getUserById."""
    clause, params = filter_clause(f)
    query = sql.SQL(
        "SELECT e.id FROM events e "
        "WHERE e.text_search @@ phraseto_tsquery('english'::regconfig, %(token)s) "
        "AND left(e.text, 200000) ~* %(pattern)s{filters} LIMIT %(limit)s"
    ).format(filters=clause)
    # re.escape backslashes every regex-special character; in PostgreSQL's regular
    # expressions a backslash before a non-alphanumeric character is that literal character.
    pattern = f"(^|[^[:alnum:]_]){re.escape(token)}($|[^[:alnum:]_])"
    rows = conn.execute(query, {**params, "token": token, "pattern": pattern,
                                "limit": limit})
    return sorted(int(r[0]) for r in rows)


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


# --- timeline ---------------------------------------------------------------------------


def timeline(conn: psycopg.Connection, f: Filter) -> list[tuple[str, str, int, str]]:
    """(UTC day YYYY-MM-DD, source, events, machine name) for events matching the filter."""
    clause, params = filter_clause(f)
    query = sql.SQL(
        "SELECT to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, e.source, "
        "count(*), (SELECT m.name FROM machines m WHERE m.id = e.machine_id) "
        "FROM events e WHERE true{} GROUP BY 1, 2, e.machine_id ORDER BY 1, 2, 4"
    ).format(clause)
    return conn.execute(query, params).fetchall()
