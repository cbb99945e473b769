"""Hybrid search, context and timeline over a real PostgreSQL."""

import re

import psycopg
import pytest
from psycopg import sql

from helpers.embeddings import HashEmbedder, add_events, at, local_embedder  # noqa: F401
from memory_platform.query import connections, keyword, reading
from memory_platform.query import search as service
from memory_platform.query.embeddings import embed_missing
from memory_platform.query.search import SearchError, SearchFilters
from memory_platform.store import embeddings as embedding_store
from memory_platform.store import event_search

CHATTER = [
    "can you refactor the settings loader to read from the environment",
    "the unit tests pass now, thanks for the help",
    "let's rename the module to something clearer",
    "please add type hints to the public functions",
    "how do I write a pytest fixture that yields a temporary folder",
    "the dashboard loads slowly when there are many projects",
    "we should cache the parsed configuration between runs",
    "make the command line print a progress bar while importing",
    "I prefer small commits with clear messages",
    "the export contains three years of conversations",
]
UUID = "3f2a9c1e-7b4d-4e8a-9c0f-12ab34cd56ef"
TARGETS = {
    "uuid": f"the request {UUID} was retried twice and then dropped",
    "code": "psql failed with ORA-00942 when the view was missing",
    "path": "edit /etc/nginx/sites-enabled/tidepool.conf and reload the proxy",
    "disk": "The database server ran out of disk space overnight",
}


@pytest.fixture
def corpus(db, local_embedder):  # noqa: F811
    items = [{"native_id": f"c{i}", "text": t, "occurred_at": at(1, 9, i),
              "conversation": "conv-1", "role": "user" if i % 2 else "assistant"}
             for i, t in enumerate(CHATTER)]
    items += [{"native_id": name, "text": t, "occurred_at": at(2, 10, i),
               "conversation": "conv-2", "project": "/home/me/tidepool"}
              for i, (name, t) in enumerate(TARGETS.items())]
    ids = add_events(db, "claude-code", items)
    embed_missing(db, local_embedder)
    with db.connect() as conn:
        conn.execute("ANALYZE events")
    return dict(zip([i["native_id"] for i in items], ids, strict=True))


@pytest.mark.parametrize("name, query", [
    ("uuid", UUID), ("code", "ORA-00942"), ("path", "/etc/nginx/sites-enabled/tidepool.conf"),
])
def test_exact_tokens_are_found_by_the_keyword_pool(db, corpus, local_embedder, name,  # noqa: F811
                                                    query):
    hits = service.search(db, query, k=5, embedder=local_embedder)
    assert hits[0].event_id == corpus[name]
    assert "keyword" in hits[0].pools and hits[0].keyword_rank == 1
    data = hits[0].to_dict()
    assert {"event_id", "source", "conversation_id", "occurred_at", "role", "text", "score",
            "kind", "project", "pools"} <= set(data)
    assert data["project"] == "/home/me/tidepool" and isinstance(data["occurred_at"], str)


def test_a_paraphrase_is_found_by_the_dense_pool(db, corpus, local_embedder):  # noqa: F811
    query = "storage filled up on the postgres machine last night"
    assert corpus["disk"] not in [h.event_id for h in service.search(db, query, mode="keyword")]
    hits = service.search(db, query, k=3, embedder=local_embedder)
    assert hits[0].event_id == corpus["disk"] and hits[0].pools == ["dense"]
    dense = service.search(db, query, k=3, mode="dense", embedder=local_embedder)
    assert dense[0].event_id == corpus["disk"] and dense[0].span == (0, len(TARGETS["disk"]))


def test_dense_search_without_vectors_says_to_embed(db):
    add_events(db, "notes", [{"native_id": "a", "text": "hello", "occurred_at": at(1)}])
    with pytest.raises(SearchError, match="memory-platform embed"):
        service.search(db, "hello", mode="dense", embedder=HashEmbedder())
    # hybrid, the default, is a keyword search until there are vectors (issue 22)
    assert service.search(db, "hello", embedder=HashEmbedder())[0].text == "hello"
    assert service.search(db, "hello", mode="keyword")[0].text == "hello"


@pytest.fixture
def many(db):
    """400 events: source a (390) and b (10), roles alternating, days 1-4; hash vectors."""
    embedder = HashEmbedder("hash-16", 16)
    items = [{"native_id": f"n{i}", "text": f"note {i} about topic {i % 7}",
              "occurred_at": at(1 + i % 4, 8, i % 60), "conversation": f"conv-{i % 3}",
              "role": "user" if i % 2 else "assistant"} for i in range(390)]
    ids = add_events(db, "a", items)
    ids += add_events(db, "b", [{"native_id": f"b{i}", "text": f"bravo note {i}",
                                 "occurred_at": at(3, 9, i)} for i in range(10)])
    embed_missing(db, embedder)
    with db.connect() as conn:
        conn.execute("ANALYZE")
    return embedder, ids


@pytest.mark.parametrize("strategy", ["auto", "hnsw-oversampled"])
@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_filtered_searches_still_return_k(db, many, monkeypatch, strategy, mode):
    embedder, _ = many
    if strategy != "auto":  # force the HNSW probe even for tiny subsets
        monkeypatch.setattr(service, "EXACT_MAX_VECTORS", -1)
        monkeypatch.setattr(service, "EXACT_MAX_ROWS", -1)
        monkeypatch.setattr(service, "POOL_MIN", 10)
    selective = service.search(db, "note", k=8, filters=SearchFilters(source="b"), mode=mode,
                               embedder=embedder)
    assert len(selective) == 8 and {h.source for h in selective} == {"b"}
    broad = service.search(db, "note", k=25, filters=SearchFilters(role="user"), mode=mode,
                           embedder=embedder)
    assert len(broad) == 25 and {h.role for h in broad} == {"user"}
    both = service.search(db, "note", k=10, mode=mode, embedder=embedder,
                          filters=SearchFilters(source="a", role="user",
                                                since=at(2, 0), until=at(3, 0)))
    assert len(both) == 10
    assert all(at(2, 0) <= h.occurred_at < at(3, 0) and h.role == "user" for h in both)
    everything = service.search(db, "bravo", k=50, filters=SearchFilters(source="b"),
                                mode=mode, embedder=embedder)
    assert len(everything) == 10, "all of a subset smaller than k, and nothing else"


def test_date_ranges_accept_dates_and_strings(db, many):
    embedder, _ = many
    hits = service.search(db, "note", k=20, mode="keyword",
                          filters=SearchFilters(since="2026-03-02", until="2026-03-03"))
    assert hits and all(h.occurred_at.day == 2 for h in hits)


def test_search_never_mixes_models(db):
    a, b = HashEmbedder("hash-a", 8), HashEmbedder("hash-b", 12)
    ids = add_events(db, "notes", [{"native_id": f"n{i}", "text": f"note {i}",
                                    "occurred_at": at(1 + i % 2)} for i in range(40)])
    embed_missing(db, a, start=at(1, 0), end=at(2, 0))  # only day 1 for model a
    embed_missing(db, b)
    day1 = {i for n, i in enumerate(ids) if n % 2 == 0}
    found_a = {h.event_id for h in service.search(db, "note", k=40, mode="dense", embedder=a)}
    found_b = {h.event_id for h in service.search(db, "note", k=40, mode="dense", embedder=b)}
    assert found_a == day1 and found_b == set(ids)


def test_get_event_with_context_and_timeline(db, corpus):
    middle = corpus["c5"]
    found = reading.get_event(db, middle, before=2, after=3)
    assert found["event"]["event_id"] == middle and found["event"]["text"] == CHATTER[5]
    assert [e["text"] for e in found["before"]] == CHATTER[3:5]
    assert [e["text"] for e in found["after"]] == CHATTER[6:9]
    assert "raw" not in found["event"] and isinstance(found["event"]["occurred_at"], str)
    edge = reading.get_event(db, corpus["c0"], before=5, after=0)
    assert edge["before"] == [] and edge["after"] == []
    assert reading.get_event(db, 10**12) is None
    days = reading.timeline(db, since=at(1, 0), until=at(3, 0))
    # per machine too (issue 24): all of these were imported here, by the local machine
    assert days == [{"day": "2026-03-01", "source": "claude-code", "events": len(CHATTER),
                     "machine": "local"},
                    {"day": "2026-03-02", "source": "claude-code", "events": len(TARGETS),
                     "machine": "local"}]
    assert reading.timeline(db, since=at(2, 0), until=at(3, 0),
                            filters=SearchFilters(source="notes")) == []


def test_the_embedding_column_is_read_only_where_scored(db, corpus, local_embedder,  # noqa: F811
                                                        monkeypatch):
    statements: list[str] = []
    original = psycopg.Cursor.execute

    def recording(self, query, params=None, **kwargs):
        text = query.as_string(self) if isinstance(query, sql.Composable) else str(query)
        statements.append(text)
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", recording)
    service.search(db, "disk space", k=5, embedder=local_embedder)
    service.search(db, "disk space", k=5, embedder=local_embedder,
                   filters=SearchFilters(source="claude-code"))
    service.search(db, "disk space", k=5, mode="keyword")
    monkeypatch.setattr(service, "EXACT_MAX_VECTORS", -1)
    service.search(db, "disk space", k=5, embedder=local_embedder)
    monkeypatch.setattr(service, "EXACT_MAX_ROWS", -1)
    service.search(db, "disk space", k=5, embedder=local_embedder,
                   filters=SearchFilters(role="user"))
    searches = list(statements)
    reading.get_event(db, corpus["c5"], before=2, after=2)
    reading.timeline(db, since=at(1, 0), until=at(9, 0))
    others = statements[len(searches):]
    scored = re.compile(r"ee\.embedding::vector\(\d+\) <=> ")
    assert any(scored.search(s) for s in searches)
    for statement in searches:
        rest = re.sub(r"event_embeddings|embedding_models", "", scored.sub("", statement))
        assert "embedding" not in rest, statement
        assert not re.search(r"SELECT\s+\*", statement, re.I), statement
    for statement in others:
        assert "embedding" not in statement and "e.raw" not in statement, statement


def test_explain_uses_the_hnsw_index_for_the_unfiltered_dense_pool(db):
    embedder = HashEmbedder("hash-explain", 8)
    add_events(db, "notes", [{"native_id": f"n{i}", "text": f"note {i}",
                              "occurred_at": at(1)} for i in range(3000)])
    embed_missing(db, embedder)
    with db.connect() as conn:
        conn.execute("ANALYZE event_embeddings")
        query = event_search.dense_ann_sql(embedder.name, embedder.dims)
        vector = embedder.embed(["probe"])[0]
        params = {"q": embedding_store.vector_literal(vector), "pool": 10, "probe": 40}
        plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + query, params))
    assert f"Index Scan using {embedding_store.index_name(embedder.name)}" in plan, plan


def test_lexeme_weights_are_counted_in_a_small_filtered_subset(db):
    """A speaker's name is in every turn of their conversation: no evidence there, even
    though it is rare in the whole store."""
    items = [{"native_id": f"x{i}", "text": f"Alice: topic {i} about the garden",
              "occurred_at": at(1, 9, i % 60), "conversation": "talk"} for i in range(30)]
    items[7]["text"] = "Alice: we should cache the parsed configuration"
    items += [{"native_id": f"o{i}", "text": f"unrelated note {i} on databases",
               "occurred_at": at(2, 9, i % 60), "conversation": f"other-{i % 20}"}
              for i in range(400)]
    ids = add_events(db, "claude-ai", items)
    with db.connect() as conn:
        conv = conn.execute("SELECT conversation_id FROM events WHERE id = %s",
                            (ids[0],)).fetchone()[0]
        everywhere = keyword.lexeme_weights(conn, "Alice cache")
        in_talk = keyword.lexeme_weights(conn, "Alice cache",
                                         event_search.Filter(conversation_id=conv))
    assert set(everywhere) == {"alic", "cach"}, "7% of all events: a useful word"
    assert set(in_talk) == {"cach"}, "100% of the conversation: dropped"
    hits = service.search(db, "Alice cache", k=3, mode="keyword",
                          filters=SearchFilters(conversation_id=conv))
    assert hits[0].event_id == ids[7]


def test_searches_reuse_one_connection_and_survive_its_loss(db, many):
    embedder, _ = many

    def backend(conn):
        return conn.info.backend_pid

    first = connections.on_connection(db, backend)
    service.search(db, "note", k=5, embedder=embedder)
    service.search(db, "note", k=5, mode="keyword")
    assert connections.on_connection(db, backend) == first, "one backend for the thread"
    with db.connect() as admin:  # the server drops it (a restart, an idle timeout)
        admin.execute("SELECT pg_terminate_backend(%s)", (first,))
    hits = service.search(db, "note", k=5, embedder=embedder)
    assert len(hits) == 5, "a dead kept connection is replaced and the search retried"
    second = connections.on_connection(db, backend)
    assert second != first
    with pytest.raises(psycopg.errors.UndefinedTable):  # real errors still surface
        connections.on_connection(db, lambda conn: conn.execute("SELECT * FROM nowhere"))
    assert connections.on_connection(db, backend) == second, "a failed query keeps it"


def test_the_hnsw_probe_size_is_set_once_per_connection(db, many, monkeypatch):
    embedder, _ = many
    monkeypatch.setattr(service, "EXACT_MAX_VECTORS", -1)  # the index, not an exact scan
    monkeypatch.setattr(service, "EXACT_MAX_ROWS", -1)  # filtered: oversampled HNSW
    statements: list[str] = []
    original = psycopg.Connection.execute

    def recording(self, query, params=None, **kwargs):
        statements.append(query.as_string(self) if isinstance(query, sql.Composable)
                          else str(query))
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", recording)
    for _ in range(3):
        service.search(db, "note", k=10, embedder=embedder)
    sets = [s for s in statements if "ef_search" in s]
    assert sets == [f"SET hnsw.ef_search = {service.MIN_PROBE}"], sets
    service.search(db, "note", k=10, embedder=embedder, filters=SearchFilters(role="user"))
    service.search(db, "note", k=10, embedder=embedder)
    sets = [s for s in statements if "ef_search" in s]
    assert len(sets) >= 3 and sets[-1] == f"SET hnsw.ef_search = {service.MIN_PROBE}"
    assert connections.on_connection(db, lambda conn: conn.execute(
        "SHOW hnsw.ef_search").fetchone()[0]) == str(service.MIN_PROBE)


def test_the_keyword_pool_narrows_to_an_and_when_every_word_is_common(db, monkeypatch):
    """Each matched row is read and scored, so the stage-one query stays near the budget:
    an OR of rare words; an AND when even the rarest word is common; nothing (the dense
    pool covers it) when even the AND would match too much."""
    budget = keyword.KEYWORD_MATCH_BUDGET
    rows = 1_000_000
    freq = {"famili": 0.03, "melani": 0.05, "support": 0.01, "ora-00942": 1e-6}
    weights = dict.fromkeys(freq, 1.0)
    lexemes, require_all = keyword.pool_lexemes(freq, weights, rows)
    assert (set(lexemes), require_all) == ({"ora-00942"}, False)  # rare first, OR within budget
    common = {k: v for k, v in freq.items() if k != "ora-00942"}
    lexemes, require_all = keyword.pool_lexemes(common, dict.fromkeys(common, 1.0), rows)
    assert require_all and list(lexemes) == ["support", "famili"]  # rarest first
    assert rows * 0.01 > budget >= rows * 0.01 * 0.03
    alone = {"famili": 0.03}
    assert keyword.pool_lexemes(alone, dict.fromkeys(alone, 1.0), rows) == ({}, False)
    small = keyword.pool_lexemes(common, dict.fromkeys(common, 1.0), 5_000)
    assert small == ({"support": 1.0, "famili": 1.0, "melani": 1.0}, False)

    # Against PostgreSQL: the AND pool returns only events holding every lexeme.
    items = [{"native_id": f"g{i}", "text": f"the garden party {i}",
              "occurred_at": at(1, 9, i % 60)} for i in range(40)]
    items += [{"native_id": f"h{i}", "text": f"garden hose number {i}",
               "occurred_at": at(1, 10, i % 60)} for i in range(40)]
    add_events(db, "notes", items)
    monkeypatch.setattr(keyword, "KEYWORD_MATCH_BUDGET", 10)
    monkeypatch.setattr(keyword, "KEYWORD_MATCH_CAP", 40)
    hits = service.search(db, "garden party", k=50, mode="keyword")
    assert hits and all("party" in h.text for h in hits)
    monkeypatch.setattr(keyword, "KEYWORD_MATCH_CAP", 5)
    assert service.search(db, "garden party", k=50, mode="keyword") == []
