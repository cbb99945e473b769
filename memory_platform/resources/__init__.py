from memory_platform.resources.cairn import CairnResource

__all__ = ["CairnResource"]
