"""Odd input at every face (issue 20, defect 9): a 5,000-word query is searched by its first
MAX_QUERY_LEXEMES stems (and MAX_IDENTIFIERS identifiers) and still answers, on cairn
search, vault search and the context pack, where PostgreSQL refused it ("target lists can
have at most 1664 entries", "stack depth limit exceeded": 503); and a NUL in any query or
path parameter of any REST route is a 422 that says so, generated from the route table so
a new route is covered the day it is added."""

import re

import pytest
from fastapi.routing import APIRoute

from helpers.api import HashEmbedder, local_client, thread_recorder
from helpers.embeddings import add_events, at
from helpers.recall_vault import seed
from helpers.words import WORDS
from helpers.world import ADMIN, bearer, build
from memory_platform.api import access
from memory_platform.api.app import create_app
from memory_platform.llm import ScriptedProvider
from memory_platform.query import keyword
from memory_platform.query import search as service
from memory_platform.query.search import SearchFilters
from memory_platform.store import event_search
from memory_platform.vault.context import context
from memory_platform.vault.tokens import Scope

# The one word that matters first, then 5,000 distinct others (half identifier-shaped).
LONG = "tidepool " + " ".join(f"ab{i}cd" if i % 2 else "zq" + "".join(
    chr(97 + int(d)) for d in str(i)) + "word" for i in range(5000))


@pytest.fixture
def events(db):
    items = [{"native_id": f"e{i}", "text": text, "occurred_at": at(1, 9, i),
              "project": "/home/me/tidepool" if i == 0 else "/home/me/other"}
             for i, text in enumerate([
                 "the tidepool service restarts every night at three",
                 *(f"filler turn number {n} about nothing much" for n in range(20))])]
    return add_events(db, "claude-code", items)


def test_a_long_query_is_cut_to_its_first_stems_in_query_order(db):
    assert len(set(LONG.split())) > 5000
    with db.connect() as conn:
        lexemes = event_search.query_lexemes(conn, LONG)
    assert len(lexemes) == event_search.MAX_QUERY_LEXEMES
    assert lexemes[0] == "tidepool" and lexemes[1] == "zqaword"  # query order, not a-z
    tokens = keyword.identifier_tokens(LONG)
    assert len(tokens) == keyword.MAX_IDENTIFIERS and tokens[0] == "ab1cd"


@pytest.mark.parametrize("how", ["statistics", "filtered", "no statistics"])
def test_a_5000_word_keyword_search_still_answers(db, events, monkeypatch, how):
    filters = None
    if how == "filtered":  # IDF counted in the small subset: one count per lexeme
        filters = SearchFilters(since=at(1, 0))
    elif how == "no statistics":  # counted per lexeme through the index
        monkeypatch.setattr(event_search, "lexeme_frequencies", lambda conn: ({}, 0.0))
        keyword._stats.clear()
    hits = service.search(db, LONG, k=3, mode="keyword", filters=filters)
    assert hits and hits[0].event_id == events[0]


def test_5000_words_at_rest_and_in_the_pack(db, events, home):
    ids = seed(db, home)
    app = create_app(db, embedder=HashEmbedder(), vault_embedder=WORDS)
    client = local_client(app)
    found = client.get("/search", params={"q": LONG, "mode": "keyword"})
    assert found.status_code == 200, found.text[:300]
    assert found.json()[0]["event_id"] == events[0]
    assert client.get("/vault/search", params={"q": LONG}).status_code == 200
    question = "acme staging database port " + LONG
    pack = client.get("/vault/context", params={"q": question})
    assert pack.status_code == 200, pack.text[:300]
    assert ids["staging"] in pack.json()["memory_ids"]
    # the service every face calls (MCP vault_context, the prompt hook) answers alike
    same = context(db, Scope.everything(), query=question, embedder=WORDS)
    assert ids["staging"] in same["memory_ids"]


# --- NUL in every parameter of every route ---------------------------------------------------

NUL = "a\x00b"


def _targets(app):
    """(method, path template, where, name) for every query parameter and every path
    parameter without a converter (an `:int` one never reaches a handler with a NUL)."""
    for entry in access.route_table(app):
        route = entry.route
        if not isinstance(route, APIRoute):
            continue
        plain = [name for name, conv in re.findall(r"{(\w+)(:\w+)?}", entry.path) if not conv]
        for method in sorted(entry.methods):
            for param in route.dependant.query_params:
                yield method, entry.path, "query", param.alias
            for name in plain:
                yield method, entry.path, "path", name


def test_a_nul_in_any_parameter_of_any_route_is_a_422_that_says_so(db, tmp_path, home):
    world = build(db, tmp_path)
    app = create_app(db, token=ADMIN, embedder=HashEmbedder(), vault_embedder=HashEmbedder(),
                     llm=ScriptedProvider(lambda call: "{}"), recorder=thread_recorder())
    client = local_client(app, follow_redirects=False, raise_server_exceptions=False)
    head = {**bearer(ADMIN), "X-Memory-Platform": "1"}
    values = {"namespace": "work", "memory_id": world.work_memory, "event_id": world.turns[0],
              "week": "2026-W10", "name": "activity.png", "project": "work-api",
              "proposal_id": 1, "run_id": 1, "finding_id": world.work_finding}
    targets = list(_targets(app))
    assert len(targets) > 40 and ("GET", "/vault/context", "query", "q") in targets
    wrong = []
    for method, template, where, name in targets:
        path = re.sub(r"{(\w+)(?::\w+)?}",
                      lambda m: "a%00b" if (where, m.group(1)) == ("path", name)
                      else str(values[m.group(1)]), template)
        params = {name: NUL} if where == "query" else {}
        response = client.request(method, path, params=params, headers=head,
                                  json={} if method in ("POST", "PATCH", "PUT") else None)
        detail = response.json().get("detail", "") if response.headers.get(
            "content-type", "").startswith("application/json") else ""
        if response.status_code != 422 or "NUL" not in str(detail) or name not in str(detail):
            wrong.append((method, template, where, name, response.status_code,
                          response.text[:120]))
    assert not wrong, wrong


def test_the_pack_service_refuses_a_nul_for_every_face(db, home):
    from memory_platform.query.inputs import InvalidInput

    seed(db, home)
    for kwargs in ({"query": NUL}, {"project": "/src/acme\x00"}):
        with pytest.raises(InvalidInput, match="NUL"):
            context(db, Scope.everything(), embedder=WORDS, **kwargs)
