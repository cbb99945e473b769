"""A disk cache of all-MiniLM-L6-v2's outputs for retrieval experiments: each model input's
pooled vector and its per-token vectors (the last layer before mean pooling, for late
interaction), keyed by the hash under which the store keeps that input's vector
(query/embedder.input_hash of the outer model's name), so a variant that re-reads the same
inputs costs no model time. Research only: the product computes vectors through
query/embeddings.py.

`CachedModel` is an Embedder (name `all-MiniLM-L6-v2`, like the plain model): wrapped in
`WithContext` it is what `local-ctx2` computes, through the real backfill. Entries are
appended in shards (`<dir>/<space>/shard-N.npz`) and loaded at start.
"""

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from memory_platform.query import minilm
from memory_platform.query.embeddings import LocalEmbedder, get_embedder

FLUSH_EVERY = 1_000


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def token_forward(model: minilm.MiniLM, ids: list[list[int]]
                  ) -> tuple[np.ndarray, list[np.ndarray]]:
    """MiniLM.forward, also returning each text's last-layer token vectors ([CLS] ...
    [SEP], unnormalised) before pooling. Same arithmetic as query/minilm.py."""
    rows, length = len(ids), max(len(x) for x in ids)
    tokens = np.zeros((rows, length), dtype=np.int64)
    mask = np.zeros((rows, length), dtype=np.float32)
    for i, x in enumerate(ids):
        tokens[i, : len(x)] = x
        mask[i, : len(x)] = 1.0
    x = model._word[tokens] + model._position[:length] + model._token_type
    x = minilm._layer_norm(x, *model._ln).reshape(rows * length, minilm.HIDDEN)
    key_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
    for (qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, up_w, up_b, down_w, down_b,
         ln2_g, ln2_b) in model._layers:
        qkv = (x @ qkv_w + qkv_b).reshape(rows, length, 3, minilm.HEADS,
                                          minilm.HIDDEN // minilm.HEADS)
        context = minilm._attention(qkv.transpose(2, 0, 3, 1, 4), key_bias)
        x = minilm._layer_norm(context @ out_w + out_b + x, ln1_g, ln1_b)
        x = minilm._layer_norm(minilm._feed_forward(x, up_w, up_b, down_w, down_b) + x,
                               ln2_g, ln2_b)
    x = x.reshape(rows, length, minilm.HIDDEN)
    summed = (x * mask[:, :, None]).sum(1)
    pooled = summed / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
    pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return pooled.astype(np.float32), [x[i, : len(ids[i])].copy() for i in range(rows)]


class Shelf:
    """hash -> (pooled vector, token vectors, token end offsets) on disk."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._index: dict[str, tuple[int, int]] = {}
        self._shards: list[dict[str, np.ndarray]] = []
        self._pending: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
        self._lock = threading.Lock()
        for path in sorted(folder.glob("shard-*.npz"), key=lambda p: int(p.stem[6:])):
            self._add_shard(dict(np.load(path)))

    def _add_shard(self, shard: dict[str, np.ndarray]) -> None:
        n = len(self._shards)
        shard["starts"] = np.concatenate([[0], np.cumsum(shard["counts"])])
        self._shards.append(shard)
        for row, key in enumerate(shard["keys"]):
            self._index[str(key)] = (n, row)

    def __contains__(self, key: str) -> bool:
        return key in self._index or any(p[0] == key for p in self._pending)

    def __len__(self) -> int:
        return len(self._index) + len(self._pending)

    def get(self, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if key not in self._index:
            self.flush()
        shard, row = self._index[key]
        s = self._shards[shard]
        a, b = s["starts"][row], s["starts"][row + 1]
        return s["pooled"][row], s["tokens"][a:b], s["ends"][a:b]

    def put(self, key: str, pooled: np.ndarray, tokens: np.ndarray, ends: np.ndarray) -> None:
        with self._lock:
            self._pending.append((key, pooled, tokens.astype(np.float16), ends))
            if len(self._pending) >= FLUSH_EVERY:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        shard = {
            "keys": np.array([p[0] for p in self._pending]),
            "pooled": np.stack([p[1] for p in self._pending]).astype(np.float32),
            "tokens": np.concatenate([p[2] for p in self._pending]),
            "ends": np.concatenate([p[3] for p in self._pending]).astype(np.int32),
            "counts": np.array([len(p[2]) for p in self._pending], dtype=np.int64),
        }
        path = self.folder / f"shard-{len(self._shards)}.npz"
        np.savez(path, **shard)
        self._pending = []
        self._add_shard(dict(np.load(path)))


class CachedModel:
    """The plain all-MiniLM-L6-v2 as an Embedder, every input's outputs cached in `shelf`
    under input_hash(`key_model`, input): pass the outer model's name (e.g.
    `all-MiniLM-L6-v2+ctx2`) so the keys equal the store's content hashes."""

    name = LocalEmbedder.name
    dims = LocalEmbedder.dims

    def __init__(self, shelf: Shelf, key_model: str, workers: int = 2) -> None:
        self.shelf = shelf
        self.key_model = key_model
        self.local: LocalEmbedder = get_embedder("local")  # type: ignore[assignment]
        self.workers = workers
        self.computed = 0

    def key(self, text: str) -> str:
        from memory_platform.query.embedder import input_hash

        return input_hash(self.key_model, text)

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return self.local.chunk(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self.shelf))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            self._compute([by_key[k] for k in missing], missing)
        return np.stack([self.shelf.get(k)[0] for k in keys]) if texts else np.zeros(
            (0, self.dims), np.float32)

    def tokens(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(token vectors as float16, each token's end offset in `text`) of an input."""
        key = self.key(text)
        if key not in self.shelf:
            self._compute([text], [key])
        _, tokens, ends = self.shelf.get(key)
        return tokens, ends

    def _compute(self, texts: list[str], keys: list[str]) -> None:
        model = self.local.model
        encodings = model._tokenizer.encode_batch(texts)
        ids = [e.ids for e in encodings]
        ends = [np.array([o[1] for o in e.offsets], dtype=np.int32) for e in encodings]

        def run(rows: list[int]) -> None:
            pooled, toks = token_forward(model, [ids[i] for i in rows])
            for j, i in enumerate(rows):
                self.shelf.put(keys[i], pooled[j], toks[j], ends[i])

        batches = minilm._batches(ids)
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(run, batches))
        self.computed += len(texts)
        self.shelf.flush()
