"""The curator's domain: listing and fingerprint, the prompt's rules, verdict validation,
the breaker (in code and in PostgreSQL), execution under re-verification, re-running a
week, dry runs, and consolidation staged for review (restore, purge and the invariant are
in test_curator_archive.py)."""

from datetime import date, datetime, timedelta, timezone

import psycopg
import pytest

from helpers.curator import (
    DECISION,
    DUPLICATE,
    NOW,
    PORT_LINE,
    STALE,
    TRUE_CONFIG,
    WEEK,
    NoEmbed,
    acme_namespace,
    answering,
    good_plan,
    run_week,
    seed,
    stale_cuts,
    status_of,
)
from memory_platform.curator import archive, breaker, listing, prompt, service
from memory_platform.curator.config import CuratorConfig, week_of
from memory_platform.curator.execute import CuratorRefused, NoVerdict, execute
from memory_platform.curator.propose import propose
from memory_platform.llm import ScriptedProvider
from memory_platform.store import memories as memory_store
from memory_platform.vault import review
from memory_platform.vault import service as vault_service
from memory_platform.vault.tokens import Scope


@pytest.fixture
def acme(db, tmp_path):
    return acme_namespace(db, tmp_path)


# --- the prompt and the listing ------------------------------------------------------------


def test_the_prompt_holds_chestertons_fence_and_the_closed_reasons():
    system = prompt.SYSTEM
    assert prompt.PROMPT_VERSION
    assert "Chesterton's fence" in system
    assert "records a decision or a failed attempt" in system
    assert "KEPT" in system and "reversed" in system
    for reason in ("stale", "duplicate", "contradicted", "wrong", "secret"):
        assert f"- {reason}:" in system
    assert "Default is KEEP" in system


def test_listing_numbers_memories_from_one_and_masks_secrets(db):
    seed(db, "other", [f"Other fact {i}." for i in range(5)], vectors=False)
    ids = seed(db, "personal", ["First fact.", "The key is sk-ant-abcdefghijklmnopqrstuv."],
               vectors=False)
    assert ids[0] == 6
    shown = listing.build(db, "personal", NOW)
    assert shown.memory_ids == ids and shown.memory_id(1) == ids[0]
    [part] = listing.chunks(shown, 24000)
    lines = part.text.splitlines()
    assert lines[0].startswith("[1] project | ") and lines[0].endswith('"First fact."')
    assert "sk-ant-" not in part.text and "[secret masked]" in part.text
    assert part.text.split("|")[0] == "[1] project "  # handles, never database ids


def test_a_large_listing_is_split_on_handle_boundaries(db):
    seed(db, "big", [f"Fact number {i} about something rather long-winded." for i in range(60)],
         vectors=False)
    shown = listing.build(db, "big", NOW)
    parts = listing.chunks(shown, 1000)  # ~4,000 characters a part
    assert len(parts) > 1
    assert parts[0].first == 1 and parts[-1].last == 60
    assert all(a.last + 1 == b.first for a, b in zip(parts, parts[1:], strict=False))
    assert all(p.tokens <= 1000 for p in parts)


def test_the_fingerprint_changes_with_an_edit(db, acme):
    before = listing.build(db, "acme", NOW).fingerprint
    assert listing.build(db, "acme", NOW).fingerprint == before
    vault_service.edit(db, Scope.everything(), acme["ids"][5], actor="test", category="user")
    assert listing.build(db, "acme", NOW).fingerprint != before


def test_week_of_is_the_sunday_starting_the_local_week():
    assert week_of(datetime(2026, 12, 1, 12, tzinfo=timezone.utc), "UTC") == WEEK
    assert week_of(datetime(2026, 11, 29, 0, 30, tzinfo=timezone.utc), "UTC") == WEEK
    # 23:30 UTC on Saturday is already Sunday in Berlin
    assert week_of(datetime(2026, 12, 5, 23, 30, tzinfo=timezone.utc),
                   "Europe/Berlin") == date(2026, 12, 6)


# --- the breaker --------------------------------------------------------------------------


def test_the_breaker_allows_exactly_the_ceiling_and_refuses_one_over():
    assert breaker.max_cuts(10, 0.40) == 4
    assert breaker.judge(4, 10, 0.40).passed and not breaker.judge(5, 10, 0.40).passed
    assert breaker.max_cuts(10, 0.3) == 3  # 0.3 * 10 is 3.0000000000000004 in floats
    assert breaker.max_cuts(8, 0.25) == 2 and breaker.max_cuts(3, 0.25) == 0
    config = CuratorConfig(ceilings={"personal": 0.25, "acme": 0.5})
    assert config.ceiling_for("personal") == 0.25 and config.ceiling_for("acme") == 0.5
    assert config.ceiling_for("other") == 0.40
    loaded = CuratorConfig.load(
        __import__("memory_platform.settings", fromlist=["x"]).load_settings(
            {"MEMORY_PLATFORM_CURATOR_CEILINGS": '{"acme": 0.3}'}),
        routing=__import__("memory_platform.vault.routing", fromlist=["x"]).Routing())
    assert loaded.ceiling_for("personal") == 0.25  # kept when another namespace is named
    assert loaded.ceiling_for("acme") == 0.3


def test_the_breakers_verdict_reads_whole():
    # What a refused run says in the digest, the UI and the CLI (the mutation check found
    # no test reading it).
    assert breaker.judge(3, 10, 0.3).explain() == (
        "3 cuts of 10 memories (30%) is within the ceiling of 30% (at most 3)")
    over = breaker.judge(5, 12, 0.25)
    assert over.explain() == "5 cuts of 12 memories (42%) is over the ceiling of 25% (at most 3)"
    assert breaker.judge(0, 0, 0.4).ratio == 0.0


# --- propose and execute --------------------------------------------------------------------


def test_a_week_cuts_stale_and_duplicate_keeps_the_decision_and_stages_a_merge(db, acme):
    proposal, model = run_week(db, acme, good_plan)
    assert proposal.status == "proposed" and proposal.proposed_cuts == 2
    assert proposal.listed == 10 and proposal.max_cuts == 4
    assert "Chesterton's fence" in model.calls[0].system
    assert str(acme["repo"]["path"]) in model.calls[0].prompt
    done = execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    stale_id, dup_id = acme["ids"][0], acme["ids"][2]
    assert done.status == "executed" and sorted(done.archived) == [stale_id, dup_id]
    cut = status_of(db, stale_id)
    assert cut["status"] == "cut" and "curator restore" in cut["text"]
    assert status_of(db, acme["ids"][3])["status"] == "active"  # the decision record
    with db.connect() as conn:
        assert memory_store.count_memories(conn, "acme") == 8
        vectors = conn.execute("SELECT count(*) FROM memory_embeddings WHERE memory_id = %s",
                               (stale_id,)).fetchone()[0]
        archived = conn.execute(
            """SELECT a.reason, a.evidence, a.memory->>'text', a.dagster_run_id,
                      (SELECT count(*) FROM curator_archive_vectors v WHERE v.archive_id = a.id)
               FROM curator_archive a WHERE a.memory_id = %s""", (dup_id,)).fetchone()
        audit = memory_store.audit_of(conn, stale_id)
    assert vectors == 0  # moved into the archive
    assert archived[0] == "duplicate" and archived[2] == DUPLICATE
    assert archived[1][0]["memory_id"] == acme["ids"][1] and archived[3] == "run-1"
    assert archived[4] == 1
    assert [a["action"] for a in audit][-1] == "cut"
    assert audit[-1]["before"]["text"] == STALE
    # the merge waits for review in acme__dream, never executed
    [staged] = done.staged
    entry = status_of(db, staged)
    assert entry["namespace"] == "acme__dream" and entry["review"] == "pending"
    assert "#" + str(acme["ids"][4]) in entry["why"]
    assert archive.invariant(db)["ok"]


def test_approving_a_merge_supersedes_its_sources(db, acme):
    run_week(db, acme, good_plan)
    done = execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    decided = review.approve(db, done.staged[0], actor="test")
    assert decided["superseded_sources"] == sorted([acme["ids"][4], acme["ids"][9]])
    for source in decided["superseded_sources"]:
        row = status_of(db, source)
        assert row["superseded_by"] == decided["promoted_id"] and row["valid_to"] is not None


def test_a_namespace_changed_between_listing_and_cutting_cuts_nothing(db, acme):
    run_week(db, acme, good_plan)
    vault_service.edit(db, Scope.everything(), acme["ids"][6], actor="cli:alice",
                       text="Deploys go out on Thursdays.", embedder=NoEmbed())
    with pytest.raises(CuratorRefused) as refused:
        execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    assert refused.value.refusal == "fingerprint"
    assert f"edited (#{acme['ids'][6]})" in str(refused.value)
    assert status_of(db, acme["ids"][0])["status"] == "active"
    [run] = service.runs(db, Scope.everything(), namespace="acme")
    assert run["status"] == "refused" and "changed since the model saw it" in run["refusal_detail"]


def test_an_invalid_handle_refuses_the_whole_run(db, acme):
    def plan(handles):
        verdict = good_plan(handles)
        verdict["cuts"].append({"handle": 11, "reason": "stale",
                                "evidence": [{"date": "2025-01-01", "note": "long ago"}]})
        return verdict

    proposal, _ = run_week(db, acme, plan)
    assert proposal.status == "refused" and proposal.refusal == "invalid_verdict"
    assert any("handle 11 is not one of the handles shown" in p for p in proposal.problems)
    with pytest.raises(CuratorRefused):
        execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    with db.connect() as conn:
        assert memory_store.count_memories(conn, "acme") == 10


@pytest.mark.parametrize("bad, problem", [
    ({"handle": 4, "reason": "stale", "evidence": [{"date": "2025-01-01", "note": "old"}]},
     "records a decision"),
    ({"handle": 1, "reason": "stale", "evidence": [
        {"file": "../outside.txt", "line": 1, "note": "x"}]}, "leaves the repository"),
    ({"handle": 1, "reason": "stale", "evidence": [
        {"file": "config/server.toml", "line": 99, "note": "x"}]}, "the file has 3 lines"),
    ({"handle": 1, "reason": "wrong", "evidence": [{"commit": "deadbeef", "note": "x"}]},
     "is not in the repository"),
    ({"handle": 2, "reason": "duplicate", "evidence": [{"handle": 3, "note": "x"}]},
     "names the handle it duplicates"),
])
def test_verdict_validation_refuses(db, acme, bad, problem):
    proposal, _ = run_week(db, acme, lambda handles: {"cuts": [bad]})
    assert proposal.status == "refused", proposal.problems
    assert any(problem in p for p in proposal.problems), proposal.problems


def test_cutting_both_duplicates_is_refused(db, acme):
    def plan(handles):
        a, b = handles[TRUE_CONFIG], handles[DUPLICATE]
        return {"cuts": [
            {"handle": a, "reason": "duplicate", "of": b, "evidence": [{"handle": b, "note": "s"}]},
            {"handle": b, "reason": "duplicate", "of": a, "evidence": [{"handle": a, "note": "s"}]},
        ]}

    proposal, _ = run_week(db, acme, plan)
    assert proposal.status == "refused"
    assert any("both would be lost" in p for p in proposal.problems)


def test_a_decision_record_goes_on_repository_evidence(db, acme):
    def plan(handles):
        return {"cuts": [{"handle": handles[DECISION], "reason": "contradicted", "evidence": [
            {"commit": acme["repo"]["second"][:10], "note": "the cache went back to Redis"}]}]}

    proposal, _ = run_week(db, acme, plan)
    assert proposal.status == "proposed", proposal.problems


def test_breaker_in_the_domain_exactly_at_the_ceiling_and_one_over(db, acme):
    at, _ = run_week(db, acme, stale_cuts(4))
    assert at.status == "proposed" and at.proposed_cuts == 4
    done = execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    assert done.cuts == 4
    over, _ = run_week(db, acme, stale_cuts(3), week=WEEK + timedelta(days=7), run_id="run-2")
    assert over.status == "refused" and over.refusal == "breaker"  # 3 of 6 > 40%
    with pytest.raises(CuratorRefused):
        execute(db, "acme", WEEK + timedelta(days=7), dagster_run_id="run-2",
                config=acme["config"], now=NOW)
    with db.connect() as conn:
        assert memory_store.count_memories(conn, "acme") == 6


def test_a_lower_ceiling_at_execution_time_refuses(db, acme):
    run_week(db, acme, stale_cuts(4))
    stricter = CuratorConfig(repos=acme["config"].repos, ceilings={"acme": 0.3})
    with pytest.raises(CuratorRefused) as refused:
        execute(db, "acme", WEEK, dagster_run_id="run-1", config=stricter, now=NOW)
    assert refused.value.refusal == "breaker"


def test_the_database_refuses_more_archives_than_a_run_allows(db, acme):
    from memory_platform.store import curator as curator_store
    from memory_platform.store import curator_archive as archive_store

    with db.connect() as conn:
        run_pk = curator_store.insert_run(
            conn, namespace="acme", week=WEEK, dagster_run_id="bug", status="proposed",
            dry_run=False, refusal=None, refusal_detail=None, memory_ids=acme["ids"],
            fingerprint="x", ceiling=0.1, max_cuts=1, proposed_cuts=2, verdict={},
            chunks=1, listing_tokens=0, repo=None, agent="test", prompt_version="t")
        rows = [archive_store.CutRow(i, h, "stale", None, [], None)
                for h, i in enumerate(acme["ids"][:2], 1)]
        with pytest.raises(psycopg.errors.CheckViolation, match="curator ceiling"):
            with conn.transaction():
                archive_store.cut_memories(conn, rows, curator_run_id=run_pk,
                                           dagster_run_id="bug", actor="test", now=NOW,
                                           restore_until=NOW + timedelta(days=14))
    assert status_of(db, acme["ids"][0])["status"] == "active"


def test_rerunning_a_week_does_not_cut_twice(db, acme):
    run_week(db, acme, good_plan)
    first = execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    again, model = run_week(db, acme, good_plan, run_id="run-2")
    assert again.status == "already_executed" and model.calls == []
    second = execute(db, "acme", WEEK, dagster_run_id="run-2", config=acme["config"], now=NOW)
    assert second.status == "already_executed" and second.cuts == 0
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM curator_archive").fetchone()[0] == first.cuts
        assert conn.execute("SELECT count(*) FROM memories WHERE namespace = 'acme__dream'"
                            ).fetchone()[0] == 1


def test_a_dry_run_is_never_executed(db, acme):
    proposal, _ = run_week(db, acme, good_plan, dry_run=True)
    assert proposal.status == "proposed" and proposal.dry_run
    shown = service.proposed_cuts(db, Scope.everything(), proposal.run_pk)
    assert [c["text"] for c in shown["cuts"]] == [STALE, DUPLICATE]
    assert shown["cuts"][0]["evidence"][0] == {"file": "config/server.toml",
                                               "line": PORT_LINE, "note": "port = 9090"}
    with pytest.raises(NoVerdict, match="only dry runs"):
        execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)


def test_a_namespace_without_repo_is_judged_on_its_memories(db):
    seed(db, "personal", ["I live in Lyon.", "I live in Lyon, France.", "Coffee, no sugar.",
                          "Conference in Berlin on 2025-03-01.", "Runs on Sundays."],
         vectors=False)

    def plan(handles):
        return {"cuts": [{"handle": handles["Conference in Berlin on 2025-03-01."],
                          "reason": "stale",
                          "evidence": [{"date": "2025-03-01", "note": "the event is past"}]}]}

    model = ScriptedProvider(answers=answering(plan))
    proposal = propose(db, "personal", WEEK, agent=lambda: model, dagster_run_id="r",
                       config=CuratorConfig(), repo=None, now=NOW)
    assert proposal.status == "proposed" and proposal.ceiling == 0.25
    assert "tied to no repository" in model.calls[0].prompt
    # file evidence in a namespace without a repository is refused
    bad = ScriptedProvider(answers=answering(lambda h: {"cuts": [{
        "handle": 1, "reason": "stale", "evidence": [{"file": "x", "line": 1, "note": "n"}]}]}))
    refused = propose(db, "personal", WEEK, agent=lambda: bad, dagster_run_id="r2",
                      config=CuratorConfig(), repo=None, now=NOW)
    assert any("has no repository" in p for p in refused.problems)
