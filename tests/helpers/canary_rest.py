"""The canary sweep's REST and MCP calls, generated from the app's route table and the MCP
servers' tool lists (as tests/test_access_matrix.py does): a route or tool added tomorrow is
called the day it exists, and one the sweep has no sample value for fails it."""

import asyncio
import json
import re

from fastapi.routing import APIRoute
from mcp.server.mcpserver.exceptions import ToolError
from starlette.routing import Mount

from helpers.api import HashEmbedder, call_route, local_client
from helpers.canary import ADMIN, PERSONAL_MARK, forbidden
from memory_platform.api import access
from memory_platform.mcp import server as mcp_server
from memory_platform.mcp import tools as mcp_tools

PARAMETER = re.compile(r"{(\w+)(?::\w+)?}")
# The review pages and their API show a sensitive memory's text on purpose, next to its
# masked copy (vault/queue.py), to a person (agent tokens are refused there).
SHOWS_SENSITIVE = ("/review",)


# Optional query parameters given a value; the others keep their defaults (a `project`
# filter of a search, say, would hide what the sweep wants found).
OPTIONAL = {"namespace", "memory", "mode", "phrase", "history", "q", "query"}


def _values(c, inside: bool) -> dict:
    entry = c.work_entry if inside else c.personal_entry
    return {
        "namespace": "work" if inside else "personal",
        "memory_id": c.sensitive_memory if inside else c.personal_memory,
        "event_id": c.turns[1] if inside else c.diary_turns[1],
        "memory": entry, "entry_id": entry,
        "week": "2026-W10", "name": "activity.png", "machine": "laptop",
        "project": "work-api" if inside else str(c.personal_project),
        "proposal_id": 1, "run_id": c.curator_run or 1,
        "finding_id": c.work_finding if inside else c.personal_finding,
        "q": "password" if inside else PERSONAL_MARK,
        "query": "password" if inside else PERSONAL_MARK,
        "since": "2026-03-01T00:00:00Z", "until": "2026-03-04T00:00:00Z",
        "phrase": "false", "history": "true", "mode": "keyword",
    }


def _request(entry, c, inside: bool) -> tuple[str, dict, dict]:
    values = _values(c, inside)
    if "/entries/" in entry.path:  # a review entry: the shadow memory, not the sensitive one
        values["memory_id"] = values["memory"]
    names = set(PARAMETER.findall(entry.path))
    unknown = names - values.keys()
    assert not unknown, (f"{entry.path}: the canary sweep has no sample value for path "
                         f"parameter(s) {unknown}; add one to helpers/canary_rest._values")
    path = PARAMETER.sub(lambda m: str(values[m.group(1)]), entry.path)
    params = {p.alias: values[p.alias] for p in entry.route.dependant.query_params
              if p.alias in values and (p.field_info.is_required() or p.alias in OPTIONAL)}
    body = {"text": "canary probe", "category": "user", "ids": [values["memory_id"]],
            "old_memory_id": c.work_memory if inside else c.personal_memory,
            "namespace": values["namespace"], "reason": "probe", "name": "canary-probe",
            "what": "the api answers on 8081", "action": "keep",
            "since": values["since"], "until": values["until"],
            "cairn_projects": ["/home/me/src/work-api" if inside else "/home/me/diary"],
            "blockers": ["password"]}
    return path, params, body




def callers(c) -> dict[str, tuple[dict, bool, bool]]:
    """name -> (headers, scoped to work, may see sensitive personal data on purpose)."""
    return {"admin": ({"Authorization": f"Bearer {ADMIN}"}, False, True),
            "person": ({"Authorization": f"Bearer {c.person}"}, True, True),
            "agent": ({"Authorization": f"Bearer {c.agent}"}, True, False),
            "none": ({}, True, False)}


def _text(response) -> str:
    return " ".join([response.text, *(f"{k}: {v}" for k, v in response.headers.items()
                                      if k.lower() != "set-cookie")])


def _calls(app) -> tuple[list, list]:
    """(reads, writes) of the route table: (method, entry, fixed path or None)."""
    reads, writes = [], []
    for entry in access.route_table(app):
        assert entry.rules, f"{entry.path}: a route without an access rule"
        if isinstance(entry.route, Mount):
            some = {"/review/static": "/review.css",
                    "/static-offline-docs": "/swagger-ui.css"}[entry.path]
            reads.append(("GET", entry, entry.path + some))
            continue
        if not isinstance(entry.route, APIRoute):
            reads.append(("GET", entry, entry.path))
            continue
        for method in sorted(entry.methods):
            (reads if method in ("GET", "HEAD") else writes).append((method, entry, None))
    return reads, writes


def sweep_rest(app, c, sweep, *, writes: bool = False) -> None:
    """Every read route, every caller, with values of `work` and of `personal`. With
    `writes`, every other method instead (last of all faces: a write may archive a
    canary), then the reads of the scoped callers once more: a write that let a `work`
    token attach what is not its own (a cairn project of personal, say) shows there."""
    client = local_client(app, follow_redirects=False)
    reads, others = _calls(app)
    everyone = callers(c)
    scoped_only = {k: v for k, v in everyone.items() if v[1]}
    plan = ([(*r, everyone) for r in others] + [(*r, scoped_only) for r in reads]
            if writes else [(*r, everyone) for r in reads])
    for method, entry, fixed, who_calls in plan:
        for who, (headers, scoped, sensitive) in who_calls.items():
            shows = sensitive and entry.path.startswith(SHOWS_SENSITIVE)
            banned = forbidden(scoped=scoped, sees_sensitive=shows)
            for inside in (False, True):
                if fixed is not None:
                    answer = client.get(fixed, headers=headers)
                else:
                    answer = call_route(client, method, *_request(entry, c, inside), headers)
                if answer.status_code < 400:
                    sweep.answered.add(f"{method} {entry.path}")
                sweep.routes.add(f"{method} {entry.path}")
                sweep.check("rest", f"{method} {entry.path} as {who} "
                            f"({'work' if inside else 'personal'} values) "
                            f"[{answer.status_code}]", _text(answer), banned)
                if answer.status_code >= 500:
                    sweep.leaks.append(f"rest {method} {entry.path} as {who}: "
                                       f"{answer.status_code} {answer.text[:200]}")
                if fixed is not None:
                    break


def _tool_args(tool, c, inside: bool) -> dict:
    samples = {"query": "password" if inside else PERSONAL_MARK,
               "project": "work-api" if inside else str(c.personal_project),
               "what": "the api answers on 8081", "action": "keep",
               "namespace": "work" if inside else "personal",
               "namespaces": ["work" if inside else "personal"],
               "text": "the work api listens on 8081 (canary probe)",
               "since": "2026-03-01", "until": "2026-03-04",
               "event_id": c.turns[1] if inside else c.diary_turns[1],
               "conversation_id": 1, "k": 10, "mode": "keyword", "phrase": False}
    schema = tool.input_schema
    required = set(schema.get("required", []))
    missing = required - samples.keys()
    assert not missing, (f"MCP tool {tool.name}: the canary sweep has no sample value for "
                         f"{missing}; add one to helpers/canary_rest._tool_args")
    return {name: samples[name] for name in schema["properties"]
            if name in required or name in ("query", "namespace", "namespaces", "mode", "k",
                                             "phrase")}


def sweep_mcp(db, c, sweep, llm) -> None:
    """Every tool of an unscoped server and of a `--namespaces work` one, with arguments of
    both namespaces. An MCP client is an agent: no sensitive personal data, ever."""
    servers = {
        "all": (mcp_server.build_server(db, embedder=HashEmbedder(), llm=llm,
                                        vault_embedder=HashEmbedder()), False),
        "work": (mcp_server.build_server(db, embedder=HashEmbedder(), llm=llm,
                                         namespaces=["work"],
                                         vault_embedder=HashEmbedder()), True),
    }
    everything = servers["all"][0]
    rules = getattr(everything, mcp_tools.TOOL_RULES)
    listed = asyncio.run(everything.list_tools())
    assert {t.name for t in listed} == set(rules), "an MCP tool registered without a rule"
    for label, (server, scoped) in servers.items():
        banned = forbidden(scoped=scoped, sees_sensitive=False)
        for tool in asyncio.run(server.list_tools()):
            for inside in (False, True):
                args = _tool_args(tool, c, inside)
                try:
                    result = asyncio.run(server.call_tool(tool.name, args))
                    text = json.dumps(_jsonable(result), default=str)
                except ToolError as refused:
                    text = str(refused)
                sweep.check("mcp", f"{tool.name} on the {label} server "
                            f"({'work' if inside else 'personal'} args)", text, banned)


def _jsonable(result):
    if hasattr(result, "model_dump"):
        return result.model_dump()
    if isinstance(result, (list, tuple)):
        return [_jsonable(r) for r in result]
    return result
