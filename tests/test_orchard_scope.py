"""orchard keeps scope and masking on every face (issue 20, defect 1): a personal session
(a diary, with a password, an AWS key id and a GitHub token in its turns) never reaches a
`work` token's REST answer, a `--namespaces work` MCP server, the dashboard page with a work
cookie, or the prompt the LLM phrases the week from; a work token attaches no cairn project
the routing file sends elsewhere; an unscoped caller (admin, CLI) sees every linked turn,
with credentials masked; discovery's proposals and the weekly snapshots are masked too."""

import asyncio
import json
from datetime import date, datetime, time, timedelta, timezone

import pytest
from mcp import Client
from typer.testing import CliRunner

from helpers.api import local_client
from helpers.orchard_history import ATLAS, _chat, import_history, write_history
from helpers.transcripts import cc_record
from memory_platform.api.app import create_app
from memory_platform.cli.main import app as cli
from memory_platform.ingest.importer import import_path
from memory_platform.llm import ScriptedProvider
from memory_platform.mcp.server import build_server
from memory_platform.orchard import discovery, projects, snapshots, week
from memory_platform.orchard.prompts import WeekAdvice
from memory_platform.privacy.masking import MASK
from memory_platform.vault import tokens
from memory_platform.vault.tokens import Scope

EVERYTHING = Scope.everything()
DIARY = "/home/me/diary"
MARK = "zebrafinch"  # in every diary turn: nothing of the diary may reach a work caller
PASSWORD = "hunter2-Qx9"
AWS_KEY = "AKIA" + "QWERTYUIOPASDFGH"
GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
DIARY_TURNS = [f"{MARK} diary: the password hunter2 opens the bank app",
               f"noted. {MARK}: password: {PASSWORD} aws {AWS_KEY} github {GITHUB_TOKEN}",
               f"{MARK} the dentist is in March", "ok"]
# What an unscoped caller may see of the diary, masked: never these.
SECRETS = (PASSWORD, AWS_KEY, GITHUB_TOKEN)
LEAKS = (MARK, *SECRETS, "hunter2")
MONDAY = date(2026, 3, 16)


def _diary(root) -> None:
    """A Claude Code session in ~/diary (routed to personal) and a ChatGPT chat titled
    'Diary', next to the atlas history (routed to work)."""
    start = datetime.combine(MONDAY, time(0, 30), tzinfo=timezone.utc)
    lines, parent = [], None
    for i, text in enumerate(DIARY_TURNS):
        rec = cc_record(i, "diary-1", start + timedelta(minutes=i),
                        "user" if i % 2 == 0 else "assistant", text=text, parent=parent,
                        cwd=DIARY)
        parent = rec["uuid"]
        lines.append(json.dumps(rec))
    folder = root / "claude-code" / "-home-me-diary"
    folder.mkdir(parents=True)
    (folder / "d1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    chats = root / "chatgpt" / "conversations.json"
    found = json.loads(chats.read_text(encoding="utf-8"))
    found.append(_chat("Diary", start, [f"{MARK} my password: {PASSWORD}", "noted"]))
    chats.write_text(json.dumps(found), encoding="utf-8")


@pytest.fixture
def world(home, db, tmp_path, monkeypatch):
    """The atlas history and the diary imported; routing: atlas (and ~ itself) is work's,
    the rest personal's; one project in work linked (by an unscoped person) to both, with a blocker
    that the diary's turns mention."""
    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
    (home / "routing.toml").write_text(
        '[[rules]]\nproject = "/home/me/src/atlas*"\nnamespace = "work"\n'
        '[[rules]]\nproject = "/home/me"\nnamespace = "work"\n')
    write_history(tmp_path / "h", MONDAY)
    _diary(tmp_path / "h")
    import_history(db, tmp_path / "h")
    projects.add(db, EVERYTHING, name="x", namespace="work", actor="cli:dana",
                 cairn_projects=[ATLAS, DIARY], cairn_titles=["Diary"],
                 blockers=["password"], next_action="ship it")
    _, person = tokens.create(db, "work", name="w-person", kind="person")
    _, agent = tokens.create(db, "work", name="w-agent", kind="agent")
    return {"person": person, "agent": agent}


def _no_leak(text: str, where: str) -> None:
    for leak in LEAKS:
        assert leak not in text, (where, leak)


def _masked(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, (where, secret)
    assert MASK in text, where


def _diary_ids(db) -> set[int]:
    with db.connect() as conn:
        return {r[0] for r in conn.execute(
            "SELECT e.id FROM events e JOIN conversations c ON c.id = e.conversation_id "
            "WHERE e.project = %s OR c.title = 'Diary'", (DIARY,))}


def _bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def test_rest_gives_a_work_token_only_work_turns_and_the_admin_masked_ones(world, db):
    diary = _diary_ids(db)
    assert len(diary) == 6
    llm = ScriptedProvider(lambda call: WeekAdvice(advice="do x", order=["x"])
                           .model_dump_json())
    app = create_app(db, token="admin-secret", llm=llm)
    try:
        client = local_client(app)
        for kind in ("person", "agent"):
            headers = _bearer(world[kind])
            answer = client.get("/orchard/week?phrase=false", headers=headers)
            assert answer.status_code == 200, answer.text
            _no_leak(answer.text, f"{kind} week")
            [ranked] = answer.json()["ranked"]
            cited = {t["event_id"] for t in ranked["evidence"]} | {
                i for r in ranked["reasons"] for i in r["event_ids"]}
            assert cited and not cited & diary
            listed = client.get("/orchard/projects", headers=headers)
            _no_leak(listed.text, f"{kind} list")
            # atlas's 12 turns in 3 sessions: the diary's session and chat are not counted
            activity = listed.json()["projects"][0]["activity"]
            assert (activity["turns"], activity["sessions"]) == (12, 3)
            shown = client.get("/orchard/projects/x?history=true", headers=headers)
            assert shown.json()["activity"]["turns"] == 12
            phrased = client.get("/orchard/week", headers=headers)
            assert phrased.json()["phrased_by"] == "scripted/scripted"
        assert len(llm.calls) == 2
        for call in llm.calls:
            _no_leak(json.dumps(call.messages), "prompt of a work token")

        admin = client.get("/orchard/week?phrase=false", headers=_bearer("admin-secret"))
        [ranked] = admin.json()["ranked"]
        assert {t["event_id"] for t in ranked["evidence"]} & diary  # unscoped: every link
        _masked(admin.text, "admin week")
        assert admin.json()["secrets_masked"] >= 2
        assert client.get("/orchard/projects/x", headers=_bearer("admin-secret")).json()[
            "activity"]["turns"] == 18
        client.get("/orchard/week", headers=_bearer("admin-secret"))
        _masked(json.dumps(llm.calls[-1].messages), "prompt of the admin")
    finally:
        app.state.review_recorder.close()


def test_a_work_token_attaches_no_cairn_project_routed_elsewhere(world, db):
    app = create_app(db, token="admin-secret")
    try:
        client = local_client(app)
        headers = _bearer(world["person"])
        refused = client.post("/orchard/projects", headers=headers, json={
            "name": "y", "namespace": "work", "cairn_projects": [DIARY],
            "blockers": ["password"]})
        assert refused.status_code == 403, refused.text
        assert "personal" in refused.json()["detail"] and DIARY in refused.json()["detail"]
        # "/home/me" is routed to work and covers the diary; a title has no routing of its
        # own: both are linked, and what they cover is held when it is read. The answer
        # is the same whether cairn holds such a conversation or not (no oracle).
        for name, links in (("y1", {"cairn_projects": ["/home/me"]}),
                            ("y2", {"cairn_titles": ["Diary"]}),
                            ("y3", {"cairn_titles": ["No such chat"]})):
            answer = client.post("/orchard/projects", headers=headers,
                                 json={"name": name, "namespace": "work",
                                       "blockers": ["password"], **links})
            assert answer.status_code == 201, (links, answer.text)
            _no_leak(answer.text, f"link {links}")
        read = client.get("/orchard/projects", headers=headers).json()["projects"]
        assert {p["name"]: p["activity"]["turns"] for p in read} == {
            "x": 12, "y1": 12, "y2": 0, "y3": 0}  # y1: atlas's turns, under ~
        _no_leak(client.get("/orchard/week?phrase=false", headers=headers).text, "week")
        assert client.patch("/orchard/projects/x", headers=headers,
                            json={"cairn_projects": [ATLAS, "/home/me/diary/2026"]}
                            ).status_code == 403
        made = client.post("/orchard/projects", headers=headers, json={
            "name": "y", "namespace": "work", "repo": ATLAS + "/web"})
        assert made.status_code == 201 and made.json()["cairn_projects"] == [ATLAS + "/web"]
        # the admin attaches anything; the service rule is the same for every face
        assert client.post("/orchard/projects", headers=_bearer("admin-secret"), json={
            "name": "z", "namespace": "work", "cairn_projects": [DIARY]}).status_code == 201
    finally:
        app.state.review_recorder.close()
    with pytest.raises(projects.Forbidden, match="personal"):
        projects.add(db, Scope.of(["work"]), name="w", namespace="work", actor="api:w",
                     repo=DIARY)
    assert [p["name"] for p in projects.list_projects(db, EVERYTHING)] == [
        "x", "y", "y1", "y2", "y3", "z"]


def test_an_mcp_server_limited_to_work_quotes_no_diary_turn(world, db):
    llm = ScriptedProvider(lambda call: WeekAdvice(advice="do x", order=["x"])
                           .model_dump_json())

    async def scenario(namespaces):
        async with Client(build_server(db, llm=llm, namespaces=namespaces)) as client:
            found = {}
            for name, args in (("orchard_week", {"phrase": False}), ("orchard_week", {}),
                               ("orchard_list", {}), ("orchard_get", {"project": "x"})):
                result = await client.call_tool(name, args)
                assert not result.is_error, result.content
                found[name] = json.dumps(result.structured_content)
            return found

    found = asyncio.run(scenario(["work"]))
    for name, text in found.items():
        _no_leak(text, name)
    assert json.loads(found["orchard_list"])["projects"][0]["activity"]["turns"] == 12
    _no_leak(json.dumps(llm.calls[-1].messages), "prompt of a work server")
    everything = asyncio.run(scenario(None))
    _masked(everything["orchard_week"], "unlimited server")


def test_the_dashboard_page_with_a_work_cookie_shows_no_diary_turn(world, db):
    app = create_app(db, token="admin-secret")
    try:
        client = local_client(app)
        for secret in (world["person"], world["agent"]):
            client.cookies.set("mp_session", secret)
            page = client.get("/review/orchard")
            assert page.status_code == 200 and "ship it" in page.text
            _no_leak(page.text, "dashboard, work cookie")
        client.cookies.set("mp_session", "admin-secret")
        page = client.get("/review/orchard")
        assert MARK in page.text  # the admin sees the diary turn the blocker finds, masked
        for secret in SECRETS:
            assert secret not in page.text
    finally:
        app.state.review_recorder.close()


def test_the_cli_shows_every_linked_turn_with_credentials_masked(world, db):
    runner = CliRunner()
    for args in (["orchard", "week", "--plain"], ["orchard", "week", "--plain", "--json"]):
        shown = runner.invoke(cli, args)
        assert shown.exit_code == 0, shown.output
        assert MARK in shown.stdout, args
        _masked(shown.stdout, " ".join(args))


def test_stored_project_text_and_proposals_leave_the_store_masked(world, db, tmp_path):
    # Written before the refusal of credentials existed (or past it, straight in SQL).
    with db.connect() as conn:
        conn.execute("UPDATE orchard_projects SET next_action = %s WHERE name = 'x'",
                     (f"rotate {AWS_KEY}",))
        conn.execute("INSERT INTO orchard_history (project_id, change, actor, by_agent, "
                     "before, after) SELECT id, 'edit', 'test', false, to_jsonb(p), "
                     "to_jsonb(p) FROM orchard_projects p WHERE name = 'x'")
    shown = projects.get(db, EVERYTHING, "x", with_history=True)
    assert AWS_KEY not in json.dumps(shown, default=str) and MASK in shown["next_action"]
    assert MASK in shown["history"][-1]["after"]["next_action"]
    ranked = week.week(db, EVERYTHING, today=MONDAY)
    assert AWS_KEY not in json.dumps(ranked, default=str)
    this_week = projects.week_start(projects.utc_today())  # the project exists by its end
    assert snapshots.take_snapshot(db, this_week)["projects"] == 1
    with db.connect() as conn:
        stored = conn.execute("SELECT next_action FROM orchard_snapshots").fetchone()[0]
    assert AWS_KEY not in stored and MASK in stored  # it feeds the lake and the report
    [row] = snapshots.read_snapshot(db, EVERYTHING, this_week)
    assert AWS_KEY not in row["next_action"] and row["turns"] == 0
    [row] = snapshots.read_snapshot(db, Scope.of(["work"]), this_week)
    assert row["turns"] is None  # counted unscoped: not a work caller's to read

    # A chat title repeated three times is proposed; its token is masked on the way out.
    titled = f"deploy with {GITHUB_TOKEN}"
    start = datetime.combine(MONDAY, time(3), tzinfo=timezone.utc)
    export = tmp_path / "titled" / "conversations.json"
    export.parent.mkdir()
    export.write_text(json.dumps([_chat(titled, start + timedelta(hours=i), ["hi", "hello"])
                                  for i in range(3)]), encoding="utf-8")
    assert not import_path(db, "chatgpt", export).errors
    found = discovery.discover(db)
    assert any(MASK in p["name"] for p in found["proposals"])
    _masked(json.dumps(found, default=str), "discover")
    _masked(json.dumps(discovery.list_proposals(db, EVERYTHING), default=str), "proposals")
    listed = CliRunner().invoke(cli, ["orchard", "proposals", "--no-refresh", "--json"])
    assert listed.exit_code == 0 and GITHUB_TOKEN not in listed.stdout
    with pytest.raises(projects.Forbidden, match="unscoped"):
        discovery.list_proposals(db, Scope.of(["work"]))
