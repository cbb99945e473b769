"""What the embedding and search tests share: events written straight to the store, a
deterministic embedder, the real offline model (a session fixture) and the stored rows."""

import hashlib
from collections.abc import Sequence
from datetime import datetime, timezone

import numpy as np
import pytest

from memory_platform.adapters.base import Event
from memory_platform.ingest.rows import event_row
from memory_platform.query.embeddings import LocalEmbedder, chunk_by_chars, get_embedder
from memory_platform.store import Database
from memory_platform.store import events as event_store


def at(day: int, hour: int = 12, minute: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=timezone.utc)


def add_events(db: Database, source: str, items: Sequence[dict]) -> list[int]:
    """items: native_id, text, occurred_at, optional conversation, role, kind, project.
    Returns the stored ids in the items' order; statistics are refreshed (ANALYZE)."""
    rows = [
        event_row(source, Event(
            native_id=item["native_id"], conversation_id=item.get("conversation"),
            role=item.get("role", "user"), text=item["text"], raw={"t": item["text"]},
            occurred_at=item["occurred_at"], kind=item.get("kind", "message"),
            project=item.get("project"),
        ))
        for item in items
    ]
    with db.connect() as conn:
        with conn.transaction():
            event_store.write_events(conn, rows)
        conn.execute("ANALYZE events")
        found = dict(conn.execute(
            "SELECT native_id, id FROM events WHERE source = %s AND native_id = ANY(%s)",
            (source, [item["native_id"] for item in items]),
        ).fetchall())
    return [found[item["native_id"]] for item in items]


class HashEmbedder:
    """Deterministic pseudo-random unit vectors per input; records every input it embeds."""

    def __init__(self, name: str = "hash-8", dims: int = 8, max_chars: int = 40):
        self.name = name
        self.dims = dims
        self.max_chars = max_chars
        self.calls: list[str] = []

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return chunk_by_chars(text, self.max_chars, overlap=5)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.extend(texts)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dims)
            out[i] = v / np.linalg.norm(v)
        return out


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The real offline model, loaded once per test session (seconds of CPU each time)."""
    embedder = get_embedder("local")
    assert isinstance(embedder, LocalEmbedder)
    return embedder


def rows_of(db: Database, model: str) -> list[tuple]:
    with db.connect() as conn:
        return conn.execute(
            """SELECT event_id, chunk, span_start, span_end, dims, content_hash
               FROM event_embeddings WHERE model = %s ORDER BY event_id, chunk""",
            (model,),
        ).fetchall()
