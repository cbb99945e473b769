from memory_platform.resources.cairn import CairnResource
from memory_platform.resources.llm import DigestNotifier, LLMFactory

__all__ = ["CairnResource", "DigestNotifier", "LLMFactory"]
