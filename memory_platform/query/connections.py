"""Connections kept per thread and Database across searches, and per-database facts (which
models have vectors). Opening a connection costs ~5 ms (far more on a loaded machine), a
large share of a search's latency budget, and the MCP server and the API search repeatedly
on the same Database."""

import threading
import weakref
from collections.abc import Callable
from typing import TypeVar

import psycopg

from memory_platform.store import Database
from memory_platform.store import embeddings as store
from memory_platform.store.db import connection_alive

T = TypeVar("T")

_held = threading.local()


def on_connection(db: Database, fn: Callable[[psycopg.Connection], T]) -> T:
    """fn(conn) on the calling thread's kept connection to `db`. Opening a connection costs
    ~5 ms (far more on a loaded machine: a new backend process and cold caches), a large
    share of the latency budget, and the MCP server and the API search repeatedly on the
    same Database. One connection per (thread, Database), closed when the Database object
    is collected. A kept connection is checked before use (store.db.connection_alive: no
    round trip) and replaced when the server went away; one that dies during the call is
    replaced and the call retried once; one left broken or inside a transaction is
    dropped."""
    for attempt in range(2):
        conn, reused = _held_connection(db)
        try:
            return fn(conn)
        except psycopg.OperationalError:
            if _reusable(conn):
                raise
            _drop(db, conn)
            if attempt == 0 and reused:
                continue
            raise
        except BaseException:
            if not _reusable(conn):
                _drop(db, conn)
            raise
    raise AssertionError("unreachable")


def _held_connection(db: Database) -> tuple[psycopg.Connection, bool]:
    held = getattr(_held, "conns", None)
    if held is None:
        held = _held.conns = weakref.WeakKeyDictionary()
    entry = held.get(db)  # (the open db.connect() context, its connection)
    if entry is not None:
        if _reusable(entry[1]) and connection_alive(entry[1]):
            return entry[1], True
        _drop(db, entry[1])
    opened = db.connect()  # kept referenced: collecting it would close the connection
    entry = (opened, opened.__enter__())
    held[db] = entry
    weakref.finalize(db, entry[1].close)
    return entry[1], False


def _drop(db: Database, conn: psycopg.Connection) -> None:
    held = getattr(_held, "conns", None)
    if held is not None and held.get(db, (None, None))[1] is conn:
        del held[db]
    conn.close()


def _reusable(conn: psycopg.Connection) -> bool:
    return not (conn.closed or conn.broken) and \
        conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


_facts: dict[tuple[str, str], int] = {}  # (dsn, model) -> dims, once it has vectors
_facts_lock = threading.Lock()


def searchable_dims(conn: psycopg.Connection, model: str) -> int | None:
    """The model's dimension if it has vectors in this database, else None. A positive
    answer is cached per process (vectors are not deleted under a running search); a
    negative one is asked again next time, so `embed` is seen at once."""
    key = (conn.info.dsn, model)
    with _facts_lock:
        dims = _facts.get(key)
    if dims is not None:
        return dims
    dims = store.model_dims(conn, model)
    if dims is None or not store.has_vectors(conn, model):
        return None
    with _facts_lock:
        _facts[key] = dims
    return dims
