"""Fixtures for the curator's tests: a small git repository whose code contradicts one of
its memories, a namespace of memories (true, stale, duplicated, a decision record), a
scripted model that answers from the listing it is shown, and a fake `claude` executable
that records how it was run and saves its verdict through the curator's MCP server."""

import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Callable
from datetime import date, datetime, timezone
from pathlib import Path

import numpy as np

from memory_platform.curator.verdict import Verdict
from memory_platform.store import memories as memory_store
from memory_platform.store import memory_embeddings as embedding_store

STALE = "The API listens on port 8080."
TRUE_CONFIG = "The API server reads its settings from config/server.toml."
DUPLICATE = "Acme's API server reads its settings from config/server.toml."
DECISION = ("We tried Redis for the cache and it failed under load; use the in-process LRU "
            "cache instead.")
ACME = [
    STALE, TRUE_CONFIG, DUPLICATE, DECISION,
    "The project is written in Python.",
    "The API binds to host 0.0.0.0.",
    "Deploys go out on Fridays.",
    "The user prefers short commit messages.",
    "The README describes the API server.",
    "Tests run with pytest.",
]
TEST_MODEL = "curator-test-model"
TEST_DIMS = 3

SERVER_TOML_V1 = '[server]\nhost = "0.0.0.0"\nport = 8080\n'
SERVER_TOML_V2 = '[server]\nhost = "0.0.0.0"\nport = 9090\n'
PORT_LINE = 3


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def make_repo(root: Path) -> dict:
    """A git repository with two commits: the port moved from 8080 to 9090."""
    repo = root / "acme"
    (repo / "config").mkdir(parents=True)
    (repo / "src").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "config" / "server.toml").write_text(SERVER_TOML_V1)
    (repo / "README.md").write_text(
        "# acme\n\nThe API server. The cache is an in-process LRU: we tried Redis and it "
        "failed under load.\n")
    (repo / "src" / "app.py").write_text("import tomllib\n\nCONFIG = 'config/server.toml'\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "API server on 8080")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "config" / "server.toml").write_text(SERVER_TOML_V2)
    git(repo, "commit", "-q", "-am", "Move the API to port 9090")
    second = git(repo, "rev-parse", "HEAD")
    return {"path": repo, "first": first, "second": second}


def seed(db, namespace: str, texts: list[str], *, vectors: bool = True) -> list[int]:
    """Add `texts` to `namespace` in order (handle i+1 is texts[i]); with a small vector
    each, so the archive has one to keep."""
    ids = []
    with db.connect() as conn:
        if vectors:
            embedding_store.ensure_memory_model(conn, TEST_MODEL, TEST_DIMS)
        for i, text in enumerate(texts):
            memory_id, _ = memory_store.add_memory(conn, namespace=namespace, text=text,
                                                  category="project", actor="test")
            ids.append(memory_id)
            if vectors:
                embedding_store.write_memory_embeddings(
                    conn, TEST_MODEL, TEST_DIMS,
                    [(memory_id, np.array([1.0, float(i), 0.5], dtype=np.float32))])
    return ids


def handles_in(prompt: str) -> dict[str, int]:
    """text -> handle, from the listing lines of a prompt."""
    found = {}
    for line in prompt.splitlines():
        match = re.match(r"^\[(\d+)\] .*\| (\".*\")$", line)
        if match:
            found[json.loads(match.group(2))] = int(match.group(1))
    return found


def answering(plan: Callable[[dict[str, int]], dict]) -> Callable:
    """A ScriptedProvider responder: `plan(text -> handle)` gives the verdict as a dict."""
    def respond(call) -> str:
        return Verdict.model_validate(plan(handles_in(call.prompt))).model_dump_json()
    return respond


def stale_cuts(n: int) -> Callable[[dict[str, int]], dict]:
    """A plan cutting the first `n` memories of the listing that are not decision records,
    as stale, with the config file as evidence (valid whenever the repo is the fixture's)."""
    def plan(handles: dict[str, int]) -> dict:
        chosen = sorted(h for t, h in handles.items() if t != DECISION)[:n]
        return {"cuts": [{"handle": h, "reason": "stale", "evidence": [
            {"file": "config/server.toml", "line": PORT_LINE, "note": "port = 9090"}]}
            for h in chosen]}
    return plan


def good_plan(handles: dict[str, int]) -> dict:
    """What a careful curator says about ACME: the port is stale (the repo says 9090), the
    second config statement duplicates the first, the decision record stays; and a merge."""
    return {
        "cuts": [
            {"handle": handles[STALE], "reason": "contradicted", "evidence": [
                {"file": "config/server.toml", "line": PORT_LINE, "note": "port = 9090"}]},
            {"handle": handles[DUPLICATE], "reason": "duplicate", "of": handles[TRUE_CONFIG],
             "evidence": [{"handle": handles[TRUE_CONFIG], "note": "same statement"}]},
        ],
        "merges": [{"handles": [handles["The project is written in Python."],
                                handles["Tests run with pytest."]],
                    "text": "The project is written in Python and tested with pytest.",
                    "why": "one statement about the toolchain"}],
    }


FAKE_CLAUDE = r'''#!{python}
"""A fake `claude -p`: reads the task on stdin, starts the one MCP server its --mcp-config
names as Claude Code does (the server's env over its own), lists that server's tools, runs
the plan's PROBES (tool calls whose answers it records), saves the plan's verdict with
write_verdict, records what it saw (cwd, argv, environment, task, tools, probes) in
calls.jsonl beside itself (its environment is allow-listed: nothing tells it where), and
prints a result object as `claude -p` does."""
import asyncio, json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import plan
from mcp import Client, StdioServerParameters

argv = sys.argv
task = sys.stdin.read()
with open(argv[argv.index("--mcp-config") + 1], encoding="utf-8") as f:
    config = json.load(f)
[(name, server)] = config["mcpServers"].items()


def text(answer):
    return "".join(getattr(c, "text", "") for c in answer.content)


async def drive():
    params = StdioServerParameters(command=server["command"], args=server["args"],
                                   env={{**os.environ, **server.get("env", {{}})}})
    async with Client(params, read_timeout_seconds=120) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        probes = []
        for tool, arguments in getattr(plan, "PROBES", []):
            answer = await client.call_tool(tool, arguments)
            probes.append({{"tool": tool, "arguments": arguments, "error": answer.is_error,
                           "text": text(answer)}})
        saved = await client.call_tool("write_verdict",
                                       {{"verdict": json.dumps(plan.verdict(task))}})
        return tools, probes, text(saved)


tools, probes, saved = asyncio.run(drive())
with open(os.path.join(here, "calls.jsonl"), "a", encoding="utf-8") as out:
    out.write(json.dumps({{"cwd": os.getcwd(), "argv": argv, "env": dict(os.environ),
                          "task": task, "server": name, "tools": tools, "probes": probes,
                          "saved": saved}}) + "\n")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                  "result": "done", "usage": {{"input_tokens": 1200, "output_tokens": 80}},
                  "total_cost_usd": 0.0123,
                  "modelUsage": {{"claude-sonnet-4-6": {{"outputTokens": 80}}}}}}))
'''

PLAN_MODULE = '''import json, re, sys
sys.path.insert(0, {helpers!r})
from curator import handles_in, {plan_name} as plan_fn
PROBES = json.loads({probes!r})
def verdict(task):
    return plan_fn(handles_in(task))
'''


def install_fake_claude(folder: Path, plan_name: str = "good_plan",
                        probes: list[tuple[str, dict]] = ()) -> dict:
    """A `claude` executable in `folder` (put it first on PATH), answering with the plan
    named (a function of this module) after calling the tools in `probes`. Returns {bin,
    log, env}: `env` holds variables a test may export to see that the child never gets
    them."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "claude"
    exe.write_text(FAKE_CLAUDE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (folder / "plan.py").write_text(PLAN_MODULE.format(
        helpers=str(Path(__file__).parent), plan_name=plan_name,
        probes=json.dumps([list(p) for p in probes])))
    return {"bin": folder, "log": folder / "calls.jsonl",
            "env": {"FAKE_CLAUDE_LOG": str(folder / "calls.jsonl"),
                    "FAKE_CLAUDE_PLAN_DIR": str(folder)}}


def fake_calls(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


# Named plans for the fake `claude` (its plan module imports them by name).
four_stale = stale_cuts(4)
five_stale = stale_cuts(5)


def write_routing(home: Path, repos: dict[str, Path]) -> Path:
    """A routing.toml tying namespaces to repositories."""
    path = home / "routing.toml"
    lines = ["[repos]"] + [f'{name} = "{folder}"' for name, folder in repos.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


# --- the acme namespace of the domain tests ---------------------------------------------------

WEEK = date(2026, 11, 29)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def acme_namespace(db, tmp_path: Path) -> dict:
    """The fixture repository and ACME seeded into `acme`, tied together."""
    from memory_platform.curator.config import CuratorConfig

    repo = make_repo(tmp_path)
    ids = seed(db, "acme", ACME)
    return {"repo": repo, "ids": ids, "config": CuratorConfig(repos={"acme": repo["path"]})}


def run_week(db, acme: dict, plan, *, week=WEEK, now=NOW, dry_run=False, run_id="run-1"):
    """propose() for acme with a scripted model following `plan`: (proposal, model)."""
    from memory_platform.curator.propose import propose
    from memory_platform.llm import ScriptedProvider

    model = ScriptedProvider(answers=answering(plan))
    proposal = propose(db, "acme", week, agent=lambda: model, dagster_run_id=run_id,
                       config=acme["config"], repo=acme["repo"]["path"], dry_run=dry_run,
                       now=now)
    return proposal, model


def cut_two(db, acme: dict, now=NOW):
    """A week of acme proposed with good_plan and executed: the stale and the duplicate
    memories cut."""
    from memory_platform.curator.execute import execute

    run_week(db, acme, good_plan, now=now)
    return execute(db, "acme", WEEK, dagster_run_id="run-1", config=acme["config"], now=now)


def status_of(db, memory_id: int) -> dict | None:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)


class NoEmbed:
    """An embedder for writes whose vectors these tests do not read."""

    name, dims = TEST_MODEL, TEST_DIMS

    def embed(self, texts):
        return [np.array([0.0, 1.0, 0.0], dtype=np.float32) for _ in texts]


def beyond_the_listing(handles: dict[str, int]) -> dict:
    """A verdict naming handles the listing does not have: one past the last, and 0 (which
    a Python index would read as the last memory)."""
    last = max(handles.values())
    return {"cuts": [
        {"handle": last + 1, "reason": "stale",
         "evidence": [{"date": "2025-01-01", "note": "long ago"}]},
        {"handle": 0, "reason": "stale", "evidence": [{"date": "2025-01-01", "note": "zero"}]}],
        "merges": [{"handles": [0, last + 1], "text": "nothing", "why": "out of range"}]}


def keep_all(handles: dict[str, int]) -> dict:
    """A verdict that cuts nothing."""
    return {"cuts": [], "merges": [], "contradictions": []}
