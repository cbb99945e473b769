"""The curator's tool loop as an attacker drives it (the model's tool calls are untrusted):
what a tool reads is masked before it reaches the model or the run's log; arguments that
are not plain JSON (Infinity, NaN, nesting 100k deep, huge, wrong types, unknown names)
come back as a tool error the model reads, never a crashed run; a pathological grep stops
at the run's deadline; a pattern whose compilation alone would take seconds is refused.
Against the local vendor stubs (no network)."""

import json
import threading
import time

import pytest

from helpers.curator import git, make_repo
from helpers.vendor_stubs import ANTHROPIC_PATH, OPENAI_PATH, VendorStub
from memory_platform.curator.repo_tools import RepoTools
from memory_platform.curator.tool_loop import AnthropicToolLoop, OpenAIToolLoop
from memory_platform.curator.verdict import Verdict
from memory_platform.llm import LLMCallFailed

OPENAI_KEY = "sk-proj-" + "Q7x9vLm2Kp4Rt8Wz" * 3
AWS_KEY = "AKIA" + "Z7Q4XK2MPL9RTV3W"
PASSWORD = "hunter2-canary-Qx7"
SECRETS = (OPENAI_KEY, AWS_KEY, PASSWORD)
EMPTY = '{"cuts": [], "merges": [], "contradictions": []}'


@pytest.fixture
def leaky(tmp_path):
    """The fixture repository with a committed .env holding three credentials."""
    made = make_repo(tmp_path)
    (made["path"] / ".env").write_text(
        f"OPENAI_API_KEY={OPENAI_KEY}\nAWS_ACCESS_KEY_ID={AWS_KEY}\npassword={PASSWORD}\n")
    git(made["path"], "add", ".env")
    git(made["path"], "commit", "-q", "-m", "add the environment")
    made["env_commit"] = git(made["path"], "rev-parse", "HEAD")
    return made


def _openai_tool_calls(raw: list[tuple[str, str]]) -> dict:
    """An OpenAI answer asking for tools, each with its arguments as the raw string sent."""
    return {
        "id": "chatcmpl-tools", "object": "chat.completion", "created": 1_700_000_000,
        "model": "local-model",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                     "message": {"role": "assistant", "content": None, "refusal": None,
                                 "tool_calls": [
                                     {"id": f"call_{i}", "type": "function",
                                      "function": {"name": name, "arguments": arguments}}
                                     for i, (name, arguments) in enumerate(raw)]}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34},
    }


def _openai_loop(stub, repo, **budget) -> OpenAIToolLoop:
    return OpenAIToolLoop(name="openai-compatible", model="local-model", api_key=None,
                          base_url=stub.openai_base_url, credential_source="none",
                          tools=RepoTools(repo["path"]), max_tokens_param="max_tokens",
                          **{"max_turns": 4, "timeout": 60.0, **budget})


def _tool_results(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"]


def test_what_the_tools_read_is_masked_before_the_model_or_the_log_sees_it(leaky):
    calls = [("read_file", {"path": ".env"}), ("grep", {"pattern": "KEY|password"}),
             ("git_show", {"commit": leaky["env_commit"][:10]}),
             ("git_log", {"path": ".env"})]
    with VendorStub() as stub:
        stub.script(OPENAI_PATH, 200, _openai_tool_calls(
            [(n, json.dumps(a)) for n, a in calls]))
        stub.openai_text(EMPTY, model="local-model")
        agent = _openai_loop(stub, leaky)
        result = agent.complete("judge", system="s", schema=Verdict, max_tokens=500)
        second = stub.requests_to(OPENAI_PATH)[1]
    assert result.parsed.cuts == []
    results = _tool_results(second)
    assert len(results) == len(calls)
    sent = json.dumps(second.body)
    for secret in SECRETS:
        assert secret not in sent, secret
        assert secret not in json.dumps([c.__dict__ for c in agent.calls]), secret
    # the tools still answered: the lines are there, their values masked
    assert "OPENAI_API_KEY=" in results[0] and "[secret masked]" in results[0]
    assert ".env:1:" in results[1] and "[secret masked]" in results[1]
    assert "add the environment" in results[2] and "[secret masked]" in results[2]


HOSTILE_ARGUMENTS = [
    ("read_file", '{"path": "README.md", "offset": Infinity}'),
    ("read_file", '{"path": "README.md", "offset": -Infinity}'),
    ("read_file", '{"path": "README.md", "limit": NaN}'),
    ("read_file", '{"path": "README.md", "offset": 1e400}'),
    ("read_file", '{"path": "README.md", "offset": ' + "9" * 5000 + "}"),
    ("read_file", '{"path": "README.md", "offset": 1.5}'),
    ("read_file", '{"path": "README.md", "offset": true}'),
    ("list_files", "[" * 100_000 + "]" * 100_000),
    ("grep", '{"pattern": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("read_file", '{"path": {"nested": {"deeper": ["README.md"]}}}'),
    ("read_file", '{"path": "README.md", "deadline": 0}'),
    ("read_file", json.dumps({"path": "x" * 1_000_000})),
    ("grep", "{}"),
    ("read_file", "not json"),
    ("git_log", '["a", "list"]'),
]


def test_hostile_arguments_are_a_tool_error_the_model_reads(leaky):
    with VendorStub() as stub:
        stub.script(OPENAI_PATH, 200, _openai_tool_calls(HOSTILE_ARGUMENTS))
        stub.openai_text(EMPTY, model="local-model")
        agent = _openai_loop(stub, leaky)
        result = agent.complete("judge", system="s", schema=Verdict, max_tokens=500)
        results = _tool_results(stub.requests_to(OPENAI_PATH)[1])
    assert result.parsed.cuts == []  # the run carried on to its verdict
    assert len(results) == len(HOSTILE_ARGUMENTS)
    for (name, raw), answer in zip(HOSTILE_ARGUMENTS, results):
        assert answer.startswith(("refused:", "error:")), (name, raw[:60], answer[:200])
        assert len(answer) < 2_000, (raw[:60], len(answer))
    assert "Infinity" in results[0] or "finite" in results[0]
    assert "deadline" in results[10]  # the unknown argument is named
    # what the log keeps of a call is bounded too
    assert all(len(json.dumps(c.arguments)) < 5_000 for c in agent.calls)


def test_anthropic_tool_input_nested_100k_deep_fails_clearly_not_with_recursion(leaky):
    deep = "[" * 100_000 + "]" * 100_000
    body = ('{"id": "msg_1", "type": "message", "role": "assistant", '
            '"model": "claude-sonnet-4-6", "content": [{"type": "tool_use", "id": "tu_1", '
            '"name": "read_file", "input": {"path": ' + deep + '}}], '
            '"stop_reason": "tool_use", "stop_sequence": null, '
            '"usage": {"input_tokens": 10, "output_tokens": 2}}')
    with VendorStub() as stub:
        stub.script(ANTHROPIC_PATH, 200, body)
        stub.anthropic_text(EMPTY)
        agent = AnthropicToolLoop(model="claude-sonnet-4-6", api_key="sk-ant-test",
                                  auth_token=None, base_url=stub.anthropic_base_url,
                                  credential_source="test", tools=RepoTools(leaky["path"]),
                                  max_turns=3, timeout=60)
        try:
            result = agent.complete("judge", system="s", schema=Verdict, max_tokens=500)
        except LLMCallFailed as exc:  # an answer that cannot be read is a failed call
            assert "nested" in str(exc) or "could not be read" in str(exc), str(exc)
        else:
            assert result.parsed.cuts == []
            second = stub.requests_to(ANTHROPIC_PATH)[1].body
            [block] = second["messages"][-1]["content"]
            assert block["content"].startswith(("refused:", "error:"))


# --- the deadline ----------------------------------------------------------------------

def _pathological(repo, files: int = 3) -> None:
    """Lines that make `(a+)+$` backtrack exponentially (a run of a's, then no end)."""
    for i in range(files):
        (repo["path"] / f"slow{i}.txt").write_text(("a" * 5000 + "!\n") * 3)


def test_grep_stops_at_the_deadline_it_is_given(leaky):
    _pathological(leaky)
    tools = RepoTools(leaky["path"])
    started = time.monotonic()
    answer = tools.call("grep", {"pattern": "(a+)+$"}, deadline=time.monotonic() + 1.0)
    took = time.monotonic() - started
    assert took < 8, took
    assert "grep stopped after" in answer, answer[:300]
    assert "time budget" in answer or "the pattern backtracks" in answer, answer[:300]
    # the clock alone stops a grep too: many ordinary files, a deadline about to pass
    for i in range(300):
        (leaky["path"] / f"plain{i:03}.txt").write_text("nothing here\n" * 50)
    answer = tools.call("grep", {"pattern": "never-found"}, deadline=time.monotonic() + 0.05)
    assert "the time budget ran out" in answer, answer[:300]


def test_a_compilation_that_would_take_seconds_is_refused(leaky):
    tools = RepoTools(leaky["path"])
    started = time.monotonic()
    answer = tools.call("grep", {"pattern": "((a{1000}){1000}){1000}"},
                        deadline=time.monotonic() + 30)
    assert time.monotonic() - started < 1.0
    assert answer.startswith("refused:") and "repeat" in answer, answer
    # an ordinary counted pattern still works
    assert "config/server.toml" in tools.call("grep", {"pattern": r"port = \d{4}"})


def test_the_tool_loop_stops_at_its_time_budget_inside_a_tool_call(leaky):
    _pathological(leaky, files=20)
    outcome: dict = {}
    with VendorStub() as stub:
        for _ in range(3):
            stub.script(OPENAI_PATH, 200, _openai_tool_calls(
                [("grep", json.dumps({"pattern": "(a+)+$"}))] * 3))
        agent = _openai_loop(stub, leaky, timeout=2.0)

        def judge():
            started = time.monotonic()
            try:
                agent.complete("judge", system="s", max_tokens=100)
            except LLMCallFailed as exc:
                outcome["error"] = str(exc)
            outcome["took"] = time.monotonic() - started

        worker = threading.Thread(target=judge, daemon=True)
        worker.start()
        worker.join(timeout=90)
        assert not worker.is_alive(), "the tool loop ran past its time budget"
    assert "time budget" in outcome["error"], outcome
    # a 2 s budget: overrun by at most one line's slice of matching (and a loaded machine)
    assert outcome["took"] < 6, outcome


# --- claude -p: our MCP server's tools only, an allow-listed environment ------------------

DATABASE_URL = "postgresql://curator:s3cret-db-pass@db.internal/memory"


def test_claude_cli_reads_only_through_the_curators_tools(leaky, tmp_path, monkeypatch):
    from helpers.curator import fake_calls, install_fake_claude
    from memory_platform.curator.agent import SituatedClaudeCLI

    outside = tmp_path / "written-by-git"
    probes = [("read_file", {"path": ".env"}),
              ("git_log", {"path": f"--output={outside}"}),
              ("git_show", {"commit": f"--output={outside}"}),
              ("git_show", {"commit": leaky["env_commit"][:10]}),
              ("read_file", {"path": "README.md", "offset": 10**30}),
              ("grep", {"pattern": "(a+)+$"})]
    fake = install_fake_claude(tmp_path / "bin", plan_name="keep_all", probes=probes)
    monkeypatch.setenv("PATH", f"{fake['bin']}:{__import__('os').environ['PATH']}")
    for key, value in fake["env"].items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("MEMORY_PLATFORM_DATABASE_URL", DATABASE_URL)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)  # another tool's key
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "k" * 30)  # the one it needs
    agent = SituatedClaudeCLI(repo=leaky["path"], max_turns=7, timeout=120)
    answer = agent.complete("judge [1] x", system="rules", schema=Verdict, max_tokens=100)
    [call] = fake_calls(fake["log"])
    argv = call["argv"]
    # none of Claude Code's own tools (no Bash: no `git log --output=FILE`; no Read: no file
    # outside the repository), none of the user's MCP servers or settings
    assert argv[argv.index("--tools") + 1] == ""
    assert argv[argv.index("--allowedTools") + 1] == "mcp__curator"
    assert "--strict-mcp-config" in argv
    assert argv[argv.index("--setting-sources") + 1] == ""
    assert not any("Bash" in a or "Read" in a for a in argv)
    assert call["server"] == "curator"
    assert call["tools"] == sorted(["list_files", "read_file", "grep", "git_log", "git_show",
                                    "write_verdict"])
    assert call["cwd"] != str(leaky["path"])  # the repo's .claude settings and hooks: not run
    answers = [p["text"] for p in call["probes"]]
    assert "OPENAI_API_KEY=" in answers[0] and "[secret masked]" in answers[0]
    for secret in SECRETS:
        assert secret not in json.dumps(call["probes"]), secret
    # `--output=...` is a path after `--` for git_log, and no commit id for git_show
    assert answers[1] == "(no commits)" and answers[2].startswith("refused:")
    assert not outside.exists()
    assert "add the environment" in answers[3]
    assert answers[4].startswith("error: bad arguments for read_file: offset must be")
    assert answers[5].startswith("(no match in")
    # the task went on stdin; the verdict came back through write_verdict
    assert "rules" in call["task"] and "judge [1] x" in call["task"]
    assert "write_verdict" in call["task"] and call["saved"].startswith("saved")
    assert answer.parsed is not None
    # the environment: allow-listed, with the one credential the CLI uses
    env = call["env"]
    assert DATABASE_URL not in json.dumps(env) and OPENAI_KEY not in json.dumps(env)
    assert "MEMORY_PLATFORM_DATABASE_URL" not in env and "FAKE_CLAUDE_LOG" not in env
    assert env["ANTHROPIC_API_KEY"].startswith("sk-ant-")
    assert {"PATH", "HOME"} <= set(env)


def test_the_child_environment_keeps_only_what_claude_needs():
    from memory_platform.curator.agent import CLI_ENVIRONMENT, child_environment

    ours = {"PATH": "/bin", "HOME": "/home/me", "LANG": "C.UTF-8",
            "MEMORY_PLATFORM_DATABASE_URL": DATABASE_URL, "OPENAI_API_KEY": OPENAI_KEY,
            "ANTHROPIC_AUTH_TOKEN": "bearer-1", "ANTHROPIC_API_KEY": "sk-ant-second",
            "AWS_SECRET_ACCESS_KEY": "aws-not-for-claude", "CLAUDE_CODE_OAUTH_TOKEN": "o"}
    child = child_environment(ours)
    # Claude Code's precedence: the bearer token wins; the lower ones stay behind
    assert child == {"PATH": "/bin", "HOME": "/home/me", "LANG": "C.UTF-8",
                     "ANTHROPIC_AUTH_TOKEN": "bearer-1"}
    bedrock = child_environment({"PATH": "/bin", "CLAUDE_CODE_USE_BEDROCK": "1",
                                 "AWS_REGION": "eu-west-1", "AWS_PROFILE": "work",
                                 "ANTHROPIC_API_KEY": "sk-ant-x", "PGPASSWORD": "pg"})
    assert bedrock == {"PATH": "/bin", "CLAUDE_CODE_USE_BEDROCK": "1",
                       "AWS_REGION": "eu-west-1", "AWS_PROFILE": "work"}
    assert "MEMORY_PLATFORM_DATABASE_URL" not in CLI_ENVIRONMENT
