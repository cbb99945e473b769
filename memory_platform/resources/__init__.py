"""Dagster resources: the database and settings (CairnResource), the LLM and the digest
webhook. Configuration comes from settings.py, read when first used."""

from memory_platform.resources.cairn import CairnResource
from memory_platform.resources.llm import DigestNotifier, LLMFactory

__all__ = ["CairnResource", "DigestNotifier", "LLMFactory"]
