"""The curator's agents, with no network: the repository tools' confinement, the API tool
loop against a local stub of the OpenAI-compatible and Anthropic wire formats (tool calls
that try to leave the repository are refused), and `claude -p` through a fake `claude`
executable that records its working directory, arguments and task, and drives the
curator's MCP server (its only tools) as Claude Code would."""

import json
import os
from datetime import date, datetime, timezone

import pytest

from helpers.curator import (
    ACME,
    DUPLICATE,
    PORT_LINE,
    STALE,
    fake_calls,
    good_plan,
    install_fake_claude,
    make_repo,
    seed,
)
from helpers.vendor_stubs import ANTHROPIC_PATH, OPENAI_PATH, VendorStub
from memory_platform.curator.agent import SituatedClaudeCLI, build_agent
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.propose import propose
from memory_platform.curator.repo_tools import MAX_LINES, RepoTools
from memory_platform.curator.tool_loop import AnthropicToolLoop, OpenAIToolLoop
from memory_platform.llm import CallRecorder, LLMSettings

WEEK = date(2026, 11, 29)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
SECRET = "THE-SECRET-OUTSIDE-THE-REPO"


@pytest.fixture
def repo(tmp_path):
    made = make_repo(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (made["path"] / "link_out").symlink_to(outside)  # a folder symlink out of the repo
    (made["path"] / "secret_link.txt").symlink_to(outside / "secret.txt")
    (made["path"] / "inside_link.txt").symlink_to(made["path"] / "README.md")
    return made


ESCAPES = [{"path": "../outside/secret.txt"}, {"path": "/etc/passwd"},
           {"path": "link_out/secret.txt"}, {"path": "secret_link.txt"},
           {"path": ".git/config"}]


# --- the tools ----------------------------------------------------------------------------


def test_repo_tools_stay_inside_the_repository(repo):
    tools = RepoTools(repo["path"])
    for args in ESCAPES:
        answer = tools.call("read_file", args)
        assert answer.startswith("refused:"), (args, answer)
        assert SECRET not in answer
    assert tools.call("grep", {"pattern": "SECRET"}) .startswith("(no match")
    assert tools.call("grep", {"pattern": "x", "path": "link_out"}).startswith("refused:")
    listed = tools.call("list_files", {}).splitlines()
    assert "config/server.toml" in listed and "inside_link.txt" in listed
    assert not any("secret" in line for line in listed) and ".git/config" not in listed
    assert "port = 9090" in tools.call("read_file", {"path": "config/server.toml"})
    assert "The API server" in tools.call("read_file", {"path": "inside_link.txt"})
    assert "Move the API to port 9090" in tools.call("git_log", {})
    assert "+port = 9090" in tools.call("git_show", {"commit": repo["second"][:8]})
    for rev in ("--output=/tmp/pwned", "HEAD; rm -rf /", "main..evil"):
        assert tools.call("git_show", {"commit": rev}).startswith("refused:")
    assert tools.call("write_file", {"path": "x"}).startswith("refused: no tool")


def test_repo_tools_limit_sizes(repo):
    big = repo["path"] / "big.txt"
    big.write_text("".join(f"line {i}\n" for i in range(MAX_LINES + 50)))
    answer = RepoTools(repo["path"]).call("read_file", {"path": "big.txt", "limit": 10_000})
    assert f"line {MAX_LINES - 1}" in answer and f"line {MAX_LINES}\n" not in answer
    assert "50 more lines" in answer
    (repo["path"] / "blob.bin").write_bytes(b"\x00\x01" * 10)
    assert "binary" in RepoTools(repo["path"]).call("read_file", {"path": "blob.bin"})


# --- the API tool loop ----------------------------------------------------------------------


def _tool_calls(calls: list[tuple[str, dict]]) -> dict:
    return {
        "id": "chatcmpl-tools", "object": "chat.completion", "created": 1_700_000_000,
        "model": "local-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                     "message": {"role": "assistant", "content": None, "refusal": None,
                                 "tool_calls": [
                                     {"id": f"call_{i}", "type": "function",
                                      "function": {"name": name, "arguments": json.dumps(a)}}
                                     for i, (name, a) in enumerate(calls)]}}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340},
    }


def test_openai_compatible_tool_loop_refuses_escapes_and_returns_the_verdict(db, repo):
    seed(db, "acme", ACME)
    config = CuratorConfig(repos={"acme": repo["path"]}, max_turns=5)
    with VendorStub() as stub:
        calls = [("read_file", a) for a in ESCAPES] + [
            ("read_file", {"path": "config/server.toml"}),
            ("list_files", {"path": "/"}), ("git_log", {"path": "config/server.toml"})]
        stub.script(OPENAI_PATH, 200, _tool_calls(calls))
        # handles follow the order memories were added in: 1..10 for ACME
        verdict = good_plan({text: i for i, text in enumerate(ACME, 1)})
        stub.openai_text(json.dumps(verdict), prompt_tokens=900, completion_tokens=120,
                         model="local-model")
        settings = LLMSettings(provider="openai-compatible", model="local-model",
                               base_url=stub.openai_base_url, api_key=None,
                               claude_executable="claude", env={})
        agent = build_agent(repo["path"], config, settings)
        assert isinstance(agent, OpenAIToolLoop) and agent.max_turns == 5
        recorder = CallRecorder(agent, db=db, run_id="run-tools")
        proposal = propose(db, "acme", WEEK, agent=lambda: recorder, dagster_run_id="run-tools",
                           config=config, repo=repo["path"], now=NOW)
        requests = stub.requests_to(OPENAI_PATH)
    assert proposal.status == "proposed", proposal.problems
    assert proposal.proposed_cuts == 2
    assert len(requests) == 2
    tools_offered = {t["function"]["name"] for t in requests[0].body["tools"]}
    assert tools_offered == {"list_files", "read_file", "grep", "git_log", "git_show"}
    results = [m for m in requests[1].body["messages"] if m["role"] == "tool"]
    assert len(results) == len(calls)
    for message in results[:len(ESCAPES)]:
        assert message["content"].startswith("refused:"), message
    assert "port = 9090" in results[len(ESCAPES)]["content"]
    assert results[len(ESCAPES) + 1]["content"].startswith("refused:")  # "/" is absolute
    assert "Move the API to port 9090" in results[-1]["content"]
    assert SECRET not in json.dumps([r.body for r in requests])
    assert requests[0].body["max_tokens"] == 8192  # a compatible server's parameter
    meta = recorder.as_metadata()
    assert meta["llm_calls"] == 1 and meta["llm_input_tokens"] == 1200
    assert meta["llm_credential_sources"] == {"none (local server at "
                                              f"{stub.openai_base_url})": 1}
    assert [c.name for c in agent.calls][:len(ESCAPES)] == ["read_file"] * len(ESCAPES)


def test_anthropic_tool_loop_refuses_escapes(repo):
    with VendorStub() as stub:
        stub.script(ANTHROPIC_PATH, 200, {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "tool_use", "id": f"tu_{i}", "name": "read_file", "input": a}
                        for i, a in enumerate(ESCAPES)],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20}})
        stub.anthropic_text('{"cuts": [], "merges": [], "contradictions": []}')
        agent = AnthropicToolLoop(model="claude-sonnet-4-6", api_key="sk-ant-test",
                                  auth_token=None, base_url=stub.anthropic_base_url,
                                  credential_source="test", tools=RepoTools(repo["path"]),
                                  max_turns=3, timeout=60)
        from memory_platform.curator.verdict import Verdict

        result = agent.complete("judge", system="s", schema=Verdict, max_tokens=500)
        second = stub.requests_to(ANTHROPIC_PATH)[1].body
    assert result.parsed.cuts == [] and result.input_tokens == 112
    blocks = second["messages"][-1]["content"]
    assert [b["type"] for b in blocks] == ["tool_result"] * len(ESCAPES)
    assert all(b["content"].startswith("refused:") for b in blocks)
    assert SECRET not in json.dumps(second)


def test_the_tool_loop_stops_at_its_turn_budget(repo):
    with VendorStub() as stub:
        for _ in range(3):
            stub.script(OPENAI_PATH, 200, _tool_calls([("list_files", {})]))
        agent = OpenAIToolLoop(name="openai-compatible", model="m", api_key=None,
                               base_url=stub.openai_base_url, credential_source="none",
                               tools=RepoTools(repo["path"]), max_turns=2, timeout=60,
                               max_tokens_param="max_tokens")
        from memory_platform.llm import LLMCallFailed

        with pytest.raises(LLMCallFailed, match="turn budget"):
            agent.complete("judge", system="s", max_tokens=100)
        assert len(stub.requests_to(OPENAI_PATH)) == 2


# --- claude -p ------------------------------------------------------------------------------


def test_claude_cli_judges_through_the_curators_tools(db, repo, tmp_path, monkeypatch):
    fake = install_fake_claude(tmp_path / "bin", probes=[
        ("read_file", {"path": "config/server.toml"}), ("read_file", {"path": "secret_link.txt"})])
    monkeypatch.setenv("PATH", f"{fake['bin']}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    seed(db, "acme", ACME)
    config = CuratorConfig(repos={"acme": repo["path"]}, max_turns=12, timeout_seconds=60)
    settings = LLMSettings.from_env({**os.environ, "MEMORY_PLATFORM_LLM_PROVIDER": "claude-cli"})
    agent = build_agent(repo["path"], config, settings)
    assert isinstance(agent, SituatedClaudeCLI)
    recorder = CallRecorder(agent, db=db, run_id="run-cli")
    proposal = propose(db, "acme", WEEK, agent=lambda: recorder, dagster_run_id="run-cli",
                       config=config, repo=repo["path"], now=NOW)
    [call] = fake_calls(fake["log"])
    argv = call["argv"]
    assert argv[argv.index("--max-turns") + 1] == "12"
    assert argv[argv.index("--tools") + 1] == ""  # none of Claude Code's own tools
    assert argv[argv.index("--allowedTools") + 1] == "mcp__curator"
    assert call["tools"] == ["git_log", "git_show", "grep", "list_files", "read_file",
                             "write_verdict"]
    # the repository is read through the tools, confined to it
    assert "port = 9090" in call["probes"][0]["text"]
    assert call["probes"][1]["text"].startswith("refused:") and SECRET not in json.dumps(call)
    assert call["cwd"] != str(repo["path"].resolve())  # the repo's own settings: not loaded
    assert len(" ".join(argv)) < 1500 and STALE not in " ".join(argv)  # the task: on stdin
    assert "Chesterton's fence" in call["task"] and STALE in call["task"]
    assert not os.path.exists(call["cwd"])  # the working folder is cleaned up
    assert proposal.status == "proposed" and proposal.proposed_cuts == 2
    assert {ACME[c["handle"] - 1] for c in proposal.verdict["cuts"]} == {STALE, DUPLICATE}
    assert proposal.verdict["cuts"][0]["evidence"][0]["line"] == PORT_LINE
    meta = recorder.as_metadata()
    assert meta["llm_cost_usd"] == 0.0123 and meta["llm_input_tokens"] == 1200
    assert meta["llm_credential_sources"] == {"claude subscription login": 1}
    assert meta["llm_models"] == {"claude-cli/claude-sonnet-4-6": 1}


def test_claude_cli_without_a_repo_has_only_write_verdict(db, tmp_path, monkeypatch):
    fake = install_fake_claude(tmp_path / "bin", plan_name="keep_all")
    monkeypatch.setenv("PATH", f"{fake['bin']}{os.pathsep}{os.environ['PATH']}")
    seed(db, "personal", ["I like tea."], vectors=False)
    agent = SituatedClaudeCLI(repo=None, max_turns=3, timeout=60)
    proposal = propose(db, "personal", WEEK, agent=lambda: agent, dagster_run_id="r",
                       config=CuratorConfig(), repo=None, now=NOW)
    [call] = fake_calls(fake["log"])
    assert call["tools"] == ["write_verdict"]
    assert "--root" not in json.dumps(call["argv"])
    assert proposal.status == "proposed" and proposal.proposed_cuts == 0
