"""The `openai` embedder: text-embedding-3-small (1536 dimensions) through the openai SDK,
batched, with the SDK's retries plus our own backoff on rate limits. `OPENAI_BASE_URL`
points it at any compatible server."""

import os
import time
from collections.abc import Callable, Sequence

import numpy as np

from memory_platform.query.embedder import EmbeddingError, Span, chunk_by_chars


class OpenAIEmbedder:
    """text-embedding-3-small through the openai SDK (any compatible server via base_url)."""

    dims = 1536
    # 8,191 tokens per input; code and JSON run near 2-3 characters a token, so 12k
    # characters keeps a chunk under the limit without a tokenizer dependency.
    max_chars = 12_000
    overlap_chars = 400
    batch_size = 256  # inputs per request (the API takes up to 2,048)
    max_batch_chars = 400_000  # and keeps a request's tokens well under its 300k cap
    rate_limit_retries = 6

    def __init__(self, model: str = "text-embedding-3-small", *, api_key: str | None = None,
                 base_url: str | None = None, max_retries: int = 3,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        import openai

        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise EmbeddingError(
                "the openai embedder needs OPENAI_API_KEY (or set MEMORY_PLATFORM_EMBEDDER=local)"
            )
        self.name = model
        # The SDK retries 429/5xx itself with backoff (honouring retry-after); ours adds a
        # longer patience for sustained rate limiting during a big backfill.
        self._client = openai.OpenAI(api_key=key, base_url=base_url
                                     or os.environ.get("OPENAI_BASE_URL"),
                                     max_retries=max_retries)
        self._sleep = sleep
        self.requests = 0
        self.rate_limited = 0

    def chunk(self, text: str) -> list[Span]:
        return chunk_by_chars(text, self.max_chars, self.overlap_chars)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for start, end in self._batches(texts):
            out[start:end] = self._embed_batch(list(texts[start:end]))
        return out

    def _batches(self, texts: Sequence[str]) -> list[Span]:
        batches: list[Span] = []
        start, chars = 0, 0
        for i, text in enumerate(texts):
            if i > start and (i - start >= self.batch_size
                              or chars + len(text) > self.max_batch_chars):
                batches.append((start, i))
                start, chars = i, 0
            chars += len(text)
        if start < len(texts):
            batches.append((start, len(texts)))
        return batches

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        import openai

        delay = 1.0
        for attempt in range(self.rate_limit_retries + 1):
            try:
                self.requests += 1
                response = self._client.embeddings.create(
                    model=self.name, input=texts, encoding_format="float")
                break
            except openai.RateLimitError:
                self.rate_limited += 1
                if attempt == self.rate_limit_retries:
                    raise
                self._sleep(delay)
                delay = min(delay * 2, 60.0)
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbeddingError(f"{self.name}: asked for {len(texts)} vectors, got {len(data)}")
        vectors = np.asarray([d.embedding for d in data], dtype=np.float32)
        if vectors.shape[1] != self.dims:
            raise EmbeddingError(f"{self.name}: expected {self.dims} dimensions, "
                                 f"got {vectors.shape[1]}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)
