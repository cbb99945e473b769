"""SQL of the vault: namespaces, memories, their audit trail, their embeddings and the
nearest-neighbour read behind the dream's dedup gate and `vault search`.

Rules kept here:
- Every write of a memory writes its `vault_audit` row in the same statement, so the audit
  trail cannot miss a row.
- The `embedding` column is read only inside a distance expression. Listing never touches
  `memory_embeddings` at all.
- Model name and dimension are SQL literals, never parameters: the per-model HNSW index is
  a partial expression index the planner can only use when the query spells the same
  expression and a predicate it can prove at plan time (see store/search.py).
"""

import hashlib
import re
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from memory_platform.store import search as search_store

SHADOW_KINDS = ("dream", "ideas")
CATEGORIES = ("user", "feedback", "project", "reference")
SOURCES = ("hand", "dream", "import", "agent")
REVIEWS = ("pending", "approved", "skipped")

# Shadow rows the dedup gate compares against by default: what waits for review, and what a
# reviewer skipped (so the dream does not propose it again every night).
NEIGHBOUR_REVIEWS = ("pending", "skipped")

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
MAX_NAME_LENGTH = 100

# Columns of a memory, in this order; there is no vector among them.
MEMORY_COLUMNS = (
    "id", "namespace", "text", "category", "source", "status", "review", "review_note",
    "dream_run_id", "candidate_id", "source_event_ids", "score", "why", "verdict",
    "promoted_from", "valid_from", "valid_to", "superseded_by", "created_at", "updated_at",
    "content_hash",
)
_MEMORY_SELECT = sql.SQL(", ").join(sql.SQL("m.{}").format(sql.Identifier(c))
                                     for c in MEMORY_COLUMNS)

# Nearest neighbours: up to this many rows in the searched namespaces, exact distances (full
# recall); above it, an oversampled HNSW probe, falling back to exact when the filter leaves
# fewer than k. The dedup gate's budget sets the bound: an exact scan costs about 3 us per
# row at 384 dimensions on a 2-core machine (6,000 rows: ~20 ms), an HNSW probe of 40 about
# 2.5 ms at 10k rows, so the exact path stays under ~7 ms.
EXACT_MAX_ROWS = 2_000
# pgvector 0.6: an HNSW scan returns at most ef_search rows, and ef_search caps at 1000.
MAX_PROBE = search_store.MAX_EF_SEARCH
MIN_PROBE = 40

_MODEL_LOCK_KEY = 0x656D62656464  # the same key as store/search.py: one index build at a time


# --- namespaces ------------------------------------------------------------------------


def parse_namespace(name: str) -> tuple[str, str | None]:
    """(kind, primary) of a namespace name: ('primary', None) or ('dream'|'ideas', primary).
    Raises ValueError on a name the vault would refuse, saying why."""
    if not isinstance(name, str) or not _NAME_RE.match(name) or len(name) > MAX_NAME_LENGTH:
        raise ValueError(
            f"invalid namespace {name!r}: use lowercase letters, digits, '.', '_' and '-', "
            f"starting with a letter or digit, at most {MAX_NAME_LENGTH} characters"
        )
    base, sep, suffix = name.rpartition("__")
    if sep and suffix in SHADOW_KINDS and base:
        if "__" in base:
            raise ValueError(f"invalid namespace {name!r}: a shadow namespace belongs to a "
                             f"primary one, and {base!r} is not a primary name")
        parse_namespace(base)
        return suffix, base
    if "__" in name:
        # '__' is reserved for the shadow suffixes, so a name's kind is never ambiguous.
        raise ValueError(f"invalid namespace {name!r}: '__' is reserved for shadow "
                         f"namespaces (<namespace>__dream, <namespace>__ideas)")
    return "primary", None


def shadow_of(primary: str, kind: str) -> str:
    """The shadow namespace of `kind` ('dream' or 'ideas') for a primary namespace."""
    if kind not in SHADOW_KINDS:
        raise ValueError(f"unknown shadow kind {kind!r}; use one of {SHADOW_KINDS}")
    if parse_namespace(primary)[0] != "primary":
        raise ValueError(f"{primary!r} is itself a shadow namespace")
    return f"{primary}__{kind}"


def ensure_namespace(conn: psycopg.Connection, name: str) -> str:
    """Create the namespace if missing (a shadow's primary first); return its kind."""
    kind, primary = parse_namespace(name)
    rows = [(name, kind, primary)] if primary is None else [
        (primary, "primary", None), (name, kind, primary)]
    # One statement: VALUES are inserted in order, so the primary exists before its shadow
    # refers to it, and an existing namespace costs no lock.
    conn.execute(
        sql.SQL("INSERT INTO vault_namespaces (name, kind, primary_of) VALUES {} "
                "ON CONFLICT (name) DO NOTHING").format(
            sql.SQL(", ").join(sql.SQL("(%s, %s, %s)") for _ in rows)),
        [v for row in rows for v in row],
    )
    return kind


def get_namespace(conn: psycopg.Connection, name: str) -> dict | None:
    row = conn.execute(
        "SELECT name, kind, primary_of, created_at FROM vault_namespaces WHERE name = %s",
        (name,),
    ).fetchone()
    return dict(zip(("name", "kind", "primary_of", "created_at"), row, strict=True)) \
        if row else None


def list_namespaces(conn: psycopg.Connection) -> list[dict]:
    """Every namespace with its kind and its count of active memories, by name."""
    rows = conn.execute(
        """SELECT n.name, n.kind, n.primary_of, n.created_at,
                  (SELECT count(*) FROM memories m
                   WHERE m.namespace = n.name AND m.status = 'active')
           FROM vault_namespaces n ORDER BY n.name"""
    ).fetchall()
    keys = ("name", "kind", "primary_of", "created_at", "active")
    return [dict(zip(keys, r, strict=True)) for r in rows]


# --- memories ----------------------------------------------------------------------------


def normalize_text(text: str) -> str:
    """Whitespace collapsed and trimmed: two memories that differ only in spacing hash alike."""
    return " ".join(text.split())


def content_hash(text: str) -> str:
    return hashlib.sha256(normalize_text(text).encode("utf-8", "surrogatepass")).hexdigest()


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
) -> tuple[int, bool]:
    """Insert a memory (creating its namespace on first write) and its audit row; return
    (id, created). Staging a dream candidate twice returns the first row's id with
    created=False. Shadow entries start as review='pending' unless told otherwise.
    The database, not this function, refuses a dream row in a primary namespace."""
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
    params = {
        "namespace": namespace, "text": text.strip(), "category": category, "source": source,
        "review": review, "dream_run_id": dream_run_id, "candidate_id": candidate_id,
        "source_event_ids": [int(i) for i in source_event_ids], "score": score, "why": why,
        "verdict": verdict, "promoted_from": promoted_from, "valid_from": valid_from,
        "content_hash": content_hash(text), "actor": actor,
    }
    with conn.transaction():
        ensure_namespace(conn, namespace)
        # The audit row is written by the same statement as the memory: one cannot exist
        # without the other. ON CONFLICT covers candidate_id only (NULLs never conflict).
        row = conn.execute(
            """WITH ins AS (
                   INSERT INTO memories (namespace, text, category, source, review,
                       dream_run_id, candidate_id, source_event_ids, score, why, verdict,
                       promoted_from, valid_from, content_hash)
                   VALUES (%(namespace)s, %(text)s, %(category)s, %(source)s, %(review)s,
                       %(dream_run_id)s, %(candidate_id)s, %(source_event_ids)s::bigint[],
                       %(score)s, %(why)s, %(verdict)s, %(promoted_from)s,
                       COALESCE(%(valid_from)s::timestamptz, now()), %(content_hash)s)
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


def backlog(conn: psycopg.Connection) -> list[dict]:
    """Per shadow namespace: entries pending review and when the oldest was staged (None
    when nothing is pending). Every shadow namespace is listed, empty ones too."""
    rows = conn.execute(
        """SELECT n.name, count(m.id), min(m.created_at)
           FROM vault_namespaces n
           LEFT JOIN memories m ON m.namespace = n.name AND m.review = 'pending'
           WHERE n.kind <> 'primary'
           GROUP BY n.name ORDER BY n.name"""
    ).fetchall()
    return [{"namespace": r[0], "pending": int(r[1]), "oldest_created_at": r[2]} for r in rows]


# --- embeddings --------------------------------------------------------------------------


def memory_index_name(model: str) -> str:
    """Per model, distinct from the event index (a shorter slug: the prefix is longer)."""
    return search_store.hnsw_index_name("memory_embeddings", model, 28)


def _vector_expr(dims: int) -> sql.Composable:
    """The indexed expression; queries must spell it exactly like this."""
    return sql.SQL("me.embedding::vector({})").format(sql.Literal(int(dims)))


def ensure_memory_model(conn: psycopg.Connection, model: str, dims: int) -> None:
    """Register the model (one name, one dimension) and create the memories' HNSW index for
    it. Cheap when both exist: CREATE INDEX IF NOT EXISTS would still take a lock on the
    table that blocks concurrent writers, so existence is checked first."""
    known = search_store.model_dims(conn, model)
    if known is not None and known != dims:
        raise ValueError(
            f"embedding model {model!r} is registered with {known} dimensions, not {dims}")
    name = memory_index_name(model)
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]
    if known is not None and exists:
        return
    search_store.ensure_model(conn, model, dims)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MODEL_LOCK_KEY,))
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
        params.append((int(memory_id), model, dims, search_store.vector_literal(vector)))
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


# --- nearest neighbours ------------------------------------------------------------------

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


def exact_neighbours_sql(model: str, dims: int) -> sql.Composable:
    """Exact cosine distances over the eligible rows of the namespaces only. The distance is
    computed once per row (the ORDER BY reuses the select-list entry); the similarity only
    for the k rows kept."""
    expr = _vector_expr(dims)
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
    expr = _vector_expr(dims)
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
    params = {"q": search_store.vector_literal(vector), "ns": namespaces, "k": k,
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
                ).format(expr=_vector_expr(dims), d=sql.Literal(int(dims)),
                         m=sql.Literal(model)),
        {"q": search_store.vector_literal(np.asarray(vector, dtype=np.float32)),
         "ids": [int(i) for i in ids]},
    ).fetchall()
    return {int(i): float(s) for i, s in rows}

