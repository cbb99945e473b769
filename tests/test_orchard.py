"""orchard's domain against a real PostgreSQL: discovery proposes and creates nothing,
agents write milestones only (accepted, refused), every change is in the history, the week
ranking is deterministic and cites real turns, snapshots are idempotent per week."""

from datetime import date, datetime, timedelta, timezone

import psycopg
import pytest

from helpers.orchard_history import (
    ATLAS,
    ATLAS_WEB,
    BLOCKER_TEXT,
    SCRATCH,
    THESIS,
    import_history,
    write_history,
)
from memory_platform.llm import LLMCallFailed, LLMNotConfigured, ScriptedProvider
from memory_platform.orchard import discovery, projects, snapshots, week
from memory_platform.orchard.prompts import WeekAdvice
from memory_platform.settings import load_settings
from memory_platform.store import orchard as store
from memory_platform.vault.tokens import Scope

EVERYTHING = Scope.everything()
AGENT = Scope(None, agent=True)  # an unlimited MCP server's
MONDAY = date(2026, 3, 16)  # the fixture's second week; its first starts 2026-03-09


@pytest.fixture
def history(db, tmp_path):
    expected = write_history(tmp_path / "history", MONDAY)
    import_history(db, tmp_path / "history")
    return expected


def _count(db, table: str) -> int:
    with db.connect() as conn:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _accept_all(db, **fields) -> dict[str, dict]:
    discovery.discover(db)
    return {p["name"]: discovery.accept(db, EVERYTHING, p["id"], actor="cli:dana",
                                        **fields)["project"]
            for p in discovery.list_proposals(db, EVERYTHING)}


# --- discovery ------------------------------------------------------------------------------


def test_discovery_proposes_the_fixture_projects_with_activity_and_creates_none(db, history):
    found = discovery.discover(db)
    by_name = {p["name"]: p for p in found["proposals"]}
    assert set(by_name) == {"atlas", "scratch", THESIS}  # not "New chat", not a one-off title
    atlas = by_name["atlas"]
    assert atlas["repo"] == ATLAS
    assert atlas["cairn_projects"] == [ATLAS, ATLAS_WEB]  # the repo's subfolder folds in
    assert (atlas["sessions"], atlas["turns"]) == (3, 12)
    assert atlas["weeks"] == [
        {"week": history.week1.isoformat(), "sessions": 1, "turns": 4},
        {"week": history.week2.isoformat(), "sessions": 2, "turns": 8}]
    assert (atlas["first_active"], atlas["last_active"]) == (history.week1 + timedelta(days=1),
                                                             history.week2)
    assert [s["git"] for s in atlas["signals"]] == [True, True]
    assert by_name["scratch"]["signals"][0] == {"kind": "path", "value": SCRATCH, "git": False,
                                                "sources": ["claude-code"]}
    assert (by_name["scratch"]["sessions"], by_name["scratch"]["turns"]) == (1, 2)
    thesis = by_name[THESIS]
    assert thesis["signals"] == [{"kind": "title", "value": THESIS, "conversations": 3}]
    assert (thesis["sessions"], thesis["turns"]) == (3, 6)  # " thesis  chapter 3" counts
    assert (found["new"], found["pending"]) == (3, 3)
    assert _count(db, "orchard_projects") == 0  # nothing autonomous creates a project

    again = discovery.discover(db)
    assert (again["new"], again["refreshed"], again["pending"]) == (0, 3, 3)
    assert _count(db, "orchard_proposals") == 3 and _count(db, "orchard_projects") == 0


def test_accepting_links_namespace_and_repo_and_decisions_stick(db, history, home):
    (home / "routing.toml").write_text(
        '[[rules]]\nproject = "/home/me/src/*"\nnamespace = "work"\n')
    discovery.discover(db)
    pending = {p["name"]: p for p in discovery.list_proposals(db, EVERYTHING)}
    done = discovery.accept(db, EVERYTHING, pending["atlas"]["id"], actor="cli:dana",
                            priority=2)
    project = done["project"]
    assert (project["namespace"], project["repo"], project["priority"]) == ("work", ATLAS, 2)
    assert project["cairn_projects"] == [ATLAS, ATLAS_WEB]
    assert (done["proposal"]["state"], done["proposal"]["decided_by"]) == ("accepted",
                                                                           "cli:dana")
    with pytest.raises(projects.Conflict, match="already accepted by cli:dana"):
        discovery.accept(db, EVERYTHING, pending["atlas"]["id"], actor="cli:other")
    discovery.dismiss(db, EVERYTHING, pending["scratch"]["id"], actor="cli:dana")
    with pytest.raises(projects.Forbidden, match="unscoped"):  # drawn from all of cairn
        discovery.accept(db, Scope.of(["work"]), pending[THESIS]["id"], actor="api:w",
                         namespace="work")

    again = discovery.discover(db)
    assert {p["name"] for p in again["proposals"]} == {"scratch", THESIS}  # atlas is covered
    # scratch stays out
    assert [p["name"] for p in discovery.list_proposals(db, EVERYTHING)] == [THESIS]
    assert _count(db, "orchard_projects") == 1


# --- milestones -------------------------------------------------------------------------------


def test_agents_write_milestones_only_and_cannot_churn(db, history):
    atlas = _accept_all(db)["atlas"]
    settings = load_settings(orchard_agent_updates_per_day=2)
    # Tomorrow and the day after: the history's times then follow its creation's.
    noon = datetime.now(timezone.utc).replace(hour=12, minute=0) + timedelta(days=1)

    def agent(what, **kw):
        return projects.milestone(db, AGENT, "Atlas", what, actor="mcp:agent",
                                  now=kw.pop("now", noon), settings=settings, **kw)

    for empty in (None, "", "   "):
        with pytest.raises(projects.Refused, match="needs a milestone"):
            agent(empty, status="paused")
    first = agent("staging deploy works", next_action="tag v1.2")
    assert first["changed"] and first["last_milestone"] == "staging deploy works"
    assert first["next_action"] == "tag v1.2"
    assert agent("staging deploy works", next_action="tag v1.2")["changed"] is False  # a retry
    agent("v1.2 tagged", status="done")
    with pytest.raises(projects.Churn, match="ORCHARD_AGENT_UPDATES_PER_DAY=2"):
        agent("reopened", status="active")
    with pytest.raises(ValueError, match="needs a blocker"):
        agent("blocked now", status="blocked", now=noon + timedelta(days=1))
    # a person is not limited; the next day the agent may write again
    person = projects.milestone(db, EVERYTHING, atlas["id"], "reopened for v1.3",
                                actor="cli:dana", status="active",
                                now=noon, settings=settings)
    assert person["status"] == "active"
    agent("v1.3 started", now=noon + timedelta(days=1))

    changes = projects.history(db, EVERYTHING, "atlas")
    assert [(c["change"], c["actor"], c["by_agent"]) for c in changes] == [
        ("create", "cli:dana", False), ("milestone", "mcp:agent", True),
        ("milestone", "mcp:agent", True), ("milestone", "cli:dana", False),
        ("milestone", "mcp:agent", True)]
    assert [c["milestone"] for c in changes[1:]] == [
        "staging deploy works", "v1.2 tagged", "reopened for v1.3", "v1.3 started"]

    with db.connect() as conn:  # the database holds the rule too
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute("INSERT INTO orchard_history (project_id, change, actor, by_agent, "
                         "before, after) VALUES (%s, 'edit', 'mcp:agent', true, '{}', '{}')",
                         (atlas["id"],))


def test_the_history_records_every_change_and_nothing_is_deleted(db):
    row = projects.add(db, EVERYTHING, name="bookminder", namespace="personal",
                       actor="cli:dana", repo="/Users/dana/code/bookminder", priority=2)
    assert row["cairn_projects"] == ["/Users/dana/code/bookminder"]
    edited = projects.edit(db, EVERYTHING, "BookMinder", actor="api:laptop", status="paused",
                           blockers=["waiting for the Kindle API"])
    assert edited["changed"]
    assert projects.edit(db, EVERYTHING, "bookminder", actor="api:laptop",
                         status="paused")["changed"] is False
    projects.milestone(db, EVERYTHING, "bookminder", "search shipped", actor="cli:dana",
                       next_action="write ADR-005")
    projects.edit(db, EVERYTHING, row["id"], actor="dashboard:admin", archived=True)
    assert projects.list_projects(db, EVERYTHING) == []
    assert len(projects.list_projects(db, EVERYTHING, include_archived=True)) == 1
    projects.edit(db, EVERYTHING, row["id"], actor="dashboard:admin", archived=False)

    changes = projects.history(db, EVERYTHING, "bookminder")
    assert [(c["change"], c["actor"]) for c in changes] == [
        ("create", "cli:dana"), ("edit", "api:laptop"), ("milestone", "cli:dana"),
        ("archive", "dashboard:admin"), ("restore", "dashboard:admin")]
    assert changes[0]["before"] is None and changes[0]["after"]["status"] == "active"
    for previous, change in zip(changes, changes[1:], strict=False):
        assert change["before"] == previous["after"]  # a chain: no change is missing
    assert (changes[1]["before"]["status"], changes[1]["after"]["status"]) == ("active",
                                                                              "paused")
    assert changes[1]["after"]["blockers"] == ["waiting for the Kindle API"]
    assert changes[2]["after"]["next_action"] == "write ADR-005"

    with db.connect() as conn:
        for statement in ("UPDATE orchard_history SET actor = 'x'",
                          "DELETE FROM orchard_history", "DELETE FROM orchard_projects"):
            with pytest.raises(psycopg.errors.RaiseException, match="keeps every"):
                conn.execute(statement)
    assert _count(db, "orchard_history") == 5


def test_bad_input_is_refused_with_what_to_do(db):
    projects.add(db, EVERYTHING, name="atlas", namespace="work", actor="cli:dana")
    cases = [
        (dict(name="x", namespace="work", status="someday"), "unknown status"),
        (dict(name="x", namespace="work", priority=9), "priority 9"),
        (dict(name="x", namespace="work__ideas"), "shadow namespace"),
        (dict(name="x", namespace="work", deadline="next friday"), "not a date"),
        (dict(name="x", namespace="work", status="blocked"), "needs a blocker"),
        (dict(name="x", namespace="work",
              next_action="use sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"), "credential"),
        (dict(name="ATLAS", namespace="work"), "already exists"),
    ]
    for fields, message in cases:
        with pytest.raises((ValueError, projects.Conflict), match=message):
            projects.add(db, EVERYTHING, actor="cli:dana", **fields)
    assert _count(db, "orchard_projects") == 1


def test_a_scope_sees_and_changes_its_namespaces_only(db):
    for name, namespace in (("atlas", "work"), ("garden", "personal")):
        projects.add(db, EVERYTHING, name=name, namespace=namespace, actor="cli:dana")
    work = Scope.of(["work"])
    assert [p["name"] for p in projects.list_projects(db, work)] == ["atlas"]
    garden_id = projects.get(db, EVERYTHING, "garden")["id"]
    for ref in ("garden", garden_id):
        with pytest.raises(projects.NotFound):
            projects.get(db, work, ref)
        with pytest.raises(projects.NotFound):
            projects.milestone(db, Scope.of(["work"], agent=True), ref, "x",
                               actor="mcp:agent")
    with pytest.raises(projects.Forbidden):
        projects.add(db, work, name="new", namespace="personal", actor="api:w")
    with pytest.raises(projects.Forbidden):
        projects.edit(db, work, "atlas", actor="api:w", namespace="personal")
    with pytest.raises(projects.Forbidden):
        projects.list_projects(db, work, namespace="personal")


# --- the week ---------------------------------------------------------------------------------


def _ranked_fixture(db) -> dict[str, dict]:
    accepted = _accept_all(db)
    projects.milestone(db, EVERYTHING, "atlas", "staging deploy", actor="cli:dana",
                       next_action="tag v1.2", blockers=["staging certificate"],
                       status="blocked")
    projects.edit(db, EVERYTHING, THESIS, actor="cli:dana", priority=1,
                  deadline=MONDAY + timedelta(days=5))
    projects.edit(db, EVERYTHING, "scratch", actor="cli:dana", status="idea", priority=5)
    return accepted


def test_week_is_deterministic_and_its_reasons_cite_real_turns(db, history):
    _ranked_fixture(db)
    today = MONDAY + timedelta(days=2)
    first = week.week(db, EVERYTHING, today=today)
    assert week.week(db, EVERYTHING, today=today) == first  # same data, same answer
    assert first["phrased_by"] is None and first["week"] == MONDAY
    ranked = {p["name"]: p for p in first["ranked"]}
    assert [p["name"] for p in first["ranked"]] == [THESIS, "atlas", "scratch"]
    thesis = ranked[THESIS]
    parts = {r["factor"]: r for r in thesis["reasons"]}
    assert parts["priority"]["points"] == 40 and parts["deadline"]["points"] == 30
    assert "in 3 day(s)" in parts["deadline"]["reason"]
    assert thesis["score"] == sum(r["points"] for r in thesis["reasons"]) == 40 + 10 + 30 + 10 - 5
    atlas = ranked["atlas"]
    blockers = next(r for r in atlas["reasons"] if r["factor"] == "blockers")
    assert blockers["points"] == -5 and "staging certificate" in blockers["reason"]

    with db.connect() as conn:
        def turn(event_id):
            return conn.execute("SELECT text, project, role, kind FROM events WHERE id = %s",
                                (event_id,)).fetchone()

        assert turn(blockers["event_ids"][0])[0] == BLOCKER_TEXT  # the turn that says so
        for project in first["ranked"]:
            cited = {i for r in project["reasons"] for i in r["event_ids"]}
            assert cited, project["name"]
            assert cited <= {t["event_id"] for t in project["evidence"]}
            for t in project["evidence"]:
                text, cwd, role, kind = turn(t["event_id"])
                assert t["text"] == " ".join(text.split()) and role == t["role"]
                assert kind == "message"
                if project["name"] != THESIS:
                    assert cwd.startswith(project["repo"])
        activity = next(r for r in atlas["reasons"] if r["factor"] == "activity")
        newest = max(atlas["evidence"], key=lambda t: t["occurred_at"])
        assert activity["event_ids"] == [newest["event_id"]]
        assert "last active" in activity["reason"] and activity["points"] == 10
    assert f"#{blockers['event_ids'][0]}" in first["answer"]
    assert first["answer"].index(THESIS) < first["answer"].index("atlas")

    projects.edit(db, EVERYTHING, THESIS, actor="cli:dana", status="done")
    assert [n["name"] for n in week.week(db, EVERYTHING, today=today)["not_ranked"]] == [THESIS]


def test_week_is_phrased_by_an_llm_when_one_is_given_and_never_reordered(db, history,
                                                                       monkeypatch):
    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
    assert week.configured_llm(db) is None  # no provider: the plain answer
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_PROVIDER", "bogus")
    with pytest.raises(LLMNotConfigured, match="not a provider"):
        week.configured_llm(db)  # a broken one is an error, not a silent plain answer
    _ranked_fixture(db)
    projects.add(db, EVERYTHING, name="keys", namespace="personal", actor="cli:dana")
    order = [p["name"] for p in week.rank(db, EVERYTHING, today=MONDAY)["ranked"]]
    assert order == [THESIS, "keys", "atlas", "scratch"]  # keys: priority 3, active
    good = ScriptedProvider([WeekAdvice(advice="Finish chapter 3 first [#1].", order=order)])
    found = week.week(db, EVERYTHING, today=MONDAY, llm=good)
    assert found["answer"] == "Finish chapter 3 first [#1]."
    assert found["phrased_by"] == "scripted/scripted" and found["prompt_version"]
    prompt = good.calls[0].prompt
    assert BLOCKER_TEXT[:40] in prompt and "1. Thesis chapter 3" in prompt
    plain = week.rank(db, EVERYTHING, today=MONDAY)["answer"]

    shuffled = ScriptedProvider([WeekAdvice(advice="atlas first", order=order[::-1])])
    found = week.week(db, EVERYTHING, today=MONDAY, llm=shuffled)
    assert found["answer"] == plain and "not the ranking" in found["phrasing_error"]
    failing = ScriptedProvider([LLMCallFailed("vendor down")])
    found = week.week(db, EVERYTHING, today=MONDAY, llm=failing)
    assert found["answer"] == plain and "vendor down" in found["phrasing_error"]


# --- snapshots -------------------------------------------------------------------------------


def test_snapshots_are_idempotent_per_week_and_replay_the_state_of_their_week(db, tmp_path):
    monday = projects.week_start(datetime.now(timezone.utc).date())
    write_history(tmp_path / "h", monday)
    import_history(db, tmp_path / "h")
    accepted = _accept_all(db)
    projects.milestone(db, EVERYTHING, "atlas", "deployed", actor="cli:dana")

    first = snapshots.take_snapshot(db, monday, run_id="r1")
    assert first["projects"] == 3 and first["milestones"] == 1
    again = snapshots.take_snapshot(db, monday, run_id="r2")
    assert again == first
    rows = {r["name"]: r for r in snapshots.read_snapshot(db, EVERYTHING, monday)}
    assert len(rows) == 3 and _count(db, "orchard_snapshots") == 3
    assert {r["run_id"] for r in rows.values()} == {"r2"}
    assert (rows["atlas"]["sessions"], rows["atlas"]["turns"]) == (2, 8)
    assert rows["atlas"]["last_active"] == monday and rows["atlas"]["milestones"] == 1
    assert (rows["scratch"]["turns"], rows["scratch"]["last_active"]) == (
        0, monday - timedelta(days=5))

    # Last week ended before any project existed: its snapshot is empty, not today's state.
    assert snapshots.take_snapshot(db, monday - timedelta(days=7))["projects"] == 0
    # A state recorded during last week (inserted directly: history is append-only and its
    # times are the database's) is what last week's snapshot shows.
    atlas_id = accepted["atlas"]["id"]
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO orchard_history (project_id, change, actor, by_agent, before, after, "
            "at) SELECT id, 'edit', 'test', false, '{}', to_jsonb(p) || "
            "'{\"status\": \"idea\"}', %s FROM orchard_projects p WHERE id = %s",
            (datetime.combine(monday - timedelta(days=3), datetime.min.time(),
                              tzinfo=timezone.utc), atlas_id))
    past = snapshots.take_snapshot(db, monday - timedelta(days=7))
    assert past["projects"] == 1 and past["by_status"] == {"idea": 1}
    last_week = snapshots.read_snapshot(db, EVERYTHING, monday - timedelta(days=7))
    assert (last_week[0]["turns"], last_week[0]["sessions"]) == (4, 1)
    assert snapshots.read_snapshot(db, Scope.of(["work"]), monday) == []
    with pytest.raises(ValueError, match="starts on a Monday"):
        snapshots.take_snapshot(db, monday + timedelta(days=1))
    with db.connect() as conn:
        assert {r["status"] for r in store.snapshot(conn, monday)} == {"active"}
