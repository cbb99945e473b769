"""orchard's faces over a real PostgreSQL: on the demo history, `orchard week` from the CLI
and over MCP names both projects with reasons and evidence, an agent records a milestone and
cannot churn; token scoping over MCP (a server limited to `work`) and REST (a `work`
token); the dashboard page in real headless Chromium; the Dagster assets and schedule."""

import asyncio
import json
import re
import urllib.request
from datetime import UTC, date, datetime, timedelta

import dagster as dg
import markupsafe
import pytest
from mcp import Client
from typer.testing import CliRunner

from helpers.api import local_client
from helpers.browser import chromium, serving
from helpers.orchard_history import ATLAS, import_history, write_history
from memory_platform.api.app import create_app
from memory_platform.cli.main import app as cli
from memory_platform.ingest.importer import import_path
from memory_platform.mcp.server import build_server
from memory_platform.orchard import discovery, projects
from memory_platform.synthetic import generate_demo
from memory_platform.vault import tokens
from memory_platform.vault.tokens import Scope

EVERYTHING = Scope.everything()
ORCHARD_TOOLS = {"orchard_list", "orchard_get", "orchard_milestone", "orchard_week"}


def _structured(result):
    assert not result.is_error, result.content
    return result.structured_content


def _error(result) -> str:
    assert result.is_error
    return json.dumps([c.model_dump() for c in result.content])


@pytest.fixture
def demo(home, db, monkeypatch):
    """The first-run demo (bookminder and tidepool over the last ten days), imported."""
    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
    generate_demo(home / "demo")
    report = import_path(db, None, home / "demo")
    assert report.events_new > 100 and not report.errors
    return home / "demo"


def test_orchard_week_on_the_demo_from_the_cli_and_over_mcp(demo, db):
    runner = CliRunner()
    listed = runner.invoke(cli, ["orchard", "proposals", "--json"])
    assert listed.exit_code == 0, listed.output
    proposals = {p["name"]: p for p in json.loads(listed.stdout)}
    assert set(proposals) == {"bookminder", "tidepool"}
    assert {s["kind"] for s in proposals["bookminder"]["signals"]} == {"path", "named project"}
    assert projects.list_projects(db, EVERYTHING) == []  # proposed, not created
    for name, extra in (("bookminder", []), ("tidepool", ["--priority", "2"])):
        done = runner.invoke(cli, ["orchard", "accept", str(proposals[name]["id"]), *extra])
        assert done.exit_code == 0 and "accepted: #" in done.stdout, done.output

    shown = runner.invoke(cli, ["orchard", "week"])
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    assert text.index("1. tidepool") < text.index("2. bookminder")  # priority 2 first
    assert "priority 2 of 5" in text and "last active" in text
    cited = [int(i) for i in re.findall(r"^   > #(\d+) ", text, re.M)]
    assert len(cited) == 6  # three turns of evidence each
    with db.connect() as conn:
        rows = dict(conn.execute("SELECT id, project FROM events WHERE id = ANY(%s)",
                                 (cited,)).fetchall())
    assert set(rows) == set(cited)
    assert {p.rsplit("/", 1)[-1] for p in rows.values()} == {"tidepool", "bookminder"}

    async def agent():
        async with Client(build_server(db)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert ORCHARD_TOOLS <= tools
            answer = _structured(await client.call_tool("orchard_week", {}))
            assert [p["name"] for p in answer["ranked"]] == ["tidepool", "bookminder"]
            assert answer["phrased_by"] is None and answer["answer"].startswith("What to work")
            for project in answer["ranked"]:
                assert project["reasons"] and project["evidence"]
                assert {i for r in project["reasons"] for i in r["event_ids"]} <= {
                    t["event_id"] for t in project["evidence"]}
            recorded = _structured(await client.call_tool("orchard_milestone", {
                "project": "tidepool", "what": "v0.4.0 tagged", "next_action": "publish"}))
            assert recorded["changed"] and recorded["next_action"] == "publish"
            assert "needs a milestone" in _error(await client.call_tool(
                "orchard_milestone", {"project": "tidepool", "what": " ", "status": "done"}))
            for what in ("crate published", "docs updated"):
                _structured(await client.call_tool("orchard_milestone",
                                                   {"project": "tidepool", "what": what}))
            churn = await client.call_tool("orchard_milestone", {"project": "tidepool",
                                                                 "what": "status: paused",
                                                                 "status": "paused"})
            assert "refused" in _error(churn) and "PER_DAY=3" in _error(churn)
            got = _structured(await client.call_tool("orchard_get", {"project": "tidepool",
                                                                     "history": True}))
            return got

    got = asyncio.run(agent())
    assert got["status"] == "active" and got["last_milestone"] == "docs updated"
    assert [c["change"] for c in got["history"]] == ["create"] + ["milestone"] * 3
    assert got["history"][0]["actor"].startswith("cli")
    assert {c["actor"] for c in got["history"][1:]} == {"mcp:agent"}
    assert runner.invoke(cli, ["orchard", "show", "nope"]).exit_code == 1


def _two_namespaces(db) -> dict[str, dict]:
    made = {}
    for name, namespace in (("atlas", "work"), ("garden", "personal")):
        made[name] = projects.add(db, EVERYTHING, name=name, namespace=namespace,
                                  actor="cli:dana", next_action=f"water the {name}")
    return made


def test_an_mcp_server_limited_to_work_sees_and_updates_work_projects_only(db):
    made = _two_namespaces(db)

    async def scenario():
        async with Client(build_server(db, namespaces=["work"])) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert ORCHARD_TOOLS <= tools and "cairn_search" not in tools
            listed = _structured(await client.call_tool("orchard_list", {}))
            assert [p["name"] for p in listed["projects"]] == ["atlas"]
            assert listed["total"] == 1
            for ref in ("garden", str(made["garden"]["id"])):
                assert "no project" in _error(await client.call_tool(
                    "orchard_get", {"project": ref}))
                assert "no project" in _error(await client.call_tool(
                    "orchard_milestone", {"project": ref, "what": "sneaky"}))
            assert "outside" in _error(await client.call_tool(
                "orchard_list", {"namespace": "personal"}))
            answer = _structured(await client.call_tool("orchard_week", {"phrase": False}))
            assert [p["name"] for p in answer["ranked"]] == ["atlas"]
            done = _structured(await client.call_tool(
                "orchard_milestone", {"project": "atlas", "what": "tiles cached"}))
            assert done["changed"]

    asyncio.run(scenario())
    assert projects.get(db, EVERYTHING, "garden")["last_milestone"] is None
    assert [c["actor"] for c in projects.history(db, EVERYTHING, "atlas")] == [
        "cli:dana", "mcp:agent"]


def test_rest_scopes_projects_to_the_tokens_namespaces(home, db, tmp_path):
    # atlas's sessions are work's (what a work token may read and link of cairn)
    (home / "routing.toml").write_text(
        '[[rules]]\nproject = "/home/me/src/atlas*"\nnamespace = "work"\n')
    made = _two_namespaces(db)
    write_history(tmp_path / "h", date(2026, 3, 16))
    import_history(db, tmp_path / "h")
    _, work = tokens.create(db, "work", name="laptop", kind="person")
    app = create_app(db, token="admin-secret")
    try:
        client = local_client(app)
        admin = {"Authorization": "Bearer admin-secret"}
        scoped = {"Authorization": f"Bearer {work}"}
        assert client.get("/orchard/projects").status_code == 401
        seen = client.get("/orchard/projects", headers=scoped).json()
        assert [p["name"] for p in seen["projects"]] == ["atlas"] and seen["total"] == 1
        assert len(client.get("/orchard/projects", headers=admin).json()["projects"]) == 2
        for ref in ("garden", made["garden"]["id"]):
            assert client.get(f"/orchard/projects/{ref}", headers=scoped).status_code == 404
            assert client.patch(f"/orchard/projects/{ref}", headers=scoped,
                                json={"status": "paused"}).status_code == 404
        assert client.post("/orchard/projects", headers=scoped,
                           json={"name": "x", "namespace": "personal"}).status_code == 403
        assert client.get("/orchard/projects?namespace=personal",
                          headers=scoped).status_code == 403
        assert client.get("/orchard/proposals", headers=scoped).status_code == 403
        week = client.get("/orchard/week", headers=scoped).json()
        assert [p["name"] for p in week["ranked"]] == ["atlas"]

        # a person's writes: any field, no daily limit, audited as the token
        edited = client.patch("/orchard/projects/atlas", headers=scoped, json={
            "repo": ATLAS, "cairn_projects": [ATLAS], "priority": 1, "next_action": None})
        assert edited.status_code == 200 and edited.json()["next_action"] is None
        for i in range(5):
            made_one = client.post("/orchard/projects/atlas/milestones", headers=scoped,
                                   json={"what": f"step {i}"})
            assert made_one.status_code == 201, made_one.text
        assert client.post("/orchard/projects/atlas/milestones", headers=scoped,
                           json={"what": "step 4"}).status_code == 200  # already recorded
        changes = client.get("/orchard/projects/atlas/history", headers=scoped).json()
        assert [c["change"] for c in changes] == ["create", "edit"] + ["milestone"] * 5
        assert {c["actor"] for c in changes[1:]} == {"api:laptop"}
        atlas = client.get("/orchard/projects/atlas", headers=scoped).json()
        assert atlas["activity"]["turns"] == 12  # the fixture's atlas sessions, web/ too
        assert client.patch("/orchard/projects/atlas", headers=scoped,
                            json={"status": "someday"}).status_code == 422
        assert client.patch("/orchard/projects/atlas", headers=scoped,
                            json={"archived": True}).json()["archived"] is True
        assert client.get("/orchard/projects", headers=scoped).json()["total"] == 0

        proposals = client.get("/orchard/proposals", headers=admin).json()
        assert proposals == []  # nothing discovered until discovery runs
        discovery.discover(db)
        pending = {p["name"]: p for p in client.get("/orchard/proposals",
                                                    headers=admin).json()}
        assert "atlas" not in pending and {"scratch", "Thesis chapter 3"} <= set(pending)
        accepted = client.post(f"/orchard/proposals/{pending['scratch']['id']}/accept",
                               headers=admin, json={"namespace": "work"})
        assert accepted.status_code == 201
        assert accepted.json()["project"]["namespace"] == "work"
        again = client.post(f"/orchard/proposals/{pending['scratch']['id']}/dismiss",
                            headers=admin)
        assert again.status_code == 409 and "already accepted" in again.json()["detail"]
        paths = set(client.get("/openapi.json").json()["paths"])
        assert {"/orchard/projects", "/orchard/week", "/orchard/proposals"} <= paths
    finally:
        app.state.review_recorder.close()


# --- the dashboard page -----------------------------------------------------------------------




@pytest.fixture
def served(home, db):
    with serving(create_app(db)) as url:
        yield url


def test_the_dashboard_page_edits_projects_and_accepts_proposals(served, db, tmp_path):
    hostile = "<script>alert(1)</script> ship it"
    projects.add(db, EVERYTHING, name="atlas", namespace="work", actor="cli:dana",
                 next_action=hostile)
    write_history(tmp_path / "h", date(2026, 3, 16))
    import_history(db, tmp_path / "h")
    discovery.discover(db)
    with urllib.request.urlopen(f"{served}/review/orchard") as response:
        html = response.read().decode()
    assert hostile not in html and str(markupsafe.escape(hostile)) in html
    dialogs = []
    with chromium() as browser:
        page = browser.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(f"{served}/review/orchard")
        assert page.locator(".card.rank").count() == 1  # atlas ranked
        form = page.locator("form.project").first
        form.locator("input[name=next_action]").fill("tag v1.2")
        form.locator("select[name=priority]").select_option("1")
        with page.expect_navigation():
            form.locator("button[data-action=save]").click()
        form = page.locator("form.project").first
        form.locator("input[name=milestone]").fill("staging works")
        with page.expect_navigation():
            form.locator("button[data-action=milestone]").click()
        proposal = page.locator("form.proposal", has_text="scratch")
        proposal.locator("input[name=namespace]").fill("personal")
        with page.expect_navigation():
            proposal.locator("button[data-action=accept]").click()
        form = page.locator("form.project").first
        form.locator("select[name=status]").select_option("blocked")
        form.locator("button[data-action=save]").click()
        page.wait_for_selector("form.project .msg:has-text('needs a blocker')")
    assert dialogs == []  # the project's markup never ran
    atlas = projects.get(db, EVERYTHING, "atlas", with_history=True)
    assert (atlas["next_action"], atlas["priority"], atlas["status"]) == ("tag v1.2", 1,
                                                                         "active")
    assert atlas["last_milestone"] == "staging works"
    assert [(c["change"], c["actor"]) for c in atlas["history"]] == [
        ("create", "cli:dana"), ("edit", "api:local"), ("milestone", "api:local")]
    assert projects.get(db, EVERYTHING, "scratch")["namespace"] == "personal"


# --- Dagster ----------------------------------------------------------------------------------


def test_discovery_and_weekly_snapshot_assets_are_idempotent(home, db, tmp_path):
    from memory_platform.defs.orchard.assets import orchard_proposals, orchard_snapshot
    from memory_platform.defs.orchard.automation import weekly_orchard_schedule
    from memory_platform.resources import DatabaseResource

    monday = projects.week_start(datetime.now(UTC).date())
    write_history(tmp_path / "h", monday)
    import_history(db, tmp_path / "h")
    instance = dg.DagsterInstance.ephemeral()
    resources = {"database": DatabaseResource()}
    for _ in range(2):
        found = dg.materialize([orchard_proposals], resources=resources, instance=instance)
        assert found.success
    meta = found.asset_materializations_for_node("orchard_proposals")[0].metadata
    assert (meta["proposals"].value, meta["new"].value, meta["pending_review"].value) == (3, 0, 3)
    assert projects.list_projects(db, EVERYTHING) == []
    discovery.accept(db, EVERYTHING, discovery.list_proposals(db, EVERYTHING)[0]["id"],
                     actor="cli:dana")

    for _ in range(2):
        run = dg.materialize([orchard_snapshot], resources=resources, instance=instance,
                             partition_key=monday.isoformat())
        assert run.success
    with db.connect() as conn:
        rows = conn.execute("SELECT week, count(*) FROM orchard_snapshots GROUP BY week"
                            ).fetchall()
    assert rows == [(monday, 1)]  # one row per project and week, however many runs
    meta = run.asset_materializations_for_node("orchard_snapshot")[0].metadata
    assert meta["projects"].value == 1 and meta["weeks"].value == monday.isoformat()

    tick = datetime(2026, 3, 23, 5, tzinfo=UTC)  # a Monday
    request = weekly_orchard_schedule(dg.build_schedule_context(
        instance=instance, scheduled_execution_time=tick))
    assert request.partition_key == "2026-03-16"
    assert request.run_key == "orchard-snapshot:2026-03-16"
    assert (tick - timedelta(days=7)).date().isoformat() == request.partition_key
