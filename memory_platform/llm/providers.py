"""Choosing a provider from the settings: `provider_from_env()` builds the configured one, or
raises LLMNotConfigured naming what to set. The providers themselves live in vendors.py
(Anthropic, OpenAI, OpenAI-compatible), claude_cli.py and scripted.py (tests)."""

import logging
import os
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from memory_platform.llm.base import LLMNotConfigured, Provider
from memory_platform.llm.claude_cli import ClaudeCLIProvider
from memory_platform.llm.scripted import ScriptedCall, ScriptedProvider
from memory_platform.llm.vendors import (
    DEFAULT_MODELS,
    AnthropicProvider,
    OpenAIProvider,
    env_value,
)
from memory_platform.settings import load_settings

log = logging.getLogger(__name__)
_announced: set[str] = set()  # the detected executables already announced in this process
_announce_lock = threading.Lock()

PROVIDER_NAMES = ("anthropic", "openai", "openai-compatible", "claude-cli")
__all__ = ["DEFAULT_MODELS", "PROVIDER_NAMES", "AnthropicProvider", "ClaudeCLIProvider",
           "OpenAIProvider", "ScriptedCall", "ScriptedProvider", "LLMSettings",
           "load_provider", "provider_from_env", "llm_not_configured"]


NOT_CONFIGURED_HELP = (
    "Set MEMORY_PLATFORM_LLM_PROVIDER to one of: anthropic (needs ANTHROPIC_API_KEY), "
    "openai (needs OPENAI_API_KEY), openai-compatible (needs MEMORY_PLATFORM_LLM_BASE_URL, "
    "e.g. http://localhost:11434/v1 for Ollama, and MEMORY_PLATFORM_LLM_MODEL; "
    "MEMORY_PLATFORM_LLM_API_KEY if the server wants a key), or claude-cli (the logged-in "
    "`claude` executable; MEMORY_PLATFORM_CLAUDE_EXECUTABLE to point at it). "
    "With none set and `claude` on PATH, claude-cli is used. "
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
    # No provider set and `claude` on PATH: claude-cli was chosen (issue 22), announced once.
    detected: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "LLMSettings":
        env = dict(os.environ if env is None else env)
        settings = load_settings(env)
        provider = (settings.llm_provider or "").strip()
        detected = not provider and _which(settings.claude_executable, env) is not None
        return cls(
            provider=provider.lower() if provider else ("claude-cli" if detected else None),
            detected=detected,
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
        api_key = env_value(settings.env, "OPENAI_API_KEY")
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
    provider = ClaudeCLIProvider(
        model=settings.model,
        executable=settings.claude_executable,
        env=settings.env,
        **options,
    )
    if settings.detected:
        announce_detected(provider)
    return provider


def _which(executable: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(executable, path=env.get("PATH", os.defpath))


def announce_detected(provider: ClaudeCLIProvider) -> None:
    """Say once per process that claude-cli was chosen because no provider is set, and
    with which credential its calls are billed."""
    with _announce_lock:
        if provider.executable in _announced:
            return
        _announced.add(provider.executable)
    log.warning("no LLM provider is set (MEMORY_PLATFORM_LLM_PROVIDER): using the claude-cli "
                "provider, %s, with the credential %s", provider.executable,
                provider.credential_source)


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
