"""The curator's agents: which model judges a namespace, situated in its repository."""

from pathlib import Path

from memory_platform.curator.agent import build_agent
from memory_platform.curator.config import CuratorConfig
from memory_platform.llm import Provider


class CuratorAgents:
    """Builds the agent for a namespace from the configured provider (claude-cli in the
    repository, the API tool loop, or the plain provider for a namespace with no
    repository) when a run first needs one. Tests pass one provider in (a ScriptedProvider),
    used for every namespace."""

    def __init__(self, provider: Provider | None = None):
        self._provider = provider

    def agent_for(self, repo: Path | None, config: CuratorConfig) -> Provider:
        if self._provider is not None:
            return self._provider
        return build_agent(repo, config)
