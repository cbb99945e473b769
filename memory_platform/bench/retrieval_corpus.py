"""The stores the retrieval experiments search (bench/retrieval_variants.py), built once and
kept in a cache folder (an embedded PostgreSQL under `<cache>/pg`, model outputs under
`<cache>/tokens`):

- `inproc`: LoCoMo as bench/locomo.py imports it (text "speaker: text", one database,
  every question searched with its conversation's filter): the in-process figure.
- `mcp`: each LoCoMo conversation as a claude.ai export (one claude.ai conversation per
  session, speaker_a the human, no speaker names in the text, image turns
  "[shared image: caption]"), imported by the real importer into a database of its own
  (one person's store) and searched with no filter, as MCP's `cairn_search` does.

Vectors come from the real backfill (`embed_missing` with `WithContext` over the caching
model) for the shipped `ctx2` space, or from `embed_inputs` for a variant's own inputs.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from memory_platform.bench.common import REPO
from memory_platform.bench.locomo import _session_time, import_locomo, load_locomo
from memory_platform.bench.token_cache import CachedModel, Shelf
from memory_platform.query import backfill
from memory_platform.query.embedder import cap_chunks, input_hash
from memory_platform.query.embeddings import WithContext
from memory_platform.store import Database
from memory_platform.store import embeddings as embedding_store

CTX2 = "all-MiniLM-L6-v2+ctx2"


def cache_dir() -> Path:
    return REPO / ".bench-cache"


_shelf: Shelf | None = None


def shelf() -> Shelf:
    global _shelf
    if _shelf is None:
        _shelf = Shelf(cache_dir() / "tokens")
    return _shelf


@dataclass
class Store:
    """One searched scope: a database and the filter its questions use."""

    label: str  # sample id
    db: Database
    conversation_id: int | None  # the filter (inproc), or None (a store of its own)
    dia_of: dict[int, str] = field(default_factory=dict)  # event id -> LoCoMo dia_id
    position: dict[int, int] = field(default_factory=dict)  # event id -> turn number
    occurred: dict[int, datetime] = field(default_factory=dict)
    text: dict[int, str] = field(default_factory=dict)


def admin_url() -> str:
    from memory_platform.store.db import start_embedded

    return start_embedded(cache_dir() / "pg" / "pgdata")


def _database(name: str) -> tuple[Database, bool]:
    """(database, created now)."""
    url = admin_url()
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    return Database(url=make_conninfo(url, dbname=name)), not exists


def claude_ai_export(sample: dict) -> list[dict]:
    """A LoCoMo conversation as claude.ai conversations.json records, one per session."""
    conv = sample["conversation"]
    sender = {conv["speaker_a"]: "human", conv["speaker_b"]: "assistant"}
    records = []
    n = 1
    while f"session_{n}" in conv:
        start = _session_time(conv[f"session_{n}_date_time"])
        messages, parent = [], "00000000-0000-4000-8000-000000000000"
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = turn.get("text") or ""
            if turn.get("blip_caption"):
                text = f"{text} [shared image: {turn['blip_caption']}]".strip()
            at = (start.timestamp() + 30 * i)
            stamp = datetime.fromtimestamp(at, start.tzinfo).isoformat().replace("+00:00", "Z")
            messages.append({"uuid": turn["dia_id"], "parent_message_uuid": parent,
                             "sender": sender.get(turn["speaker"], "human"), "text": text,
                             "content": [{"type": "text", "text": text}],
                             "created_at": stamp, "updated_at": stamp})
            parent = turn["dia_id"]
        records.append({"uuid": f"{sample['sample_id']}-session-{n}",
                        "name": f"session {n}", "created_at": messages[0]["created_at"],
                        "updated_at": messages[-1]["created_at"], "chat_messages": messages})
        n += 1
    return records


def _describe(store: Store) -> Store:
    with store.db.connect() as conn:
        where = "WHERE e.conversation_id = %s" if store.conversation_id else ""
        args = (store.conversation_id,) if store.conversation_id else ()
        rows = conn.execute(
            f"SELECT e.id, e.native_id, e.occurred_at, e.text FROM events e {where} "
            "ORDER BY e.occurred_at, e.id", args).fetchall()
    for n, (i, native, at, text) in enumerate(rows):
        # claude.ai: "<conversation>/<dia_id>"; bench/locomo.py: "<sample>:<dia_id>"
        store.dia_of[i] = native.rsplit("/", 1)[1] if "/" in native else native.split(":", 1)[1]
        store.position[i] = n
        store.occurred[i] = at
        store.text[i] = text
    return store


def stores(layout: str) -> list[Store]:
    """The searched scopes of `layout` (`inproc` or `mcp`), imported on first use."""
    data = load_locomo()
    if layout == "inproc":
        db, fresh = _database("rv_inproc")
        if fresh:
            import_locomo(db, data)
        with db.connect() as conn:
            convs = dict(conn.execute(
                "SELECT c.native_id, c.id FROM conversations c WHERE c.source = 'locomo'"
            ).fetchall())
        return [_describe(Store(s["sample_id"], db, convs[s["sample_id"]])) for s in data]
    if layout != "mcp":
        raise ValueError(f"unknown layout {layout!r}")
    from memory_platform.ingest.importer import import_path

    out = []
    for sample in data:
        db, fresh = _database(f"rv_mcp_{sample['sample_id'].replace('-', '_')}")
        if fresh:
            folder = cache_dir() / "exports" / sample["sample_id"]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "conversations.json").write_text(json.dumps(claude_ai_export(sample)))
            report = import_path(db, "claude-ai", folder / "conversations.json")
            if report.errors:
                raise RuntimeError(f"{sample['sample_id']}: {report.errors[:3]}")
            with db.connect() as conn:
                conn.execute("ANALYZE events")
        out.append(_describe(Store(sample["sample_id"], db, None)))
    return out


def embed_ctx2(store_list: list[Store]) -> None:
    """The shipped `local-ctx2` vectors through the real backfill (no interim step)."""
    model = WithContext(CachedModel(shelf(), CTX2), turns=2)
    saved = backfill.INTERIM_MIN_TURNS
    backfill.INTERIM_MIN_TURNS = 10**9
    try:
        for db in {id(s.db): s.db for s in store_list}.values():
            backfill.embed_missing(db, model)
    finally:
        backfill.INTERIM_MIN_TURNS = saved


InputFn = Callable[[embedding_store.ToEmbed, str], str]  # (event, chunk text) -> input


def embed_inputs(store_list: list[Store], model_name: str, make_input: InputFn) -> None:
    """Vectors under `model_name` for every event not yet holding one, each chunk's model
    input made by `make_input(event, chunk)` (the event carries its two previous turns)."""
    model = CachedModel(shelf(), model_name)
    for db in {id(s.db): s.db for s in store_list}.values():
        with db.connect() as conn:
            embedding_store.ensure_model(conn, model_name, model.dims)
            backlog = embedding_store.Backlog()
            page = embedding_store.events_to_embed(conn, model_name, backlog, before=None,
                                                   limit=10**7, context_turns=2)
            rows, inputs = [], []
            for event in page:
                for i, (s, e) in cap_chunks(model.chunk(event.text)):
                    text = make_input(event, event.text[s:e])
                    key = input_hash(model_name, text)
                    rows.append(embedding_store.ChunkRow(event.id, i, s, e, key))
                    inputs.append(text)
            if not rows:
                continue
            vectors = model.embed(inputs)
            with conn.transaction():
                seen: set[str] = set()
                computed, reused = [], []
                for row, vector in zip(rows, vectors, strict=True):
                    if row.content_hash in seen:
                        reused.append(row)
                    else:
                        seen.add(row.content_hash)
                        computed.append((row, vector))
                embedding_store.write_embeddings(conn, model_name, model.dims, computed,
                                                 reused)


def content_hashes(store: Store, model_name: str) -> dict[int, list[str]]:
    """event id -> its chunks' input hashes under `model_name` (chunk order)."""
    with store.db.connect() as conn:
        rows = conn.execute(
            "SELECT event_id, content_hash FROM event_embeddings WHERE model = %s "
            "AND event_id = ANY(%s) ORDER BY event_id, chunk",
            (model_name, list(store.dia_of))).fetchall()
    out: dict[int, list[str]] = {}
    for i, h in rows:
        out.setdefault(int(i), []).append(h)
    return out
