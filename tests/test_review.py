"""The review gate against a real PostgreSQL: what waits (overview, pending with verdicts and
nearest memories), each decision (approve, edit, namespace change, skip, supersede, bulk) with
its database state and audit rows, concurrent decisions (exactly one wins), the Dagster side
(dynamic partitions from the sensor, approving by materializing a partition,
promote_via_dagster recording a run, the backlog check), `memory-platform review` with piped
stdin, and `vault export`."""

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import numpy as np
import pytest
from typer.testing import CliRunner

from memory_platform.defs.dream.assets import shadow_memories
from memory_platform.defs.vault.assets import PromotionConfig, vault_promotions
from memory_platform.defs.vault.automation import partition_changes, pending_memories_sensor
from memory_platform.defs.vault.checks import review_backlog
from memory_platform.dream import dedup
from memory_platform.launch import promote_via_dagster
from memory_platform.query.embeddings import get_embedder
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import PENDING_PARTITIONS_NAME
from memory_platform.store import dedup as dedup_store
from memory_platform.store import dream as dream_store
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import review as review_store
from memory_platform.vault import memories as vault
from memory_platform.vault import queue, review

CLI = str(Path(sys.executable).parent / "memory-platform")
RUN = "run-review-1"
ACTOR = "cli:alice"

PORT_FACT = "The memory-platform database listens on port 5432."
PORT_NEW = "The memory-platform database now listens on port 5433."


@pytest.fixture(scope="module")
def embedder():
    return get_embedder("local")  # the vault embedder; loading it takes seconds: once


def stage(db, text: str, *, namespace: str = "personal", verdict: str = "new",
          neighbour_id: int | None = None, similarity: float | None = None,
          category: str = "user", score: int = 7, why: str = "stable preference",
          events=(11, 12), valid_from: datetime | None = None) -> int:
    """A dream's output as staging leaves it: candidate, verdict, pending shadow entry."""
    with db.connect() as conn, conn.transaction():
        [candidate] = dream_store.insert_candidates(
            conn, run_id=RUN, day=date(2025, 10, 12), conversation_id=None,
            candidates=[dream_store.CandidateRow(text, score, category, namespace, why,
                                                 list(events), "proposed")])
        neighbour_text = None
        if neighbour_id is not None:
            neighbour_text = memory_store.get_memory(conn, neighbour_id)["text"]
        dedup_store.insert_verdict(
            conn, candidate_id=candidate, run_id=RUN, verdict=verdict,
            decided_by="judge" if verdict == "contradiction" else "vector",
            reason=f"test verdict {verdict}", thresholds={"duplicate": 0.85},
            neighbour_id=neighbour_id, neighbour_text=neighbour_text, similarity=similarity)
        memory_id, created = memory_store.add_memory(
            conn, namespace=namespace_store.shadow_of(namespace, "dream"), text=text,
            category=category, source="dream", actor=f"dream:{RUN}", review="pending",
            dream_run_id=RUN, candidate_id=candidate, source_event_ids=events, score=score,
            why=why, verdict=verdict, valid_from=valid_from)
    assert created
    return memory_id


def known(db, embedder, text: str, namespace: str = "personal") -> int:
    return vault.add(db, namespace, text, "project", "test", embedder=embedder)["id"]


def row(db, memory_id: int) -> dict:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)


def promoted_from(db, shadow_id: int) -> list[dict]:
    with db.connect() as conn:
        ids = [r[0] for r in conn.execute(
            "SELECT id FROM memories WHERE promoted_from = %s ORDER BY id", (shadow_id,))]
        return [memory_store.get_memory(conn, i) for i in ids]


def vector_of(db, memory_id: int, embedder) -> np.ndarray | None:
    with db.connect() as conn:
        return review_store.memory_vector(conn, embedder.name, memory_id)


def actions(db, memory_id: int) -> list[tuple[str, str]]:
    return [(a["action"], a["actor"]) for a in review.audit_trail(db, [memory_id])]


@pytest.fixture
def staged(db, embedder):
    """A known fact, a contradiction of it, an entry whose verdict neighbour is in the
    shadow (nearest computed from vectors), one with no vector neighbour, one for `work`."""
    fact = known(db, embedder, PORT_FACT)
    tabs = known(db, embedder, "The user prefers tabs over spaces in Python code.")
    ids = {
        "fact": fact,
        "tabs": tabs,
        "contradiction": stage(db, PORT_NEW, verdict="contradiction", neighbour_id=fact,
                               similarity=0.93, category="project"),
        "editor": stage(db, "The user prefers spaces, four of them, when writing Python.",
                        category="feedback", score=8),
        "coffee": stage(db, "The user drinks oat-milk flat whites.", score=6),
        "work": stage(db, "The deploy runs from the release branch every Friday.",
                      namespace="work", category="project"),
    }
    vault.embed_missing_memories(db, embedder)
    return ids


# --- what waits --------------------------------------------------------------------------


def test_overview_counts_pending_per_primary_namespace(db, staged):
    entries = queue.overview(db)
    assert [(e["namespace"], e["pending"]) for e in entries] == [("personal", 3), ("work", 1)]
    personal = entries[0]
    assert personal["by_shadow"] == {"personal__dream": 3}
    assert personal["oldest_created_at"] is not None and personal["age_seconds"] >= 0
    review.skip(db, staged["work"], actor=ACTOR)
    assert [e["namespace"] for e in queue.overview(db)] == ["personal"]


def test_pending_shows_verdict_nearest_memory_and_contradiction(db, staged):
    entries, total = queue.pending(db, "personal")
    assert total == 3
    by_id = {e["id"]: e for e in entries}
    assert list(by_id) == sorted(by_id)  # oldest first
    c = by_id[staged["contradiction"]]
    assert c["text"] == PORT_NEW and c["target_namespace"] == "personal"
    assert c["namespace"] == "personal__dream" and c["category"] == "project"
    assert c["score"] == 7 and c["why"] == "stable preference"
    assert c["provenance"] == {"dream_run_id": RUN, "candidate_id": c["provenance"]
                               ["candidate_id"], "source_event_ids": [11, 12]}
    assert c["verdict"]["verdict"] == "contradiction"
    assert c["verdict"]["neighbour_id"] == staged["fact"]
    # the verdict's neighbour is a current fact of the primary namespace: shown as is
    assert c["nearest"] == {"id": staged["fact"], "namespace": "personal", "text": PORT_FACT,
                            "similarity": pytest.approx(0.93), "from": "verdict"}
    assert c["contradicts"]["id"] == staged["fact"] and c["contradicts"]["current"] is True
    assert c["contradicts"]["text"] == PORT_FACT
    # no neighbour on the verdict: looked up with the entry's stored vector
    e = by_id[staged["editor"]]
    assert e["verdict"]["verdict"] == "new" and e["contradicts"] is None
    assert e["nearest"]["id"] == staged["tabs"] and e["nearest"]["from"] == "vector"
    assert 0.3 < e["nearest"]["similarity"] < 1.0
    # keyset paging returns every entry once
    seen, after = [], 0
    while True:
        page, page_total = queue.pending(db, "personal", after_id=after, limit=1)
        assert page_total == 3
        if not page:
            break
        seen += [p["id"] for p in page]
        after = page[-1]["id"]
    assert seen == list(by_id)
    # a shadow namespace can be named too; a typo is an error, not an empty backlog
    assert queue.pending(db, "work__dream")[1] == 1
    with pytest.raises(ValueError, match="no vault namespace 'persnal'"):
        queue.pending(db, "persnal")


def test_pending_nearest_is_none_in_an_empty_namespace(db, embedder):
    memory_id = stage(db, "The user keeps bees.", namespace="hobby")
    vault.embed_missing_memories(db, embedder)
    [entry], total = queue.pending(db, "hobby")
    assert total == 1 and entry["id"] == memory_id and entry["nearest"] is None


# --- decisions ---------------------------------------------------------------------------


def test_approve_promotes_with_provenance_vector_and_audit(db, staged, embedder):
    shadow_id = staged["coffee"]
    before = row(db, shadow_id)
    done = review.approve(db, shadow_id, actor=ACTOR)
    assert done["action"] == "approve" and done["created"] and not done["edited"]
    [new] = promoted_from(db, shadow_id)
    assert done["promoted_id"] == new["id"] and done["namespace"] == "personal"
    assert new["namespace"] == "personal" and new["text"] == before["text"]
    assert new["source"] == "dream" and new["category"] == before["category"]
    assert new["review"] is None and new["status"] == "active"
    assert new["dream_run_id"] == RUN and new["source_event_ids"] == [11, 12]
    assert new["score"] == 6 and new["why"] == before["why"] and new["verdict"] == "new"
    assert new["valid_from"] == before["valid_from"] and new["valid_to"] is None
    assert new["candidate_id"] is None  # the shadow keeps it (unique)
    # the vector is the shadow's, copied inside PostgreSQL
    np.testing.assert_array_equal(vector_of(db, new["id"], embedder),
                                  vector_of(db, shadow_id, embedder))
    after = row(db, shadow_id)
    assert after["review"] == "approved" and after["namespace"] == "personal__dream"
    assert after["updated_at"] > before["updated_at"]
    # audit: the shadow's add and approval (before/after), the new row's promotion
    trail = review.audit_trail(db, [shadow_id, new["id"]])
    assert [(a["memory_id"], a["action"], a["actor"]) for a in trail] == [
        (shadow_id, "add", f"dream:{RUN}"), (new["id"], "promote", ACTOR),
        (shadow_id, "approve", ACTOR)]
    assert trail[1]["before"] is None and trail[1]["after"]["promoted_from"] == shadow_id
    assert trail[2]["before"]["review"] == "pending"
    assert trail[2]["after"]["review"] == "approved"
    # decided once: a second decision is a conflict naming the first
    with pytest.raises(review.ReviewConflict,
                       match=rf"memory {shadow_id} was already approved by cli:alice at \d{{4}}-"):
        review.approve(db, shadow_id, actor="cli:bob")
    with pytest.raises(review.ReviewConflict, match="already approved by cli:alice"):
        review.skip(db, shadow_id, actor="cli:bob")
    assert len(promoted_from(db, shadow_id)) == 1
    assert queue.pending(db, "personal")[1] == 2


def test_edit_then_approve_into_another_namespace(db, staged, embedder):
    shadow_id = staged["editor"]
    edited = "The user indents Python with four spaces."
    done = review.approve(db, shadow_id, actor=ACTOR, text=f"  {edited} ", namespace="work")
    assert done["edited"] and done["namespace"] == "work"
    new = row(db, done["promoted_id"])
    assert new["namespace"] == "work" and new["text"] == edited
    assert new["promoted_from"] == shadow_id and new["category"] == "feedback"
    assert new["content_hash"] == memory_store.content_hash(edited)
    # the edited text was embedded (not the shadow's vector copied)
    expected = embedder.embed([edited])[0]
    np.testing.assert_allclose(vector_of(db, new["id"], embedder), expected, atol=1e-5)
    shadow = row(db, shadow_id)
    assert shadow["review"] == "approved" and shadow["review_note"] == "edited"
    assert shadow["text"] != edited  # the shadow keeps what the dream proposed
    # a shadow namespace is not a target; an empty edit is refused; nothing was written
    other = staged["coffee"]
    with pytest.raises(ValueError, match="shadow namespace"):
        review.approve(db, other, actor=ACTOR, namespace="work__dream")
    with pytest.raises(ValueError, match="needs some text"):
        review.approve(db, other, actor=ACTOR, text="   ")
    assert row(db, other)["review"] == "pending" and not promoted_from(db, other)
    with pytest.raises(ValueError, match="primary namespace 'personal'"):
        review.approve(db, staged["fact"], actor=ACTOR)


def test_approving_text_the_namespace_already_holds_writes_nothing_twice(db, staged):
    duplicate = stage(db, PORT_FACT, category="project")
    done = review.approve(db, duplicate, actor=ACTOR)
    assert done["created"] is False and done["promoted_id"] == staged["fact"]
    assert not promoted_from(db, duplicate)
    assert row(db, duplicate)["review_note"] == f"already in personal as memory {staged['fact']}"


def test_skip_is_remembered_by_the_dedup_gate(db, staged, embedder):
    shadow_id = staged["coffee"]
    skipped = review.skip(db, shadow_id, actor=ACTOR, reason="  not durable ")
    assert skipped["review"] == "skipped" and skipped["review_note"] == "not durable"
    assert row(db, shadow_id)["review"] == "skipped"
    assert not promoted_from(db, shadow_id)
    [_, skip_row] = review.audit_trail(db, [shadow_id])
    assert (skip_row["action"], skip_row["actor"]) == ("skip", ACTOR)
    assert skip_row["before"]["review"] == "pending"
    assert skip_row["after"]["review_note"] == "not durable"
    # the next dream proposing the same fact finds the skipped entry: a duplicate
    with db.connect() as conn:
        verdict = dedup.decide(conn, "The user drinks oat-milk flat whites.", "personal",
                               embedder=embedder, llm=None)
    assert verdict.verdict == "duplicate" and not verdict.accepted
    assert verdict.neighbour.memory_id == shadow_id
    assert verdict.neighbour.review == "skipped"
    with pytest.raises(review.ReviewConflict,
                       match=rf"memory {shadow_id} was already skipped by cli:alice .*"
                             r"\(not durable\)"):
        review.approve(db, shadow_id, actor="cli:bob")


def test_supersede_ends_the_old_fact_without_deleting_it(db, staged, embedder):
    shadow_id, old_id = staged["contradiction"], staged["fact"]
    old_before = row(db, old_id)
    done = review.supersede(db, shadow_id, actor=ACTOR, old_memory_id=old_id)
    assert done["action"] == "supersede" and done["superseded_id"] == old_id
    new = row(db, done["promoted_id"])
    old = row(db, old_id)
    assert new["text"] == PORT_NEW and new["namespace"] == "personal"
    assert new["valid_to"] is None and new["superseded_by"] is None
    assert new["promoted_from"] == shadow_id
    assert old["text"] == PORT_FACT and old["status"] == "active"  # kept, not deleted
    assert old["superseded_by"] == new["id"] and old["valid_to"] is not None
    assert old["valid_to"] >= old["valid_from"]
    shadow = row(db, shadow_id)
    assert shadow["review"] == "approved"
    assert shadow["review_note"] == f"supersedes memory {old_id}"
    trail = review.audit_trail(db, [old_id])
    assert [(a["action"], a["actor"]) for a in trail] == [("add", "test"), ("supersede", ACTOR)]
    assert trail[1]["before"]["valid_to"] is None and trail[1]["before"]["superseded_by"] is None
    assert trail[1]["after"]["superseded_by"] == new["id"]
    assert old_before["updated_at"] < old["updated_at"]
    assert actions(db, new["id"]) == [("promote", ACTOR)]
    # the old fact is no longer current: a second supersede of it is a conflict
    again = stage(db, "The memory-platform database now listens on port 6543.",
                  verdict="contradiction", neighbour_id=old_id, similarity=0.9)
    vault.embed_missing_memories(db, embedder)
    with pytest.raises(review.ReviewConflict,
                       match=rf"memory {old_id} was already superseded by memory {new['id']} "
                             r"by cli:alice"):
        review.supersede(db, again, actor="cli:bob", old_memory_id=old_id)
    assert row(db, again)["review"] == "pending"  # the failed decision changed nothing
    # pending() now shows the contradicted fact as no longer current
    [entry] = [e for e in queue.pending(db, "personal")[0] if e["id"] == again]
    assert entry["contradicts"]["current"] is False
    assert entry["contradicts"]["superseded_by"] == new["id"]
    assert entry["nearest"]["from"] == "vector"  # the superseded fact is not "nearest"
    assert entry["nearest"]["id"] == new["id"]
    # a fact of another namespace is not superseded from here
    work_fact = known(db, embedder, "The deploy runs on Fridays.", namespace="work")
    with pytest.raises(ValueError, match="in 'work', not 'personal'"):
        review.supersede(db, again, actor=ACTOR, old_memory_id=work_fact)


def test_supersede_ends_the_old_fact_when_the_new_one_began(db, embedder):
    """Issue 11 point 17: reviewed days late, the old fact is valid until the new fact's
    valid_from (the time of the turns it came from), not until the review."""
    began = datetime.now(UTC) - timedelta(days=10)
    changed = datetime.now(UTC) - timedelta(days=3)
    with db.connect() as conn:
        old_id, _ = memory_store.add_memory(conn, namespace="personal", text=PORT_FACT,
                                            category="project", actor="test",
                                            valid_from=began)
    shadow_id = stage(db, PORT_NEW, verdict="contradiction", neighbour_id=old_id,
                      similarity=0.93, category="project", valid_from=changed)
    done = review.supersede(db, shadow_id, actor=ACTOR, old_memory_id=old_id,
                            embedder=embedder)
    old, new = row(db, old_id), row(db, done["promoted_id"])
    assert new["valid_from"] == changed and new["valid_to"] is None
    assert old["valid_from"] == began
    assert old["valid_to"] == changed  # not the review time
    assert old["superseded_by"] == new["id"]
    trail = review.audit_trail(db, [old_id])
    assert trail[-1]["action"] == "supersede"
    assert datetime.fromisoformat(trail[-1]["after"]["valid_to"]) == changed


def test_supersede_by_a_fact_dated_before_the_old_one_ends_it_where_it_began(db, embedder):
    began = datetime.now(UTC) - timedelta(days=2)
    earlier = datetime.now(UTC) - timedelta(days=5)
    with db.connect() as conn:
        old_id, _ = memory_store.add_memory(conn, namespace="personal", text=PORT_FACT,
                                            category="project", actor="test",
                                            valid_from=began)
    shadow_id = stage(db, PORT_NEW, verdict="contradiction", neighbour_id=old_id,
                      similarity=0.93, category="project", valid_from=earlier)
    review.supersede(db, shadow_id, actor=ACTOR, old_memory_id=old_id, embedder=embedder)
    old = row(db, old_id)
    assert old["valid_to"] == began == old["valid_from"]  # never before it began


def test_bulk_approve_reports_each_entry(db, staged):
    review.skip(db, staged["editor"], actor="cli:bob")
    ids = [staged["coffee"], staged["editor"], staged["work"], 999_999]
    results = review.bulk_approve(db, ids, actor=ACTOR)
    assert [r["outcome"] for r in results] == ["approved", "conflict", "approved", "error"]
    assert [r["id"] for r in results] == ids
    assert results[0]["namespace"] == "personal" and results[2]["namespace"] == "work"
    assert "already skipped by cli:bob" in results[1]["message"]
    assert results[3]["message"] == "no memory 999999"
    assert promoted_from(db, staged["coffee"])[0]["id"] == results[0]["promoted_id"]
    assert promoted_from(db, staged["work"])[0]["id"] == results[2]["promoted_id"]
    assert actions(db, staged["work"]) == [("add", f"dream:{RUN}"), ("approve", ACTOR)]



def test_approvals_between_lists_each_approval_in_its_window(db, staged):
    """What the dashboard's catch-up reads: approvals (with what they wrote and superseded)
    in the window, oldest first; skips and approvals outside it are left out."""
    before = datetime.now(UTC)
    plain = review.approve(db, staged["coffee"], actor=ACTOR)
    newer = review.supersede(db, staged["contradiction"], actor="cli:bob",
                             old_memory_id=staged["fact"])
    review.skip(db, staged["editor"], actor=ACTOR)
    after = datetime.now(UTC)
    found = review.approvals_between(db, before, after)
    assert [(a["memory_id"], a["actor"], a["promoted_id"], a["old_memory_id"])
            for a in found] == [
        (staged["coffee"], ACTOR, plain["promoted_id"], None),
        (staged["contradiction"], "cli:bob", newer["promoted_id"], staged["fact"])]
    assert review.approvals_between(db, after, after + timedelta(days=1)) == []
    with pytest.raises(ValueError, match="empty window"):
        review.approvals_between(db, after, before)

# --- concurrency -------------------------------------------------------------------------


def test_a_decision_waits_for_the_one_in_flight_then_refuses(db, staged):
    """Deterministic: one transaction holds the shadow row (a decision in flight); a second
    decision blocks on the row lock, and once the first commits it sees the new state."""
    shadow_id = staged["coffee"]
    outcome: dict = {}

    def second():
        try:
            outcome["result"] = review.skip(db, shadow_id, actor="cli:bob")
        except review.ReviewConflict as exc:
            outcome["conflict"] = exc

    with db.connect() as conn:
        with conn.transaction():
            assert review_store.lock_memory(conn, shadow_id)["review"] == "pending"
            thread = threading.Thread(target=second)
            thread.start()
            thread.join(timeout=1.5)
            assert thread.is_alive(), "the second decision must wait for the row lock"
            review_store.set_review(conn, shadow_id, review="approved", note=None,
                                    actor=ACTOR, action="approve")
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert "result" not in outcome
    assert str(outcome["conflict"]).startswith(f"memory {shadow_id} was already approved by "
                                               f"{ACTOR} at ")
    assert outcome["conflict"].actor == ACTOR and outcome["conflict"].state == "approved"


@pytest.mark.parametrize("pair", [("approve", "approve"), ("approve", "skip"),
                                  ("supersede", "approve")])
def test_two_decisions_at_once_exactly_one_wins(db, staged, pair):
    shadow_id = staged["contradiction"]
    barrier = threading.Barrier(2)
    results: list = [None, None]

    def decide(i: int, kind: str) -> None:
        actor = f"cli:user{i}"
        barrier.wait()
        try:
            if kind == "approve":
                results[i] = review.approve(db, shadow_id, actor=actor)
            elif kind == "skip":
                results[i] = review.skip(db, shadow_id, actor=actor, reason="no")
            else:
                results[i] = review.supersede(db, shadow_id, actor=actor,
                                              old_memory_id=staged["fact"])
        except review.ReviewConflict as exc:
            results[i] = exc

    threads = [threading.Thread(target=decide, args=(i, kind)) for i, kind in enumerate(pair)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    conflicts = [r for r in results if isinstance(r, review.ReviewConflict)]
    wins = [r for r in results if r is not None and not isinstance(r, Exception)]
    assert len(conflicts) == 1 and len(wins) == 1, results
    winner = results.index(wins[0])
    assert f"by cli:user{winner} at" in str(conflicts[0])
    decisions = [a for a in review.audit_trail(db, [shadow_id])
                 if a["action"] in ("approve", "skip")]
    assert len(decisions) == 1 and decisions[0]["actor"] == f"cli:user{winner}"
    assert len(promoted_from(db, shadow_id)) == (0 if row(db, shadow_id)["review"] ==
                                                 "skipped" else 1)


# --- Dagster -----------------------------------------------------------------------------


def sensor_tick(instance) -> dg.SensorResult | dg.SkipReason:
    context = dg.build_sensor_context(instance=instance, resources={"database": DatabaseResource()})
    return pending_memories_sensor(context)


def apply(instance, result: dg.SensorResult) -> tuple[list[str], list[str]]:
    added, deleted = [], []
    for request in result.dynamic_partitions_requests:
        assert request.partitions_def_name == PENDING_PARTITIONS_NAME
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(PENDING_PARTITIONS_NAME, request.partition_keys)
            added += request.partition_keys
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(PENDING_PARTITIONS_NAME, key)
            deleted += request.partition_keys
    return added, deleted


def test_partition_changes_is_a_pure_diff():
    assert partition_changes([3, 1, 2], ["2", "7", "x"]) == (["1", "3"], ["7", "x"])
    assert partition_changes([], []) == ([], [])


def test_sensor_mirrors_pending_entries_as_partitions(home, db, staged):
    instance = dg.DagsterInstance.ephemeral()
    pending_ids = sorted(staged[k] for k in ("contradiction", "editor", "coffee", "work"))
    result = sensor_tick(instance)
    assert isinstance(result, dg.SensorResult) and not result.run_requests
    assert apply(instance, result) == ([str(i) for i in pending_ids], [])
    assert instance.get_dynamic_partitions(PENDING_PARTITIONS_NAME) == [
        str(i) for i in pending_ids]
    # a replayed tick requests nothing
    assert isinstance(sensor_tick(instance), dg.SkipReason)
    # decisions from any face remove their partitions; a new entry adds one
    review.approve(db, staged["coffee"], actor=ACTOR)
    review.skip(db, staged["work"], actor=ACTOR)
    newer = stage(db, "The user reads on an e-ink tablet.")
    added, deleted = apply(instance, sensor_tick(instance))
    assert added == [str(newer)]
    assert deleted == sorted([str(staged["coffee"]), str(staged["work"])], key=int)
    assert set(instance.get_dynamic_partitions(PENDING_PARTITIONS_NAME)) == {
        str(staged["contradiction"]), str(staged["editor"]), str(newer)}


def test_materializing_a_partition_approves_it(home, db, staged):
    assert shadow_memories.key in vault_promotions.dependency_keys  # lineage
    instance = dg.DagsterInstance.ephemeral()
    apply(instance, sensor_tick(instance))
    key = str(staged["coffee"])
    result = dg.materialize([vault_promotions], instance=instance, partition_key=key,
                            resources={"database": DatabaseResource()})
    assert result.success
    [event] = result.asset_materializations_for_node("vault_promotions")
    meta = {k: v.value for k, v in event.metadata.items()}
    [new] = promoted_from(db, staged["coffee"])
    assert meta["memory_id"] == staged["coffee"] and meta["promoted_id"] == new["id"]
    assert meta["action"] == "approve" and meta["namespace"] == "personal"
    assert meta["actor"] == f"dagster:run-{result.run_id}"
    assert meta["dream_run_id"] == RUN and meta["source_event_ids"] == [11, 12]
    assert actions(db, new["id"]) == [("promote", f"dagster:run-{result.run_id}")]
    assert row(db, staged["coffee"])["review"] == "approved"
    # materializing it again refuses (the run fails) and writes nothing twice
    again = dg.materialize([vault_promotions], instance=instance, partition_key=key,
                           resources={"database": DatabaseResource()}, raise_on_error=False)
    assert not again.success
    error = again.failure_data_for_node("vault_promotions").error
    assert "already approved by dagster:run-" in (error.cause or error).message
    assert len(promoted_from(db, staged["coffee"])) == 1
    # the next tick deletes the decided partition
    assert apply(instance, sensor_tick(instance))[1] == [key]


def test_promote_via_dagster_records_a_run_for_each_decision(home, db, staged, embedder):
    instance = dg.DagsterInstance.ephemeral()
    # no sensor tick yet: promote_via_dagster adds the partition itself
    done = promote_via_dagster(instance, staged["editor"], {
        "actor": ACTOR, "text": "The user indents Python with four spaces.",
        "namespace": "work"})
    [new] = promoted_from(db, staged["editor"])
    assert done["promoted_id"] == new["id"] and done["namespace"] == "work"
    assert done["edited"] is True and done["actor"] == ACTOR
    assert new["text"] == "The user indents Python with four spaces."
    record = instance.get_run_record_by_id(done["run_id"])
    run = record.dagster_run
    assert run.job_name == "vault_promotion_job" and run.is_success
    assert run.tags["dagster/partition"] == str(staged["editor"])
    assert run.tags["memory-platform/actor"] == ACTOR
    assert run.tags["memory-platform/trigger"] == "cli"
    assert actions(db, new["id"]) == [("promote", ACTOR)]
    # supersede through a run
    done = promote_via_dagster(instance, staged["contradiction"], PromotionConfig(
        action="supersede", old_memory_id=staged["fact"], actor=ACTOR))
    assert done["superseded_id"] == staged["fact"]
    assert row(db, staged["fact"])["superseded_by"] == done["promoted_id"]
    # a conflict: the run is recorded as failed, the caller gets ReviewConflict
    with pytest.raises(review.ReviewConflict, match="already approved by cli:alice"):
        promote_via_dagster(instance, staged["editor"], {"actor": "cli:bob"})
    runs = instance.get_run_records(dg.RunsFilter(job_name="vault_promotion_job"))
    assert sorted(r.dagster_run.status.value for r in runs) == ["FAILURE", "SUCCESS",
                                                                 "SUCCESS"]
    # refused before any run: a shadow namespace as the target
    with pytest.raises(ValueError, match="shadow namespace"):
        promote_via_dagster(instance, staged["coffee"], {"namespace": "work__dream"})
    assert len(instance.get_run_records(dg.RunsFilter(job_name="vault_promotion_job"))) == 3


def check_result(instance) -> dg.AssetCheckEvaluation:
    result = dg.materialize(
        [shadow_memories, vault_promotions, review_backlog], instance=instance,
        resources={"database": DatabaseResource()},
        selection=dg.AssetSelection.checks(review_backlog),
    )
    assert result.success  # a warning never fails the run
    evaluations = result.get_asset_check_evaluations()
    assert {e.asset_key for e in evaluations} == {shadow_memories.key, vault_promotions.key}
    return evaluations[0]


def test_review_backlog_check_warns_on_size_and_age(home, db, staged, monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    ok = check_result(instance)
    assert ok.passed and ok.metadata["pending"].value == 4
    assert ok.metadata["by_namespace"].value == {"personal": 3, "work": 1}
    monkeypatch.setenv("MEMORY_PLATFORM_REVIEW_BACKLOG_MAX", "3")
    too_many = check_result(instance)
    assert not too_many.passed and too_many.severity == dg.AssetCheckSeverity.WARN
    assert "4 entries wait for review (limit 3)" in too_many.description
    monkeypatch.delenv("MEMORY_PLATFORM_REVIEW_BACKLOG_MAX")
    with db.connect() as conn:
        conn.execute("UPDATE memories SET created_at = now() - interval '15 days' "
                     "WHERE id = %s", (staged["work"],))
    too_old = check_result(instance)
    assert not too_old.passed and too_old.severity == dg.AssetCheckSeverity.WARN
    assert "the oldest has waited 15.0 days (limit 14)" in too_old.description
    assert too_old.metadata["oldest_age_days"].value == pytest.approx(15, abs=0.1)
    review.skip(db, staged["work"], actor=ACTOR)
    assert check_result(instance).passed


# --- CLI ---------------------------------------------------------------------------------


def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], input=stdin, capture_output=True, text=True,
                          env={**os.environ, "USER": "alice"}, timeout=900)


def test_review_cli_with_piped_stdin(home, db, staged):
    # personal first (by name): contradiction, editor, coffee by id; then work
    answers = "\n".join([
        "x",                                   # supersede the port fact
        "?",                                   # unknown: asked again
        "e", "The user indents Python with four spaces.",  # edit then approve
        "s", "not durable",                    # skip with a reason
        "n",                                   # work's entry: leave it pending
    ]) + "\n"
    began = time.monotonic()
    done = cli("review", stdin=answers)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "personal: 3 pending" in out and "work: 1 pending" in out
    assert "CONTRADICTS #%d (current): %s" % (staged["fact"], PORT_FACT) in out
    assert f"[x] supersede #{staged['fact']}" in out
    assert "verdict: contradiction (judge)" in out
    assert "nearest: #%d" % staged["tabs"] in out
    assert "unknown answer '?'" in done.stderr
    assert f"superseded #{staged['contradiction']} -> #" in out
    assert f"skipped #{staged['coffee']}" in out
    assert "done: approved 1, superseded 1, skipped 1, passed 1" in out
    # the database
    old = row(db, staged["fact"])
    [superseding] = promoted_from(db, staged["contradiction"])
    assert old["superseded_by"] == superseding["id"] and old["valid_to"] is not None
    [edited] = promoted_from(db, staged["editor"])
    assert edited["text"] == "The user indents Python with four spaces."
    assert row(db, staged["coffee"])["review_note"] == "not durable"
    assert row(db, staged["work"])["review"] == "pending"
    assert actions(db, edited["id"]) == [("promote", "cli:alice")]
    # each promotion is a run on the instance the UI reads
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    runs = instance.get_run_records(dg.RunsFilter(job_name="vault_promotion_job"))
    assert len(runs) == 2 and all(r.dagster_run.is_success for r in runs)
    assert {r.dagster_run.tags["dagster/partition"] for r in runs} == {
        str(staged["contradiction"]), str(staged["editor"])}
    assert {r.dagster_run.tags["memory-platform/actor"] for r in runs} == {"cli:alice"}
    instance.dispose()
    print(f"review CLI session: {time.monotonic() - began:.1f}s")
    # end of input quits; a namespace can be chosen; a typo is one clear error
    quit_early = cli("review", "--namespace", "work", stdin="")
    assert quit_early.returncode == 0 and "done: no decisions" in quit_early.stdout
    assert row(db, staged["work"])["review"] == "pending"
    typo = cli("review", "--namespace", "wrk")
    assert typo.returncode == 1 and "no vault namespace 'wrk'" in typo.stderr


def test_review_cli_with_nothing_pending(home, db):
    done = cli("review")
    assert done.returncode == 0 and "nothing waits for review" in done.stdout


def test_vault_export_writes_every_memory_with_its_state(home, db, embedder, tmp_path):
    from memory_platform.cli.main import app

    with db.connect() as conn:
        conn.execute("INSERT INTO vault_namespaces (name, kind) VALUES ('big', 'primary')")
        dedup_store.insert_bench_memories(conn, "big", [f"fact number {i}" for i in range(1205)],
                                          actor="test")
        conn.execute("UPDATE memories SET status = 'archived' WHERE text = 'fact number 7'")
    fact = known(db, embedder, PORT_FACT, namespace="big")
    shadow = stage(db, PORT_NEW, namespace="big", verdict="contradiction", neighbour_id=fact,
                   similarity=0.9)
    done = review.supersede(db, shadow, actor=ACTOR, old_memory_id=fact)
    result = CliRunner().invoke(app, ["vault", "export", "big", "--out", str(tmp_path / "x")])
    assert result.exit_code == 0, result.output
    assert "exported 1207 memories of big (1205 current, 1 superseded, 1 archived)" in \
        " ".join(result.output.split())
    document = json.loads((tmp_path / "x" / "big.json").read_text())
    assert document["total"] == len(document["memories"]) == 1207
    assert document["counts"]["current"] == 1205 and document["counts"]["superseded"] == 1
    by_id = {m["id"]: m for m in document["memories"]}
    assert by_id[fact]["state"] == "superseded"
    assert by_id[fact]["superseded_by"] == done["promoted_id"]
    assert by_id[done["promoted_id"]]["state"] == "current"
    markdown = (tmp_path / "x" / "big.md").read_text()
    assert markdown.startswith("# Vault: big\n")
    assert "## Current facts (1205)" in markdown and "## Superseded (no longer true) (1)" in \
        markdown and "## Archived (1)" in markdown
    assert f"- ~~{PORT_FACT}~~ _(#{fact}; project; hand; valid " in markdown
    assert f"superseded by #{done['promoted_id']}" in markdown
    assert f"promoted from #{shadow}" in markdown
    assert markdown.count("\n- ") == 1207
    # a shadow namespace exports with review states; --json prints the summary
    result = CliRunner().invoke(app, ["vault", "export", "big__dream", "--out",
                                      str(tmp_path / "x"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["total"] == 1 and summary["counts"]["approved"] == 1
    missing = CliRunner().invoke(app, ["vault", "export", "nope", "--out", str(tmp_path)])
    assert missing.exit_code == 1
