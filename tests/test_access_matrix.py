"""The scoped-token matrix, generated from the app's route table and the MCP tool list: every
route and every tool must state its access rule (api/access.py, mcp/server.py `tool`), and
each is then called as each kind of caller, with values from inside and from outside a
`work` token's scope. A route added without a rule fails here; so does a rule not kept.

Expectations per rule (api/access.py):
- public: no credentials needed, never 401/403.
- unscoped (cairn): 401 without credentials, 403 for any scoped token, open to the admin.
- scoped: 401 without credentials; for a `work` token, anything of `personal` is refused
  (403/404) or left out, and the answer never contains personal data; values of `work`
  are let in.
- reviewer: as scoped, and an agent token gets 403 even inside its scope.
- collector: 401 without credentials, 403 for a namespace token and for another machine's
  collector token; the machine's own collector token and the admin are let in. A collector
  token gets 403 on every route of every other rule but public.
"""

import asyncio
import re

import pytest
from fastapi.routing import APIRoute
from mcp.server.mcpserver.exceptions import ToolError
from starlette.routing import Mount

from helpers.api import HashEmbedder, call_route, local_client, thread_recorder
from helpers.world import ADMIN, PERSONAL_MARK, bearer, build
from memory_platform.api import access
from memory_platform.api.access import Rule
from memory_platform.api.app import create_app
from memory_platform.llm import ScriptedProvider
from memory_platform.mcp import server as mcp_server
from memory_platform.mcp import tools as mcp_tools

PAGE_LOGIN = re.compile(r"^/review/login\?next=")


def _failing_for(failing_id: int):
    def record(memory_id, promoted_id, actor, old_memory_id):
        if memory_id == failing_id:
            raise RuntimeError(f"recording memory {memory_id} failed: {PERSONAL_MARK} diary")
        return f"run-{memory_id}"

    return record


@pytest.fixture
def world(db, tmp_path):
    return build(db, tmp_path)


@pytest.fixture
def app(db, world):
    # An error about a personal entry, which a work token's status must not show.
    recorder = thread_recorder(_failing_for(world.personal_entry))
    recorder.RETRY_DELAYS_S = ()
    recorder.submit(world.personal_entry, world.personal_entry, actor="test",
                    namespace="personal__ideas")
    assert recorder.drain(10) and recorder.status()["failed"] == 1
    return create_app(db, token=ADMIN, embedder=HashEmbedder(), vault_embedder=HashEmbedder(),
                      llm=ScriptedProvider(lambda call: "{}"), recorder=recorder)


def test_every_route_states_exactly_one_rule(app):
    table = access.route_table(app)
    assert len(table) > 20 and {"/health", "/search", "/vault/search", "/review/login",
                                "/docs"} <= {e.path for e in table}
    missing = [(e.path, e.rules) for e in table if len(e.rules) != 1]
    assert not missing, f"routes without exactly one access rule: {missing}"
    # and the check sees one that forgot
    app.add_api_route("/forgot", lambda: {"ok": True})
    assert [e.rules for e in access.route_table(app) if e.path == "/forgot"] == [()]


def _values(world, inside: bool) -> dict:
    entry = world.work_entry if inside else world.personal_entry
    return {
        "namespace": "work" if inside else "personal",
        "memory_id": entry,
        "event_id": world.turns[1] if inside else world.turns[3],
        "memory": entry,
        "week": "2026-W10", "name": "activity.png",
        "project": "work-api" if inside else str(world.personal_project),
        "proposal_id": 1,
        "run_id": 1,
        "finding_id": world.work_finding if inside else world.personal_finding,
        "q": "port" if inside else PERSONAL_MARK,
        "machine": "laptop" if inside else "desk",
        "since": "2026-03-01T00:00:00Z", "until": "2026-03-04T00:00:00Z",
    }


def _request(entry: access.RouteEntry, world, inside: bool) -> tuple[str, dict, dict]:
    values = _values(world, inside)
    route = entry.route
    names = set(re.findall(r"{(\w+)(?::\w+)?}", entry.path))
    unknown = names - values.keys()
    assert not unknown, f"{entry.path}: no sample value for path parameter(s) {unknown}; " \
                        f"add one to _values"
    path = re.sub(r"{(\w+)(?::\w+)?}", lambda m: str(values[m.group(1)]), entry.path)
    params = {p.alias: values[p.alias] for p in route.dependant.query_params
              if p.alias in values and (p.field_info.is_required() or p.alias in ("namespace", "memory"))}
    body = {"text": "matrix probe", "category": "user", "ids": [values["memory_id"]],
            "old_memory_id": world.work_memory if inside else world.personal_memory,
            "namespace": values["namespace"], "reason": "probe", "name": "matrix-probe",
            "what": "the api answers on 8081", "action": "keep",
            "since": values["since"], "until": values["until"]}
    return path, params, body




def _refused_login(response) -> bool:
    return response.status_code == 401 or (
        response.status_code == 303 and PAGE_LOGIN.match(response.headers["location"]))


def test_every_route_keeps_its_rule_for_every_kind_of_caller(app, world, db):
    client = local_client(app, follow_redirects=False)
    checked = {rule: 0 for rule in Rule}
    for entry in access.route_table(app):
        [rule] = entry.rules
        if isinstance(entry.route, Mount):
            some_file = {"/review/static": "/review.css",
                         "/static-offline-docs": "/swagger-ui.css"}[entry.path]
            assert client.get(entry.path + some_file).status_code == 200, entry.path
            assert rule == Rule.PUBLIC
            checked[rule] += 1
            continue
        if not isinstance(entry.route, APIRoute):
            assert rule == Rule.PUBLIC, entry.path
            assert client.get(entry.path).status_code not in (401, 403), entry.path
            checked[rule] += 1
            continue
        for method in sorted(entry.methods):
            where = f"{method} {entry.path}"
            outside = _request(entry, world, inside=False)
            inside = _request(entry, world, inside=True)
            anonymous = call_route(client, method, *outside)
            if rule == Rule.PUBLIC:
                # (the login form answers a wrong token by showing itself again)
                assert anonymous.status_code not in (401, 403), where
                checked[rule] += 1
                continue
            assert _refused_login(anonymous), (where, anonymous.status_code)
            assert PERSONAL_MARK not in anonymous.text, where
            as_collector = call_route(client, method, *(inside if rule == Rule.COLLECTOR
                                                   else outside),
                                 headers=bearer(world.collector))
            if rule == Rule.COLLECTOR:
                assert as_collector.status_code not in (401, 403), (where, as_collector.text)
                assert call_route(client, method, *outside, headers=bearer(world.collector)
                             ).status_code == 403, where
                assert call_route(client, method, *inside, headers=bearer(world.work_person)
                             ).status_code == 403, where
                admin = call_route(client, method, *outside, headers=bearer(ADMIN))
                assert admin.status_code not in (401, 403), (where, admin.status_code)
                checked[rule] += 1
                continue
            assert as_collector.status_code == 403, (where, as_collector.status_code)
            assert PERSONAL_MARK not in as_collector.text, where

            theirs = call_route(client, method, *outside, headers=bearer(world.work_person))
            assert PERSONAL_MARK not in theirs.text, (where, theirs.text[:300])
            if rule == Rule.UNSCOPED:
                assert theirs.status_code == 403, (where, theirs.status_code)
                admin = call_route(client, method, *inside, headers=bearer(ADMIN))
                assert admin.status_code not in (401, 403), (where, admin.status_code)
            else:
                assert theirs.status_code in (200, 403, 404), (where, theirs.status_code)
                if rule == Rule.REVIEWER:
                    as_agent = call_route(client, method, *inside, headers=bearer(world.work_agent))
                    assert as_agent.status_code == 403, (where, as_agent.status_code)
                mine = call_route(client, method, *inside, headers=bearer(world.work_person))
                assert mine.status_code not in (401, 403), (where, mine.status_code,
                                                            mine.text[:300])
            checked[rule] += 1
    assert all(checked.values()), f"a rule no route exercised: {checked}"
    # every decision route was called on personal's finding with a work token: none took
    with db.connect() as conn:
        status = conn.execute("SELECT status FROM lint_findings WHERE id = %s",
                              (world.personal_finding,)).fetchone()[0]
    assert status == "open"
    assert {"/vault/findings/{finding_id:int}/resolve", "/review/findings",
            "/review/api/findings/{finding_id:int}/resolve"} <= {
        e.path for e in access.route_table(app)}


# --- MCP -------------------------------------------------------------------------------------


def _tool_args(tool, world, inside: bool) -> dict:
    samples = {"query": "port" if inside else PERSONAL_MARK,
               "project": "work-api" if inside else str(world.personal_project),
               "what": "the api answers on 8081", "action": "keep",
               "namespace": "work" if inside else "personal",
               "namespaces": ["work" if inside else "personal"],
               "text": "the work api listens on 8081 (mcp probe)",
               "since": "2026-03-01", "until": "2026-03-04", "event_id": 1}
    schema = tool.input_schema
    required = set(schema.get("required", []))
    args = {}
    for name in schema["properties"]:
        assert name in samples or name not in required, \
            f"{tool.name}: no sample value for required argument {name!r}"
        if name in samples and (name in required or name in ("namespace", "namespaces", "query")):
            args[name] = samples[name]
    return args


def test_every_mcp_tool_states_its_rule_and_keeps_it(db, world):
    everything = mcp_server.build_server(db, embedder=HashEmbedder(),
                                         vault_embedder=HashEmbedder())
    listed = asyncio.run(everything.list_tools())
    rules = getattr(everything, mcp_tools.TOOL_RULES)
    assert {t.name for t in listed} == set(rules), "a tool registered without a rule"

    work = mcp_server.build_server(db, namespaces=["work"], embedder=HashEmbedder(),
                                   vault_embedder=HashEmbedder())
    offered = {t.name: t for t in asyncio.run(work.list_tools())}
    assert set(offered) == {n for n, r in rules.items() if r == mcp_tools.SCOPED}
    assert {n for n, r in rules.items() if r == mcp_tools.UNSCOPED} >= {"cairn_search"}
    for name, tool in offered.items():
        try:
            result = asyncio.run(work.call_tool(name, _tool_args(tool, world, inside=False)))
        except ToolError as refused:
            assert PERSONAL_MARK not in str(refused), name
        else:
            assert PERSONAL_MARK not in str(result), (name, str(result)[:300])
        inside = asyncio.run(work.call_tool(name, _tool_args(tool, world, inside=True)))
        assert not getattr(inside, "is_error", False), (name, inside)
