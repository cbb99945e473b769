"""How much of the history a search covered by meaning, and how much by keyword only
(issue 22): right after an import the vectors are still being made, and the default search
must neither fail nor pretend it read everything by meaning.

`search_with_coverage` runs query/search.py's search and returns its hits with `searched`:
{mode (the mode asked), model, by_meaning (events with text and a vector of the model),
by_keyword_only (events with text and no vector yet: found by their words alone), complete
(every event with text has a vector)}, for the whole history (filters are not counted).
`describe` turns it into the one line the CLI prints when the search was not complete.
"""

from dataclasses import asdict, dataclass
from typing import Any

from memory_platform.query import search as service
from memory_platform.query.connections import on_connection
from memory_platform.query.embeddings import Embedder, get_embedder
from memory_platform.store import Database
from memory_platform.store import embeddings as embedding_store


@dataclass(frozen=True)
class Searched:
    mode: str
    model: str | None
    by_meaning: int
    by_keyword_only: int

    @property
    def complete(self) -> bool:
        return self.mode == "keyword" or self.by_keyword_only == 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "complete": self.complete}


def coverage(db: Database, embedder: Embedder, mode: str) -> Searched:
    """What a search in `mode` covers by meaning with `embedder`'s vectors."""
    if mode == "keyword":
        return Searched(mode, None, 0, 0)
    with_vectors, without = on_connection(
        db, lambda conn: embedding_store.vector_coverage(conn, embedder.name))
    return Searched(mode, embedder.name, with_vectors, without)


def search_with_coverage(db: Database, query: str, *, mode: service.Mode = "hybrid",
                         embedder: Embedder | None = None,
                         **options: Any) -> tuple[list[service.Hit], Searched]:
    """(hits, what was searched which way). Dense mode over no vectors raises SearchError,
    as search() does; hybrid never fails for want of vectors."""
    if mode in ("hybrid", "dense"):
        embedder = embedder or get_embedder()
    hits = service.search(db, query, mode=mode, embedder=embedder, **options)
    if embedder is None:
        return hits, Searched(mode, None, 0, 0)
    return hits, coverage(db, embedder, mode)


def describe(searched: Searched) -> str | None:
    """One line on an incomplete search, else None."""
    if searched.complete:
        return None
    total = searched.by_meaning + searched.by_keyword_only
    if searched.mode == "dense":
        return (f"searched {searched.by_meaning:,} of {total:,} events by meaning; "
                f"{searched.by_keyword_only:,} have no vector yet (`memory-platform embed`)")
    if not searched.by_meaning:
        return (f"searched by keyword only: none of {total:,} events has a vector for "
                f"{searched.model} yet (`memory-platform embed` makes them)")
    return (f"searched {searched.by_meaning:,} of {total:,} events by meaning and the other "
            f"{searched.by_keyword_only:,} by keyword only (their vectors are not made yet: "
            f"`memory-platform embed`)")
