"""The ONNX graph written from the safetensors without torch (query/onnx_model.py): valid
ONNX by onnx's own checker, the numpy model's vectors in float32 (cosine >= 0.9999), the
int8 file built with torch unimportable, and the local embedder's bulk path (float32 under
onnxruntime) with its numpy fallback."""

import logging
import subprocess
import sys
import textwrap

import numpy as np
import onnx
import pytest

from memory_platform.query import local_embedder, onnx_model, quantized
from memory_platform.query.embeddings import LocalEmbedder, get_embedder
from memory_platform.query.minilm import MiniLM, model_dir

TEXTS = ["hello world", "yes", "Why did we drop SQLite for PostgreSQL in the ingest path?",
         "Ünïcödé café naïve — 日本語のテスト, emoji 🎉",
         "The deploy failed because the migration locked the events table. " * 40] + [
    f"turn {i}: we talked about the cache and the index " * (i % 9) for i in range(60)]


@pytest.fixture(scope="module")
def numpy_model() -> MiniLM:
    return MiniLM(workers=2)


def test_the_graph_is_valid_onnx_and_gives_the_numpy_models_vectors(numpy_model):
    graph = onnx_model.fp32_model(model_dir())
    onnx.checker.check_model(onnx.load_from_string(graph))
    engine = quantized.exact_engine(numpy_model)
    got, exact = engine.embed(TEXTS), numpy_model.embed(TEXTS)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert (got * exact).sum(1).min() >= 0.9999
    assert len(onnx_model.batches(numpy_model.token_ids(TEXTS))) > 1, "several batches"
    assert np.allclose(engine.embed(TEXTS[2:3])[0], got[2], atol=1e-5), "batch-independent"
    assert engine.embed([]).shape == (0, 384)


def test_the_int8_file_is_built_without_torch(tmp_path):
    """torch, transformers and sentence-transformers unimportable: the int8 file is still
    built (it used to be exported by torch), and the float32 engine needs not even onnx."""
    script = textwrap.dedent(f"""
        import sys
        for name in ("torch", "transformers", "sentence_transformers"):
            sys.modules[name] = None  # any import of them fails
        from pathlib import Path
        from memory_platform.query import quantized
        from memory_platform.query.minilm import MiniLM
        model = MiniLM(workers=1)
        quantized.exact_engine(model)
        assert "onnx" not in sys.modules, "the float32 model is written without onnx"
        path, _ = quantized.model_file(model, Path({str(tmp_path)!r}))
        print(path.name, quantized.builds)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    name, builds = done.stdout.split()
    assert builds == "1" and (tmp_path / name).stat().st_size > 10_000_000


def test_many_texts_go_through_onnxruntime_and_a_few_through_numpy(monkeypatch):
    local = get_embedder("local")
    assert isinstance(local, LocalEmbedder)
    engine, runtime = local.bulk_engine()
    assert runtime == "onnxruntime-fp32"
    calls = []
    monkeypatch.setattr(engine, "embed", lambda texts: calls.append(len(texts)) or
                        np.zeros((len(texts), 384), np.float32))
    local.embed(TEXTS[:3])
    local.embed(TEXTS[:local_embedder.BULK_TEXTS])
    assert calls == [local_embedder.BULK_TEXTS]


def test_without_onnxruntime_bulk_vectors_come_from_numpy_with_a_reason(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    embedder = LocalEmbedder()
    with caplog.at_level(logging.WARNING):
        engine, runtime = embedder.bulk_engine()
        assert embedder.bulk_engine() == (engine, runtime)
    assert runtime == "numpy" and engine is embedder.model
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "onnxruntime is not installed" in warnings[0]
    texts = TEXTS[:local_embedder.BULK_TEXTS]
    assert (embedder.embed(texts) * embedder.model.embed(texts)).sum(1).min() > 0.9999
