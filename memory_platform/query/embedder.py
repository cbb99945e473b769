"""What an embedder is (the `Embedder` protocol and `EmbeddingError`), how a text is cut
into the spans a model reads, how many spans of one event get a vector, and the key under
which a model input's vector is reused. The providers live beside it (local_embedder.py,
openai_embedder.py); query/embeddings.py is the registry and the one import for callers."""

import hashlib
from collections.abc import Sequence
from typing import Protocol

import numpy as np

Span = tuple[int, int]


class EmbeddingError(RuntimeError):
    """An embedder could not be built or called; the message says what to do."""


class Embedder(Protocol):
    name: str  # the model name stored on every row; one name, one vector space
    dims: int

    def chunk(self, text: str) -> list[Span]:
        """Character spans covering `text`, each short enough for the model."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, same order."""
        ...


def chunk_by_chars(text: str, max_chars: int, overlap: int = 0) -> list[Span]:
    """Spans of at most `max_chars`, cut at whitespace where possible, consecutive spans
    overlapping by about `overlap` characters so a sentence on a boundary is seen whole."""
    n = len(text)
    if n == 0:
        return []
    if n <= max_chars:
        return [(0, n)]
    spans: list[Span] = []
    start = 0
    while start < n:
        end = min(n, start + max_chars)
        if end < n:
            cut = text.rfind(" ", start + max_chars // 2, end)
            cut = max(cut, text.rfind("\n", start + max_chars // 2, end))
            if cut > start:
                end = cut
        spans.append((start, end))
        if end >= n:
            break
        start = max(end - overlap, start + 1)
    return spans


def chunk_by_offsets(offsets: Sequence[Span], n_chars: int, max_tokens: int,
                     overlap_tokens: int) -> list[Span]:
    """Spans of at most `max_tokens` tokens given each token's (start, end) characters;
    consecutive windows share `overlap_tokens` tokens. Spans run between token boundaries,
    so they cover the text's characters that the tokenizer reads."""
    if not offsets:
        return [(0, n_chars)] if n_chars else []
    if len(offsets) <= max_tokens:
        return [(0, n_chars)]
    spans: list[Span] = []
    step = max(1, max_tokens - overlap_tokens)
    i = 0
    while i < len(offsets):
        window = offsets[i : i + max_tokens]
        start = 0 if i == 0 else window[0][0]
        last = i + max_tokens >= len(offsets)
        spans.append((start, n_chars if last else window[-1][1]))
        if last:
            break
        i += step
    return spans


# A 200k-character tool output would be ~200 chunks of the local model (minutes of CPU, and
# a search pool crowded by one event). Beyond this many, an event keeps its first
# MAX_CHUNKS_PER_EVENT - 1 chunks and its last one (where a log's error or a command's
# summary usually is). The full text stays searchable by keyword: the full-text index
# covers an event's first 200k characters.
MAX_CHUNKS_PER_EVENT = 16


def cap_chunks(spans: Sequence[Span], max_chunks: int | None = None
               ) -> list[tuple[int, Span]]:
    """(chunk number, span) of the chunks that get a vector: all of them up to
    `max_chunks`, else the first `max_chunks - 1` and the last. Chunk numbers are the
    positions in the uncapped list, so a stored row still says which part of the text it
    is. `max_chunks` defaults to MAX_CHUNKS_PER_EVENT."""
    numbered = list(enumerate(spans))
    max_chunks = MAX_CHUNKS_PER_EVENT if max_chunks is None else max_chunks
    if max_chunks < 1 or len(numbered) <= max_chunks:
        return numbered
    return numbered[: max_chunks - 1] + numbered[-1:]


def input_hash(model: str, text: str) -> str:
    """Key for reusing a vector: same model, same exact input."""
    digest = hashlib.sha256(model.encode())
    digest.update(b"\x1f")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]
