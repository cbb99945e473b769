"""The providers, and choosing one from the environment.

Vendor SDKs are imported when a provider is built, not when this module is: loading the
Dagster definitions must not pay for (or fail on) an SDK nobody configured.
"""

import json
import logging
import os
import shutil
import subprocess
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from memory_platform.llm.base import (
    DEFAULT_MAX_ATTEMPTS,
    Completion,
    LLMCallFailed,
    LLMNotConfigured,
    Message,
    Provider,
)
from memory_platform.settings import load_settings

log = logging.getLogger(__name__)

PROVIDER_NAMES = ("anthropic", "openai", "openai-compatible", "claude-cli")
# Current, not-deprecated models with known prices (the anthropic SDK warns on deprecated
# ones: claude-sonnet-4-5 reaches end of life on 2026-11-30, gpt-4.1-mini on 2027-01-14).
DEFAULT_MODELS = {
    "anthropic": "claude-sonnet-4-6",
    "openai": "gpt-5.4-mini",
    # openai-compatible: no default; a local server's model names are its own.
    # claude-cli: no default; the CLI uses the model its own settings choose.
}
# SDK-level retries of 429/5xx/connection errors, with the SDK's backoff (which honours
# retry-after). Set explicitly so the behaviour does not drift with SDK defaults.
DEFAULT_MAX_RETRIES = 3
DEFAULT_TIMEOUT_S = 300.0
# The OpenAI SDK refuses to build a client without a key; a local server ignores it.
_NO_KEY_PLACEHOLDER = "no-key"


def _env_value(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name, "").strip()
    return value or None


class AnthropicProvider(Provider):
    """The Anthropic Messages API through the `anthropic` SDK."""

    name = "anthropic"

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODELS["anthropic"],
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        env: Mapping[str, str] | None = None,
    ):
        """Without `api_key`, ANTHROPIC_API_KEY (then ANTHROPIC_AUTH_TOKEN) is read from `env`
        (default: the process environment). We pass the credential to the SDK ourselves so
        the recorded source is the one actually used, not a guess at the SDK's lookup order."""
        import anthropic

        env = os.environ if env is None else env
        auth_token: str | None = None
        if api_key is not None:
            self._credential_source = "api_key argument"
        elif api_key := _env_value(env, "ANTHROPIC_API_KEY"):
            self._credential_source = "env:ANTHROPIC_API_KEY"
        elif auth_token := _env_value(env, "ANTHROPIC_AUTH_TOKEN"):
            self._credential_source = "env:ANTHROPIC_AUTH_TOKEN"
        else:
            raise LLMNotConfigured(
                "the anthropic provider needs an API key: set ANTHROPIC_API_KEY "
                "(or ANTHROPIC_AUTH_TOKEN for a gateway), or choose another "
                "MEMORY_PLATFORM_LLM_PROVIDER"
            )
        self.model = model
        self.max_attempts = max_attempts
        self._errors = (anthropic.APIError,)
        self._status_error = anthropic.APIStatusError
        self._client = anthropic.Anthropic(
            api_key=api_key,
            auth_token=auth_token,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )

    @property
    def credential_source(self) -> str:
        return self._credential_source

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        # No vendor JSON mode here: Anthropic's structured outputs exist for some models
        # only and reject others; the schema in the prompt plus validation works for all.
        params: dict = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if system:
            params["system"] = system
        try:
            # with_raw_response: the parsed message plus how many retries the SDK took.
            raw = self._client.messages.with_raw_response.create(**params)
            message = raw.parse()
        except self._errors as exc:
            raise _call_failed(self.name, self.model, exc, self._status_error) from exc
        text = "".join(block.text for block in message.content if block.type == "text")
        usage = message.usage
        # Cache reads/writes are prompt tokens too; absent (None) unless caching is used.
        input_tokens = (
            usage.input_tokens
            + (usage.cache_creation_input_tokens or 0)
            + (usage.cache_read_input_tokens or 0)
        )
        return Completion(
            text=text,
            model=message.model or self.model,
            input_tokens=input_tokens,
            output_tokens=usage.output_tokens,
            sdk_retries=raw.retries_taken,
            truncated=message.stop_reason == "max_tokens",
        )


class OpenAIProvider(Provider):
    """OpenAI Chat Completions through the `openai` SDK; with `base_url`, any server that
    speaks it (Ollama, llama.cpp, vLLM, LiteLLM)."""

    def __init__(
        self,
        *,
        model: str = DEFAULT_MODELS["openai"],
        api_key: str | None = None,
        credential_source: str | None = None,
        base_url: str | None = None,
        name: str = "openai",
        json_mode: bool = True,
        max_tokens_param: str = "max_completion_tokens",
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ):
        """`api_key` None means the server needs none (a local server): the credential source
        says so. `max_tokens_param`: OpenAI's current models take `max_completion_tokens`
        and reject `max_tokens`; compatible servers mostly know only `max_tokens`."""
        import openai

        if api_key is None and base_url is None:
            raise LLMNotConfigured(
                "the openai provider needs OPENAI_API_KEY; for a local OpenAI-compatible "
                "server set MEMORY_PLATFORM_LLM_PROVIDER=openai-compatible and "
                "MEMORY_PLATFORM_LLM_BASE_URL"
            )
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(f"max_tokens_param must name an OpenAI parameter: {max_tokens_param}")
        self.name = name
        self.model = model
        self.max_attempts = max_attempts
        self.json_mode = json_mode
        self.max_tokens_param = max_tokens_param
        if credential_source is None:
            credential_source = (
                "api_key argument" if api_key is not None else f"none (local server at {base_url})"
            )
        self._credential_source = credential_source
        self._errors = (openai.APIError,)
        self._status_error = openai.APIStatusError
        self._client = openai.OpenAI(
            api_key=api_key if api_key is not None else _NO_KEY_PLACEHOLDER,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )

    @property
    def credential_source(self) -> str:
        return self._credential_source

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        chat: list[Message] = [{"role": "system", "content": system}] if system else []
        params: dict = {"model": self.model, "messages": chat + messages}
        params[self.max_tokens_param] = max_tokens
        if json_mode and self.json_mode:
            # JSON mode guarantees syntax only; the schema (in the prompt) is still validated.
            params["response_format"] = {"type": "json_object"}
        try:
            raw = self._client.chat.completions.with_raw_response.create(**params)
            completion = raw.parse()
        except self._errors as exc:
            raise _call_failed(self.name, self.model, exc, self._status_error) from exc
        if not completion.choices:
            raise LLMCallFailed(f"{self.name}/{self.model}: the answer had no choices")
        choice = completion.choices[0]
        usage = completion.usage
        if usage is None:
            # Some compatible servers omit usage; the row then under-reports, so say so.
            log.warning("%s/%s reported no token usage; recording 0", self.name, self.model)
        return Completion(
            text=choice.message.content or "",
            model=completion.model or self.model,
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            sdk_retries=raw.retries_taken,
            truncated=choice.finish_reason == "length",
        )


def _call_failed(
    provider: str, model: str, exc: Exception, status_error: type[Exception]
) -> LLMCallFailed:
    status = getattr(exc, "status_code", None) if isinstance(exc, status_error) else None
    what = f"HTTP {status}" if status is not None else type(exc).__name__
    return LLMCallFailed(f"{provider}/{model}: {what}: {exc}", status_code=status)


# Claude Code's own credential precedence, highest first: a cloud provider switch, then the
# environment's bearer token and API key, then a setup-token, then the `claude` login.
_CLI_ENV_CREDENTIALS = (
    ("CLAUDE_CODE_USE_BEDROCK", "env:CLAUDE_CODE_USE_BEDROCK (AWS Bedrock credentials)"),
    ("CLAUDE_CODE_USE_VERTEX", "env:CLAUDE_CODE_USE_VERTEX (Google Vertex credentials)"),
    ("ANTHROPIC_AUTH_TOKEN", "env:ANTHROPIC_AUTH_TOKEN (overrides the Claude subscription login)"),
    ("ANTHROPIC_API_KEY", "env:ANTHROPIC_API_KEY (overrides the Claude subscription login)"),
    ("CLAUDE_CODE_OAUTH_TOKEN", "env:CLAUDE_CODE_OAUTH_TOKEN (subscription token)"),
)
SUBSCRIPTION_LOGIN = "claude subscription login"


class ClaudeCLIProvider(Provider):
    """The Claude Code CLI in print mode: `claude -p --output-format json`, prompt on stdin.

    Runs in `cwd` (the curator runs situated in a project's repository). The CLI picks its
    credential from the environment it is given before the subscription login, silently:
    an ANTHROPIC_API_KEY exported for other tools bills the API instead of the subscription.
    We record which one applies and log a warning when it is not the login.
    """

    name = "claude-cli"

    def __init__(
        self,
        *,
        model: str | None = None,
        executable: str = "claude",
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        system_prompt_flag: str = "--append-system-prompt",
        timeout: float = 900.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ):
        """`env`: the CLI's environment (default: this process's, read at each call).
        `system_prompt_flag`: --append-system-prompt keeps Claude Code's own prompt (the
        curator wants the agent); --system-prompt replaces it (cheaper for plain text)."""
        resolved = shutil.which(executable)
        if resolved is None:
            raise LLMNotConfigured(
                f"the claude-cli provider cannot find the `{executable}` executable: install "
                "Claude Code and log in (`claude`), or set MEMORY_PLATFORM_CLAUDE_EXECUTABLE"
            )
        self.executable = resolved
        self.model = model or "claude-cli-default"
        self._model_flag = model
        self.cwd = cwd
        self._env = env
        self.extra_args = tuple(extra_args)
        self.system_prompt_flag = system_prompt_flag
        self.timeout = timeout
        self.max_attempts = max_attempts
        self._warned: set[str] = set()

    def _environment(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    @property
    def credential_source(self) -> str:
        env = self._environment()
        for variable, label in _CLI_ENV_CREDENTIALS:
            if _env_value(env, variable):
                return label
        return SUBSCRIPTION_LOGIN

    def _warn_credential(self, source: str) -> None:
        if source == SUBSCRIPTION_LOGIN or source in self._warned:
            return
        self._warned.add(source)  # once per provider: a batch of calls is one decision
        log.warning(
            "claude CLI calls use %s, not the Claude subscription login; unset the variable "
            "in the environment given to the CLI to bill the subscription instead",
            source,
        )

    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        # The CLI takes one prompt per run (no --max-tokens either); a re-ask carries the
        # earlier answer and the error in that prompt.
        argv = [self.executable, "-p", "--output-format", "json"]
        if self._model_flag:
            argv += ["--model", self._model_flag]
        if system:
            argv += [self.system_prompt_flag, system]
        argv += list(self.extra_args)
        source = self.credential_source
        self._warn_credential(source)
        try:
            # Prompt on stdin: no argv length limit, and it stays out of `ps`.
            proc = subprocess.run(
                argv,
                input=_render_transcript(messages),
                capture_output=True,
                text=True,
                cwd=self.cwd,
                env=dict(self._environment()),
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise LLMCallFailed(f"claude-cli: no answer within {self.timeout:.0f}s") from exc
        except OSError as exc:
            raise LLMCallFailed(f"claude-cli: cannot run {self.executable}: {exc}") from exc
        data = _parse_cli_output(proc.stdout)
        if proc.returncode != 0 or data is None or data.get("is_error"):
            found = data or {}
            detail = found.get("result") or proc.stderr.strip()[-2000:] or proc.stdout[-2000:]
            subtype = found.get("subtype", "no JSON result")
            raise LLMCallFailed(
                f"claude-cli exited {proc.returncode} ({subtype}): {detail}".strip()
            )
        if data.get("subtype", "success") != "success" or not isinstance(data.get("result"), str):
            raise LLMCallFailed(f"claude-cli: unexpected result {data.get('subtype')!r}")
        usage = data.get("usage") or {}
        input_tokens = sum(
            int(usage.get(key) or 0)
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        cost = data.get("total_cost_usd")
        return Completion(
            text=data["result"],
            model=_cli_model(data) or self.model,
            input_tokens=input_tokens,
            output_tokens=int(usage.get("output_tokens") or 0),
            cost_usd=float(cost) if cost is not None else None,
        )


def _render_transcript(messages: list[Message]) -> str:
    if len(messages) == 1:
        return messages[0]["content"]
    parts = [messages[0]["content"]]
    for message in messages[1:]:
        if message["role"] == "assistant":
            parts.append(f"Your previous answer was:\n{message['content']}")
        else:
            parts.append(message["content"])
    return "\n\n---\n\n".join(parts)


def _parse_cli_output(stdout: str) -> dict | None:
    """The result object; with --verbose or a wrapper script it is the last JSON line."""
    text = stdout.strip()
    candidates = [text] + [line for line in reversed(text.splitlines()) if line.strip()]
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("type") == "result":
            return data
    return None


def _cli_model(data: dict) -> str | None:
    """The model that did the work: the CLI reports usage per model (it also calls a small
    model for housekeeping), so take the one that wrote the most."""
    per_model = data.get("modelUsage")
    if not isinstance(per_model, dict) or not per_model:
        return None
    return max(per_model, key=lambda m: (per_model[m] or {}).get("outputTokens", 0))


@dataclass(frozen=True)
class ScriptedCall:
    """What a ScriptedProvider was asked, one entry per round trip."""

    messages: list[Message]
    system: str | None
    max_tokens: int
    json_mode: bool

    @property
    def prompt(self) -> str:
        return self.messages[-1]["content"]


# An answer: text, a model (sent as its JSON), or an exception to raise from the round trip.
ScriptedAnswer = str | BaseModel | Exception
Responder = Callable[[ScriptedCall], ScriptedAnswer]


@dataclass
class ScriptedProvider(Provider):
    """Canned answers for tests and pipeline logic: a queue, or a function of the call.
    Goes through the same `complete()` (validation, re-asks, accounting) as the real ones."""

    answers: Iterable[ScriptedAnswer] | Responder = ()
    model: str = "scripted"
    name: str = "scripted"
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    cost_per_call: float | None = None
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._responder = self.answers if callable(self.answers) else None
        self._queue: deque[ScriptedAnswer] = (
            deque() if callable(self.answers) else deque(self.answers)
        )

    def add(self, *answers: ScriptedAnswer) -> None:
        self._queue.extend(answers)

    @property
    def credential_source(self) -> str:
        return "none (scripted)"

    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        call = ScriptedCall([dict(m) for m in messages], system, max_tokens, json_mode)
        self.calls.append(call)
        if self._responder is not None:
            answer = self._responder(call)
        elif self._queue:
            answer = self._queue.popleft()
        else:
            raise RuntimeError(
                f"ScriptedProvider has no answer left for call {len(self.calls)}: "
                f"{call.prompt[:200]!r}"
            )
        if isinstance(answer, Exception):
            raise answer
        text = answer.model_dump_json() if isinstance(answer, BaseModel) else answer
        prompt_chars = sum(len(m["content"]) for m in messages) + len(system or "")
        return Completion(
            text=text,
            model=self.model,
            # A rough 4 characters per token, so totals and metadata have numbers to add.
            input_tokens=-(-prompt_chars // 4),
            output_tokens=-(-len(text) // 4),
            cost_usd=self.cost_per_call,
        )


# --- choosing a provider ---------------------------------------------------------------------

NOT_CONFIGURED_HELP = (
    "Set MEMORY_PLATFORM_LLM_PROVIDER to one of: anthropic (needs ANTHROPIC_API_KEY), "
    "openai (needs OPENAI_API_KEY), openai-compatible (needs MEMORY_PLATFORM_LLM_BASE_URL, "
    "e.g. http://localhost:11434/v1 for Ollama, and MEMORY_PLATFORM_LLM_MODEL; "
    "MEMORY_PLATFORM_LLM_API_KEY if the server wants a key), or claude-cli (the logged-in "
    "`claude` executable; MEMORY_PLATFORM_CLAUDE_EXECUTABLE to point at it). "
    "MEMORY_PLATFORM_LLM_MODEL overrides the default model, MEMORY_PLATFORM_LLM_BASE_URL the "
    "endpoint."
)


@dataclass(frozen=True)
class LLMSettings:
    provider: str | None
    model: str | None
    base_url: str | None
    # MEMORY_PLATFORM_LLM_API_KEY: for openai-compatible servers only. Secrets stay out of
    # repr, so logging the settings cannot leak them.
    api_key: str | None = field(repr=False)
    claude_executable: str
    # Where vendor keys (ANTHROPIC_API_KEY, OPENAI_API_KEY) are read; the CLI's environment.
    env: Mapping[str, str] = field(repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "LLMSettings":
        env = dict(os.environ if env is None else env)
        settings = load_settings(env)
        provider = (settings.llm_provider or "").strip()
        return cls(
            provider=provider.lower() if provider else None,
            model=settings.llm_model,
            base_url=settings.llm_base_url,
            api_key=settings.secret("llm_api_key"),
            claude_executable=settings.claude_executable,
            env=env,
        )


def load_provider(settings: LLMSettings, **options) -> Provider:
    """The configured provider; LLMNotConfigured (naming the settings) when there is none.
    `options` go to the provider's constructor (max_retries, timeout, cwd, ...)."""
    name = settings.provider
    if name is None:
        raise LLMNotConfigured(f"No LLM provider is configured. {NOT_CONFIGURED_HELP}")
    if name not in PROVIDER_NAMES:
        raise LLMNotConfigured(
            f"MEMORY_PLATFORM_LLM_PROVIDER={name!r} is not a provider. {NOT_CONFIGURED_HELP}"
        )
    if name == "anthropic":
        return AnthropicProvider(
            model=settings.model or DEFAULT_MODELS["anthropic"],
            base_url=settings.base_url,
            env=settings.env,
            **options,
        )
    if name == "openai":
        api_key = _env_value(settings.env, "OPENAI_API_KEY")
        if api_key is None:
            raise LLMNotConfigured(
                f"MEMORY_PLATFORM_LLM_PROVIDER=openai needs OPENAI_API_KEY. {NOT_CONFIGURED_HELP}"
            )
        return OpenAIProvider(
            model=settings.model or DEFAULT_MODELS["openai"],
            api_key=api_key,
            credential_source="env:OPENAI_API_KEY",
            base_url=settings.base_url,
            **options,
        )
    if name == "openai-compatible":
        missing = [
            variable
            for variable, value in (
                ("MEMORY_PLATFORM_LLM_BASE_URL", settings.base_url),
                ("MEMORY_PLATFORM_LLM_MODEL", settings.model),
            )
            if value is None
        ]
        if missing:
            raise LLMNotConfigured(
                f"MEMORY_PLATFORM_LLM_PROVIDER=openai-compatible needs {' and '.join(missing)}. "
                f"{NOT_CONFIGURED_HELP}"
            )
        assert settings.base_url is not None and settings.model is not None
        # Never OPENAI_API_KEY here: that would send the OpenAI key to another host.
        return OpenAIProvider(
            name="openai-compatible",
            model=settings.model,
            api_key=settings.api_key,
            credential_source="env:MEMORY_PLATFORM_LLM_API_KEY" if settings.api_key else None,
            base_url=settings.base_url,
            max_tokens_param="max_tokens",
            **options,
        )
    return ClaudeCLIProvider(
        model=settings.model,
        executable=settings.claude_executable,
        env=settings.env,
        **options,
    )


def provider_from_env(env: Mapping[str, str] | None = None, **options) -> Provider:
    """The provider the environment configures (see NOT_CONFIGURED_HELP)."""
    return load_provider(LLMSettings.from_env(env), **options)


def llm_not_configured(env: Mapping[str, str] | None = None) -> str | None:
    """Why no provider can be built from the environment, or None when one can. For
    automation (sensors, schedules) that should skip with this message rather than launch
    runs that are bound to fail."""
    try:
        provider_from_env(env)
    except LLMNotConfigured as exc:
        return str(exc)
    return None
