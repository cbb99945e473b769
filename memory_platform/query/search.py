"""The query service over cairn: hybrid search, an event with its conversation context, and a
timeline. The CLI, the MCP server and the REST API all call these functions.

Search runs in two stages. Stage one pulls candidate pools from indexes alone: the HNSW
nearest neighbours of the query vector (per model, never mixing models) and a full-text
pool from the GIN index on `events.text_search`, so an exact error code, path or UUID is
found even when the embedding misses it. Stage two scores only the union of those pools
(both signals for every candidate) and fuses them. No score is ever computed over the whole
table.

Keyword weights are IDF: from the table's statistics, or counted within the filtered subset
when a filter keeps few events (a conversation's speaker names are not evidence in it).
Each thread keeps one connection per Database across calls (see _on_connection).
"""

import math
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timezone
from datetime import time as dtime
from typing import Any, Literal, TypeVar

import numpy as np
import psycopg

from memory_platform.query.embeddings import Embedder, get_embedder
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
# Lexemes in more than this fraction of events carry almost no signal and make the OR query
# match most of the table; they are dropped (unless the query has nothing rarer).
MAX_LEXEME_FREQ = 0.2
# Rows the stage-one keyword query may be expected to match (and score); see _pool_lexemes.
# Every matched row's tsvector is read and scored: at 100k events 5,000 rows cost ~50 ms
# p50, 1,000 rows ~10 ms (BENCHMARKS.md).
KEYWORD_MATCH_BUDGET = 1_000
# Above this many expected matches even for the AND of the query's lexemes, the keyword
# pool is skipped (see _pool_lexemes). At 1M events, one lexeme in 30k events cost 229 ms.
KEYWORD_MATCH_CAP = 4 * KEYWORD_MATCH_BUDGET
# Filters expected to keep at most this many events get their lexeme frequencies (IDF)
# counted in the filtered subset; broader ones use the table's statistics.
# Counting costs a pass over the subset's tsvectors, so only small subsets (a conversation,
# a few days): +1.1 points of LoCoMo hybrid recall@10 with conversation filters.
SCOPED_IDF_MAX_ROWS = 5_000


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
        return event_search.Filter(
            source=self.source, project=self.project, role=self.role,
            conversation_id=self.conversation_id,
            since=_as_utc(self.since), until=_as_utc(self.until),
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
    pools: list[str] = field(default_factory=list)  # "dense", "keyword": who found it
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
    if k <= 0 or not query.strip():
        return []
    fusion = fusion or DEFAULT_FUSION
    f = (filters or SearchFilters()).to_store()
    pool = max(POOL_MIN, k)
    if mode in ("hybrid", "dense"):
        embedder = embedder or get_embedder()

    def run(conn: psycopg.Connection) -> tuple:
        dense: list[tuple[int, float]] = []
        keyword: list[tuple[int, float]] = []
        vector = None
        dims = 0
        n_rows = _estimate(conn, f)  # the planner's guess, for both pools
        if embedder is not None and mode in ("hybrid", "dense"):
            dims = _searchable_dims(conn, embedder.name)
            if dims is None:
                raise SearchError(
                    f"no embeddings for model {embedder.name!r} yet: run `memory-platform "
                    f"embed` first (or search with mode='keyword')"
                )
            vector = embedder.embed([query])[0]
            dense = _dense_pool(conn, embedder.name, dims, vector, pool, f, k, n_rows)
        weights: dict[str, float] = {}
        if mode in ("hybrid", "keyword"):
            freq = _lexeme_freqs(conn, query, f, n_rows)
            weights = _weights(freq)
            lexemes, require_all = _pool_lexemes(freq, weights, n_rows)
            keyword = event_search.keyword_pool(conn, lexemes, pool, f, require_all=require_all)
        candidates = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in keyword]))
        dense_rank = {i: r for r, (i, _) in enumerate(dense, 1)}
        keyword_rank = {i: r for r, (i, _) in enumerate(keyword, 1)}
        # Stage two: both signals for every candidate, from the candidates' rows only.
        dense_full = (event_search.dense_scores(conn, embedder.name, dims, vector, candidates)
                      if vector is not None else {})
        keyword_full = event_search.keyword_scores(conn, weights, candidates) if weights else {}
        scores = _fuse(mode, fusion, candidates, dense_full, keyword_full, dense_rank,
                       keyword_rank)
        top = sorted(candidates, key=lambda i: (-scores[i], i))[:k]
        rows = event_reads.fetch_hits(conn, top)
        return top, rows, scores, dense_full, dense_rank, keyword_rank

    top, rows, scores, dense_full, dense_rank, keyword_rank = _on_connection(db, run)
    hits = []
    for i in top:
        row = dict(zip(event_reads.HIT_COLUMNS, rows[i], strict=True))
        d = dense_full.get(i)
        hits.append(Hit(
            event_id=i, source=row["source"], conversation_id=row["conversation_id"],
            occurred_at=row["occurred_at"], role=row["role"], kind=row["kind"],
            project=row["project"], author=row["author"], text=row["text"],
            score=round(scores[i], 6),
            pools=[p for p, ranks in (("dense", dense_rank), ("keyword", keyword_rank))
                   if i in ranks],
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


def _dense_pool(conn: psycopg.Connection, model: str, dims: int, vector: np.ndarray,
                pool: int, f: event_search.Filter, k: int,
                expected: int | None = None) -> list[tuple[int, float]]:
    """pgvector 0.6 filters after the HNSW scan (no iterative scans), so a selective filter
    could leave fewer than k rows. Small filtered subsets are searched exactly; otherwise
    the probe is oversampled by the filter's selectivity and widened until k survive, with
    exact search as the last resort (correct, only slower)."""
    if f.empty:
        return event_search.dense_pool(conn, model, dims, vector, pool)
    expected = _estimate(conn, f) if expected is None else expected
    if expected <= EXACT_MAX_ROWS:
        return event_search.dense_pool(conn, model, dims, vector, pool, f, exact=True)
    total = max(1, _estimate(conn, event_search.Filter()))
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


_stats: dict = {}  # dsn -> (when, lexeme frequencies, floor); ("rows", dsn) -> (when, rows)
_stats_lock = threading.Lock()
STATS_TTL_SECONDS = 300.0


def lexeme_weights(conn: psycopg.Connection, query: str,
                   f: event_search.Filter | None = None) -> dict[str, float]:
    """The query's lexemes with IDF weights (see _lexeme_freqs), very common lexemes
    dropped."""
    f = f or event_search.Filter()
    return _weights(_lexeme_freqs(conn, query, f, _estimate(conn, f)))


def _weights(freq: dict[str, float]) -> dict[str, float]:
    if not freq:
        return {}
    kept = [lex for lex in freq if freq[lex] <= MAX_LEXEME_FREQ]
    if not kept:
        kept = sorted(freq, key=lambda lex: freq[lex])[:2]
    return {lex: math.log(1 + 1 / freq[lex]) for lex in kept}


def _lexeme_freqs(conn: psycopg.Connection, query: str, f: event_search.Filter,
                  rows: int) -> dict[str, float]:
    """Fraction of the searched events holding each query lexeme. For a filter expected to
    keep at most SCOPED_IDF_MAX_ROWS events the fractions are counted in that subset (a
    word common in one conversation, such as its speakers' names, is no evidence there
    even when rare overall); otherwise they come from the planner's statistics of
    `events.text_search` (1.0 each when never analyzed)."""
    lexemes = event_search.query_lexemes(conn, query)
    if not lexemes:
        return {}
    if not f.empty and rows <= SCOPED_IDF_MAX_ROWS:
        total, counts = event_search.lexeme_counts(conn, lexemes, f)
        if total:
            return {lex: max(counts[lex], 0.5) / total for lex in lexemes}
    key = conn.info.dsn
    with _stats_lock:
        cached = _stats.get(key)
    if cached is None or time.monotonic() - cached[0] > STATS_TTL_SECONDS:
        freqs, floor = event_search.lexeme_frequencies(conn)
        cached = (time.monotonic(), freqs, floor)
        with _stats_lock:
            _stats[key] = cached
    _, freqs, floor = cached
    if not freqs:  # never analyzed: all lexemes weigh the same (log(1 + 1/(e - 1)) = 1)
        return dict.fromkeys(lexemes, 1 / (math.e - 1))
    unseen = max(floor / 2, 1e-6)  # below the statistics' floor
    return {lex: freqs.get(lex, unseen) for lex in lexemes}


def _pool_lexemes(freq: dict[str, float], weights: dict[str, float],
                  rows: int) -> tuple[dict[str, float], bool]:
    """The lexemes the stage-one keyword pool queries, and whether an event must hold all
    of them. Every matched row's tsvector is read and scored, so the query is kept to about
    KEYWORD_MATCH_BUDGET expected rows (of the `rows` the filter keeps):
    - an OR of the rarest lexemes while it stays within the budget (a question rarely
      shares every word with its answer);
    - when even the rarest matches more (every word is common here: "family" is in 3% of
      1M events), an AND of the rarest lexemes until the expected matches (assuming
      independence) fit: fewer, more precise rows;
    - when even that would match more than KEYWORD_MATCH_CAP rows, no keyword pool: words
      that common are no lexical evidence, and the dense pool covers the query.
    The dropped lexemes still count in stage two, where all weights score the candidates."""
    if not weights:
        return {}, False
    order = sorted(weights, key=lambda lex: freq.get(lex, 1.0))
    if freq.get(order[0], 1.0) * rows <= KEYWORD_MATCH_BUDGET:
        chosen: dict[str, float] = {}
        expected = 0.0
        for lex in order:
            expected += freq.get(lex, 1.0) * rows
            if chosen and expected > KEYWORD_MATCH_BUDGET:
                break
            chosen[lex] = weights[lex]
        return chosen, False
    chosen, expected = {}, float(rows)
    for lex in order:
        chosen[lex] = weights[lex]
        expected *= freq.get(lex, 1.0)
        if expected <= KEYWORD_MATCH_BUDGET:
            break
    if expected > KEYWORD_MATCH_CAP:
        return {}, False
    return chosen, len(chosen) > 1


# --- connections and per-database facts ------------------------------------------------------

_held = threading.local()


def _on_connection(db: Database, fn: Callable[[psycopg.Connection], T]) -> T:
    """fn(conn) on the calling thread's kept connection to `db`. Opening a connection costs
    ~5 ms (far more on a loaded machine: a new backend process and cold caches), a large
    share of the latency budget, and the MCP server and the API search repeatedly on the
    same Database. One connection per (thread, Database), closed when the Database object
    is collected. A kept connection found dead (server restart, idle timeout) is replaced
    and the call retried once; one left broken or inside a transaction is dropped."""
    for attempt in range(2):
        conn, reused = _held_connection(db)
        try:
            return fn(conn)
        except psycopg.OperationalError:
            if _reusable(conn):
                raise
            _drop(db, conn)
            if attempt == 0 and reused:
                continue
            raise
        except BaseException:
            if not _reusable(conn):
                _drop(db, conn)
            raise
    raise AssertionError("unreachable")


def _held_connection(db: Database) -> tuple[psycopg.Connection, bool]:
    held = getattr(_held, "conns", None)
    if held is None:
        held = _held.conns = weakref.WeakKeyDictionary()
    entry = held.get(db)  # (the open db.connect() context, its connection)
    if entry is not None:
        if _reusable(entry[1]):
            return entry[1], True
        _drop(db, entry[1])
    opened = db.connect()  # kept referenced: collecting it would close the connection
    entry = (opened, opened.__enter__())
    held[db] = entry
    weakref.finalize(db, entry[1].close)
    return entry[1], False


def _drop(db: Database, conn: psycopg.Connection) -> None:
    held = getattr(_held, "conns", None)
    if held is not None and held.get(db, (None, None))[1] is conn:
        del held[db]
    conn.close()


def _reusable(conn: psycopg.Connection) -> bool:
    return not (conn.closed or conn.broken) and \
        conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


_facts: dict[tuple[str, str], int] = {}  # (dsn, model) -> dims, once it has vectors
_facts_lock = threading.Lock()


def _searchable_dims(conn: psycopg.Connection, model: str) -> int | None:
    """The model's dimension if it has vectors in this database, else None. A positive
    answer is cached per process (vectors are not deleted under a running search); a
    negative one is asked again next time, so `embed` is seen at once."""
    key = (conn.info.dsn, model)
    with _facts_lock:
        dims = _facts.get(key)
    if dims is not None:
        return dims
    dims = embedding_store.model_dims(conn, model)
    if dims is None or not embedding_store.has_vectors(conn, model):
        return None
    with _facts_lock:
        _facts[key] = dims
    return dims


def _estimate(conn: psycopg.Connection, f: event_search.Filter) -> int:
    """The planner's row estimate for the filter; the unfiltered table's is cached with the
    lexeme statistics (it changes only with ANALYZE)."""
    if not f.empty:
        return event_search.estimate_filtered(conn, f)
    key = ("rows", conn.info.dsn)
    with _stats_lock:
        cached = _stats.get(key)
    if cached is None or time.monotonic() - cached[0] > STATS_TTL_SECONDS:
        cached = (time.monotonic(), event_search.estimate_filtered(conn, f))
        with _stats_lock:
            _stats[key] = cached
    return cached[1]


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

    event, earlier, later = _on_connection(db, run)
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
                            since=_as_utc(since) if since is not None else f.since,
                            until=_as_utc(until) if until is not None else f.until)
    rows = _on_connection(db, lambda conn: event_search.timeline(conn, f))
    return [{"day": day, "source": source, "events": n} for day, source, n in rows]


def _as_utc(value: datetime | date | str | None) -> datetime | None:
    """Aware UTC datetimes; a date means its UTC midnight, a naive datetime is UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        value = datetime.combine(value, dtime.min)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def _json_safe(row: dict) -> dict:
    return {("event_id" if k == "id" else k): v.isoformat() if isinstance(v, datetime) else v
            for k, v in row.items()}
