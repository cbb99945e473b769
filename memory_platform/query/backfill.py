"""`embed_missing`: fill `event_embeddings` for one model, in the order that makes a fresh
history searchable by meaning soonest.

Order (issue 12): conversation turns (`FIRST_KINDS`) before tool calls, tool output and
meta records, and within each, newest first: right after an import the recent work is
searchable first, and keyword search covers everything from the moment it is imported.
Tool traffic is embedded last and more sparingly (MAX_CHUNKS_BY_KIND): a 40 kB file read
would be 40 model inputs, and such output is found by its exact words.

Interim vectors: a context model (`local-ctx2`) reads each turn with its two previous turns,
2-3x the tokens of the turn alone. On a backlog of at least INTERIM_MIN_TURNS turns (a
batch: a smaller one gets its real vectors in about the time the interim model takes to
load) each turn first gets the plain model's vector of the turn alone, stored under the
context model's name and marked interim (store.embeddings.INTERIM_PREFIX), so every turn is
searchable by meaning after a fraction of the work; the real vectors then replace them,
newest first.

Pages: the first holds FIRST_PAGE_EVENTS events, so the newest turns are searchable within
seconds; each next one is sized to take about PAGE_SECONDS at the rate measured so far (at
most `page_events`), so progress is reported and work committed every few seconds.

One backfill per model at a time (a PostgreSQL session lock): a second one, say `embed`
while `up` is embedding, waits for the first (reporting its progress) up to
LOCK_WAIT_SECONDS, then embeds what is left, instead of computing the same pages twice. Queries are embedded by the plain model for both, so the two mix in one index (an
interim vector is the same model reading less). A turn with no previous turns gets its real
vector at once (for it the two inputs are the same), unless the interim model only
approximates the real one: then its vector is interim too.

The interim vectors come from the embedder's `interim_embedder()` when it has one: for
`local-ctx2` the same model with int8 weights under onnxruntime (query/quantized.py, ~2x
the numpy model's speed, cosine ~0.99 to its vectors), else the numpy model itself; the
counts say which (`interim_runtime`). Real vectors, upgrades included, and queries always
come from the exact model.
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
from memory_platform.store.embeddings import INTERIM_PREFIX, Backlog

Progress = Callable[[int, int], None]  # (events done, events to do)

PAGE_EVENTS = 2_000  # at most, events read, embedded and committed per transaction
FIRST_PAGE_EVENTS = 200
PAGE_SECONDS = 4.0
MIN_PAGE_EVENTS = 50
# A backlog of at least this many conversation turns gets interim vectors first (see above).
INTERIM_MIN_TURNS = 32
LOCK_WAIT_SECONDS = 900.0
LOCK_POLL_SECONDS = 1.0
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
    no vectors for `embedder.name`: FIRST_KINDS newest first (through interim vectors on a
    big backlog, see the module docstring), then the other kinds newest first. A chunk
    whose exact input already has a vector for this model (a repeated message, a re-read
    file) reuses it instead of calling the model. Commits per page, so an interrupted run
    keeps its work and the re-run continues (interim rows are upgraded then). A very long
    event gets vectors for at most MAX_CHUNKS_PER_EVENT chunks, tool traffic for fewer
    (MAX_CHUNKS_BY_KIND; cap_chunks keeps the first ones and the last).

    `progress(done, total)` counts pages of events through every step (a turn given an
    interim vector counts again when upgraded); while another backfill of the model runs,
    its progress. Returns counts: events (given vectors now),
    interim (given interim vectors), interim_runtime (what computed them: `onnxruntime-int8`,
    `numpy`, `same model`; None without an interim step), upgraded (interim vectors
    replaced), chunks (rows written), reused (rows whose vector was copied), embedded
    (model inputs computed), blank (events skipped: no text), waited_seconds (for another
    backfill of the model), with_vectors and without_vectors (events with text, after the
    run: what a search finds by meaning, and what it cannot yet), seconds, first_page_seconds
    (when the newest page of turns was searchable by meaning) and first_kinds_seconds (when
    every conversation turn had a vector, interim or real)."""
    began = time.perf_counter()
    counts = {"events": 0, "interim": 0, "interim_runtime": None, "upgraded": 0,
              "chunks": 0, "reused": 0, "embedded": 0, "blank": 0, "waited_seconds": 0.0}
    context = getattr(embedder, "context_turns", 0) > 0
    turns = Backlog(start, end, FIRST_KINDS)
    # The real step for turns also takes turns holding only interim rows: an interrupted
    # run's are upgraded by the next.
    steps = [("real", Backlog(start, end, FIRST_KINDS, upgrade_interim=True)),
             ("real", Backlog(start, end, FIRST_KINDS, other_kinds=True))]
    everything = Backlog(start, end)
    with db.connect() as conn:
        embedding_store.ensure_model(conn, embedder.name, embedder.dims)
        counts["waited_seconds"], held = _wait_for_other_backfill(conn, embedder.name,
                                                                  everything, progress)
        try:
            first_page, first_done = _run_steps(conn, embedder, steps, turns, context, counts,
                                                progress, page_events, began)
        finally:
            if held:
                embedding_store.release_backfill_lock(conn, embedder.name)
        counts["blank"] = embedding_store.count_blank_events(conn, start, end)
        # what a search now finds: events with text and a vector, and those still without
        counts["with_vectors"] = embedding_store.count_embedded(conn, embedder.name, everything)
        counts["without_vectors"] = embedding_store.count_to_embed(conn, embedder.name,
                                                                   everything)
    counts["seconds"] = round(time.perf_counter() - began, 3)
    counts["first_page_seconds"] = round(first_page, 3)
    counts["first_kinds_seconds"] = round(first_done, 3)
    return counts


def _wait_for_other_backfill(conn: psycopg.Connection, model: str, everything: Backlog,
                             progress: Progress | None) -> tuple[float, bool]:
    """Take the model's backfill lock, waiting while another process holds it (its
    progress reported as ours) up to LOCK_WAIT_SECONDS. Returns (seconds waited, held)."""
    began = time.perf_counter()
    total = None
    while not embedding_store.try_backfill_lock(conn, model):
        if time.perf_counter() - began > LOCK_WAIT_SECONDS:
            # a stuck holder: go ahead (rows already written are left alone)
            return round(time.perf_counter() - began, 3), False
        if progress:
            left = embedding_store.count_to_embed(conn, model, everything)
            total = total if total is not None else left
            progress(max(0, total - left), max(total, 1))
        time.sleep(LOCK_POLL_SECONDS)
    return round(time.perf_counter() - began, 3), True


def _run_steps(conn: psycopg.Connection, embedder: Embedder, steps: list, turns: Backlog,
               context: bool, counts: dict, progress: Progress | None, page_events: int,
               began: float) -> tuple[float, float]:
    backlog = embedding_store.count_to_embed(conn, embedder.name, turns) if context else 0
    stand_in: Embedder | None = None  # computes the interim vectors
    if backlog >= INTERIM_MIN_TURNS:
        steps.insert(0, ("interim", turns))
        stand_in, counts["interim_runtime"] = _interim_embedder(embedder)
    total = done = 0
    first_done = first_page = 0.0
    size = min(FIRST_PAGE_EVENTS, page_events)
    for n, (step, backlog_step) in enumerate(steps):
        if progress:  # re-estimated per step: which interim rows need an upgrade is
            # known only once the interim step is done
            total = done + sum(embedding_store.count_to_embed(conn, embedder.name, b)
                               for _, b in steps[n:])
        before = None
        while True:
            page_began = time.perf_counter()
            page = embedding_store.events_to_embed(
                conn, embedder.name, backlog_step, before=before, limit=size,
                context_turns=getattr(embedder, "context_turns", 0),
                context_chars=getattr(embedder, "context_chars", 0))
            if not page:
                break
            before = (page[-1].occurred_at, page[-1].id)
            _embed_page(conn, embedder, page, counts,
                        stand_in=stand_in if step == "interim" else None,
                        upgrade=backlog_step.upgrade_interim)
            done += len(page)
            first_page = first_page or time.perf_counter() - began
            if progress:
                progress(done, max(total, done))
            rate = len(page) / max(time.perf_counter() - page_began, 1e-3)
            size = max(min(MIN_PAGE_EVENTS, page_events),
                       min(page_events, int(rate * PAGE_SECONDS)))
        if n == 0:  # every turn has a vector now (interim or real)
            first_done = time.perf_counter() - began
    return first_page, first_done


def _interim_embedder(embedder: Embedder) -> tuple[Embedder, str]:
    """(embedder, runtime) for the turn-alone vectors: the embedder's own choice when it
    offers one (WithContext.interim_embedder), else the embedder itself."""
    pick = getattr(embedder, "interim_embedder", None)
    return pick() if pick else (embedder, "same model")


def _embed_page(conn: psycopg.Connection, embedder: Embedder,
                page: Sequence[embedding_store.ToEmbed], counts: dict, *,
                stand_in: Embedder | None, upgrade: bool) -> None:
    """Vectors for one page. `stand_in` (the interim step): each turn alone, its vector
    computed by `stand_in` and marked interim; a turn without context gets its real
    vector from `embedder` (its real input is the turn alone) unless `stand_in` is
    `approximate`. `upgrade`: the page's interim rows are replaced in the same
    transaction."""
    interim = stand_in is not None
    approximate = interim and getattr(stand_in, "approximate", False)
    pending = []
    stand_ins = set()
    for event in page:
        text = event.text
        cap = MAX_CHUNKS_BY_KIND.get(event.kind, MAX_CHUNKS_PER_EVENT)
        with_context = event.context and not interim
        for i, (s, e) in cap_chunks(embedder.chunk(text), cap):
            model_input = f"{text[s:e]}\n\n{event.context}" if with_context else text[s:e]
            key = input_hash(embedder.name, model_input)
            if interim and (event.context or approximate):
                key = INTERIM_PREFIX + key
                stand_ins.add(event.id)
            row = embedding_store.ChunkRow(event.id, i, s, e, key)
            pending.append(_Pending(row, model_input))
    known = embedding_store.known_hashes(conn, embedder.name,
                                         sorted({p.row.content_hash for p in pending}))
    fresh: dict[str, str] = {}  # hash -> input, each computed once per page
    for p in pending:
        if p.row.content_hash not in known:
            fresh.setdefault(p.row.content_hash, p.text)
    vectors: dict[str, np.ndarray] = {}
    marked = [h for h in fresh if h.startswith(INTERIM_PREFIX)]
    real = [h for h in fresh if not h.startswith(INTERIM_PREFIX)]
    for model, hashes in ((stand_in, marked), (embedder, real)):
        if hashes:
            vectors.update(zip(hashes, model.embed([fresh[h] for h in hashes]), strict=True))
    computed, reused, written = [], [], set()
    for p in pending:
        h = p.row.content_hash
        if h in vectors and h not in written:
            computed.append((p.row, vectors[h]))
            written.add(h)
        else:
            reused.append(p.row)  # stored before, or computed earlier in this page
    with conn.transaction():
        replaced = embedding_store.interim_events(conn, embedder.name,
                                                  [e.id for e in page]) if upgrade else set()
        if replaced:
            embedding_store.delete_interim(conn, embedder.name, sorted(replaced))
        embedding_store.write_embeddings(conn, embedder.name, embedder.dims, computed, reused)
    counts["events"] += len(page) - len(replaced)
    counts["interim"] += len(stand_ins)
    counts["upgraded"] += len(replaced)
    counts["chunks"] += len(pending)
    counts["embedded"] += len(fresh)
    counts["reused"] += len(reused)


def summary(counts: dict, model: str) -> str:
    """One line on what `embed_missing` did, true to what a search by meaning finds now:
    never "embedded 0 events" while search has no vector to search."""
    waited = (f"waited {counts['waited_seconds']:,.0f} s for another embedding run of "
              f"{model}; " if counts.get("waited_seconds", 0) >= 1 else "")
    left = counts.get("without_vectors", 0)
    still = f"; {left:,} events with text still have no vector" if left else ""
    if not (counts["events"] or counts["upgraded"] or counts["interim"]):
        if counts.get("with_vectors", 0):
            return (f"{waited}nothing to embed: all {counts['with_vectors']:,} events with "
                    f"text have vectors for {model}{still}")
        blank = f" ({counts['blank']:,} blank)" if counts["blank"] else ""
        return (f"{waited}nothing to embed: no event has text yet{blank}, so search by "
                f"meaning has nothing to find (import a history first){still}")
    return (f"{waited}embedded {counts['events']:,} events with {model}: "
            f"{counts['chunks']:,} chunks ({counts['embedded']:,} computed, "
            f"{counts['reused']:,} reused), {counts['blank']:,} blank skipped, "
            f"in {counts['seconds']:,.1f} s"
            + (f"; {counts['interim']:,} turns searchable first through interim vectors "
               f"({counts['interim_runtime']}), {counts['upgraded']:,} replaced"
               if counts["interim"] or counts["upgraded"] else "") + still)
