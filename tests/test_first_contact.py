"""First contact (issue 22 points 4-6, 8): search before the vectors are made, a quiet and
correct terminal, commands that need an LLM, analytics on a fresh install."""

import json

import pytest
from test_embeddings import HashEmbedder, add_events, at
from typer.testing import CliRunner

from memory_platform.query import search as service
from memory_platform.query.coverage import describe, search_with_coverage
from memory_platform.query.embeddings import embed_missing


@pytest.fixture
def invoke(home):
    from memory_platform.cli.main import app

    runner = CliRunner()

    def call(*args: str):
        return runner.invoke(app, list(args))
    return call


# --- point 4: search never fails for want of vectors -------------------------------------


def test_hybrid_search_without_vectors_is_a_keyword_search_and_says_so(db):
    ids = add_events(db, "notes", [{"native_id": f"n{i}", "text": t, "occurred_at": at(1, 9, i)}
                                   for i, t in enumerate(["the staging port is 5433",
                                                          "lunch was good"])])
    embedder = HashEmbedder()
    hits, searched = search_with_coverage(db, "staging port", embedder=embedder)
    assert [h.event_id for h in hits] == [ids[0]]
    assert (searched.by_meaning, searched.by_keyword_only, searched.complete) == (0, 2, False)
    assert "keyword only" in describe(searched)
    with pytest.raises(service.SearchError, match="--mode keyword"):
        service.search(db, "staging port", mode="dense", embedder=embedder)


def test_a_partly_embedded_history_is_searched_both_ways(db):
    add_events(db, "notes", [{"native_id": f"n{i}", "text": f"note {i}",
                              "occurred_at": at(1, 9, i)} for i in range(5)])
    embedder = HashEmbedder()
    embed_missing(db, embedder)
    add_events(db, "notes", [{"native_id": "late", "text": "a late note about ports",
                              "occurred_at": at(2)}])
    hits, searched = search_with_coverage(db, "ports", embedder=embedder)
    assert hits[0].text == "a late note about ports"
    assert (searched.by_meaning, searched.by_keyword_only) == (5, 1)
    assert describe(searched).startswith("searched 5 of 6 events by meaning")
    _, full = search_with_coverage(db, "ports", embedder=embedder, mode="keyword")
    assert full.complete and describe(full) is None


def test_cli_search_json_is_one_object_with_what_was_searched(invoke, db, monkeypatch):
    add_events(db, "notes", [{"native_id": "a", "text": "the staging port is 5433",
                              "occurred_at": at(1)}])
    result = invoke("search", "staging port", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"query", "mode", "searched", "hits"}
    assert data["searched"]["by_keyword_only"] == 1 and data["searched"]["complete"] is False
    assert data["hits"][0]["text"] == "the staging port is 5433"
    plain = invoke("search", "staging port")
    assert plain.exit_code == 0 and "by keyword only" in plain.stderr
    dense = invoke("search", "staging port", "--mode", "dense")
    assert dense.exit_code == 1 and "--mode keyword" in dense.stderr
