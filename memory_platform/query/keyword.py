"""The keyword side of search: IDF weights of a query's lexemes (from the table's
statistics, or counted inside a small filtered subset), which lexemes the stage-one
keyword pool queries so that it scores about KEYWORD_MATCH_BUDGET rows, and the
identifier-like tokens of a query (error codes, ticket ids, hashes, paths, function
names) that search matches exactly. A long query is searched by its first
store.event_search.MAX_QUERY_LEXEMES lexemes and first MAX_IDENTIFIERS identifiers, in
query order."""

import math
import re
import threading
import time

import psycopg

from memory_platform.store import event_search as store

# Lexemes in more than this fraction of events carry almost no signal and make the OR query
# match most of the table; they are dropped (unless the query has nothing rarer).
MAX_LEXEME_FREQ = 0.2
# Rows the stage-one keyword query may be expected to match (and score); see pool_lexemes.
# Every matched row's tsvector is read and scored: at 100k events 5,000 rows cost ~50 ms
# p50, 1,000 rows ~10 ms (BENCHMARKS.md).
KEYWORD_MATCH_BUDGET = 1_000
# Above this many expected matches even for the AND of the query's lexemes, the keyword
# pool is skipped (see pool_lexemes). At 1M events, one lexeme in 30k events cost 229 ms.
KEYWORD_MATCH_CAP = 4 * KEYWORD_MATCH_BUDGET
# Filters expected to keep at most this many events get their lexeme frequencies (IDF)
# counted in the filtered subset; broader ones use the table's statistics.
# Counting costs a pass over the subset's tsvectors, so only small subsets (a conversation,
# a few days): +1.1 points of LoCoMo hybrid recall@10 with conversation filters.
SCOPED_IDF_MAX_ROWS = 5_000

# Without table statistics, lexemes are counted up to this many events each (a GIN lookup
# and at most this many row checks per lexeme).
NO_STATS_COUNT_CAP = 5_000

_stats: dict = {}  # dsn -> (when, lexeme frequencies, floor); ("rows", dsn) -> (when, rows)
_stats_lock = threading.Lock()
STATS_TTL_SECONDS = 300.0


def lexeme_weights(conn: psycopg.Connection, query: str,
                   f: store.Filter | None = None) -> dict[str, float]:
    """The query's lexemes with IDF weights (see lexeme_freqs), very common lexemes
    dropped."""
    f = f or store.Filter()
    return idf_weights(lexeme_freqs(conn, query, f, estimate_rows(conn, f)))


def idf_weights(freq: dict[str, float]) -> dict[str, float]:
    if not freq:
        return {}
    kept = [lex for lex in freq if freq[lex] <= MAX_LEXEME_FREQ]
    if not kept:
        kept = sorted(freq, key=lambda lex: freq[lex])[:2]
    return {lex: math.log(1 + 1 / freq[lex]) for lex in kept}


def lexeme_freqs(conn: psycopg.Connection, query: str, f: store.Filter,
                  rows: int) -> dict[str, float]:
    """Fraction of the searched events holding each query lexeme. For a filter expected to
    keep at most SCOPED_IDF_MAX_ROWS events the fractions are counted in that subset (a
    word common in one conversation, such as its speakers' names, is no evidence there
    even when rare overall); otherwise they come from the planner's statistics of
    `events.text_search` (1.0 each when never analyzed)."""
    lexemes = store.query_lexemes(conn, query)
    if not lexemes:
        return {}
    if not f.empty and rows <= SCOPED_IDF_MAX_ROWS:
        total, counts = store.lexeme_counts(conn, lexemes, f)
        if total:
            return {lex: max(counts[lex], 0.5) / total for lex in lexemes}
    key = conn.info.dsn
    with _stats_lock:
        cached = _stats.get(key)
    if cached is None or time.monotonic() - cached[0] > STATS_TTL_SECONDS:
        freqs, floor = store.lexeme_frequencies(conn)
        cached = (time.monotonic(), freqs, floor)
        if freqs:  # no statistics yet is not cached: the next search looks again
            with _stats_lock:
                _stats[key] = cached
    _, freqs, floor = cached
    if not freqs:
        # Never analyzed (a first import, before autovacuum's ANALYZE): count the query's
        # lexemes, each up to NO_STATS_COUNT_CAP events, so keyword search works the moment
        # a file is imported. Before, every lexeme got the same guessed frequency (0.58),
        # which made the keyword pool skip all of them over a few thousand events.
        counts = store.lexeme_counts_capped(conn, lexemes, NO_STATS_COUNT_CAP)
        return {lex: max(counts[lex], 0.5) / max(rows, 1) for lex in lexemes}
    unseen = max(floor / 2, 1e-6)  # below the statistics' floor
    return {lex: freqs.get(lex, unseen) for lex in lexemes}


def pool_lexemes(freq: dict[str, float], weights: dict[str, float],
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


def estimate_rows(conn: psycopg.Connection, f: store.Filter) -> int:
    """The planner's row estimate for the filter; the unfiltered table's is cached with the
    lexeme statistics (it changes only with ANALYZE)."""
    if not f.empty:
        return store.estimate_filtered(conn, f)
    key = ("rows", conn.info.dsn)
    with _stats_lock:
        cached = _stats.get(key)
    if cached is None or time.monotonic() - cached[0] > STATS_TTL_SECONDS:
        cached = (time.monotonic(), store.estimate_filtered(conn, f))
        with _stats_lock:
            _stats[key] = cached
    return cached[1]


# --- identifiers -------------------------------------------------------------------------

# Each identifier costs search one indexed lookup and a regular expression over the events
# holding it: a query is searched by its first MAX_IDENTIFIERS (a pasted log has hundreds).
MAX_IDENTIFIERS = 16
# Characters trimmed from a query word before judging it: quotes, brackets and sentence
# punctuation around an identifier are not part of it ("(E0502)," is E0502).
_TRIM = "\"'`()[]{}<>,;:!?*"
_ORDINAL = re.compile(r"\d+(st|nd|rd|th)", re.IGNORECASE)
_SHAPES = (
    re.compile(r"(?=.*[A-Za-z])(?=.*\d).{3,}"),  # letters and digits: E0502, sha256, v1.2
    re.compile(r".*\w_\w.*"),  # snake_case, HTTP_404
    re.compile(r".*[a-z][A-Z].*"),  # camelCase, getUserById
    re.compile(r".*\w{2,}\.\w{2,}.*"),  # dotted: bar.py, os.path.join (not "U.S." / "e.g.")
    re.compile(r"(?:[~.]?/)?[\w.-]+(?:/[\w.-]+){2,}/?|[~.]?/[\w.-]+.*"),  # paths, not "and/or"
    re.compile(r"\d{5,}"),  # long numbers (not years, not "2nd")
    re.compile(r"[0-9a-fA-F]{8,}"),  # hex runs: deadbeef
)


def identifier_tokens(query: str) -> list[str]:
    """The words of `query` shaped like identifiers (letters mixed with digits, snake_case,
    camelCase, dotted names, paths, long numbers, hex), trimmed of surrounding punctuation,
    in query order without repeats, at most MAX_IDENTIFIERS. Whether one is *rare* is
    decided against the searched events (search.py); a shape alone proves nothing ("mp3"
    is common)."""
    found: list[str] = []
    for word in query.split():
        if len(found) >= MAX_IDENTIFIERS:
            break
        token = word.strip(_TRIM).rstrip(".")
        token = token[:-2] if token.endswith(("'s", "’s")) else token
        if len(token) < 3 or _ORDINAL.fullmatch(token):
            continue
        if any(shape.fullmatch(token) for shape in _SHAPES) and token not in found:
            found.append(token)
    return found
