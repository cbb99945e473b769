"""LLM providers: the shared structured-output logic on a scripted provider, the real
anthropic and openai SDK paths against a local stub of each vendor's wire format, the Claude
CLI against a fake `claude`, provider selection from the environment, and the call log."""

import json
import logging
import stat
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from helpers.vendor_stubs import ANTHROPIC_PATH, OPENAI_PATH, VendorStub
from memory_platform.llm import (
    AnthropicProvider,
    CallRecorder,
    ClaudeCLIProvider,
    LLMCallFailed,
    LLMNotConfigured,
    LLMRefused,
    LLMSettings,
    OpenAIProvider,
    ScriptedProvider,
    estimate_cost,
    parse_structured,
    prices_for,
    provider_from_env,
)
from memory_platform.store import llm_calls

# Anything the SDKs or the CLI would read from a developer's shell: keys, endpoints, proxies.
_VENDOR_ENV = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_PROFILE",
    "ANTHROPIC_CUSTOM_HEADERS", "ANTHROPIC_IDENTITY_TOKEN", "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_FEDERATION_RULE_ID", "ANTHROPIC_ORGANIZATION_ID",
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_ADMIN_KEY",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_OAUTH_TOKEN",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
    "MEMORY_PLATFORM_LLM_PROVIDER", "MEMORY_PLATFORM_LLM_MODEL", "MEMORY_PLATFORM_LLM_BASE_URL",
    "MEMORY_PLATFORM_LLM_API_KEY", "MEMORY_PLATFORM_CLAUDE_EXECUTABLE",
)


@pytest.fixture(autouse=True)
def _isolated_vendor_env(monkeypatch, tmp_path):
    for name in _VENDOR_ENV:
        monkeypatch.delenv(name, raising=False)
    # No credential profile on disk can be found, and nothing local goes through a proxy.
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "no-anthropic-config"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def stub():
    with VendorStub() as server:
        yield server


class Verdict(BaseModel):
    score: int = Field(ge=1, le=10)
    reason: str


GOOD = '{"score": 7, "reason": "durable preference"}'


def anthropic(stub: VendorStub, **options) -> AnthropicProvider:
    options.setdefault("max_retries", 2)
    return AnthropicProvider(
        api_key="sk-ant-test", base_url=stub.anthropic_base_url, timeout=10, **options
    )


def openai(stub: VendorStub, **options) -> OpenAIProvider:
    options.setdefault("max_retries", 2)
    return OpenAIProvider(
        model="gpt-5.4-mini", api_key="sk-test", base_url=stub.openai_base_url, timeout=10,
        **options,
    )


def sent_key(request) -> str | None:
    """The API key a request carried: the Anthropic SDK sends it as x-api-key or, in 2.x,
    as a bearer token."""
    if "x-api-key" in request.headers:
        return request.headers["x-api-key"]
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token if scheme == "Bearer" else None


class Captured(logging.Handler):
    """Log records of one logger (pytest's caplog is off under `-p no:logging`)."""

    def __init__(self, name: str):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.logger = logging.getLogger(name)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> "Captured":
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)


# --- structured output on the scripted provider -----------------------------------------------


def test_scripted_plain_text_records_the_prompt():
    provider = ScriptedProvider(["hello back"])
    result = provider.complete("hello", system="be brief", max_tokens=50, purpose="greet")
    assert result.text == "hello back"
    assert result.parsed is None
    assert (result.provider, result.model, result.purpose) == ("scripted", "scripted", "greet")
    assert result.attempts == 1
    assert result.input_tokens > 0 and result.output_tokens > 0
    assert result.cost_usd is None  # unknown model: no estimate, never a made-up 0
    assert result.credential_source == "none (scripted)"
    [call] = provider.calls
    assert (call.prompt, call.system, call.max_tokens, call.json_mode) == (
        "hello", "be brief", 50, False
    )


def test_scripted_structured_answer_is_validated_and_the_schema_is_in_the_prompt():
    provider = ScriptedProvider([Verdict(score=3, reason="x")])
    result = provider.complete("rate this memory", schema=Verdict)
    assert result.parsed == Verdict(score=3, reason="x")
    prompt = provider.calls[0].prompt
    assert prompt.startswith("rate this memory")
    assert '"score"' in prompt and '"maximum":10' in prompt  # the JSON schema itself
    assert provider.calls[0].json_mode


def test_scripted_malformed_then_good_reasks_with_the_validation_error():
    provider = ScriptedProvider(['{"score": 11, "reason": "too high"}', GOOD])
    result = provider.complete("rate", schema=Verdict)
    assert result.parsed == Verdict(score=7, reason="durable preference")
    assert result.attempts == 2
    second = provider.calls[1].messages
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == '{"score": 11, "reason": "too high"}'
    assert "score: Input should be less than or equal to 10" in second[2]["content"]
    # Tokens of both round trips are counted: the refused answer was paid for too.
    first_only = ScriptedProvider([GOOD]).complete("rate", schema=Verdict)
    assert result.input_tokens > first_only.input_tokens


def test_scripted_malformed_every_time_is_refused_with_the_last_error():
    provider = ScriptedProvider(["not json", "{}", '{"score": "high"}'])
    with pytest.raises(LLMRefused) as caught:
        provider.complete("rate", schema=Verdict)
    refused = caught.value
    assert len(provider.calls) == 3
    assert refused.last_text == '{"score": "high"}'
    assert "score: Input should be a valid integer" in refused.validation_error
    assert "reason: Field required" in str(refused)
    assert refused.stats is not None and refused.stats.attempts == 3
    assert refused.stats.output_tokens > 0


def test_max_attempts_is_configurable_and_plain_calls_never_retry():
    provider = ScriptedProvider(["nope", GOOD], max_attempts=1)
    with pytest.raises(LLMRefused):
        provider.complete("rate", schema=Verdict)
    assert provider.complete("anything").text == GOOD  # no schema: any text is an answer


def test_scripted_callable_and_exceptions_propagate():
    provider = ScriptedProvider(lambda call: f"echo: {call.prompt}")
    assert provider.complete("ping").text == "echo: ping"
    failing = ScriptedProvider([LLMCallFailed("vendor down", status_code=503)])
    with pytest.raises(LLMCallFailed) as caught:
        failing.complete("ping", purpose="probe")
    assert caught.value.stats is not None and caught.value.stats.purpose == "probe"
    with pytest.raises(RuntimeError, match="no answer left"):
        ScriptedProvider([]).complete("ping")


def test_parse_structured_tolerates_one_code_fence_only():
    assert parse_structured(f"```json\n{GOOD}\n```", Verdict).score == 7
    assert parse_structured(f"```\n{GOOD}\n```", Verdict).score == 7
    with pytest.raises(ValueError):
        parse_structured(f"Here you go: {GOOD}", Verdict)


# --- Anthropic through the real SDK ------------------------------------------------------------


def test_anthropic_round_trip(stub):
    stub.anthropic_text(
        "Paris.", input_tokens=1000, output_tokens=100, model="claude-sonnet-4-6-stub"
    )
    provider = anthropic(stub, model="claude-sonnet-4-6")
    result = provider.complete("Capital of France?", system="Answer briefly.", max_tokens=64)
    assert result.text == "Paris."
    assert result.model == "claude-sonnet-4-6-stub"  # as the vendor reported it
    assert (result.input_tokens, result.output_tokens) == (1000, 100)
    assert result.cost_usd == pytest.approx(estimate_cost("claude-sonnet-4-6", 1000, 100))
    assert result.cost_usd == pytest.approx(0.0045)
    assert result.credential_source == "api_key argument"
    assert result.attempts == 1 and result.sdk_retries == 0
    [request] = stub.requests_to(ANTHROPIC_PATH)
    assert sent_key(request) == "sk-ant-test"
    assert request.body == {
        "model": "claude-sonnet-4-6",
        "max_tokens": 64,
        "system": "Answer briefly.",
        "messages": [{"role": "user", "content": "Capital of France?"}],
    }


def test_anthropic_429_then_success_is_one_call(stub, db):
    stub.anthropic_error(429, "rate_limit_error", "slow down")
    stub.anthropic_text("ok")
    llm = CallRecorder(anthropic(stub), db=db, run_id="run-429")
    result = llm.complete("hi", purpose="probe")
    assert result.text == "ok"
    assert len(stub.requests_to(ANTHROPIC_PATH)) == 2  # the SDK retried once
    assert result.attempts == 1 and result.sdk_retries == 1
    with db.connect() as conn:
        [row] = llm_calls.recent_calls(conn, run_id="run-429")
    assert row.ok and row.error is None
    assert (row.attempts, row.sdk_retries, row.purpose) == (1, 1, "probe")


def test_anthropic_malformed_structured_answer_then_good(stub):
    stub.anthropic_text('{"score": "seven"}')
    stub.anthropic_text(GOOD)
    result = anthropic(stub).complete("rate", schema=Verdict)
    assert result.parsed == Verdict(score=7, reason="durable preference")
    assert result.attempts == 2
    assert (result.input_tokens, result.output_tokens) == (24, 14)  # both round trips
    first, second = stub.requests_to(ANTHROPIC_PATH)
    assert len(first.body["messages"]) == 1
    roles = [m["role"] for m in second.body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert second.body["messages"][1]["content"] == '{"score": "seven"}'
    assert "valid integer" in second.body["messages"][2]["content"]


def test_anthropic_truncated_json_reask_says_so(stub):
    stub.anthropic_text('{"score": 7, "rea', stop_reason="max_tokens")
    stub.anthropic_text(GOOD)
    anthropic(stub).complete("rate", schema=Verdict, max_tokens=8)
    second = stub.requests_to(ANTHROPIC_PATH)[1]
    assert "cut off at the token limit" in second.body["messages"][2]["content"]


def test_anthropic_500s_exhausted_fail_and_are_logged(stub, db):
    for _ in range(3):
        stub.anthropic_error(500, "api_error", "internal trouble")
    llm = CallRecorder(anthropic(stub, max_retries=2), db=db)
    with pytest.raises(LLMCallFailed) as caught:
        llm.complete("hi", purpose="summary")
    assert caught.value.status_code == 500
    assert "internal trouble" in str(caught.value)
    assert len(stub.requests_to(ANTHROPIC_PATH)) == 3  # first try + max_retries
    with db.connect() as conn:
        [row] = llm_calls.recent_calls(conn)
    assert not row.ok
    assert row.error.startswith("LLMCallFailed: anthropic/claude-sonnet-4-6: HTTP 500")
    assert (row.provider, row.purpose, row.input_tokens, row.cost_usd) == (
        "anthropic", "summary", 0, Decimal(0)
    )
    assert llm.as_metadata()["llm_calls_failed"] == 1


def test_anthropic_client_error_is_not_retried(stub):
    stub.anthropic_error(400, "invalid_request_error", "max_tokens: too large")
    with pytest.raises(LLMCallFailed, match="HTTP 400.*too large") as caught:
        anthropic(stub).complete("hi")
    assert caught.value.status_code == 400
    assert len(stub.requests_to(ANTHROPIC_PATH)) == 1


def test_anthropic_key_from_environment(stub, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    stub.anthropic_text("ok")
    provider = AnthropicProvider(base_url=stub.anthropic_base_url, max_retries=0)
    assert provider.complete("hi").credential_source == "env:ANTHROPIC_API_KEY"
    assert sent_key(stub.requests[0]) == "sk-ant-from-env"


# --- OpenAI and OpenAI-compatible through the real SDK ----------------------------------------


def test_openai_round_trip_with_json_mode(stub):
    stub.openai_text(GOOD, prompt_tokens=1_000_000, completion_tokens=1_000_000)
    result = openai(stub).complete("rate", system="You judge memories.", schema=Verdict)
    assert result.parsed == Verdict(score=7, reason="durable preference")
    assert result.model == "gpt-5.4-mini-2026-03-17"  # as the vendor reported it
    assert result.cost_usd == pytest.approx(0.75 + 4.50)
    [request] = stub.requests_to(OPENAI_PATH)
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.body
    assert body["model"] == "gpt-5.4-mini"
    assert body["max_completion_tokens"] == 1024 and "max_tokens" not in body
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "You judge memories."}
    assert body["messages"][1]["role"] == "user"


def test_openai_plain_call_sends_no_json_mode(stub):
    stub.openai_text("hello")
    assert openai(stub).complete("hi").text == "hello"
    assert "response_format" not in stub.requests[0].body


def test_openai_429_then_success_is_one_call(stub, db):
    stub.openai_error(429, "rate_limit_exceeded")
    stub.openai_text("ok")
    llm = CallRecorder(openai(stub), db=db)
    result = llm.complete("hi")
    assert (result.text, result.attempts, result.sdk_retries) == ("ok", 1, 1)
    assert len(stub.requests_to(OPENAI_PATH)) == 2
    with db.connect() as conn:
        assert llm_calls.count_calls(conn) == 1


def test_openai_malformed_three_times_is_refused_and_logged(stub, db):
    for answer in ("sure!", '{"score": 0, "reason": "x"}', '{"reason": "x"}'):
        stub.openai_text(answer, prompt_tokens=10, completion_tokens=5)
    llm = CallRecorder(openai(stub), db=db, run_id="run-refused")
    with pytest.raises(LLMRefused, match="score: Field required"):
        llm.complete("rate", schema=Verdict, purpose="dream_score")
    assert len(stub.requests_to(OPENAI_PATH)) == 3
    with db.connect() as conn:
        [row] = llm_calls.recent_calls(conn, run_id="run-refused")
    assert not row.ok and row.error.startswith("LLMRefused:")
    assert (row.attempts, row.input_tokens, row.output_tokens) == (3, 30, 15)
    assert float(row.cost_usd) == pytest.approx(estimate_cost("gpt-5.4-mini", 30, 15))


def test_openai_compatible_local_server_without_key(stub, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")  # must not leak to this host
    stub.openai_text("local answer", model="llama3.1:8b")
    provider = provider_from_env(
        {
            "MEMORY_PLATFORM_LLM_PROVIDER": "openai-compatible",
            "MEMORY_PLATFORM_LLM_BASE_URL": stub.openai_base_url,
            "MEMORY_PLATFORM_LLM_MODEL": "llama3.1:8b",
            "OPENAI_API_KEY": "sk-real-openai-key",
        },
        max_retries=0,
    )
    result = provider.complete("hi", max_tokens=32)
    assert result.provider == "openai-compatible"
    assert result.credential_source == f"none (local server at {stub.openai_base_url})"
    assert result.cost_usd is None
    request = stub.requests[0]
    assert "sk-real-openai-key" not in request.headers.get("authorization", "")
    assert request.body["max_tokens"] == 32 and "max_completion_tokens" not in request.body


def test_openai_compatible_with_its_own_key(stub):
    stub.openai_text("ok")
    provider = provider_from_env(
        {
            "MEMORY_PLATFORM_LLM_PROVIDER": "openai-compatible",
            "MEMORY_PLATFORM_LLM_BASE_URL": stub.openai_base_url,
            "MEMORY_PLATFORM_LLM_MODEL": "qwen2.5",
            "MEMORY_PLATFORM_LLM_API_KEY": "vllm-secret",
        },
        max_retries=0,
    )
    assert provider.complete("hi").credential_source == "env:MEMORY_PLATFORM_LLM_API_KEY"
    assert stub.requests[0].headers["authorization"] == "Bearer vllm-secret"


# --- choosing a provider -----------------------------------------------------------------------


def test_no_provider_configured_names_the_settings():
    with pytest.raises(LLMNotConfigured) as caught:
        provider_from_env({})
    message = str(caught.value)
    for setting in (
        "MEMORY_PLATFORM_LLM_PROVIDER", "MEMORY_PLATFORM_LLM_MODEL",
        "MEMORY_PLATFORM_LLM_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
        "anthropic", "openai-compatible", "claude-cli",
    ):
        assert setting in message


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MEMORY_PLATFORM_LLM_PROVIDER": "gemini"}, "'gemini' is not a provider"),
        ({"MEMORY_PLATFORM_LLM_PROVIDER": "anthropic"}, "set ANTHROPIC_API_KEY"),
        ({"MEMORY_PLATFORM_LLM_PROVIDER": "openai"}, "openai needs OPENAI_API_KEY"),
        (
            {"MEMORY_PLATFORM_LLM_PROVIDER": "openai-compatible"},
            "needs MEMORY_PLATFORM_LLM_BASE_URL and MEMORY_PLATFORM_LLM_MODEL",
        ),
        (
            {
                "MEMORY_PLATFORM_LLM_PROVIDER": "claude-cli",
                "MEMORY_PLATFORM_CLAUDE_EXECUTABLE": "/nonexistent/claude",
            },
            "MEMORY_PLATFORM_CLAUDE_EXECUTABLE",
        ),
    ],
)
def test_incomplete_configuration_says_what_is_missing(env, expected):
    with pytest.raises(LLMNotConfigured, match=expected):
        provider_from_env(env)


def test_settings_repr_hides_secrets():
    settings = LLMSettings.from_env(
        {"MEMORY_PLATFORM_LLM_PROVIDER": "openai", "OPENAI_API_KEY": "sk-secret",
         "MEMORY_PLATFORM_LLM_API_KEY": "also-secret"}
    )
    assert settings.provider == "openai" and settings.api_key == "also-secret"
    assert "secret" not in repr(settings)


def test_configured_providers_and_defaults(stub):
    anthropic_provider = provider_from_env(
        {"MEMORY_PLATFORM_LLM_PROVIDER": "Anthropic", "ANTHROPIC_API_KEY": "k",
         "MEMORY_PLATFORM_LLM_BASE_URL": stub.anthropic_base_url}
    )
    assert isinstance(anthropic_provider, AnthropicProvider)
    assert anthropic_provider.model == "claude-sonnet-4-6"
    assert anthropic_provider.credential_source == "env:ANTHROPIC_API_KEY"
    assert anthropic_provider.base_url.startswith(stub.anthropic_base_url)
    openai_provider = provider_from_env(
        {"MEMORY_PLATFORM_LLM_PROVIDER": "openai", "OPENAI_API_KEY": "k",
         "MEMORY_PLATFORM_LLM_MODEL": "gpt-4o"}
    )
    assert isinstance(openai_provider, OpenAIProvider)
    assert (openai_provider.name, openai_provider.model) == ("openai", "gpt-4o")
    assert openai_provider.credential_source == "env:OPENAI_API_KEY"


# --- the Claude Code CLI -----------------------------------------------------------------------


def fake_claude(tmp_path: Path, replies: list[dict]) -> Path:
    """An executable that behaves like `claude -p --output-format json`: it logs its argv,
    stdin and credential variables, then prints the next scripted reply. A reply is
    {"result": text, ...fields} or {"stdout": raw, "stderr": ..., "exit": code}."""
    state = tmp_path / "fake-claude"
    state.mkdir()
    (state / "replies.json").write_text(json.dumps(replies))
    script = state / "claude"
    script.write_text(
        f"#!{sys.executable}\n"
        + f"STATE = {str(state)!r}\n"
        + r'''
import json, os, sys
calls_path = os.path.join(STATE, "calls.jsonl")
n = sum(1 for _ in open(calls_path)) if os.path.exists(calls_path) else 0
with open(calls_path, "a") as log:
    log.write(json.dumps({
        "argv": sys.argv[1:],
        "stdin": sys.stdin.read(),
        "cwd": os.getcwd(),
        "api_key": os.environ.get("ANTHROPIC_API_KEY"),
    }) + "\n")
reply = json.load(open(os.path.join(STATE, "replies.json")))[n]
if "stdout" in reply:
    sys.stdout.write(reply["stdout"])
    sys.stderr.write(reply.get("stderr", ""))
    sys.exit(reply.get("exit", 0))
out = {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 1234,
       "num_turns": 1, "session_id": "3f2a9c1e-0000-4000-8000-000000000000",
       "total_cost_usd": 0.0012,
       "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                 "cache_read_input_tokens": 1000, "output_tokens": 42},
       "modelUsage": {"claude-haiku-4-5-20251001": {"outputTokens": 3},
                      "claude-sonnet-4-6": {"outputTokens": 42}}}
out.update(reply)
print(json.dumps(out))
'''
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def cli_calls(script: Path) -> list[dict]:
    return [json.loads(line) for line in (script.parent / "calls.jsonl").read_text().splitlines()]


def test_claude_cli_with_subscription_login(tmp_path):
    script = fake_claude(tmp_path, [{"result": "a summary"}])
    provider = ClaudeCLIProvider(
        model="sonnet", executable=str(script), cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}
    )
    with Captured("memory_platform.llm.claude_cli") as logs:
        result = provider.complete("summarise this", system="Be terse.", purpose="summary")
    assert result.text == "a summary"
    assert result.credential_source == "claude subscription login"
    assert result.model == "claude-sonnet-4-6"
    assert (result.input_tokens, result.output_tokens) == (1105, 42)
    assert result.cost_usd == pytest.approx(0.0012)  # the CLI's own figure
    assert not [r for r in logs.records if r.levelno >= logging.WARNING]
    [call] = cli_calls(script)
    assert call["argv"] == [
        "-p", "--output-format", "json", "--model", "sonnet",
        "--append-system-prompt", "Be terse.",
    ]
    assert call["stdin"] == "summarise this"  # on stdin, not in argv
    assert Path(call["cwd"]) == tmp_path
    assert call["api_key"] is None


def test_claude_cli_api_key_in_environment_overrides_subscription(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-exported-for-other-tools")
    script = fake_claude(tmp_path, [{"result": "one"}, {"result": "two"}])
    provider = ClaudeCLIProvider(executable=str(script))  # env: this process's
    with Captured("memory_platform.llm.claude_cli") as logs:
        first = provider.complete("a")
        provider.complete("b")
    expected = "env:ANTHROPIC_API_KEY (overrides the Claude subscription login)"
    assert first.credential_source == expected
    warnings = [r.getMessage() for r in logs.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1  # once per provider, not once per call
    assert "env:ANTHROPIC_API_KEY" in warnings[0] and "subscription" in warnings[0]
    assert cli_calls(script)[0]["api_key"] == "sk-ant-exported-for-other-tools"
    assert "--model" not in cli_calls(script)[0]["argv"]


def test_claude_cli_structured_retry_carries_the_previous_answer(tmp_path):
    script = fake_claude(tmp_path, [{"result": "I think 7."}, {"result": GOOD}])
    provider = ClaudeCLIProvider(executable=str(script), env={})
    result = provider.complete("rate", schema=Verdict)
    assert result.parsed == Verdict(score=7, reason="durable preference")
    assert result.attempts == 2
    assert result.cost_usd == pytest.approx(0.0024)
    second = cli_calls(script)[1]["stdin"]
    assert second.startswith("rate")
    assert "Your previous answer was:\nI think 7." in second
    assert "Invalid JSON" in second


def test_claude_cli_errors_fail_loudly(tmp_path):
    script = fake_claude(
        tmp_path,
        [
            {"subtype": "error_max_turns", "is_error": True, "result": "Reached max turns"},
            {"stdout": "", "stderr": "Invalid API key · Please run /login", "exit": 1},
            {"stdout": "not json at all"},
        ],
    )
    provider = ClaudeCLIProvider(executable=str(script), env={})
    with pytest.raises(LLMCallFailed, match="error_max_turns.*Reached max turns"):
        provider.complete("a")
    with pytest.raises(LLMCallFailed, match="exited 1.*Please run /login"):
        provider.complete("b")
    with pytest.raises(LLMCallFailed, match="no JSON result"):
        provider.complete("c")


# --- the call log and run metadata -------------------------------------------------------------


def test_recorder_logs_every_call_and_totals_metadata(db):
    provider = ScriptedProvider(
        [GOOD, "nope", "nope", "nope", LLMCallFailed("boom", status_code=503)],
        model="claude-haiku-4-5",
    )
    llm = CallRecorder(provider, db=db, run_id="run-1")
    ok = llm.complete("rate", schema=Verdict, purpose="dream_score")
    with pytest.raises(LLMRefused):
        llm.complete("rate", schema=Verdict, purpose="dream_score")
    with pytest.raises(LLMCallFailed):
        llm.complete("plain", purpose="summary")
    CallRecorder(ScriptedProvider(["x"]), db=db, run_id="other-run").complete("x")

    with db.connect() as conn:
        rows = llm_calls.recent_calls(conn, limit=10, run_id="run-1")
        assert llm_calls.count_calls(conn) == 4
    assert [r.ok for r in rows] == [False, False, True]  # newest first
    failed, refused, good = rows
    assert failed.error == "LLMCallFailed: boom"
    assert (refused.attempts, good.attempts) == (3, 1)
    assert float(good.cost_usd) == pytest.approx(ok.cost_usd)
    assert good.input_tokens == ok.input_tokens and good.output_tokens == ok.output_tokens
    assert {r.credential_source for r in rows} == {"none (scripted)"}
    assert {r.model for r in rows} == {"claude-haiku-4-5"}
    assert all(r.latency_ms >= 0 and r.created_at.tzinfo for r in rows)

    meta = llm.as_metadata()
    assert meta["llm_calls"] == 3 and meta["llm_calls_failed"] == 2
    assert meta["llm_attempts"] == 1 + 3 + 1
    assert meta["llm_input_tokens"] == sum(r.input_tokens for r in rows)
    assert meta["llm_output_tokens"] == sum(r.output_tokens for r in rows)
    assert meta["llm_cost_usd"] == pytest.approx(float(sum(r.cost_usd for r in rows)), abs=1e-6)
    assert meta["llm_calls_cost_unknown"] == 0
    assert meta["llm_models"] == {"scripted/claude-haiku-4-5": 3}
    assert meta["llm_credential_sources"] == {"none (scripted)": 3}
    # Plain values only, so Dagster takes them as MaterializeResult metadata as they are.
    assert all(isinstance(v, (int, float, str, dict)) for v in meta.values())


def test_recorder_without_database_still_totals():
    llm = CallRecorder(ScriptedProvider(["a", "b"]))
    llm.complete("1")
    llm.complete("2")
    meta = llm.as_metadata()
    assert meta["llm_calls"] == 2 and meta["llm_calls_cost_unknown"] == 2
    assert meta["llm_cost_usd"] == 0
    assert (llm.name, llm.model, llm.credential_source) == (
        "scripted", "scripted", "none (scripted)"
    )


# --- pricing -----------------------------------------------------------------------------------


def test_pricing_known_models_and_unknown():
    assert prices_for("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert prices_for("claude-opus-4-1") == (15.0, 75.0)
    assert prices_for("claude-opus-4-5-20251101") == (5.0, 25.0)
    assert prices_for("claude-haiku-4-5") == (1.0, 5.0)
    assert prices_for("gpt-4o-mini-2024-07-18") == (0.15, 0.60)  # not gpt-4o's price
    assert prices_for("gpt-4o") == (2.50, 10.0)
    assert prices_for("gpt-4.1-nano") == (0.10, 0.40)
    assert prices_for("openrouter/anthropic/claude-3-5-haiku") == (0.80, 4.0)
    assert prices_for("gpt-5.4-mini-2026-03-17") == (0.75, 4.50)
    assert prices_for("claude-opus-4-20250514") == (15.0, 75.0)
    assert prices_for("claude-opus-4-8") is None  # unlisted Opus: no guess
    assert prices_for("llama3.1:8b") is None
    assert estimate_cost("qwen2.5", 10, 10) is None
    assert estimate_cost("gpt-4o", 1_000_000, 0) == pytest.approx(2.5)
