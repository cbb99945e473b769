"""`embed_missing`: fill `event_embeddings` for one model, in the order that makes a fresh
history searchable by meaning soonest.

Order (issue 12): conversation turns (`FIRST_KINDS`) before tool calls, tool output and
meta records, and within each, newest first: right after an import the recent work is
searchable first, and keyword search covers everything from the moment it is imported.
Tool traffic is embedded second and more sparingly (MAX_CHUNKS_BY_KIND): a 40 kB file read
would be 40 model inputs, and such output is found by its exact words.
"""

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg

from memory_platform.query.embedder import (
    MAX_CHUNKS_PER_EVENT,
    Embedder,
    cap_chunks,
    input_hash,
)
from memory_platform.store import Database
from memory_platform.store import embeddings as embedding_store

Progress = Callable[[int, int], None]  # (events done, events to do)

PAGE_EVENTS = 2_000  # events read, embedded and committed per transaction
# Kinds embedded first: what people wrote and read.
FIRST_KINDS = ("message", "summary")
# Vectors per event by kind (default MAX_CHUNKS_PER_EVENT): tool calls and their output get
# their first and last chunk (the command or file, and the result or error at its end).
MAX_CHUNKS_BY_KIND = {"tool_use": 2, "tool_result": 2, "meta": 2}


@dataclass
class _Pending:
    row: embedding_store.ChunkRow
    text: str


def embed_missing(
    db: Database,
    embedder: Embedder,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    progress: Progress | None = None,
    page_events: int = PAGE_EVENTS,
) -> dict:
    """Embed every event with non-blank text (start <= occurred_at < end when given) that has
    no vectors for `embedder.name`: FIRST_KINDS newest first, then the other kinds newest
    first. A chunk whose exact input already has a vector for this model (a repeated
    message, a re-read file) reuses it instead of calling the model. Commits per page, so
    an interrupted run keeps its work and the re-run continues. A very long event gets
    vectors for at most MAX_CHUNKS_PER_EVENT chunks, tool traffic for fewer
    (MAX_CHUNKS_BY_KIND; cap_chunks keeps the first ones and the last).

    Returns counts: events (embedded now), chunks (rows written), reused (rows whose vector
    was copied), embedded (model inputs computed), blank (events skipped: no text),
    seconds, and first_kinds_seconds (when the conversation turns were all done)."""
    began = time.perf_counter()
    counts = {"events": 0, "chunks": 0, "reused": 0, "embedded": 0, "blank": 0}
    first_done = 0.0
    with db.connect() as conn:
        embedding_store.ensure_model(conn, embedder.name, embedder.dims)
        counts["blank"] = embedding_store.count_blank_events(conn, start, end)
        total = embedding_store.count_to_embed(conn, embedder.name, start=start, end=end) \
            if progress else 0
        for other_kinds in (False, True):
            before = None
            while True:
                page = embedding_store.events_to_embed(
                    conn, embedder.name, start=start, end=end, before=before,
                    limit=page_events, kinds=FIRST_KINDS, other_kinds=other_kinds,
                    context_turns=getattr(embedder, "context_turns", 0),
                    context_chars=getattr(embedder, "context_chars", 0))
                if not page:
                    break
                before = (page[-1].occurred_at, page[-1].id)
                _embed_page(conn, embedder, page, counts)
                if progress:
                    progress(counts["events"], max(total, counts["events"]))
            if not other_kinds:
                first_done = time.perf_counter() - began
    counts["seconds"] = round(time.perf_counter() - began, 3)
    counts["first_kinds_seconds"] = round(first_done, 3)
    return counts


def _embed_page(conn: psycopg.Connection, embedder: Embedder,
                page: Sequence[embedding_store.ToEmbed], counts: dict) -> None:
    pending = []
    for event in page:
        text = event.text
        cap = MAX_CHUNKS_BY_KIND.get(event.kind, MAX_CHUNKS_PER_EVENT)
        for i, (s, e) in cap_chunks(embedder.chunk(text), cap):
            model_input = f"{text[s:e]}\n\n{event.context}" if event.context else text[s:e]
            row = embedding_store.ChunkRow(event.id, i, s, e,
                                           input_hash(embedder.name, model_input))
            pending.append(_Pending(row, model_input))
    known = embedding_store.known_hashes(conn, embedder.name,
                                         sorted({p.row.content_hash for p in pending}))
    fresh: dict[str, str] = {}  # hash -> input, each computed once per page
    for p in pending:
        if p.row.content_hash not in known:
            fresh.setdefault(p.row.content_hash, p.text)
    vectors: dict[str, np.ndarray] = dict(
        zip(fresh, embedder.embed(list(fresh.values())), strict=True))
    computed, reused, written = [], [], set()
    for p in pending:
        h = p.row.content_hash
        if h in vectors and h not in written:
            computed.append((p.row, vectors[h]))
            written.add(h)
        else:
            reused.append(p.row)  # stored before, or computed earlier in this page
    with conn.transaction():
        embedding_store.write_embeddings(conn, embedder.name, embedder.dims, computed, reused)
    counts["events"] += len(page)
    counts["chunks"] += len(pending)
    counts["embedded"] += len(fresh)
    counts["reused"] += len(reused)
