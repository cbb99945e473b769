"""orchard's write rules on every face (issue 20, defects 8 and 9): an agent token records
milestones only, within the daily limit, over REST as over MCP (the service decides from
the caller's Scope, not the face); odd input (NUL, lone surrogates, a 1 MB milestone) is a
clear refusal naming the field, never a 500 nor a bare "Error executing tool"."""

import asyncio
import json

import pytest
from mcp import Client
from typer.testing import CliRunner

from helpers.api import local_client
from memory_platform.api.app import create_app
from memory_platform.cli.main import app as cli
from memory_platform.mcp.server import build_server
from memory_platform.orchard import projects
from memory_platform.vault import tokens
from memory_platform.vault.tokens import Scope

EVERYTHING = Scope.everything()
HUGE = "reached " + "x" * 1_000_000


@pytest.fixture
def rest(home, db):
    projects.add(db, EVERYTHING, name="atlas", namespace="work", actor="cli:dana",
                 next_action="tag v1.2")
    _, agent = tokens.create(db, "work", name="w-agent", kind="agent")
    _, person = tokens.create(db, "work", name="w-person", kind="person")
    app = create_app(db, token="admin-secret")
    try:
        yield local_client(app), {"Authorization": f"Bearer {agent}"}, {
            "Authorization": f"Bearer {person}"}
    finally:
        app.state.review_recorder.close()


def test_an_agent_token_records_milestones_only_within_the_daily_limit(rest, db):
    client, agent, person = rest
    made = client.post("/orchard/projects", headers=agent,
                       json={"name": "sneaky", "namespace": "work"})
    assert made.status_code == 403 and "milestone" in made.json()["detail"], made.text
    for change in ({"status": "paused"}, {"priority": 1}, {"archived": True},
                   {"next_action": "something else"}):
        edited = client.patch("/orchard/projects/atlas", headers=agent, json=change)
        assert edited.status_code == 403, (change, edited.text)
    assert client.post("/orchard/projects/atlas/milestones", headers=agent,
                       json={"what": "   ", "status": "done"}).status_code == 422
    for i in range(3):  # MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY's default
        done = client.post("/orchard/projects/atlas/milestones", headers=agent,
                           json={"what": f"step {i}"})
        assert done.status_code == 201, done.text
    churn = client.post("/orchard/projects/atlas/milestones", headers=agent,
                        json={"what": "step 3", "status": "paused"})
    assert churn.status_code == 429 and "PER_DAY=3" in churn.json()["detail"], churn.text
    # a person's token (and the admin) is not limited
    assert client.post("/orchard/projects/atlas/milestones", headers=person,
                       json={"what": "step 3"}).status_code == 201
    assert client.patch("/orchard/projects/atlas", headers=person,
                        json={"priority": 1}).status_code == 200
    changes = projects.history(db, EVERYTHING, "atlas")
    assert [(c["change"], c["actor"], c["by_agent"]) for c in changes] == [
        ("create", "cli:dana", False)] + [("milestone", "api:w-agent", True)] * 3 + [
        ("milestone", "api:w-person", False), ("edit", "api:w-person", False)]
    got = projects.get(db, EVERYTHING, "atlas")
    assert (got["status"], got["priority"], got["archived"]) == ("active", 1, False)
    assert [p["name"] for p in projects.list_projects(db, EVERYTHING)] == ["atlas"]


def test_the_service_decides_agent_rules_from_the_scope(db):
    projects.add(db, EVERYTHING, name="atlas", namespace="work", actor="cli:dana")
    agent = Scope.of(["work"], agent=True)
    with pytest.raises(projects.Forbidden, match="milestone"):
        projects.add(db, agent, name="new", namespace="work", actor="api:a")
    with pytest.raises(projects.Forbidden, match="milestone"):
        projects.edit(db, agent, "atlas", actor="api:a", status="paused")
    done = projects.milestone(db, agent, "atlas", "first", actor="api:a")
    assert done["changed"]
    [_, change] = projects.history(db, EVERYTHING, "atlas")
    assert change["by_agent"] is True


def test_odd_input_over_rest_is_a_clear_422(rest, db):
    client, _, person = rest
    admin = {"Authorization": "Bearer admin-secret"}
    for body in ({"name": "a\x00b", "namespace": "work"},
                 {"name": "ok", "namespace": "work", "next_action": "x\x00y"},
                 {"name": "ok", "namespace": "work", "blockers": ["x\x00"]},
                 {"name": "ok", "namespace": "work", "cairn_projects": ["/a\x00"]},
                 {"name": "ok", "namespace": "work", "repo": "/a\ud800"},
                 {"name": "ok", "namespace": "wo\x00rk"}):
        # sent as JSON escapes: a lone surrogate cannot be encoded as UTF-8 bytes
        answer = client.post("/orchard/projects", content=json.dumps(body),
                             headers={**admin, "Content-Type": "application/json"})
        assert answer.status_code == 422, (body, answer.text)
    answer = client.post("/orchard/projects", headers=admin,
                         json={"name": "a\x00b", "namespace": "work"})
    assert "NUL" in answer.text and "name" in answer.text
    for change in ({"name": "a\x00b"}, {"cairn_titles": ["t\x00"]}, {"repo": "\x00"}):
        answer = client.patch("/orchard/projects/atlas", headers=person, json=change)
        assert answer.status_code == 422 and "NUL" in answer.text, (change, answer.text)
    for body in ({"what": "a\x00b"}, {"what": "ok", "next_action": "\x00"},
                 {"what": "ok", "blockers": ["\x00x"]}):
        answer = client.post("/orchard/projects/atlas/milestones", headers=person, json=body)
        assert answer.status_code == 422 and "NUL" in answer.text, (body, answer.text)
    huge = client.post("/orchard/projects/atlas/milestones", headers=person,
                       json={"what": HUGE})
    assert huge.status_code == 422 and "at most 2000" in huge.text, huge.text[:300]
    assert "needs a milestone" not in huge.text
    for path in ("/orchard/projects/a%00b", "/orchard/projects/a%00b/history"):
        answer = client.get(path, headers=person)
        assert answer.status_code in (404, 422), (path, answer.text)
    assert client.get("/orchard/projects?namespace=wo%00rk",
                      headers=person).status_code in (403, 422)
    assert projects.get(db, EVERYTHING, "atlas")["last_milestone"] is None  # nothing taken


def test_mcp_orchard_tools_answer_their_refusals_own_message(db):
    projects.add(db, EVERYTHING, name="atlas", namespace="work", actor="cli:dana")

    async def scenario():
        async with Client(build_server(db, namespaces=["work"])) as client:
            said = {}
            for name, args in (
                    ("orchard_get", {"project": "a\x00b"}),
                    ("orchard_milestone", {"project": "a\x00b", "what": "x"}),
                    ("orchard_milestone", {"project": "atlas", "what": "x\x00"}),
                    ("orchard_milestone", {"project": "atlas", "what": "ok",
                                           "blockers": ["\x00"]}),
                    ("orchard_milestone", {"project": "atlas", "what": HUGE}),
                    ("orchard_list", {"namespace": "wo\x00rk"})):
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args)
                said[(name, json.dumps(args)[:60])] = " ".join(
                    c.text for c in result.content)
            return said

    said = asyncio.run(scenario())
    for (name, args), text in said.items():
        # the SDK's prefix, then the refusal's own message (not the prefix alone)
        assert text.startswith(f"Error executing tool {name}: "), (name, args, text)
    texts = list(said.values())
    assert all("NUL" in t for t in texts[:4]), texts[:4]
    assert "at most 2000" in texts[4] and "needs a milestone" not in texts[4]
    assert "outside" in texts[5] or "NUL" in texts[5] or "namespace" in texts[5]
    assert projects.get(db, EVERYTHING, "atlas")["last_milestone"] is None


def test_the_cli_refuses_odd_input_with_an_error_line(home, db):
    projects.add(db, EVERYTHING, name="atlas", namespace="work", actor="cli:dana")
    runner = CliRunner()
    for args in (["orchard", "milestone", "atlas", HUGE],
                 ["orchard", "milestone", "atlas", "a\x00b"],
                 ["orchard", "add", "a\x00b", "--namespace", "work"],
                 ["orchard", "show", "a\x00b"]):
        done = runner.invoke(cli, args)
        assert done.exit_code == 1, (args[:3], done.output[:300])
        assert done.output.startswith("error: ") and "Traceback" not in done.output
    assert "at most 2000" in runner.invoke(cli, ["orchard", "milestone", "atlas",
                                                 HUGE]).output
    assert [p["name"] for p in projects.list_projects(db, EVERYTHING)] == ["atlas"]
