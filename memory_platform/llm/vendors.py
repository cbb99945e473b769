"""The vendor API providers: Anthropic, and OpenAI (also any OpenAI-compatible server by base
URL). Vendor SDKs are imported when a provider is built, not when this module is: loading
the Dagster definitions must not pay for (or fail on) an SDK nobody configured."""

import logging
import os
from collections.abc import Mapping

from memory_platform.llm.base import (
    DEFAULT_MAX_ATTEMPTS,
    Completion,
    LLMCallFailed,
    LLMNotConfigured,
    Message,
    Provider,
)

log = logging.getLogger(__name__)

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


def env_value(env: Mapping[str, str], name: str) -> str | None:
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
        elif api_key := env_value(env, "ANTHROPIC_API_KEY"):
            self._credential_source = "env:ANTHROPIC_API_KEY"
        elif auth_token := env_value(env, "ANTHROPIC_AUTH_TOKEN"):
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
