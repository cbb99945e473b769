"""A refused run must be shown, never crash a face: a verdict naming handles the listing
does not have (one past the last, and 0) through the service, REST, the dashboard page and
`curate` (which goes on to the next namespace, says which credential paid, and exits 1 for
a dry run whose namespaces were all refused); Chesterton's fence held by code; a refusal
for a changed namespace naming the memory that changed; ids beyond PostgreSQL's bigint
answered as bad input (422), not a server error."""

import json
import os

import pytest
from typer.testing import CliRunner

from helpers.api import local_client
from helpers.curator import (
    ACME,
    NOW,
    WEEK,
    NoEmbed,
    acme_namespace,
    beyond_the_listing,
    install_fake_claude,
    run_week,
    seed,
)
from memory_platform.curator import service
from memory_platform.curator.execute import CuratorRefused, execute
from memory_platform.curator.propose import propose
from memory_platform.llm import ScriptedProvider
from memory_platform.vault import service as vault_service
from memory_platform.vault.tokens import Scope

TOO_BIG = "99999999999999999999"  # > 2**63 - 1, PostgreSQL's bigint


@pytest.fixture
def acme(db, tmp_path):
    return acme_namespace(db, tmp_path)


def test_a_verdict_naming_handles_beyond_the_listing_is_shown_not_crashed(db, acme):
    proposal, _ = run_week(db, acme, beyond_the_listing)
    assert proposal.status == "refused" and proposal.refusal == "invalid_verdict"
    assert any("handle 11 is not one of the handles shown" in p for p in proposal.problems)
    assert any("handle 0 is not one of the handles shown" in p for p in proposal.problems)
    shown = service.proposed_cuts(db, Scope.everything(), proposal.run_pk)
    assert [c["handle"] for c in shown["cuts"]] == [11, 0]
    for cut in shown["cuts"]:
        # not the last memory (ids[-1]) for handle 0, nothing at all for 11
        assert cut["memory_id"] is None and cut["text"] is None, cut
        assert cut["status"] == "not in the listing"
    [merge] = shown["merges"]
    assert [s["memory_id"] for s in merge["sources"]] == [None, None]
    assert ACME[-1] not in json.dumps(shown, default=str)


def test_rest_and_the_page_show_a_refused_run_with_unknown_handles(db, acme):
    from memory_platform.api.app import create_app

    proposal, _ = run_week(db, acme, beyond_the_listing)
    client = local_client(create_app(db))
    verdict = client.get(f"/curator/runs/{proposal.run_pk}")
    assert verdict.status_code == 200, verdict.text
    assert [c["memory_id"] for c in verdict.json()["cuts"]] == [None, None]
    page = client.get("/review/curator")
    assert page.status_code == 200, page.text[:500]
    assert "invalid verdict" in page.text and "handle 11" in page.text


@pytest.mark.parametrize("path", [
    f"/curator/cuts?run={TOO_BIG}", f"/curator/runs/{TOO_BIG}",
    f"/curator/cuts?run=-{TOO_BIG}", "/curator/cuts?run=0",
])
def test_curator_ids_beyond_bigint_are_bad_input(db, path):
    from memory_platform.api.app import create_app

    answer = local_client(create_app(db)).get(path)
    assert answer.status_code == 422, (path, answer.status_code, answer.text)
    assert "run" in answer.text.lower()


@pytest.mark.parametrize("path", [f"/curator/cuts/{TOO_BIG}/restore",
                                  f"/review/api/curator/cuts/{TOO_BIG}/restore"])
def test_restoring_an_id_beyond_bigint_is_bad_input(db, path):
    from memory_platform.api.app import create_app

    answer = local_client(create_app(db)).post(path, headers={"X-Memory-Platform": "1"})
    assert answer.status_code == 422, (path, answer.status_code, answer.text)
    assert "memory_id" in answer.text


def test_the_cli_refuses_an_id_beyond_bigint_with_a_clear_error(home, db):
    from memory_platform.cli.main import app

    done = CliRunner().invoke(app, ["curator", "restore", TOO_BIG])
    assert done.exit_code == 1, done.output
    assert f"error: memory {TOO_BIG} is not an id" in done.output
    assert "Traceback" not in done.output


def _claude(tmp_path, monkeypatch, plan_name: str) -> dict:
    fake = install_fake_claude(tmp_path / "bin", plan_name=plan_name)
    monkeypatch.setenv("PATH", f"{fake['bin']}{os.pathsep}{os.environ['PATH']}")
    for key, value in {**fake["env"], "MEMORY_PLATFORM_LLM_PROVIDER": "claude-cli"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    return fake


@pytest.mark.filterwarnings(
    "ignore:Non-compliant tag keys like \\['dagster/partition/:DeprecationWarning")
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_curate_goes_on_after_a_refused_namespace(home, db, tmp_path, monkeypatch, dry_run):
    from memory_platform.cli.main import app

    seed(db, "acme", ACME, vectors=False)
    seed(db, "work", ["Deploys go out on Fridays.", "Standup is at 9:30."], vectors=False)
    _claude(tmp_path, monkeypatch, "beyond_the_listing")
    done = CliRunner().invoke(app, ["curate"] + (["--dry-run"] if dry_run else []))
    assert done.exception is None or isinstance(done.exception, SystemExit), done.output
    assert "IndexError" not in done.output and "Traceback" not in done.output, done.output
    # both namespaces judged and shown, the one after the refused one included
    assert "acme (week" in done.output and "work (week" in done.output, done.output
    assert done.output.count("REFUSED: invalid verdict") == 2, done.output
    assert "credential: claude subscription login" in done.output, done.output
    # every namespace refused: exit 1, dry run or not
    assert done.exit_code == 1, done.output
    # an expected refusal is an outcome, not an ERROR with a stack trace
    assert "ERROR" not in done.output and "Stack Trace" not in done.output, done.output


# --- Chesterton's fence, held by code ----------------------------------------------------

SQLITE = "We tried SQLite, it broke, use PostgreSQL."
REVERSAL = "We moved back to SQLite in March: PostgreSQL was too heavy for the laptop."


@pytest.fixture
def decided(db, tmp_path):
    """acme with a decision record (category 'decision'), a memory recording its reversal,
    and a decision that no phrase gives away (only its category says so)."""
    from memory_platform.store import memories as memory_store

    found = acme_namespace(db, tmp_path)
    with db.connect() as conn:
        for text in (SQLITE, "Search runs on PostgreSQL tsvector (ADR-004).", REVERSAL):
            memory_store.add_memory(conn, namespace="acme", text=text, category="decision",
                                    actor="test")
    return found


def _cut(handle_of, text, reason, evidence, of=None):
    def plan(handles):
        cut = {"handle": handles[text], "reason": reason,
               "evidence": [e(handles) if callable(e) else e for e in evidence]}
        if of is not None:
            cut["of"] = handles[of]
        return {"cuts": [cut]}
    return plan


FILE = {"file": "README.md", "line": 3, "note": "the code uses what the decision chose"}


@pytest.mark.parametrize("text, reason, evidence, of", [
    (SQLITE, "stale", [FILE], None),  # the file confirms the decision was carried out
    (SQLITE, "wrong", [FILE], None),
    (SQLITE, "contradicted", [FILE], None),  # a file line names no reversal
    (SQLITE, "stale", [{"date": "2025-01-01", "note": "old"}], None),
    ("Search runs on PostgreSQL tsvector (ADR-004).", "stale", [FILE], None),
], ids=["stale-file", "wrong-file", "contradicted-file", "stale-date", "category-only"])
def test_a_decision_is_kept_unless_evidence_names_its_reversal(db, decided, text, reason,
                                                               evidence, of):
    proposal, _ = run_week(db, decided, _cut(None, text, reason, evidence, of))
    assert proposal.status == "refused", proposal.problems
    assert any("records a decision" in p for p in proposal.problems), proposal.problems


@pytest.mark.parametrize("reason, evidence, of", [
    ("contradicted", [], REVERSAL),
    ("wrong", ["commit"], None),
    ("wrong", ["handle"], None),
], ids=["contradicted-by-a-memory", "wrong-by-a-commit", "wrong-by-a-memory"])
def test_a_decision_goes_when_the_evidence_names_what_reversed_it(db, decided, reason,
                                                                  evidence, of):
    def plan(handles):
        found = {"commit": {"commit": decided["repo"]["second"][:10],
                            "note": "went back to SQLite"},
                 "handle": {"handle": handles[REVERSAL], "note": "records the reversal"}}
        cut = {"handle": handles[SQLITE], "reason": reason,
               "evidence": [found[e] for e in evidence] or [found["handle"]]}
        if of is not None:
            cut["of"] = handles[of]
        return {"cuts": [cut]}

    proposal, _ = run_week(db, decided, plan)
    assert proposal.status == "proposed", proposal.problems


# --- a namespace that changed while the model was thinking --------------------------------


def test_a_fingerprint_refusal_names_the_memory_edited_during_the_call(db, acme):
    edited = acme["ids"][6]

    def respond(call):
        # a person edits a listed memory while the model is still judging
        vault_service.edit(db, Scope.everything(), edited, actor="cli:alice",
                           text="Deploys go out on Thursdays.", embedder=NoEmbed())
        return json.dumps({"cuts": [], "merges": [], "contradictions": []})

    propose(db, "acme", WEEK, agent=lambda: ScriptedProvider(answers=respond),
            dagster_run_id="run-1", config=acme["config"], repo=acme["repo"]["path"], now=NOW)
    with pytest.raises(CuratorRefused) as refused:
        execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=NOW)
    assert refused.value.refusal == "fingerprint"
    assert f"#{edited}" in str(refused.value), str(refused.value)
