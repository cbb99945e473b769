"""Exact identifiers (issue 12): a query that is, or contains, a rare identifier-shaped
token (an error code, a ticket id, a hash, a path, a function name) finds the events that
hold it in the top 3 of the default hybrid search, even when many dense neighbours look
more alike; and keyword search works on a table that was never analyzed."""

import pytest

from helpers.embeddings import add_events, at
from memory_platform.adapters.base import Event
from memory_platform.ingest.rows import event_row
from memory_platform.query import keyword
from memory_platform.query import search as service
from memory_platform.query.embeddings import embed_missing, get_embedder
from memory_platform.query.keyword import identifier_tokens
from memory_platform.store import events as event_store

# Each identifier sits in one long event about something else, so its embedding is far
# from the query's; the look-alikes (other codes, tickets, hashes, paths) are close.
TARGETS = {
    "E0502": "so after lunch we went through the whole parser again and it turned out the "
             "lifetime of the token buffer was the problem, rustc said E0502 and I moved "
             "the push out of the loop, then the benchmarks looked fine",
    "TICKET-1234": "the design review is on Thursday; please read the notes before, and "
                   "TICKET-1234 has the screenshots from the customer call",
    "a1b2c3d4e5f6": "rebased onto main and the deploy went out at a1b2c3d4e5f6, nothing "
                    "else changed in the release notes this week",
    "src/ingest/zip_reader.py": "I spent the morning on the garden and then read "
                                "src/ingest/zip_reader.py to see how members are listed",
    "some_func_name": "the profiler says some_func_name is called twice per request, "
                      "which explains the latency we saw on the dashboard yesterday",
    "3f2a9c1e-7b4d-4e8a-9c0f-12ab34cd56ef": "customer asked about request "
        "3f2a9c1e-7b4d-4e8a-9c0f-12ab34cd56ef again; I told them we are still looking",
    "getUserById": "lunch was late today; afterwards we renamed getUserById in the client "
                   "and the old name is gone from the docs",
}
LOOKALIKES = [
    "rustc error E0499: cannot borrow as mutable more than once at a time",
    "error E0382: borrow of moved value in the tokenizer",
    "compiler error E0597 borrowed value does not live long enough",
    "E0308 mismatched types in the config loader",
    "TICKET-1180 covers the login page redesign",
    "TICKET-1301 is the ticket for the export bug",
    "see ticket TICKET-0999 for the customer call notes",
    "commit 9f8e7d6c5b4a fixed the release script",
    "the hash ffee1122aabb is the previous deploy",
    "src/ingest/catalog.py lists the files of an import",
    "src/ingest/importer.py reads zip members one by one",
    "the function name parse_member_name is too long",
    "call the func with a name argument, the func name is fine",
    "request 0b6c1d2e-0000-4a4a-8b8b-aaaabbbbcccc failed with a timeout",
    "getUserByEmail returns None when the user is missing",
    "findUserById is the old name of the lookup",
    # near misses: one character or one word away
    "E0503", "error E0501", "TICKET-1243", "TICKET-1235 done", "a1b2c3d4e5f7",
    "src/ingest/zip_writer.py", "some_other_func_name", "getUserByIds",
    "3f2a9c1e-7b4d-4e8a-9c0f-12ab34cd56e0",
]
CHATTER = [f"note {i}: we talked about the cache, the index and the weekly plan"
           for i in range(30)]


@pytest.fixture
def corpus(db):
    items = [{"native_id": f"t{i}", "text": text, "occurred_at": at(3, 10, i),
              "conversation": f"c{i}"} for i, text in enumerate(TARGETS.values())]
    items += [{"native_id": f"l{i}", "text": text, "occurred_at": at(2, 9, i),
               "conversation": f"look{i}"} for i, text in enumerate(LOOKALIKES)]
    items += [{"native_id": f"n{i}", "text": text, "occurred_at": at(1, 8, i),
               "conversation": "chat"} for i, text in enumerate(CHATTER)]
    ids = add_events(db, "claude-code", items)
    embed_missing(db, get_embedder())  # the default embedder (local-ctx2)
    return dict(zip(TARGETS, ids, strict=False))


def _rank(db, query: str, event_id: int, **kwargs) -> int | None:
    hits = service.search(db, query, k=10, **kwargs)
    ranked = [h.event_id for h in hits]
    return ranked.index(event_id) + 1 if event_id in ranked else None


def test_identifier_tokens_by_shape():
    assert identifier_tokens("why E0502 again?") == ["E0502"]
    assert identifier_tokens("see (TICKET-1234), src/a/b.py and some_func_name.") == [
        "TICKET-1234", "src/a/b.py", "some_func_name"]
    assert identifier_tokens("getUserById deadbeef 1234567 v1.2.3") == [
        "getUserById", "deadbeef", "1234567", "v1.2.3"]
    # prose is not an identifier: ordinals, years, and/or, U.S., plain words
    assert identifier_tokens("the 18th of May 2023 in the U.S. and/or Canada, e.g. here") == []


def test_a_rare_identifier_alone_or_in_a_sentence_is_in_the_top_3(db, corpus):
    """Default search: hybrid, weighted fusion, the default embedder."""
    ranks = {}
    for identifier, event in corpus.items():
        ranks[identifier] = _rank(db, identifier, event)
        sentence = f"what did we find out about {identifier} when the borrow checker complained?"
        ranks[sentence] = _rank(db, sentence, event)
        top = service.search(db, identifier, k=1)[0]
        assert top.event_id == event and "identifier" in top.pools
    assert all(r is not None and r <= 3 for r in ranks.values()), ranks


def test_without_the_identifier_rule_fusion_buries_them(db, corpus, monkeypatch):
    """The failure the rule fixes: a keyword-only match scores at most 0.3 in the fusion, so
    a near miss (E0503 for E0502) at cosine 0.95 outranks the event that holds it."""
    monkeypatch.setattr(service, "IDENTIFIER_MAX_EVENTS", 0)
    not_first = [name for name, event in corpus.items() if _rank(db, name, event) != 1]
    assert len(not_first) >= 4, not_first


def test_keyword_mode_also_ranks_them_first(db, corpus):
    for identifier, event in corpus.items():
        assert _rank(db, identifier, event, mode="keyword") == 1, identifier


def test_an_identifier_in_many_events_is_not_lifted(db, corpus):
    many = service.IDENTIFIER_MAX_EVENTS + 1
    add_events(db, "notes", [{"native_id": f"e{i}", "text": f"saw E0502 again ({i})",
                              "occurred_at": at(4, 9, i)} for i in range(many)])
    hits = service.search(db, "E0502", k=20)
    assert not any("identifier" in h.pools for h in hits)
    assert service.search(db, "E0502", k=20, filters=service.SearchFilters(
        source="claude-code"))[0].pools[-1] == "identifier", "rare within the filter"


def test_keyword_search_works_before_the_table_is_ever_analyzed(db, monkeypatch):
    # Small budgets make 300 rows behave like a big table; the old guess (every lexeme in
    # 58% of events) skipped the keyword pool entirely until autovacuum's first ANALYZE.
    monkeypatch.setattr(keyword, "KEYWORD_MATCH_BUDGET", 50)
    monkeypatch.setattr(keyword, "KEYWORD_MATCH_CAP", 100)
    with db.connect() as conn:
        conn.execute("ALTER TABLE events SET (autovacuum_enabled = false)")
        rows = [event_row("notes", Event(
            native_id=f"n{i}", conversation_id=None, role="user", raw={},
            text="the weekly plan" if i else "the zebra migration plan",
            occurred_at=at(1, 8, i % 60))) for i in range(300)]
        with conn.transaction():
            event_store.write_events(conn, rows)
        assert conn.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'events' "
                            "AND attname = 'text_search'").fetchone()[0] == 0
    hits = service.search(db, "zebra", mode="keyword")
    assert [h.text for h in hits] == ["the zebra migration plan"]
    hits = service.search(db, "zebra plan", mode="keyword", k=3)
    assert hits[0].text == "the zebra migration plan"
