"""Retrieval experiments on LoCoMo (issue 23): the product's search run once per store
layout and vector space, its top 50 cached on disk, and second-stage variants (late
interaction, neighbour turns, time-aware queries, ...) scored over those lists in seconds.

`python -m memory_platform.bench.retrieval_variants` prints every variant's turn-evidence
recall (original gold, categories 1-4, 1,536 questions) and writes JSON. Research only:
what wins is implemented in query/ and measured again through `bench search`.
"""

import hashlib
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from memory_platform.bench import retrieval_corpus as rc
from memory_platform.bench.locomo import load_locomo
from memory_platform.bench.token_cache import CachedModel
from memory_platform.query import search as service

KS = (5, 10, 25, 50)
CATS = (1, 2, 3, 4)
POOL_K = 50
# query/search.py as it was before issue 23's second stage: for the cached baselines
BEFORE = {"CONVERSATION_RULES": False, "TIME_RULE": False, "COLLAPSE_DUPLICATES": False,
          "KEYWORD_QUERY_SCALE": 0.0, "PHRASE_MIN_WORDS": 10**6}


@dataclass
class Question:
    sample: str
    index: int
    text: str
    gold: list[str]
    category: int


def questions() -> list[Question]:
    return [Question(s["sample_id"], i, qa["question"], qa["gold"], qa["category"])
            for s in load_locomo() for i, qa in enumerate(s["qa"]) if qa["category"] in CATS]


class QueryModel:
    """The plain model's query vectors (cached), under the searched space's name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cached = CachedModel(rc.shelf(), "query")
        self.dims = self.cached.dims

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.cached.embed(texts)


def _knob_key(knobs: dict) -> str:
    return hashlib.sha256(json.dumps(knobs, sort_keys=True).encode()).hexdigest()[:10]


def run_search(layout: str, model: str, knobs: dict | None = None,
               qs: list[Question] | None = None) -> dict[tuple[str, int], list[dict]]:
    """(sample, question index) -> the product's top POOL_K hits, each {id, score, cos,
    kw, dense}, with module constants of query/search.py set from `knobs` meanwhile."""
    knobs = knobs or {}
    qs = qs or questions()
    path = rc.cache_dir() / "runs" / f"{layout}-{model}-{_knob_key(knobs)}.json"
    if path.exists():
        raw = json.loads(path.read_text())
        return {(s, int(i)): hits for s, i, hits in raw}
    by_label = {s.label: s for s in rc.stores(layout)}
    embedder = QueryModel(model)
    from memory_platform.query import rerank

    def owner(name: str):
        return (rerank, name[7:]) if name.startswith("rerank.") else (service, name)

    saved = {k: getattr(*owner(k)) for k in knobs}
    out = {}
    try:
        for k, v in knobs.items():
            setattr(*owner(k), v)
        for q in qs:
            store = by_label[q.sample]
            filters = service.SearchFilters(conversation_id=store.conversation_id)
            hits = service.search(store.db, q.text, k=POOL_K, filters=filters,
                                  embedder=embedder)
            out[(q.sample, q.index)] = [
                {"id": h.event_id, "score": h.score,
                 "cos": None if h.distance is None else 1 - h.distance,
                 "kw": h.keyword_rank, "dense": h.dense_rank} for h in hits]
    finally:
        for k, v in saved.items():
            setattr(*owner(k), v)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([[s, i, hits] for (s, i), hits in out.items()]))
    return out


def recall(ranked: dict[tuple[str, int], list[str]], qs: list[Question]) -> dict:
    """Turn-evidence recall@k (%) over `qs`, and @10 per category."""
    def one(q: Question, k: int) -> float:
        if not q.gold:
            return 1.0
        top = set(ranked[(q.sample, q.index)][:k])
        return sum(g in top for g in q.gold) / len(q.gold)

    out = {f"@{k}": round(100 * statistics.fmean(one(q, k) for q in qs), 1) for k in KS}
    for c in CATS:
        sub = [q for q in qs if q.category == c]
        out[f"cat{c}@10"] = round(100 * statistics.fmean(one(q, 10) for q in sub), 1)
    return out


def as_dia(stores: dict[str, rc.Store], ranked_ids: dict) -> dict:
    return {key: [stores[key[0]].dia_of[i] for i in ids] for key, ids in ranked_ids.items()}


# --- late interaction ------------------------------------------------------------------


def _unit(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


class TokenVectors:
    """Per-token vectors of queries and of events' stored inputs, from the cache."""

    def __init__(self, model: str, stores: dict[str, rc.Store], which: str = "turn") -> None:
        self.model = model
        self.which = which
        self.query_model = CachedModel(rc.shelf(), "query")
        self.hashes = {s.label: rc.content_hashes(s, model) for s in stores.values()}
        self.stores = stores
        self._docs: dict[tuple[str, int], np.ndarray] = {}

    def query(self, text: str, specials: bool = False) -> np.ndarray:
        tokens, _ = self.query_model.tokens(text)
        return _unit(tokens if specials else tokens[1:-1])

    def doc(self, label: str, event_id: int) -> np.ndarray:
        key = (label, event_id)
        if key not in self._docs:
            h = self.hashes[label].get(event_id)
            if not h:
                self._docs[key] = np.zeros((1, 384), np.float32)
            else:
                _, tokens, ends = rc.shelf().get(h[0])
                keep = ends > 0  # not [CLS]/[SEP]
                if self.which == "turn":
                    own = len(self.stores[label].text[event_id])
                    keep &= ends <= own
                self._docs[key] = _unit(tokens[keep]) if keep.any() else np.zeros(
                    (1, 384), np.float32)
        return self._docs[key]

    def maxsim(self, q: np.ndarray, label: str, ids: list[int]) -> np.ndarray:
        return np.array([float((q @ self.doc(label, i).T).max(1).mean()) for i in ids])


Rerank = Callable[[Question, list[dict]], list[int]]


def evaluate(layout: str, model: str, rerank: Rerank | None = None,
             knobs: dict | None = None) -> dict:
    qs = questions()
    stores = {s.label: s for s in rc.stores(layout)}
    runs = run_search(layout, model, knobs, qs)
    ranked = {}
    for q in qs:
        hits = runs[(q.sample, q.index)]
        ranked[(q.sample, q.index)] = rerank(q, hits) if rerank else [h["id"] for h in hits]
    return recall(as_dia(stores, ranked), qs)


# --- second-stage variants ----------------------------------------------------------


def kw_part(hit: dict) -> float:
    """The keyword share of a weighted-fusion score (score - DENSE_WEIGHT * cosine)."""
    return hit["score"] - service.DENSE_WEIGHT * (hit["cos"] or 0.0)


def maxsim_rerank(tv: TokenVectors, beta: float, mode: str = "add", top: int = POOL_K,
                  specials: bool = False) -> Rerank:
    """Late interaction over the fused pool's first `top`: `add` = fused + beta * MaxSim;
    `swap` = the cosine in the fusion replaced by (1 - beta) cos + beta MaxSim."""
    def rerank(q: Question, hits: list[dict]) -> list[int]:
        head, tail = hits[:top], hits[top:]
        ids = [h["id"] for h in head]
        if not ids:
            return []
        ms = tv.maxsim(tv.query(q.text, specials), q.sample, ids)
        if mode == "add":
            scores = [h["score"] + beta * m for h, m in zip(head, ms, strict=True)]
        else:
            scores = [kw_part(h) + service.DENSE_WEIGHT * ((1 - beta) * (h["cos"] or 0.0)
                                                           + beta * m)
                      for h, m in zip(head, ms, strict=True)]
        order = sorted(range(len(ids)), key=lambda j: -scores[j])
        return [ids[j] for j in order] + [h["id"] for h in tail]
    return rerank


def neighbour_rerank(stores: dict[str, rc.Store], alpha: float, top: int = 10,
                     span: int = 1) -> Rerank:
    """Each of the first `top` hits brings its conversation neighbours (+-span turns) in at
    alpha x its score, unless they already score more."""
    def rerank(q: Question, hits: list[dict]) -> list[int]:
        store = stores[q.sample]
        by_pos = {p: i for i, p in store.position.items()}
        scores = {h["id"]: h["score"] for h in hits}
        for h in hits[:top]:
            p = store.position[h["id"]]
            for d in range(-span, span + 1):
                n = by_pos.get(p + d)
                if n is not None and d:
                    scores[n] = max(scores.get(n, -1.0), alpha * h["score"])
        return sorted(scores, key=lambda i: -scores[i])
    return rerank


def main() -> None:
    began = time.perf_counter()
    for layout in ("inproc", "mcp"):
        print(layout, "ctx2 baseline", evaluate(layout, rc.CTX2),
              f"{time.perf_counter() - began:.0f}s", flush=True)


if __name__ == "__main__":
    main()


def neighbour_dir_rerank(stores: dict[str, rc.Store], alpha: float, top: int,
                         before: int, after: int) -> Rerank:
    """As neighbour_rerank, with `before` earlier and `after` later turns."""
    def rerank(q: Question, hits: list[dict]) -> list[int]:
        store = stores[q.sample]
        by_pos = {p: i for i, p in store.position.items()}
        scores = {h["id"]: h["score"] for h in hits}
        for h in hits[:top]:
            p = store.position[h["id"]]
            for d in [*range(-before, 0), *range(1, after + 1)]:
                n = by_pos.get(p + d)
                if n is not None:
                    scores[n] = max(scores.get(n, -1.0), alpha * h["score"])
        return sorted(scores, key=lambda i: -scores[i])
    return rerank


def time_rerank(stores: dict[str, rc.Store], tau: float, slack_days: int = 0,
                then: Rerank | None = None) -> Rerank:
    """+tau for hits inside a time window the question names (query/timeframe.py), the
    window stretched `slack_days` past its end (people tell of things after they happen)."""
    from datetime import date, timedelta

    from memory_platform.query.timeframe import Window, windows

    def rerank(q: Question, hits: list[dict]) -> list[int]:
        store = stores[q.sample]
        found = [Window(w.start, w.end + timedelta(days=slack_days), w.any_year)
                 for w in windows(q.text, today=date(2024, 1, 1))]
        if found:
            hits = [{**h, "score": h["score"] + tau * any(
                w.holds(store.occurred[h["id"]]) for w in found)} for h in hits]
            hits.sort(key=lambda h: -h["score"])
        return then(q, hits) if then else [h["id"] for h in hits]
    return rerank


class DocVectors:
    """Pooled vectors of events (every chunk) and of queries, from the cache."""

    def __init__(self, model: str, stores: dict[str, rc.Store]) -> None:
        self.hashes = {s.label: rc.content_hashes(s, model) for s in stores.values()}
        self.query_model = CachedModel(rc.shelf(), "query")

    def query(self, text: str) -> np.ndarray:
        return self.query_model.embed([text])[0]

    def chunks(self, label: str, event_id: int) -> np.ndarray:
        hs = self.hashes[label].get(event_id) or []
        if not hs:
            return np.zeros((1, 384), np.float32)
        return np.stack([rc.shelf().get(h)[0] for h in hs])

    def cos(self, v: np.ndarray, label: str, ids: list[int]) -> np.ndarray:
        return np.array([float((self.chunks(label, i) @ v).max()) for i in ids])


def prf_rerank(dv: DocVectors, beta: float, m: int = 3, weight: float | None = None,
               then: Rerank | None = None) -> Rerank:
    """Pseudo-relevance feedback on the dense side (Rocchio, no LLM): the query vector
    moved towards the mean of the first `m` hits' vectors, the pool's cosines recomputed
    and fused again with the same keyword share."""
    w = service.DENSE_WEIGHT if weight is None else weight

    def rerank(q: Question, hits: list[dict]) -> list[int]:
        ids = [h["id"] for h in hits]
        if not ids:
            return []
        v = dv.query(q.text)
        centroid = np.mean([dv.chunks(q.sample, i).mean(0) for i in ids[:m]], axis=0)
        v2 = v + beta * centroid
        v2 /= np.linalg.norm(v2)
        cos2 = dv.cos(v2, q.sample, ids)
        new = [{**h, "score": kw_part(h) * (1 - w) / (1 - service.DENSE_WEIGHT) + w * c}
               for h, c in zip(hits, cos2, strict=True)]
        new.sort(key=lambda h: -h["score"])
        return then(q, new) if then else [h["id"] for h in new]
    return rerank


def zscore_rerank(lam: float, then: Rerank | None = None) -> Rerank:
    """Fusion of z-scored cosine and keyword share within the pool."""
    def rerank(q: Question, hits: list[dict]) -> list[int]:
        if not hits:
            return []
        cos = np.array([h["cos"] or 0.0 for h in hits])
        kw = np.array([kw_part(h) for h in hits])
        z = (cos - cos.mean()) / (cos.std() + 1e-9) + lam * (kw - kw.mean()) / (kw.std() + 1e-9)
        new = [{**h, "score": float(s)} for h, s in zip(hits, z, strict=True)]
        new.sort(key=lambda h: -h["score"])
        return then(q, new) if then else [h["id"] for h in new]
    return rerank
