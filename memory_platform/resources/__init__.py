"""Dagster resources: the database and settings (CairnResource), the LLM, the curator's
agents and the digest webhook. Configuration comes from settings.py, read when first used."""

from memory_platform.resources.cairn import CairnResource
from memory_platform.resources.curator import CuratorAgents
from memory_platform.resources.llm import DigestNotifier, LLMFactory

__all__ = ["CairnResource", "CuratorAgents", "DigestNotifier", "LLMFactory"]
