"""A fast, deterministic stand-in for the sentence model in recall's tests: a bag of words
hashed into 384 dimensions. Two texts sharing most words are close (cosine = shared /
total for texts without repeated words), which is what lint's subject rule and the pack's
relevance need to be exercised, without loading torch."""

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from memory_platform.query.embeddings import chunk_by_chars


class WordsEmbedder:
    name = "words-384"
    dims = 384

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return chunk_by_chars(text, 2000)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in set(re.findall(r"[a-z0-9]+", text.lower())):
                slot = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
                out[i, slot % self.dims] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out


WORDS = WordsEmbedder()
