"""Memories without a caller's scope: writing one with its vector, listing a namespace in
one snapshot, embedding what has no vector, fused semantic + verbatim search over given
namespaces. The vault's own building blocks: faces never call this module, they call
vault/service.py, which checks the scope and the write rules and then comes here.

Vectors of memories come from the vault embedder, named by MEMORY_PLATFORM_VAULT_EMBEDDER
(default `local`, the plain all-MiniLM-L6-v2). It is chosen separately from the events'
embedder on purpose: events may use a context-carrying variant, while a memory is a
self-contained sentence, and the dedup gate must compare memories in one vector space.
"""

import time
from collections.abc import Iterator, Sequence

import numpy as np

from memory_platform.query.embeddings import PROVIDERS, Embedder, get_embedder
from memory_platform.settings import load_settings
from memory_platform.store import Database, memory_embeddings, memory_search
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import recall as recall_store
from memory_platform.vault import topics

PAGE_SIZE = 500
EMBED_PAGE = 256  # memories embedded and committed per transaction


def vault_embedder() -> Embedder:
    """The embedder of memories; always named explicitly, so a different default for events
    never changes the vault's vector space."""
    return get_embedder(load_settings().vault_embedder)


class VaultModel:
    """The vault embedder's model name and dimension, known without loading the model (the
    local model takes seconds to load): a plain approval copies the shadow entry's vector
    inside PostgreSQL and never embeds anything. The model loads only to embed an edit."""

    def __init__(self, embedder: Embedder | None = None):
        self._embedder = embedder
        if embedder is not None:
            self.name, self.dims = embedder.name, embedder.dims
            return
        factory = PROVIDERS.get(load_settings().vault_embedder)
        name, dims = getattr(factory, "name", None), getattr(factory, "dims", None)
        if isinstance(name, str) and isinstance(dims, int):
            self.name, self.dims = name, dims
        else:  # a provider that only knows its name once built
            self._embedder = vault_embedder()
            self.name, self.dims = self._embedder.name, self._embedder.dims

    def embed(self, text: str):
        if self._embedder is None:
            self._embedder = vault_embedder()
        return self._embedder.embed([memory_store.normalize_text(text)])[0]


def _require_namespace(conn, name: str) -> dict:
    namespace_store.parse_namespace(name)
    found = namespace_store.get_namespace(conn, name)
    if found is None:
        # A typo must not read as an empty vault.
        known = [n["name"] for n in namespace_store.list_namespaces(conn)]
        raise ValueError(f"no vault namespace {name!r}; known: "
                         f"{', '.join(known) if known else 'none yet'}")
    return found


def label(conn, namespace: str, text: str, category: str | None,
          topic: str | None) -> topics.Classification:
    """The category and topic a write gets: the writer's, else the rules' (vault/topics.py)
    with the namespace's (or its primary's) existing topics to match."""
    kind, primary = namespace_store.parse_namespace(namespace)
    known = recall_store.namespace_topics(conn, namespace if kind == "primary" else primary)
    return topics.classify(text, category=category, topic=topic, known_topics=known)


def add(
    db: Database,
    namespace: str,
    text: str,
    category: str | None,
    actor: str,
    source: str = "hand",
    *,
    embedder: Embedder | None = None,
    topic: str | None = None,
) -> dict:
    """Add a memory by hand (or import) and embed it; returns the stored row plus `created`.
    Adding the same text (up to whitespace) to a namespace again returns the active memory
    already there with created=False: a repeated command adds nothing twice. Without a
    category or topic, the rules of vault/topics.py choose them."""
    if not text or not text.strip():
        raise ValueError("a memory needs some text")
    namespace_store.parse_namespace(namespace)
    embedder = embedder or vault_embedder()
    # Embed before writing: a model that cannot load leaves nothing half-written.
    vector = embedder.embed([memory_store.normalize_text(text)])[0]
    with db.connect() as conn:
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        with conn.transaction():
            existing = memory_store.find_by_hash(conn, namespace, text)
            if existing is not None:
                memory_id, created = existing, False
            else:
                labelled = label(conn, namespace, text, category, topic)
                memory_id, created = memory_store.add_memory(
                    conn, namespace=namespace, text=text, category=labelled.category,
                    source=source, actor=actor, topic=labelled.topic)
                memory_embeddings.write_memory_embeddings(conn, embedder.name, embedder.dims,
                                                          [(memory_id, vector)])
        row = memory_store.get_memory(conn, memory_id)
    assert row is not None
    return {**row, "created": created}


def iter_memories(
    db: Database, namespace: str, *, page_size: int = PAGE_SIZE, status: str | None = "active"
) -> Iterator[dict]:
    """Every memory of a namespace, by id, one keyset page at a time."""
    after = 0
    with db.connect() as conn:
        _require_namespace(conn, namespace)
        while True:
            page = memory_store.list_memories(conn, namespace, after_id=after, limit=page_size,
                                              status=status)
            yield from page
            if len(page) < page_size:
                return
            after = page[-1]["id"]


def list_all(
    db: Database, namespace: str, page_size: int = PAGE_SIZE, *, status: str | None = "active"
) -> tuple[list[dict], int]:
    """(every memory of the namespace, total). No cap: pages until done, and the count and
    the pages are read in one snapshot, so the list always has `total` rows (asserted)."""
    if page_size <= 0:
        raise ValueError("page_size must be positive")
    rows: list[dict] = []
    with db.connect() as conn:
        with conn.transaction():
            # One snapshot for the count and every page: a concurrent add can't make the
            # printed total disagree with the rows listed.
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            _require_namespace(conn, namespace)
            total = memory_store.count_memories(conn, namespace, status=status)
            after = 0
            while True:
                page = memory_store.list_memories(conn, namespace, after_id=after, limit=page_size,
                                                  status=status)
                rows.extend(page)
                if len(page) < page_size:
                    break
                after = page[-1]["id"]
    if len(rows) != total:
        raise RuntimeError(f"listed {len(rows)} memories of {namespace!r}, counted {total}")
    return rows, total


def embed_missing_memories(db: Database, embedder: Embedder | None = None) -> dict:
    """Embed every memory with no vector for the vault embedder (memories staged or imported
    by a path that did not embed them). Commits per page; re-running continues."""
    began = time.perf_counter()
    embedder = embedder or vault_embedder()
    embedded = 0
    with db.connect() as conn:
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        after = 0
        while True:
            page = memory_embeddings.memories_to_embed(conn, embedder.name, after_id=after,
                                                       limit=EMBED_PAGE)
            if not page:
                break
            after = page[-1][0]
            vectors = embedder.embed([memory_store.normalize_text(text) for _, text in page])
            embedded += memory_embeddings.write_memory_embeddings(
                conn, embedder.name, embedder.dims,
                [(memory_id, v) for (memory_id, _), v in zip(page, vectors, strict=True)])
    return {"embedded": embedded, "model": embedder.name,
            "seconds": round(time.perf_counter() - began, 3)}


def search_namespaces(db: Database, embedder: Embedder, vector: np.ndarray, query: str,
                      namespaces: Sequence[str], k: int, *,
                      include_superseded: bool = False) -> list[dict]:
    """The fused semantic + verbatim hits of `query` (already embedded as `vector`) among
    `namespaces`: what `search` and the scoped surfaces (vault.service) both return."""
    if not namespaces:
        return []
    # A memory written by a path that did not embed it must still be found by meaning.
    embed_missing_memories(db, embedder)
    current = not include_superseded
    with db.connect() as conn:
        semantic = memory_search.nearest_memories(conn, embedder.name, embedder.dims, vector,
                                                  namespaces, k=k, reviews=("pending",),
                                                  current_only=current)
        keyword = memory_search.keyword_matches(conn, query.strip(), namespaces, limit=k,
                                                current_only=current)
        sims = memory_search.similarities(conn, embedder.name, embedder.dims, vector,
                                          [h["id"] for h in keyword])
    return _fuse(semantic, keyword, sims, k)


def _fuse(semantic: Sequence[dict], keyword: Sequence[dict], sims: dict[int, float],
          k: int) -> list[dict]:
    by_id: dict[int, dict] = {}
    for hit in keyword:
        by_id[hit["id"]] = {**hit, "similarity": sims.get(hit["id"]), "match": "keyword"}
    for hit in semantic:
        if hit["id"] in by_id:
            by_id[hit["id"]]["match"] = "both"
        else:
            by_id[hit["id"]] = {**hit, "similarity": float(hit["similarity"]),
                                "match": "semantic"}
    ranked = sorted(by_id.values(), key=lambda h: (
        h["match"] == "semantic",  # verbatim matches first
        -(h["similarity"] if h["similarity"] is not None else -np.inf), h["id"]))
    return ranked[:k]
