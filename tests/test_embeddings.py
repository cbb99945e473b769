"""Embeddings: providers, chunking, `embed_missing` (reuse, skips, model switching), the
Dagster asset, and the openai provider against a local stub of POST /v1/embeddings."""


import dagster as dg
import numpy as np
import pytest

from helpers.embeddings import HashEmbedder, add_events, at, local_embedder, rows_of  # noqa: F401
from helpers.vendor_stubs import VendorStub
from memory_platform.query import embeddings as emb
from memory_platform.query.embeddings import (
    LocalEmbedder,
    OpenAIEmbedder,
    WithContext,
    cap_chunks,
    chunk_by_chars,
    embed_missing,
    get_embedder,
)
from memory_platform.store import embeddings as embedding_store

EMBEDDINGS_PATH = "/v1/embeddings"




# --- chunking ------------------------------------------------------------------------------


def test_chunk_by_chars_covers_the_text_with_overlap():
    text = " ".join(f"word{i}" for i in range(200))
    spans = chunk_by_chars(text, 100, overlap=20)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(e - s <= 100 for s, e in spans)
    assert all(b[0] < a[1] for a, b in zip(spans, spans[1:], strict=False))  # overlapping
    assert chunk_by_chars("", 10) == [] and chunk_by_chars("short", 10) == [(0, 5)]


def test_local_model_chunks_long_turns_with_spans(db, local_embedder):  # noqa: F811
    long_text = ("The deploy failed because the migration locked the table. " * 60).strip()
    ids = add_events(db, "notes", [
        {"native_id": "long", "text": long_text, "occurred_at": at(1)},
        {"native_id": "short", "text": "a short note", "occurred_at": at(1)},
    ])
    counts = embed_missing(db, local_embedder)
    assert counts["events"] == 2 and counts["chunks"] > 2
    rows = rows_of(db, local_embedder.name)
    long_rows = [r for r in rows if r[0] == ids[0]]
    assert len(long_rows) >= 3, "a 600-token turn is chunked, not truncated at 256"
    assert [r[1] for r in long_rows] == list(range(len(long_rows)))
    assert long_rows[0][2] == 0 and long_rows[-1][3] == len(long_text)
    for (_, _, s1, e1, *_), (_, _, s2, e2, *_) in zip(long_rows, long_rows[1:],
                                                      strict=False):
        assert s2 < e1 <= e2, "consecutive chunks overlap and move forward"
    assert all(r[4] == 384 for r in rows)
    tokens = local_embedder.token_count(long_text[long_rows[1][2]:long_rows[1][3]])
    assert 0 < tokens <= local_embedder.max_tokens


def test_cap_chunks_keeps_the_first_ones_and_the_last():
    spans = [(i * 10, i * 10 + 12) for i in range(200)]
    capped = cap_chunks(spans, 16)
    assert [n for n, _ in capped] == list(range(15)) + [199]
    assert capped[-1][1] == spans[-1] and capped[0][1] == spans[0]
    assert cap_chunks(spans[:16], 16) == list(enumerate(spans[:16]))
    assert len(cap_chunks(spans)) == emb.MAX_CHUNKS_PER_EVENT


def test_a_huge_turn_gets_capped_vectors_and_tool_output_fewer(db):
    from memory_platform.query import search as service
    from memory_platform.query.backfill import MAX_CHUNKS_BY_KIND

    embedder = HashEmbedder("hash-cap", 8, max_chars=40)
    words = [f"line{i:05d}" for i in range(20_000)]  # 200k characters
    text = " ".join(words)
    assert len(text) >= 199_000
    ids = add_events(db, "claude-code", [
        {"native_id": "big", "text": text, "occurred_at": at(1)},
        {"native_id": "log", "text": text.replace("line", "tool"), "occurred_at": at(1, 13),
         "kind": "tool_result", "role": "tool"}])
    counts = embed_missing(db, embedder)
    rows = [r for r in rows_of(db, "hash-cap") if r[0] == ids[0]]
    uncapped = len(embedder.chunk(text))
    assert uncapped > 4_000 and len(rows) == emb.MAX_CHUNKS_PER_EVENT
    chunks = [r[1] for r in rows]
    assert chunks == list(range(emb.MAX_CHUNKS_PER_EVENT - 1)) + [uncapped - 1]
    assert rows[-1][3] == len(text), "the last chunk (a log's tail) keeps its vector"
    tool_rows = [r for r in rows_of(db, "hash-cap") if r[0] == ids[1]]
    assert len(tool_rows) == MAX_CHUNKS_BY_KIND["tool_result"] == 2
    assert [r[1] for r in tool_rows] == [0, uncapped - 1], "its first and last chunk"
    assert counts["chunks"] == emb.MAX_CHUNKS_PER_EVENT + 2
    # No vector covers the middle, but the full-text index (first 200k chars) does.
    middle = words[10_000]
    assert not any(s <= text.index(middle) < e for _, _, s, e, *_ in rows)
    hits = service.search(db, middle, k=3, mode="keyword")
    assert [h.event_id for h in hits] == ids[:1]


def test_turns_are_embedded_newest_first_before_tool_traffic(db):
    embedder = HashEmbedder("hash-order", 8, max_chars=1000)
    add_events(db, "claude-code", [
        {"native_id": "m1", "text": "oldest turn", "occurred_at": at(1)},
        {"native_id": "t1", "text": "old tool output", "occurred_at": at(1, 13),
         "kind": "tool_result", "role": "tool"},
        {"native_id": "m2", "text": "middle turn", "occurred_at": at(2)},
        {"native_id": "s1", "text": "a compaction summary", "occurred_at": at(2, 13),
         "kind": "summary", "role": "other"},
        {"native_id": "t2", "text": "new tool call", "occurred_at": at(3, 9),
         "kind": "tool_use", "role": "assistant"},
        {"native_id": "m3", "text": "newest turn", "occurred_at": at(3)},
    ])
    seen = []
    counts = embed_missing(db, embedder, page_events=1,
                           progress=lambda done, total: seen.append((done, total)))
    assert embedder.calls == ["newest turn", "a compaction summary", "middle turn",
                              "oldest turn", "new tool call", "old tool output"]
    assert seen == [(i, 6) for i in range(1, 7)] and counts["events"] == 6
    assert 0 < counts["first_kinds_seconds"] <= counts["seconds"]


def test_context_embeddings_read_the_previous_turns_and_queries_use_the_inner_model(db):
    inner = HashEmbedder("hash-ctx", 8, max_chars=1000)
    ctx = WithContext(inner, turns=2)
    assert ctx.name == "hash-ctx+ctx2" and ctx.dims == 8
    turns = ["first question", "an answer", "a follow-up", "yes, last Tuesday"]
    add_events(db, "claude-ai", [
        {"native_id": f"t{i}", "text": t, "occurred_at": at(1, 10, i), "conversation": "c"}
        for i, t in enumerate(turns)])
    embed_missing(db, ctx)
    assert sorted(inner.calls) == sorted([
        "first question",
        "an answer\n\nfirst question",
        "a follow-up\n\nfirst question\nan answer",
        "yes, last Tuesday\n\nan answer\na follow-up",
    ])
    assert np.array_equal(ctx.embed(["when was it?"]), inner.embed(["when was it?"]))


def test_the_default_embedder_is_the_context_model_and_local_stays_plain(monkeypatch,
                                                                          local_embedder):  # noqa: F811
    monkeypatch.delenv("MEMORY_PLATFORM_EMBEDDER", raising=False)
    default = get_embedder()
    assert default is get_embedder("local-ctx2")
    assert isinstance(default, WithContext) and default.context_turns == 2
    assert default.name == "all-MiniLM-L6-v2+ctx2" and default.dims == 384
    assert default.inner is local_embedder, "one copy of the model per process"
    plain = get_embedder("local")
    assert isinstance(plain, LocalEmbedder) and plain.name == "all-MiniLM-L6-v2"
    query = "what did we decide about the cache?"
    assert np.allclose(default.embed([query]), plain.embed([query]))
    monkeypatch.setenv("MEMORY_PLATFORM_EMBEDDER", "local")
    assert get_embedder() is plain


# --- embed_missing ---------------------------------------------------------------------------


def test_reembedding_skips_unchanged_and_reuses_identical_inputs(db):
    embedder = HashEmbedder()
    add_events(db, "notes", [
        {"native_id": "a", "text": "continue", "occurred_at": at(1)},
        {"native_id": "b", "text": "continue", "occurred_at": at(1, 13)},
        {"native_id": "c", "text": "something else", "occurred_at": at(1, 14)},
        {"native_id": "blank", "text": "   ", "occurred_at": at(1, 15)},
    ])
    first = embed_missing(db, embedder)
    assert first["events"] == 3 and first["blank"] == 1
    assert embedder.calls.count("continue") == 1, "identical input embedded once"
    assert first["embedded"] == 2 and first["reused"] == 1
    again = embed_missing(db, embedder)
    assert again["events"] == 0 and again["embedded"] == 0 and len(embedder.calls) == 2
    # a new event repeating stored text reuses the stored vector, no model call
    add_events(db, "notes", [{"native_id": "d", "text": "continue", "occurred_at": at(2)}])
    third = embed_missing(db, embedder)
    assert third == {**third, "events": 1, "embedded": 0, "reused": 1}
    assert len(embedder.calls) == 2
    with db.connect() as conn:
        vectors = conn.execute(
            "SELECT DISTINCT embedding::text FROM event_embeddings e JOIN events v "
            "ON v.id = e.event_id WHERE v.text = 'continue'").fetchall()
        untouched = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    assert len(vectors) == 1 and untouched == 5


def test_window_limits_what_is_embedded(db):
    embedder = HashEmbedder()
    ids = add_events(db, "notes", [
        {"native_id": f"n{d}", "text": f"day {d}", "occurred_at": at(d)} for d in (1, 2, 3)
    ])
    counts = embed_missing(db, embedder, start=at(2, 0), end=at(3, 0))
    assert counts["events"] == 1
    assert [r[0] for r in rows_of(db, embedder.name)] == [ids[1]]


def test_switching_models_writes_separate_rows_and_indexes(db):
    a, b = HashEmbedder("hash-a", 8), HashEmbedder("hash-b", 16)
    add_events(db, "notes", [
        {"native_id": f"n{i}", "text": f"note number {i}", "occurred_at": at(1)}
        for i in range(5)
    ])
    embed_missing(db, a)
    embed_missing(db, b)
    assert len(rows_of(db, "hash-a")) == 5 and len(rows_of(db, "hash-b")) == 5
    assert {r[4] for r in rows_of(db, "hash-a")} == {8}
    assert {r[4] for r in rows_of(db, "hash-b")} == {16}
    with db.connect() as conn:
        indexes = {r[0]: r[1] for r in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'event_embeddings'")}
        assert embedding_store.list_models(conn) == [("hash-a", 8, 5), ("hash-b", 16, 5)]
        with pytest.raises(ValueError, match="8 dimensions"):
            embedding_store.ensure_model(conn, "hash-a", 16)
    assert "vector(8)" in indexes[embedding_store.index_name("hash-a")]
    assert "'hash-b'" in indexes[embedding_store.index_name("hash-b")]


def test_progress_reports_done_and_total(db):
    add_events(db, "notes", [
        {"native_id": f"n{i}", "text": f"note {i}", "occurred_at": at(1)} for i in range(5)
    ])
    seen = []
    embed_missing(db, HashEmbedder(), progress=lambda done, total: seen.append((done, total)),
                  page_events=2)
    assert seen == [(2, 5), (4, 5), (5, 5)]


# --- the Dagster asset -----------------------------------------------------------------------


def test_asset_materializes_a_partition_range(db, home, local_embedder, monkeypatch):  # noqa: F811
    from memory_platform.defs.search.assets import event_embeddings
    from memory_platform.resources import DatabaseResource

    monkeypatch.delenv("MEMORY_PLATFORM_EMBEDDER", raising=False)  # the default model
    ids = add_events(db, "notes", [
        {"native_id": f"n{d}", "text": f"we shipped release {d}", "occurred_at": at(d)}
        for d in (1, 2, 3, 4)
    ])
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(
        [event_embeddings], partition_key="2026-03-02", instance=instance,
        resources={"database": DatabaseResource()},
    )
    assert result.success
    meta = result.asset_materializations_for_node("event_embeddings")[0].metadata
    default = get_embedder()
    assert meta["events_embedded"].value == 1 and meta["model"].value == default.name
    assert meta["interim_vectors_from"].value == "no interim step", "a backlog of one turn"
    assert default.name == f"{local_embedder.name}+ctx2"
    assert [r[0] for r in rows_of(db, default.name)] == [ids[1]]
    assert rows_of(db, local_embedder.name) == []


# --- openai through a local stub ---------------------------------------------------------------


def _embedding_reply(stub: VendorStub, n: int, dims: int = 1536) -> None:
    data = []
    for i in range(n):
        vector = [0.0] * dims
        vector[i % dims] = 2.0  # not unit length: the embedder normalises
        data.append({"object": "embedding", "index": i, "embedding": vector})
    stub.script(EMBEDDINGS_PATH, 200, {
        "object": "list", "data": data, "model": "text-embedding-3-small",
        "usage": {"prompt_tokens": 3 * n, "total_tokens": 3 * n},
    })


def test_openai_embedder_batches_and_backs_off_on_429(db, monkeypatch):
    from helpers.vendor_stubs import FAST_RETRY

    sleeps: list[float] = []
    with VendorStub() as stub:
        embedder = OpenAIEmbedder(api_key="sk-test", base_url=stub.openai_base_url,
                                  max_retries=0, sleep=sleeps.append)
        embedder.batch_size = 2
        stub.script(EMBEDDINGS_PATH, 429,
                    {"error": {"message": "slow down", "type": "rate_limit_exceeded",
                               "param": None, "code": None}}, dict(FAST_RETRY))
        _embedding_reply(stub, 2)
        _embedding_reply(stub, 1)
        vectors = embedder.embed(["alpha", "beta", "gamma"])
        requests = stub.requests_to(EMBEDDINGS_PATH)
    assert vectors.shape == (3, 1536)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert sleeps == [1.0] and embedder.rate_limited == 1
    assert [r.body["input"] for r in requests] == [["alpha", "beta"], ["alpha", "beta"],
                                                   ["gamma"]]
    assert requests[0].body["model"] == "text-embedding-3-small"
    assert requests[0].headers["authorization"] == "Bearer sk-test"


def test_openai_embedder_fills_its_own_rows(db):
    with VendorStub() as stub:
        embedder = OpenAIEmbedder(api_key="sk-test", base_url=stub.openai_base_url)
        add_events(db, "notes", [
            {"native_id": "a", "text": "first", "occurred_at": at(1)},
            {"native_id": "b", "text": "second", "occurred_at": at(1)},
        ])
        _embedding_reply(stub, 2)
        counts = embed_missing(db, embedder)
    assert counts["embedded"] == 2
    assert {r[4] for r in rows_of(db, "text-embedding-3-small")} == {1536}


def test_unknown_embedder_and_missing_key_are_loud(monkeypatch):
    from memory_platform.query.embeddings import EmbeddingError

    with pytest.raises(EmbeddingError, match="unknown embedder"):
        get_embedder("nope")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        OpenAIEmbedder()
