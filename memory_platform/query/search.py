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

A query of PHRASE_MIN_WORDS or more words held verbatim (as a phrase) by at most
IDENTIFIER_MAX_EVENTS events gets the same lift: a pasted error line whose words are all
common. After fusion, query/rerank.py's rules (issue 23): short turns pass their score to
the turn they follow, the first hits bring their neighbour turns, a time the query names
lifts what falls in it, and near-identical hits fold into the best one (`Hit.duplicates`).

Keyword weights are IDF: from the table's statistics, or counted within the filtered subset
when a filter keeps few events (a conversation's speaker names are not evidence in it).
Each thread keeps one connection per Database across calls (query/connections.py); the
keyword weights and pool are query/keyword.py's.
"""

import math
from dataclasses import asdict, dataclass, field, replace
from datetime import date, datetime
from typing import Any, Literal

import numpy as np
import psycopg

from memory_platform.privacy.egress import outgoing_fields
from memory_platform.query import rerank, timeframe
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
from memory_platform.store import Database, event_reads, event_search, search_context
from memory_platform.store import embeddings as embedding_store

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
# A model with at most this many vectors is searched exactly, filtered or not (issue 22):
# an HNSW graph over a small, freshly filled table left vectors unreachable (the first
# page of 1,720 turn vectors: the probe missed the exact scan's two nearest; 20 planted
# pairs, tests/test_index_exactness.py: it found 2-11). Measured at load ~12 on the 2
# cores: exact 25 ms at 2,000 vectors, 200 ms at 10,000 (the probe 12 and 25 ms).
EXACT_MAX_VECTORS = 5_000
# The smallest HNSW probe (ef_search) of an unfiltered search above that size: more of
# the graph read for ~10 ms (ef 50 -> 200 cost 25 -> 58 ms at 10,000 vectors, load ~12).
MIN_PROBE = 100
_big_models: set[tuple[str, str]] = set()  # (dsn, model) known to hold more vectors
# An identifier-shaped query word found in at most this many of the searched events is
# "rare": those events rank above every other candidate (see the module docstring).
IDENTIFIER_MAX_EVENTS = 10
# A query of at least this many words (a pasted error line) held verbatim, as a phrase, by
# at most IDENTIFIER_MAX_EVENTS searched events puts them first, like a rare identifier: its
# words may all be common, so neither the keyword weights nor the vectors single it out.
PHRASE_MIN_WORDS = 5
PHRASE_MAX_WORDS = 64
# Keyword share of the fusion: over the best candidate's keyword score, or over this x the
# query's IDF mass when more (common words alone earn little): 1.0 cost 5.3 points of LoCoMo
# recall@10 (BENCHMARKS.md, issue 23), so 0.
KEYWORD_QUERY_SCALE = 0.0
CONVERSATION_RULES = TIME_RULE = True  # query/rerank.py's rules, hybrid and dense mode
COLLAPSE_DUPLICATES = True


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
            since=as_utc(self.since, "since"), until=as_utc(self.until, "until"),
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
    machine: str | None = None  # the machine it was collected on (issue 24)
    # Who found it: "dense", "keyword", "identifier" (holds a rare identifier of the query)
    pools: list[str] = field(default_factory=list)
    dense_rank: int | None = None  # 1-based rank in each pool
    keyword_rank: int | None = None
    distance: float | None = None  # cosine distance of the nearest chunk
    span: tuple[int, int] | None = None  # that chunk's [start, end) in text
    duplicates: list[int] = field(default_factory=list)  # near-identical events folded in

    def to_dict(self) -> dict[str, Any]:
        """The hit as it leaves the store (REST, MCP, the CLI): its strings masked
        (privacy/egress); `span` keeps pointing into the stored text."""
        data = outgoing_fields(asdict(self), ("text", "project", "author"))
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
    """The k best events for `query`, best first. See the module docstring. Hybrid mode
    searches what has vectors by meaning and everything by keyword: with no vectors yet it
    is a keyword search (query/coverage.py says how much was searched which way); dense
    mode without vectors raises SearchError."""
    if mode not in ("hybrid", "dense", "keyword"):
        raise ValueError(f"unknown search mode {mode!r}")
    check_text(query, "query")
    if k <= 0 or not query.strip():
        return []
    fusion = fusion or DEFAULT_FUSION
    f = (filters or SearchFilters()).to_store()
    embedder = (embedder or get_embedder()) if mode != "keyword" else None
    found = on_connection(db, lambda conn: _rank(conn, query, k, f, mode, fusion, embedder))
    hits = []
    for i in found.top:
        row = dict(zip(event_reads.HIT_COLUMNS, found.rows[i], strict=True))
        d = found.dense.get(i)
        hits.append(Hit(
            event_id=i, source=row["source"], conversation_id=row["conversation_id"],
            occurred_at=row["occurred_at"], role=row["role"], kind=row["kind"],
            project=row["project"], author=row["author"], text=row["text"],
            score=round(found.scores[i], 6), machine=row["machine"],
            pools=[p for p, ranks in (("dense", found.dense_rank),
                                      ("keyword", found.keyword_rank),
                                      ("identifier", found.exact),
                                      ("neighbour", found.neighbours))
                   if i in ranks],
            dense_rank=found.dense_rank.get(i), keyword_rank=found.keyword_rank.get(i),
            distance=round(d[0], 6) if d else None, span=(d[1], d[2]) if d else None,
            duplicates=found.copies.get(i, []),
        ))
    return hits


@dataclass
class _Ranked:
    """What one search found on its connection, before it becomes Hits."""

    top: list[int]  # event ids, best first
    rows: dict[int, tuple]  # event id -> its event_reads.HIT_COLUMNS
    scores: dict[int, float]  # every candidate's final score
    dense: dict[int, tuple]  # event id -> (cosine distance, span start, span end)
    dense_rank: dict[int, int]
    keyword_rank: dict[int, int]
    exact: dict[int, int]  # event id -> rare identifiers (or the phrase) it holds
    neighbours: dict[int, int]  # turns brought in by the second stage
    copies: dict[int, list[int]]  # kept id -> near-identical ids folded into it


def _rank(conn: psycopg.Connection, query: str, k: int, f: event_search.Filter, mode: Mode,
          fusion: Fusion, embedder: Embedder | None) -> _Ranked:
    """Both stages of one search on `conn` (see the module docstring); `mode` is checked
    by the caller, and `embedder` is None exactly in keyword mode."""
    pool = max(POOL_MIN, k)
    dense: list[tuple[int, float]] = []
    keyword: list[tuple[int, float]] = []
    vector = None
    dims: int | None = 0
    n_rows = estimate_rows(conn, f)  # the planner's guess, for both pools
    if embedder is not None:
        dims = searchable_dims(conn, embedder.name)
        if dims is None and mode == "dense":
            raise SearchError(
                f"no vectors for model {embedder.name!r} yet, so nothing to search by "
                f"meaning: run `memory-platform embed` (or search with `--mode keyword` "
                f"or `--mode hybrid`; mode=keyword in the API)")
        if dims is not None:  # hybrid without vectors: the keyword pool alone
            vector = embedder.embed([query])[0]
            dense = _dense_pool(conn, embedder.name, dims, vector, pool, f, k, n_rows)
    weights: dict[str, float] = {}
    if mode != "dense":
        freq = lexeme_freqs(conn, query, f, n_rows)
        weights = idf_weights(freq)
        lexemes, require_all = pool_lexemes(freq, weights, n_rows)
        keyword = event_search.keyword_pool(conn, lexemes, pool, f, require_all=require_all)
    exact: dict[int, int] = {}
    if mode != "dense":
        exact = _rare_identifier_events(conn, identifier_tokens(query), f)
        for i in _phrase_events(conn, query, f):
            exact[i] = exact.get(i, 0) + 1
    candidates = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in keyword]
                                    + list(exact)))
    dense_rank = {i: r for r, (i, _) in enumerate(dense, 1)}
    keyword_rank = {i: r for r, (i, _) in enumerate(keyword, 1)}
    # Stage two: both signals for every candidate, from the candidates' rows only.
    dense_full = (event_search.dense_scores(conn, embedder.name, dims, vector, candidates)
                  if vector is not None else {})
    keyword_full = event_search.keyword_scores(conn, weights, candidates) if weights else {}
    scores = _fuse(mode, fusion, candidates, dense_full, keyword_full, dense_rank,
                   keyword_rank, sum(weights.values()))
    neighbours = _second_stage(conn, query, mode, scores, exact, f)
    _lift_identifier_matches(scores, exact, mode, keyword_full)
    order = sorted(scores, key=lambda i: (-exact.get(i, 0), -scores[i], i))
    copies: dict[int, list[int]] = {}
    if COLLAPSE_DUPLICATES and order:
        texts = search_context.leading_text(conn, order[:3 * k], rerank.DUPLICATE_CHARS)
        top, copies = rerank.collapse(order[:3 * k], texts, k)
    else:
        top = order[:k]
    return _Ranked(top=top, rows=event_reads.fetch_hits(conn, top), scores=scores,
                   dense=dense_full, dense_rank=dense_rank, keyword_rank=keyword_rank,
                   exact=exact, neighbours=neighbours, copies=copies)


def _fuse(mode: str, fusion: str, candidates: list[int], dense: dict, keyword: dict,
          dense_rank: dict[int, int], keyword_rank: dict[int, int],
          query_weight: float = 0.0) -> dict[int, float]:
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
    # + 1: the ts_rank_cd tie-break is below 1
    top_kw = max(top_kw, KEYWORD_QUERY_SCALE * (query_weight + 1.0))
    return {
        i: DENSE_WEIGHT * (1.0 - dense[i][0] if i in dense else 0.0)
        + (1 - DENSE_WEIGHT) * keyword.get(i, 0.0) / top_kw
        for i in candidates
    }


def _phrase_events(conn: psycopg.Connection, query: str,
                   f: event_search.Filter) -> list[int]:
    """The events holding a long query verbatim (PHRASE_MIN_WORDS; not a question), when
    at most IDENTIFIER_MAX_EVENTS do."""
    words = query.split()
    if not PHRASE_MIN_WORDS <= len(words) <= PHRASE_MAX_WORDS or query.rstrip().endswith("?"):
        return []  # a question is not a quotation
    ids = search_context.phrase_matches(conn, query, f, IDENTIFIER_MAX_EVENTS + 1)
    return ids if len(ids) <= IDENTIFIER_MAX_EVENTS else []


def _second_stage(conn: psycopg.Connection, query: str, mode: str, scores: dict[int, float],
                  exact: dict[int, int], f: event_search.Filter) -> dict[int, int]:
    """query/rerank.py's rules over the fused scores, in place: short turns pass their
    score to the turn they follow, time windows the query names lift what falls in them,
    the first hits bring their neighbour turns; a turn outside the filter is never brought
    in. Returns the turns brought in ({event id: 1})."""
    if mode == "keyword" or not scores:
        return {}
    windows = timeframe.windows(query) if TIME_RULE else []
    if not CONVERSATION_RULES and not windows:
        return {}
    # Neighbours are looked up for short candidates and those that may end up first.
    head = sorted(scores, key=lambda i: (-exact.get(i, 0), -scores[i], i))
    near = head[:2 * rerank.NEIGHBOUR_TOP] if CONVERSATION_RULES else []
    short = rerank.SHORT_TURN_CHARS if CONVERSATION_RULES else None

    def place(ids: list[int], every: bool = False) -> dict[int, search_context.Placement]:
        found = (search_context.placements(conn, ids) if every else
                 search_context.placements(conn, ids, near=near, short_chars=short))
        if f.empty:
            return found
        adjacent = {n for p in found.values() for n in (p.previous, p.following) if n}
        allowed = search_context.matching(conn, sorted(adjacent), f)
        return {i: replace(p, previous=p.previous if p.previous in allowed else None,
                           following=p.following if p.following in allowed else None)
                for i, p in found.items()}

    placed = place(list(scores))
    brought: list[int] = []
    if CONVERSATION_RULES:
        brought += rerank.pass_short_turns(scores, placed)
    if windows:
        missing = [i for i in scores if i not in placed]
        placed.update(place(missing))
        rerank.lift_in_windows(scores, {i: p.occurred_at for i, p in placed.items()},
                               windows)
    if CONVERSATION_RULES:
        order = sorted(scores, key=lambda i: (-exact.get(i, 0), -scores[i], i))
        head = order[:rerank.NEIGHBOUR_TOP]
        missing = [i for i in head if i not in placed
                   or (i not in near and placed[i].chars > rerank.SHORT_TURN_CHARS)]
        placed.update(place(missing, every=True))
        brought += rerank.add_neighbours(scores, order, placed)
    return {i: 1 for i in brought}


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
    exact search as the last resort (correct, only slower). A model with few vectors
    (EXACT_MAX_VECTORS) is always searched exactly."""
    if _few_vectors(conn, model):
        return event_search.dense_pool(conn, model, dims, vector, pool, f, exact=True)
    if f.empty:
        return event_search.dense_pool(conn, model, dims, vector, pool,
                                       probe=max(pool, MIN_PROBE))
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


def _few_vectors(conn: psycopg.Connection, model: str) -> bool:
    """Whether `model` holds at most EXACT_MAX_VECTORS vectors: counted (a few ms at that
    size) until it holds more, then remembered for the process (vectors are only deleted
    when re-embedded: a table that shrank back is searched by the index, as before)."""
    key = (conn.info.dsn, model)
    if key in _big_models:
        return False
    if embedding_store.count_vectors(conn, model, EXACT_MAX_VECTORS + 1) <= EXACT_MAX_VECTORS:
        return True
    _big_models.add(key)
    return False
