"""The shared layer under every domain's Dagster definitions (memory_platform/defs/): the
resources (the database and settings, the LLM, the curator's agents, the digest webhook)
and, in `common`, the partitions, the LLM pool and the run tags. Configuration comes from
settings.py, read when first used."""

from memory_platform.resources.curator import CuratorAgents
from memory_platform.resources.database import DatabaseResource
from memory_platform.resources.llm import DigestNotifier, LLMFactory

__all__ = ["DatabaseResource", "CuratorAgents", "DigestNotifier", "LLMFactory"]
