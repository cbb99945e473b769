"""The LLM the dream assets call, and where their digest goes."""

import dagster as dg

from memory_platform.llm import Provider
from memory_platform.llm.providers import provider_from_env
from memory_platform.settings import load_settings


class LLMFactory:
    """Builds the configured provider (MEMORY_PLATFORM_LLM_PROVIDER, ...) on first use, so
    the definitions load on a machine with no provider and only a run that needs one stops,
    with the message naming the settings. Tests pass a provider in (a ScriptedProvider)."""

    def __init__(self, provider: Provider | None = None):
        self._provider = provider

    def provider(self) -> Provider:
        if self._provider is None:
            self._provider = provider_from_env()
        return self._provider


class DigestNotifier(dg.ConfigurableResource):
    """Where the dream digest goes besides its file and the asset metadata: a webhook that
    takes {"text": markdown} (MEMORY_PLATFORM_DIGEST_WEBHOOK when not configured here)."""

    webhook_url: str | None = None

    def url(self) -> str | None:
        return self.webhook_url or load_settings().digest_webhook
