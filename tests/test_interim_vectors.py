"""Interim vectors on a big backlog (query/backfill.py): each turn first gets a vector of
the turn alone, marked interim, then its real one, newest first; an interrupted run leaves
searchable interim rows and the next run upgrades them. With the local context model the
interim vectors come from the int8 model (query/quantized.py), or from the numpy model
when that is unavailable, and the counts say which."""

import json
import logging
import sys
import threading
import time
from datetime import timedelta

import numpy as np
import pytest

from helpers.embeddings import HashEmbedder, add_events, at, rows_of
from memory_platform.query import backfill
from memory_platform.query.embeddings import LocalEmbedder, WithContext, embed_missing
from memory_platform.query.quantized import QuantizedEmbedder
from memory_platform.store import Database
from memory_platform.store import embeddings as embedding_store


class _FailOnContext(HashEmbedder):
    """Stops the run at the first input that carries context (after the interim step)."""

    def embed(self, texts):
        if any("\n\n" in t for t in texts):
            raise RuntimeError("interrupted")
        return super().embed(texts)


def test_a_big_backlog_gets_interim_vectors_first_then_real_ones(db, monkeypatch):
    monkeypatch.setattr(backfill, "INTERIM_MIN_TURNS", 2)
    inner = HashEmbedder("hash-int", 8, max_chars=1000)
    ctx = WithContext(inner, turns=2)
    ids = add_events(db, "claude-ai", [
        {"native_id": "a", "text": "first question", "occurred_at": at(1, 10), "conversation": "c"},
        {"native_id": "b", "text": "an answer", "occurred_at": at(1, 11), "conversation": "c"},
        {"native_id": "c", "text": "a follow-up", "occurred_at": at(1, 12), "conversation": "c"},
        {"native_id": "t", "text": "tool output", "occurred_at": at(1, 13), "conversation": "c",
         "kind": "tool_result", "role": "tool"},
    ])
    counts = embed_missing(db, ctx)
    # interim: each turn alone, newest first; then the real inputs of the turns that have
    # context, newest first; then tool traffic (never interim).
    assert inner.calls == [
        "a follow-up", "an answer", "first question",
        "a follow-up\n\nfirst question\nan answer", "an answer\n\nfirst question",
        "tool output\n\nan answer\na follow-up",
    ]
    assert counts["interim"] == 2 and counts["upgraded"] == 2 and counts["events"] == 4
    assert counts["interim_runtime"] == "same model", "a model without a faster variant"
    with db.connect() as conn:
        hashes = [r[0] for r in conn.execute(
            "SELECT content_hash FROM event_embeddings WHERE model = %s", (ctx.name,))]
    assert len(hashes) == 4 and not any(h.startswith(embedding_store.INTERIM_PREFIX)
                                        for h in hashes)
    assert [r[0] for r in rows_of(db, ctx.name)] == ids


def test_an_interrupted_backfill_leaves_searchable_interim_rows_and_resumes(db, monkeypatch):
    from memory_platform.query import search as service

    monkeypatch.setattr(backfill, "INTERIM_MIN_TURNS", 1)
    broken = WithContext(_FailOnContext("hash-res", 8, max_chars=1000), turns=2)
    ids = add_events(db, "claude-ai", [
        {"native_id": f"m{i}", "text": f"turn number {i}", "occurred_at": at(1, 10, i),
         "conversation": "c"} for i in range(3)])
    with pytest.raises(RuntimeError, match="interrupted"):
        embed_missing(db, broken)
    with db.connect() as conn:
        interim = conn.execute(
            "SELECT count(*) FROM event_embeddings WHERE model = %s AND content_hash LIKE %s",
            (broken.name, embedding_store.INTERIM_PREFIX + "%")).fetchone()[0]
    assert interim == 2, "the turns with context hold interim rows; the first its real one"
    hits = service.search(db, "turn number 2", mode="dense", embedder=broken)
    assert sorted(h.event_id for h in hits) == ids, "searchable by meaning meanwhile"
    fixed = WithContext(HashEmbedder("hash-res", 8, max_chars=1000), turns=2)
    again = embed_missing(db, fixed)
    assert again["upgraded"] == 2 and again["events"] == 0 and again["interim"] == 0
    with db.connect() as conn:
        left = conn.execute(
            "SELECT count(*) FROM event_embeddings WHERE model = %s AND content_hash LIKE %s",
            (fixed.name, embedding_store.INTERIM_PREFIX + "%")).fetchone()[0]
    assert left == 0 and len(rows_of(db, fixed.name)) == 3


# --- the local context model: int8 interim vectors, numpy when unavailable ----------------


def _vectors(db: Database, model: str) -> dict[int, tuple[str, np.ndarray]]:
    """event id -> (content hash, vector) of chunk 0."""
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT event_id, content_hash, embedding::text FROM event_embeddings "
            "WHERE model = %s AND chunk = 0", (model,)).fetchall()
    return {e: (h, np.asarray(json.loads(v), dtype=np.float32)) for e, h, v in rows}


MINUTE = timedelta(minutes=1)
TURNS = ["Are you free this weekend?", "I might go climbing, want to join?",
         "Sounds good, see you at the gym on Saturday.", "Bring the spare harness please."]


def test_the_local_context_model_gets_int8_interim_vectors_then_exact_ones(
        db, int8_home, monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_HOME", str(int8_home))  # the session's built file
    monkeypatch.setattr(backfill, "INTERIM_MIN_TURNS", 1)
    local = LocalEmbedder()  # its own choice of interim model, made under this home
    ctx = WithContext(local, turns=2)
    ids = add_events(db, "claude-ai", [
        {"native_id": f"t{i}", "text": text, "occurred_at": at(2, 10, i), "conversation": "c"}
        for i, text in enumerate(TURNS)])
    snapshots = []

    def after_each_page(done, total):
        if not snapshots:  # the interim step is the first page
            snapshots.append(_vectors(db, ctx.name))

    counts = embed_missing(db, ctx, progress=after_each_page)
    assert counts["interim_runtime"] == "onnxruntime-int8"
    # Every turn, the first (no context) too: int8 vectors are not the exact model's.
    assert counts["interim"] == 4 and counts["upgraded"] == 4 and counts["events"] == 4
    assert isinstance(local.interim_embedder()[0], QuantizedEmbedder)
    interim = snapshots[0]
    exact_alone = dict(zip(ids, local.embed(TURNS), strict=True))
    for event in ids:  # the int8 model's vector of the turn alone
        key, vector = interim[event]
        assert key.startswith(embedding_store.INTERIM_PREFIX)
        assert 0.97 < float(vector @ exact_alone[event]) < 0.99999
    final = _vectors(db, ctx.name)
    assert not any(h.startswith(embedding_store.INTERIM_PREFIX) for h, _ in final.values())
    real_inputs = [TURNS[0]] + [f"{TURNS[i]}\n\n" + "\n".join(TURNS[max(0, i - 2):i])
                                for i in range(1, 4)]
    for event, vector in zip(ids, local.embed(real_inputs), strict=True):
        assert float(final[event][1] @ vector) > 0.9999, "upgraded to the exact vector"
    assert [r[0] for r in rows_of(db, ctx.name)] == ids


def test_without_onnxruntime_the_interim_vectors_come_from_numpy(db, tmp_path, monkeypatch,
                                                                 caplog):
    monkeypatch.setenv("MEMORY_PLATFORM_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    monkeypatch.setattr(backfill, "INTERIM_MIN_TURNS", 1)
    local = LocalEmbedder()
    ctx = WithContext(local, turns=2)
    ids = add_events(db, "claude-ai", [
        {"native_id": f"t{i}", "text": text, "occurred_at": at(2, 10, i), "conversation": "c"}
        for i, text in enumerate(TURNS[:3])])
    snapshots = []
    with caplog.at_level(logging.WARNING):
        counts = embed_missing(db, ctx, progress=lambda done, total: snapshots.append(
            _vectors(db, ctx.name)) if not snapshots else None)
    assert counts["interim_runtime"] == "numpy"
    assert counts["interim"] == 2 and counts["upgraded"] == 2
    assert "onnxruntime is not installed" in caplog.text
    exact_alone = local.embed(TURNS[:3])
    for event, vector in zip(ids, exact_alone, strict=True):  # numpy: the exact plain vectors
        assert float(snapshots[0][event][1] @ vector) > 0.9999
    assert not any(h.startswith(embedding_store.INTERIM_PREFIX)
                   for h, _ in _vectors(db, ctx.name).values())


# --- issue 22: interim vectors for a backlog of any size, small first pages, one backfill
# per model at a time, and an `embed` report true to what search finds --------------------


def test_a_backlog_under_two_thousand_turns_gets_interim_vectors(db):
    """The 1,757-turn backlog of a first `up` had no interim vectors (threshold 2,000)."""
    inner = HashEmbedder("hash-any", 8, max_chars=1000)
    ctx = WithContext(inner, turns=2)
    turns = 40  # a page of a first import, not thousands
    add_events(db, "claude-ai", [
        {"native_id": f"m{i}", "text": f"turn {i}", "occurred_at": at(3, 9, 0) + i * MINUTE,
         "conversation": "c"} for i in range(turns)])
    counts = embed_missing(db, ctx)
    assert counts["interim"] == turns - 1, "every turn with context, first"
    assert counts["upgraded"] == turns - 1 and counts["events"] == turns
    assert inner.calls[:turns] == [f"turn {i}" for i in reversed(range(turns))]


def test_the_first_page_is_small_so_the_newest_turns_are_searchable_soon(db):
    add_events(db, "notes", [
        {"native_id": f"n{i}", "text": f"note {i}", "occurred_at": at(1) + i * MINUTE}
        for i in range(3 * backfill.FIRST_PAGE_EVENTS)])
    seen = []
    embed_missing(db, HashEmbedder("hash-page"),
                  progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (backfill.FIRST_PAGE_EVENTS, 3 * backfill.FIRST_PAGE_EVENTS)
    assert seen[-1] == (3 * backfill.FIRST_PAGE_EVENTS,) * 2


class _Slow(HashEmbedder):
    """Signals when it starts embedding, then takes its time (a backfill in progress)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.started = threading.Event()

    def embed(self, texts):
        self.started.set()
        time.sleep(1.0)
        return super().embed(texts)


def test_a_second_backfill_waits_for_the_running_one_instead_of_redoing_it(
        db, monkeypatch):
    """`embed` while `up` embeds: it waits (reporting the other run's progress), then has
    nothing left to do and says so, with what search finds."""
    monkeypatch.setattr(backfill, "LOCK_POLL_SECONDS", 0.05)
    add_events(db, "notes", [{"native_id": f"n{i}", "text": f"note {i}",
                              "occurred_at": at(1) + i * MINUTE} for i in range(5)])
    running = _Slow("hash-lock", 8, max_chars=1000)
    first = threading.Thread(target=embed_missing, args=(db, running))
    first.start()
    assert running.started.wait(30)
    second = HashEmbedder("hash-lock", 8, max_chars=1000)
    seen: list = []
    result = embed_missing(db, second, progress=lambda done, total: seen.append((done, total)))
    first.join(timeout=30)
    assert not first.is_alive()
    assert second.calls == [], "nothing computed twice"
    assert result["events"] == 0 and result["waited_seconds"] > 0.3
    assert (result["with_vectors"], result["without_vectors"]) == (5, 0)
    assert seen and seen[0] == (0, 5), "the running backfill's progress, while waiting"
    line = backfill.summary(result, second.name)
    assert line.startswith("waited") and "nothing to embed: all 5 events with text have " \
        "vectors" in line, line
    assert "embedded 0" not in line
