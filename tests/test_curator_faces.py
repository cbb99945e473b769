"""The curator's faces: REST with the vault's scope rules, the CLI's books (cuts, restore,
runs, purges), `status` reporting the invariant per namespace, and the digest listing last
week's cuts and (loudly) refused runs."""

from datetime import date, datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from helpers.api import local_client
from helpers.curator import ACME, STALE, answering, good_plan, make_repo, seed, stale_cuts
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.execute import execute
from memory_platform.curator.propose import propose
from memory_platform.llm import ScriptedProvider
from memory_platform.vault import tokens

WEEK = date(2026, 11, 29)


@pytest.fixture
def cut(db, tmp_path):
    """acme with two cuts executed now, and a refused run of the next week."""
    repo = make_repo(tmp_path)
    ids = seed(db, "acme", ACME)
    seed(db, "work", ["Deploys on Fridays."], vectors=False)
    config = CuratorConfig(repos={"acme": repo["path"]})
    model = ScriptedProvider(answers=answering(good_plan))
    first = propose(db, "acme", WEEK, agent=lambda: model, dagster_run_id="run-a",
                    config=config, repo=repo["path"])
    execute(db, "acme", WEEK, dagster_run_id="run-a", config=config)
    greedy = ScriptedProvider(answers=answering(stale_cuts(6)))
    refused = propose(db, "acme", WEEK + timedelta(days=7), agent=lambda: greedy,
                      dagster_run_id="run-b", config=config, repo=repo["path"])
    assert refused.status == "refused"
    return {"ids": ids, "run": first.run_pk, "refused": refused.run_pk}


def test_rest_lists_and_restores_within_the_callers_scope(db, cut):
    from memory_platform.api.app import create_app

    client = local_client(create_app(db))
    _, work = tokens.create(db, ["work"], name="laptop-work", kind="person")
    _, acme = tokens.create(db, ["acme"], name="laptop-acme", kind="person")
    _, agent = tokens.create(db, ["acme"], name="agent-acme", kind="agent")
    as_work = {"Authorization": f"Bearer {work}"}
    as_acme = {"Authorization": f"Bearer {acme}"}

    listed = client.get("/curator/cuts", headers=as_acme)
    assert listed.status_code == 200
    assert {c["memory_id"] for c in listed.json()} == {cut["ids"][0], cut["ids"][2]}
    first = listed.json()[0]
    assert first["restorable"] and first["seconds_left"] > 13 * 86400
    assert client.get("/curator/cuts", headers=as_work).json() == []
    assert client.get("/curator/cuts?namespace=acme", headers=as_work).status_code == 403
    assert client.get("/curator/runs", headers=as_work).json() == []
    runs = client.get("/curator/runs?refused=true", headers=as_acme).json()
    assert [r["id"] for r in runs] == [cut["refused"]]
    assert "circuit breaker" in runs[0]["refusal_detail"]
    verdict = client.get(f"/curator/runs/{cut['run']}", headers=as_acme).json()
    assert verdict["cuts"][0]["text"] == STALE
    assert client.get(f"/curator/runs/{cut['run']}", headers=as_work).status_code == 404

    target = cut["ids"][0]
    assert client.post(f"/curator/cuts/{target}/restore", headers=as_work).status_code == 404
    # an agent may read the curator's books but not undo its decisions
    as_agent = {"Authorization": f"Bearer {agent}"}
    assert client.get("/curator/cuts", headers=as_agent).status_code == 200
    assert client.post(f"/curator/cuts/{target}/restore", headers=as_agent).status_code == 403
    restored = client.post(f"/curator/cuts/{target}/restore", headers=as_acme)
    assert restored.status_code == 200, restored.text
    assert restored.json()["text"] == STALE and restored.json()["status"] == "active"
    again = client.post(f"/curator/cuts/{target}/restore", headers=as_acme)
    assert again.status_code == 409 and "not a curator cut" in again.json()["detail"]
    with db.connect() as conn:
        actor = conn.execute("SELECT actor FROM vault_audit WHERE memory_id = %s "
                             "ORDER BY id DESC LIMIT 1", (target,)).fetchone()[0]
    assert actor == "api:laptop-acme"


def test_cli_books_and_restore(home, db, cut):
    from memory_platform.cli.main import app

    runner = CliRunner()
    listed = runner.invoke(app, ["curator", "cuts", "--namespace", "acme"])
    assert listed.exit_code == 0, listed.output
    assert "2 restorable cuts" in listed.output and "[contradicted]" in listed.output
    runs = runner.invoke(app, ["curator", "runs", "--refused"])
    assert "refused" in runs.output and "circuit breaker" in runs.output
    restored = runner.invoke(app, ["curator", "restore", str(cut["ids"][0])])
    assert restored.exit_code == 0, restored.output
    assert f"restored #{cut['ids'][0]} in acme" in restored.output
    refused = runner.invoke(app, ["curator", "restore", str(cut["ids"][0])])
    assert refused.exit_code == 1 and "not a curator cut" in refused.output
    missing = runner.invoke(app, ["curator", "restore", "999999"])
    assert missing.exit_code == 1 and "no memory with id 999999" in missing.output


def test_status_reports_the_invariant_per_namespace(home, db, cut):
    from memory_platform import status
    from memory_platform.settings import load_settings

    report = status.report(db, load_settings())
    acme = next(v for v in report["vault"] if v["namespace"] == "acme")
    assert (acme["curator_tombstones"], acme["curator_archives"]) == (2, 2)
    assert acme["curator_invariant_ok"] and report["curator_invariant_ok"]
    with db.connect() as conn:
        conn.execute("ALTER TABLE curator_archive DISABLE TRIGGER curator_pairing_on_archive")
        conn.execute("DELETE FROM curator_archive WHERE memory_id = %s", (cut["ids"][0],))
        conn.execute("ALTER TABLE curator_archive ENABLE TRIGGER curator_pairing_on_archive")
    broken = status.report(db, load_settings())
    assert broken["curator_invariant_ok"] is False
    assert any("curator invariant broken in acme: 2 tombstones, 1 archives" in w
               for w in broken["warnings"])


def test_the_digest_lists_last_weeks_cuts_and_refused_runs(db, cut):
    from memory_platform.dream.digest import build_digest

    markdown, figures = build_digest(db, [datetime.now(timezone.utc).date()], run_id="r")
    assert figures["curator_cuts_last_week"] == 2
    assert figures["curator_refused_last_week"] == 1
    assert "## Curator, last 7 days: 2 restorable cuts" in markdown
    assert "**1 curator run(s) REFUSED: nothing was cut in them.**" in markdown
    assert f"`memory-platform curator restore {cut['ids'][0]}`" in markdown
    assert STALE in markdown and "(contradicted)" in markdown


CANARY_KEY = "sk-proj-" + "Zq8Wm3Np5Rv7Tx2K" * 3


def test_a_cut_secret_is_shown_masked_on_every_face(db, tmp_path):
    """A memory cut because it holds a credential: its text reaches REST, the page and the
    CLI masked (the service masks it, for every face)."""
    from memory_platform.api.app import create_app
    from memory_platform.cli.main import app
    from memory_platform.curator import service
    from memory_platform.vault.tokens import Scope

    repo = make_repo(tmp_path)
    texts = ACME + [f"The staging OpenAI key is {CANARY_KEY} for now."]
    seed(db, "acme", texts)
    config = CuratorConfig(repos={"acme": repo["path"]})

    def plan(handles):
        secret = handles[next(t for t in handles if CANARY_KEY in t or "masked" in t)]
        return {"cuts": [{"handle": secret, "reason": "secret", "evidence": [
            {"handle": secret, "note": f"holds a key: {CANARY_KEY}"}]}]}

    model = ScriptedProvider(answers=answering(plan))
    proposal = propose(db, "acme", WEEK, agent=lambda: model, dagster_run_id="run-s",
                       config=config, repo=repo["path"])
    assert CANARY_KEY not in model.calls[0].prompt  # the listing was masked already
    execute(db, "acme", WEEK, dagster_run_id="run-s", config=config)
    client = local_client(create_app(db))
    shown = [client.get("/curator/cuts").text, client.get(f"/curator/runs/{proposal.run_pk}").text,
             client.get("/review/curator").text,
             CliRunner().invoke(app, ["curator", "cuts", "--json"]).output,
             repr(service.cuts(db, Scope.everything()))]
    assert all("OpenAI key is" in s for s in shown[:2]), shown[:2]
    for answer in shown:
        assert CANARY_KEY not in answer, answer[:300]
    assert "[secret masked]" in shown[0]
