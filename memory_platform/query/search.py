"""The query service over cairn: hybrid search, an event with its conversation context, and a
timeline. The CLI, the MCP server and the REST API all call these functions.

Search runs in two stages. Stage one pulls candidate pools from indexes alone: the HNSW
nearest neighbours of the query vector (per model, never mixing models) and a full-text
pool from the GIN index on `events.text_search`. Stage two scores only the union of those
pools (both signals for every candidate) and fuses them. No score is ever computed over the
whole table.

Exact identifiers: a query word shaped like an identifier (E0502, TICKET-1234, a hash, a
path, some_func_name, getUserById; keyword.identifier_tokens) that occurs in at most
IDENTIFIER_MAX_EVENTS of the searched events puts those events first, alone or inside a
longer query, in hybrid and keyword mode. The weighted fusion alone could not: a keyword-only
match scores at most 1 - DENSE_WEIGHT = 0.3, and a dense neighbour at cosine 0.7 already
scores more. The identifier's rarity is counted in the searched (filtered) events, so an
identifier that is everywhere gets no such lift.

Keyword weights are IDF: from the table's statistics, or counted within the filtered subset
when a filter keeps few events (a conversation's speaker names are not evidence in it).
Each thread keeps one connection per Database across calls (query/connections.py); the
keyword weights and pool are query/keyword.py's.
"""

import math
from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any, Literal, TypeVar

import numpy as np
import psycopg

from memory_platform.query.connections import on_connection, searchable_dims
from memory_platform.query.embeddings import Embedder, get_embedder
from memory_platform.query.inputs import as_utc, check_optional_text, check_text
from memory_platform.query.keyword import (
    estimate_rows,
    identifier_tokens,
    idf_weights,
    lexeme_freqs,
    pool_lexemes,
)
from memory_platform.store import Database, event_reads, event_search
from memory_platform.store import embeddings as embedding_store

T = TypeVar("T")
Mode = Literal["hybrid", "dense", "keyword"]
Fusion = Literal["weighted", "rrf"]

# Candidates per pool: max(POOL_MIN, k). Independent of k up to k=50, so the top 10 of a
# k=50 search equals a k=10 search (benchmarks read several k from one call). 50 rather
# than 100 halves the HNSW probe (ef_search) and the stage-two scoring at 100k events.
POOL_MIN = 50
RRF_K = 60
# Weighted fusion: DENSE_WEIGHT * cosine similarity + (1 - DENSE_WEIGHT) * keyword score
# scaled to [0, 1] within the candidates. Tuned on LoCoMo (bench_search) for the default
# context embeddings (local-ctx2): 0.6 / 0.7 / 0.8 gave recall@10 74.0 / 75.0 / 74.9.
DENSE_WEIGHT = 0.7
DEFAULT_FUSION: Fusion = "weighted"
# Filtered dense pool: exact distances over the filtered subset when the planner expects at
# most this many events, else an oversampled HNSW probe. A filter too narrow for the probe
# (it would need an ef_search above embedding_store.MAX_EF_SEARCH, and could still come up
# short) is searched exactly up to NARROW_EXACT_FACTOR times that. Measured (BENCHMARKS.md):
# a week of 1M events (19k rows, 1.9%) 114 ms p50 exact vs 238 ms by the probe; a source
# holding 20% of 100k events (20k rows spread over the whole table) 202 ms exact vs 74 ms
# probe.
EXACT_MAX_ROWS = 10_000
NARROW_EXACT_FACTOR = 5
OVERSAMPLE = 2.0
# An identifier-shaped query word found in at most this many of the searched events is
# "rare": those events rank above every other candidate (see the module docstring).
IDENTIFIER_MAX_EVENTS = 10


class SearchError(RuntimeError):
    """The search cannot run as asked; the message says what to do."""


@dataclass(frozen=True)
class SearchFilters:
    source: str | None = None
    project: str | None = None
    role: str | None = None
    conversation_id: int | None = None
    since: datetime | date | str | None = None  # inclusive
    until: datetime | date | str | None = None  # exclusive

    def to_store(self) -> event_search.Filter:
        """The filter for the store; InvalidInput (query/inputs.py) for a value PostgreSQL
        cannot take (a NUL character, a date out of range once in UTC)."""
        return event_search.Filter(
            source=check_optional_text(self.source, "source"),
            project=check_optional_text(self.project, "project"),
            role=check_optional_text(self.role, "role"),
            conversation_id=self.conversation_id,
            since=_as_utc(self.since, "since"), until=_as_utc(self.until, "until"),
        )


@dataclass
class Hit:
    event_id: int
    source: str
    conversation_id: int | None
    occurred_at: datetime
    role: str
    kind: str
    project: str | None
    author: str | None
    text: str
    score: float
    # Who found it: "dense", "keyword", "identifier" (holds a rare identifier of the query)
    pools: list[str] = field(default_factory=list)
    dense_rank: int | None = None  # 1-based rank in each pool
    keyword_rank: int | None = None
    distance: float | None = None  # cosine distance of the nearest chunk
    span: tuple[int, int] | None = None  # that chunk's [start, end) in text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["occurred_at"] = self.occurred_at.isoformat()
        data["span"] = list(self.span) if self.span else None
        return data


def search(
    db: Database,
    query: str,
    *,
    k: int = 10,
    filters: SearchFilters | None = None,
    mode: Mode = "hybrid",
    embedder: Embedder | None = None,
    fusion: Fusion | None = None,
) -> list[Hit]:
    """The k best events for `query`, best first. See the module docstring."""
    if mode not in ("hybrid", "dense", "keyword"):
        raise ValueError(f"unknown search mode {mode!r}")
    check_text(query, "query")
    if k <= 0 or not query.strip():
        return []
    fusion = fusion or DEFAULT_FUSION
    f = (filters or SearchFilters()).to_store()
    pool = max(POOL_MIN, k)
    if mode in ("hybrid", "dense"):
        embedder = embedder or get_embedder()
    identifiers = identifier_tokens(query) if mode != "dense" else []

    def run(conn: psycopg.Connection) -> tuple:
        dense: list[tuple[int, float]] = []
        keyword: list[tuple[int, float]] = []
        vector = None
        dims = 0
        n_rows = estimate_rows(conn, f)  # the planner's guess, for both pools
        if embedder is not None and mode in ("hybrid", "dense"):
            dims = searchable_dims(conn, embedder.name)
            if dims is None:
                raise SearchError(
                    f"no embeddings for model {embedder.name!r} yet: run `memory-platform "
                    f"embed` first (or search with mode='keyword')"
                )
            vector = embedder.embed([query])[0]
            dense = _dense_pool(conn, embedder.name, dims, vector, pool, f, k, n_rows)
        weights: dict[str, float] = {}
        if mode in ("hybrid", "keyword"):
            freq = lexeme_freqs(conn, query, f, n_rows)
            weights = idf_weights(freq)
            lexemes, require_all = pool_lexemes(freq, weights, n_rows)
            keyword = event_search.keyword_pool(conn, lexemes, pool, f, require_all=require_all)
        exact = _rare_identifier_events(conn, identifiers, f)
        candidates = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in keyword]
                                        + list(exact)))
        dense_rank = {i: r for r, (i, _) in enumerate(dense, 1)}
        keyword_rank = {i: r for r, (i, _) in enumerate(keyword, 1)}
        # Stage two: both signals for every candidate, from the candidates' rows only.
        dense_full = (event_search.dense_scores(conn, embedder.name, dims, vector, candidates)
                      if vector is not None else {})
        keyword_full = event_search.keyword_scores(conn, weights, candidates) if weights else {}
        scores = _fuse(mode, fusion, candidates, dense_full, keyword_full, dense_rank,
                       keyword_rank)
        _lift_identifier_matches(scores, exact, mode, keyword_full)
        top = sorted(candidates, key=lambda i: (-exact.get(i, 0), -scores[i], i))[:k]
        rows = event_reads.fetch_hits(conn, top)
        return top, rows, scores, dense_full, dense_rank, keyword_rank, exact

    top, rows, scores, dense_full, dense_rank, keyword_rank, exact = on_connection(db, run)
    hits = []
    for i in top:
        row = dict(zip(event_reads.HIT_COLUMNS, rows[i], strict=True))
        d = dense_full.get(i)
        hits.append(Hit(
            event_id=i, source=row["source"], conversation_id=row["conversation_id"],
            occurred_at=row["occurred_at"], role=row["role"], kind=row["kind"],
            project=row["project"], author=row["author"], text=row["text"],
            score=round(scores[i], 6),
            pools=[p for p, ranks in (("dense", dense_rank), ("keyword", keyword_rank),
                                      ("identifier", exact)) if i in ranks],
            dense_rank=dense_rank.get(i), keyword_rank=keyword_rank.get(i),
            distance=round(d[0], 6) if d else None, span=(d[1], d[2]) if d else None,
        ))
    return hits


def _fuse(mode: str, fusion: str, candidates: list[int], dense: dict, keyword: dict,
          dense_rank: dict[int, int], keyword_rank: dict[int, int]) -> dict[int, float]:
    if mode == "dense":
        return {i: 1.0 - dense[i][0] for i in candidates}
    if mode == "keyword":
        return {i: keyword.get(i, 0.0) for i in candidates}
    if fusion == "rrf":
        return {
            i: (1 / (RRF_K + dense_rank[i]) if i in dense_rank else 0.0)
            + (1 / (RRF_K + keyword_rank[i]) if i in keyword_rank else 0.0)
            for i in candidates
        }
    top_kw = max(keyword.values(), default=0.0) or 1.0
    return {
        i: DENSE_WEIGHT * (1.0 - dense[i][0] if i in dense else 0.0)
        + (1 - DENSE_WEIGHT) * keyword.get(i, 0.0) / top_kw
        for i in candidates
    }


def _rare_identifier_events(conn: psycopg.Connection, identifiers: list[str],
                            f: event_search.Filter) -> dict[int, int]:
    """{event id: how many of the query's rare identifiers it holds}."""
    held: dict[int, int] = {}
    for token in identifiers:
        ids = event_search.identifier_matches(conn, token, f, IDENTIFIER_MAX_EVENTS + 1)
        if len(ids) <= IDENTIFIER_MAX_EVENTS:
            for i in ids:
                held[i] = held.get(i, 0) + 1
    return held


def _lift_identifier_matches(scores: dict[int, float], exact: dict[int, int], mode: str,
                             keyword: dict[int, float]) -> None:
    """Add a lift per rare identifier held, at least the best score any candidate could
    have without one (fused scores are at most 1; keyword scores are unbounded IDF sums), so
    the reported score agrees with the order: identifier matches first."""
    if not exact:
        return
    unit = max(1.0, max(keyword.values(), default=0.0)) if mode == "keyword" else 1.0
    for i, n in exact.items():
        scores[i] += unit * n


def _dense_pool(conn: psycopg.Connection, model: str, dims: int, vector: np.ndarray,
                pool: int, f: event_search.Filter, k: int,
                expected: int | None = None) -> list[tuple[int, float]]:
    """pgvector 0.6 filters after the HNSW scan (no iterative scans), so a selective filter
    could leave fewer than k rows. Small filtered subsets are searched exactly; otherwise
    the probe is oversampled by the filter's selectivity and widened until k survive, with
    exact search as the last resort (correct, only slower)."""
    if f.empty:
        return event_search.dense_pool(conn, model, dims, vector, pool)
    expected = estimate_rows(conn, f) if expected is None else expected
    if expected <= EXACT_MAX_ROWS:
        return event_search.dense_pool(conn, model, dims, vector, pool, f, exact=True)
    total = max(1, estimate_rows(conn, event_search.Filter()))
    selectivity = min(1.0, expected / total)
    # Oversample for the rows a page of results needs, not the whole pool: the HNSW scan's
    # cost grows with ef_search (1,000 costs ~8x 100 at 100k rows).
    want = max(2 * k, 40)
    needed = math.ceil(want * OVERSAMPLE / selectivity)
    if needed > embedding_store.MAX_EF_SEARCH and expected <= NARROW_EXACT_FACTOR * EXACT_MAX_ROWS:
        return event_search.dense_pool(conn, model, dims, vector, pool, f, exact=True)
    probe = min(embedding_store.MAX_EF_SEARCH, needed)
    while True:
        found = event_search.dense_pool(conn, model, dims, vector, pool, f, probe=probe)
        if len(found) >= min(want, pool) or probe >= embedding_store.MAX_EF_SEARCH:
            break
        probe = min(embedding_store.MAX_EF_SEARCH, probe * 4)
    if len(found) < k:
        found = event_search.dense_pool(conn, model, dims, vector, pool, f, exact=True)
    return found


def get_event(db: Database, event_id: int, *, before: int = 0, after: int = 0) -> dict | None:
    """{"event": ..., "before": [...], "after": [...]}: the event (JSON-safe, keyed
    `event_id`, without the raw record) and up to `before`/`after` turns around it in its
    conversation, ordered by (occurred_at, id), oldest first. None if there is no such event.
    """
    def run(conn: psycopg.Connection) -> tuple:
        event = event_reads.get_event(conn, event_id)
        if event is None:
            return None, [], []
        return event, *event_reads.conversation_neighbours(conn, event, max(0, before),
                                                           max(0, after))

    event, earlier, later = on_connection(db, run)
    if event is None:
        return None
    return {"event": _json_safe(event), "before": [_json_safe(e) for e in earlier],
            "after": [_json_safe(e) for e in later]}


def timeline(
    db: Database,
    *,
    since: datetime | date | str | None,
    until: datetime | date | str | None,
    filters: SearchFilters | None = None,
) -> list[dict]:
    """Events per UTC day and source in [since, until) (and the other filters)."""
    base = filters or SearchFilters()
    f = base.to_store()
    f = event_search.Filter(source=f.source, project=f.project, role=f.role,
                     conversation_id=f.conversation_id,
                     since=_as_utc(since, "since") if since is not None else f.since,
                     until=_as_utc(until, "until") if until is not None else f.until)
    rows = on_connection(db, lambda conn: event_search.timeline(conn, f))
    return [{"day": day, "source": source, "events": n} for day, source, n in rows]


def _as_utc(value: datetime | date | str | None, what: str = "date") -> datetime | None:
    """Aware UTC datetimes; a date means its UTC midnight, a naive datetime is UTC (and
    InvalidInput for one out of range: see query/inputs.py)."""
    return as_utc(value, what)


def _json_safe(row: dict) -> dict:
    return {("event_id" if k == "id" else k): v.isoformat() if isinstance(v, datetime) else v
            for k, v in row.items()}
