"""SQL that finds memories: the nearest neighbours of a vector (behind the dream's dedup gate
and vault search), the similarity of given memories, and verbatim keyword matches.

Rule kept here: the `embedding` column is read only inside a distance expression. Model
name and dimension are SQL literals, never parameters (see store/embeddings.py).
"""

import threading
import time
from collections.abc import Sequence

import numpy as np
import psycopg
from psycopg import sql

from memory_platform.store.embeddings import MAX_EF_SEARCH, vector_literal
from memory_platform.store.memory_embeddings import vector_expr

# Shadow rows the dedup gate compares against by default: what waits for review, and what a
# reviewer skipped (so the dream does not propose it again every night).
NEIGHBOUR_REVIEWS = ("pending", "skipped")

# Nearest neighbours: up to this many rows in the searched namespaces, exact distances (full
# recall); above it, an oversampled HNSW probe, falling back to exact when the filter leaves
# fewer than k. The dedup gate's budget sets the bound: an exact scan costs about 3 us per
# row at 384 dimensions on a 2-core machine (6,000 rows: ~20 ms), an HNSW probe of 40 about
# 2.5 ms at 10k rows, so the exact path stays under ~7 ms.
EXACT_MAX_ROWS = 2_000
# An HNSW scan returns at most ef_search rows (pgvector caps it: store/embeddings.py).
MAX_PROBE = MAX_EF_SEARCH
MIN_PROBE = 40


_NEIGHBOUR_KEYS = ("id", "namespace", "text", "review", "status", "valid_to",
                   "superseded_by", "similarity")

# Which rows may be a neighbour: a primary row while active; a shadow row while its review
# is one of the asked states, whatever its status (a skipped entry may have been archived
# by review and must still stop the dream from proposing it again). With %(current)s, a
# primary fact only while it is still true (no valid_to in the past): what search shows.
# The dedup gate keeps ended facts as neighbours: an outdated fact is still a known one.
_CURRENT = ("(NOT %(current)s OR m.review IS NOT NULL OR m.valid_to IS NULL "
            "OR m.valid_to > now())")
_ELIGIBLE = sql.SQL(
    "m.namespace = ANY(%(ns)s) AND ((m.review IS NULL AND m.status = 'active') "
    "OR m.review = ANY(%(reviews)s)) AND " + _CURRENT)


def keyword_matches(
    conn: psycopg.Connection, needle: str, namespaces: Sequence[str], *, limit: int,
    current_only: bool = False,
) -> list[dict]:
    """Active memories (and pending shadow entries) containing `needle` verbatim, case
    folded: a port, a version or an error code the embedding barely sees. Newest first.
    `current_only` leaves out facts that stopped being true (as nearest_memories)."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = conn.execute(
        """SELECT m.id, m.namespace, m.text, m.review, m.status, m.valid_to, m.superseded_by
           FROM memories m
           WHERE m.namespace = ANY(%(ns)s) AND m.text ILIKE %(pattern)s
             AND ((m.review IS NULL AND m.status = 'active') OR m.review = 'pending')
             AND """ + _CURRENT + """
           ORDER BY m.id DESC LIMIT %(limit)s""",
        {"ns": list(namespaces), "pattern": f"%{escaped}%", "limit": limit,
         "current": current_only},
    ).fetchall()
    keys = ("id", "namespace", "text", "review", "status", "valid_to", "superseded_by")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def exact_neighbours_sql(model: str, dims: int) -> sql.Composable:
    """Exact cosine distances over the eligible rows of the namespaces only. The distance is
    computed once per row (the ORDER BY reuses the select-list entry); the similarity only
    for the k rows kept."""
    expr = vector_expr(dims)
    return sql.SQL(
        "SELECT s.id, s.namespace, s.text, s.review, s.status, s.valid_to, s.superseded_by, "
        "1 - s.distance FROM ("
        "SELECT m.id, m.namespace, m.text, m.review, m.status, m.valid_to, m.superseded_by, "
        "{expr} <=> %(q)s::vector({d}) AS distance "
        "FROM memories m JOIN memory_embeddings me ON me.model = {m} AND me.memory_id = m.id "
        "WHERE {eligible} ORDER BY {expr} <=> %(q)s::vector({d}), m.id LIMIT %(k)s) s "
        "ORDER BY s.distance, s.id"
    ).format(expr=expr, d=sql.Literal(int(dims)), m=sql.Literal(model), eligible=_ELIGIBLE)


def ann_neighbours_sql(model: str, dims: int) -> sql.Composable:
    """The HNSW probe over every memory of the model, then the namespace/review filter on the
    probe's rows only (pgvector 0.6 filters after the scan: hence the oversampled probe)."""
    expr = vector_expr(dims)
    return sql.SQL(
        "WITH nn AS MATERIALIZED ("
        "SELECT me.memory_id, {expr} <=> %(q)s::vector({d}) AS distance "
        "FROM memory_embeddings me WHERE me.model = {m} "
        "ORDER BY {expr} <=> %(q)s::vector({d}) LIMIT %(probe)s) "
        "SELECT m.id, m.namespace, m.text, m.review, m.status, m.valid_to, m.superseded_by, "
        "1 - nn.distance "
        "FROM nn JOIN memories m ON m.id = nn.memory_id "
        "WHERE {eligible} ORDER BY nn.distance, m.id LIMIT %(k)s"
    ).format(expr=expr, d=sql.Literal(int(dims)), m=sql.Literal(model), eligible=_ELIGIBLE)


def _scope(conn: psycopg.Connection, namespaces: list[str], cap: int) -> tuple[int, int]:
    """(rows in the namespaces counted exactly up to `cap`, the planner's row estimate of
    memory_embeddings): one round trip. The count reads the (namespace, id) index and stops
    at the cap; reltuples is a catalog read (-1 before the first ANALYZE)."""
    row = conn.execute(
        """SELECT (SELECT count(*) FROM (SELECT 1 FROM memories
                                         WHERE namespace = ANY(%s) LIMIT %s) s),
                  (SELECT reltuples::bigint FROM pg_class
                   WHERE oid = 'memory_embeddings'::regclass)""",
        (namespaces, cap),
    ).fetchone()
    return int(row[0]), max(int(row[1]), 0)


def _estimate_in_scope(conn: psycopg.Connection, namespaces: list[str]) -> int:
    # The planner's estimate from the namespace column's statistics: no scan, so it costs
    # the same at 100k rows as at 10k, unlike an exact count.
    plan = conn.execute(
        "EXPLAIN (FORMAT JSON) SELECT 1 FROM memories WHERE namespace = ANY(%s)",
        (namespaces,),
    ).fetchone()[0]
    return int(plan[0]["Plan"]["Plan Rows"])


# The dedup gate asks for the same namespaces once per candidate; their sizes only choose
# between exact and HNSW and size the probe (the exact fallback still guarantees k), so a
# few seconds' staleness is harmless and saves two round trips per candidate.
SCOPE_TTL_SECONDS = 10.0
_scope_cache: dict[tuple, tuple[float, int, int]] = {}
_scope_lock = threading.Lock()


def _cached_scope(conn: psycopg.Connection, namespaces: list[str]) -> tuple[int, int]:
    """(rows in scope, rows of memory_embeddings): exact up to the cut-off, the planner's
    estimate beyond it; cached per database and namespaces for SCOPE_TTL_SECONDS."""
    key = (conn.info.dsn, tuple(sorted(namespaces)))
    now = time.monotonic()
    with _scope_lock:
        hit = _scope_cache.get(key)
    if hit and now - hit[0] < SCOPE_TTL_SECONDS:
        return hit[1], hit[2]
    in_scope, total = _scope(conn, namespaces, EXACT_MAX_ROWS + 1)
    if in_scope > EXACT_MAX_ROWS:
        in_scope = max(in_scope, _estimate_in_scope(conn, namespaces))
    with _scope_lock:
        if len(_scope_cache) > 1024:
            _scope_cache.clear()
        _scope_cache[key] = (now, in_scope, total)
    return in_scope, total


def nearest_memories(
    conn: psycopg.Connection,
    model: str,
    dims: int,
    vector: np.ndarray,
    namespaces: Sequence[str],
    *,
    k: int = 5,
    reviews: Sequence[str] | None = None,
    method: str | None = None,
    current_only: bool = False,
) -> list[dict]:
    """The k memories nearest to `vector` (cosine) among the given namespaces, most similar
    first: dicts of id, namespace, text, review, status, valid_to, superseded_by,
    similarity (1 - cosine distance). Primary rows count while active (and, with
    `current_only`, while still true: not superseded, valid_to not past); shadow rows while
    their review is in `reviews` (default: pending and skipped). `method` forces 'exact'
    or 'hnsw'; by default exact distances when the namespaces hold at most EXACT_MAX_ROWS
    rows, else an oversampled HNSW probe that falls back to exact when the filter leaves
    fewer than k."""
    namespaces = list(namespaces)
    if not namespaces or k <= 0:
        return []
    if method not in (None, "exact", "hnsw"):
        raise ValueError(f"unknown method {method!r}; use 'exact' or 'hnsw'")
    vector = np.asarray(vector, dtype=np.float32)
    if vector.shape != (dims,):
        raise ValueError(f"query vector of shape {vector.shape}, model {model!r} has {dims} "
                         f"dimensions")
    params = {"q": vector_literal(vector), "ns": namespaces, "k": k,
              "reviews": list(NEIGHBOUR_REVIEWS if reviews is None else reviews),
              "current": current_only}
    in_scope, total = _cached_scope(conn, namespaces)
    if method is None:
        method = "exact" if in_scope <= EXACT_MAX_ROWS else "hnsw"
    if method == "hnsw":
        # Oversample by how diluted the namespaces are in the model's index, twice over for
        # rows the review filter drops; the exact fallback covers a probe that still falls
        # short.
        ratio = total / max(in_scope, 1) if total else 1.0
        probe = int(min(MAX_PROBE, max(MIN_PROBE, k * ratio * 2)))
        # One round trip for BEGIN, SET LOCAL, the probe and COMMIT. SET LOCAL: the raised
        # ef_search ends with this transaction, never left on a pooled connection.
        with conn.pipeline():
            with conn.transaction():
                conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(
                    sql.Literal(probe)))
                cur = conn.execute(ann_neighbours_sql(model, dims), {**params, "probe": probe})
        rows = cur.fetchall()
        if len(rows) >= k or len(rows) >= in_scope:
            return [dict(zip(_NEIGHBOUR_KEYS, r, strict=True)) for r in rows]
    rows = conn.execute(exact_neighbours_sql(model, dims), params).fetchall()
    return [dict(zip(_NEIGHBOUR_KEYS, r, strict=True)) for r in rows]


def similarities(
    conn: psycopg.Connection, model: str, dims: int, vector: np.ndarray, ids: Sequence[int]
) -> dict[int, float]:
    """Cosine similarity of given memories to `vector` (primary-key lookups only)."""
    if not ids:
        return {}
    rows = conn.execute(
        sql.SQL("SELECT me.memory_id, 1 - ({expr} <=> %(q)s::vector({d})) "
                "FROM memory_embeddings me WHERE me.model = {m} AND me.memory_id = ANY(%(ids)s)"
                ).format(expr=vector_expr(dims), d=sql.Literal(int(dims)),
                         m=sql.Literal(model)),
        {"q": vector_literal(np.asarray(vector, dtype=np.float32)),
         "ids": [int(i) for i in ids]},
    ).fetchall()
    return {int(i): float(s) for i, s in rows}
