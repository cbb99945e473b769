"""Connections, the embedded PostgreSQL, and versioned migrations.

One code path for both deployments: `MEMORY_PLATFORM_DATABASE_URL` names any PostgreSQL
with pgvector; without it, `pgserver` (PostgreSQL 16 + pgvector from a wheel) is started on
demand in `$MEMORY_PLATFORM_HOME/pgdata`. Either way migrations are applied on first
connect and recorded in `schema_migrations`.
"""

import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import psycopg

log = logging.getLogger(__name__)

# Connections kept open per Database for reuse; more than this many at once are closed
# after use.
IDLE_CONNECTIONS = 4

# Serialises migrations between processes (Dagster runs, CLI) on the same database.
_MIGRATION_LOCK_KEY = 0x6D656D706C6174  # "memplat"


class DatabaseError(RuntimeError):
    """The database could not be reached or prepared; the message says what to do."""


def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL in `pgdata`; return its connection URL.

    pgserver counts the processes holding the server and stops it when the last one exits,
    so a CLI command leaves nothing running behind it while `memory-platform up` keeps it up.
    """
    import warnings

    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (normal on servers, CI, root
        # shells) when pgserver computes its lock folder; the fallback under /tmp is fine.
        warnings.simplefilter("ignore")
        import pgserver  # imported lazily: loading definitions must not start a server

    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        server = pgserver.get_server(str(pgdata), cleanup_mode="stop")
    except Exception as exc:  # pgserver raises CalledProcessError/TimeoutExpired/assertions
        log_file = pgdata / "log"
        tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
        raise DatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
            f"Set MEMORY_PLATFORM_DATABASE_URL to use another server.\n{tail}"
        ) from exc
    return server.get_uri()


def migrations() -> list[tuple[int, str, str]]:
    """(version, name, sql) for every file in store/migrations, in order."""
    found = []
    for entry in resources.files("memory_platform.store.migrations").iterdir():
        name = entry.name
        if not name.endswith(".sql"):
            continue
        version = int(name.split("_", 1)[0])
        found.append((version, name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise DatabaseError(f"duplicate migration versions: {versions}")
    return found


def migrate(conn: psycopg.Connection) -> list[str]:
    """Apply pending migrations in one transaction each; return the names applied."""
    applied: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK_KEY,))
        conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version    integer PRIMARY KEY,
                   name       text        NOT NULL,
                   checksum   text        NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        done = {
            v: (n, c)
            for v, n, c in conn.execute("SELECT version, name, checksum FROM schema_migrations")
        }
        for version, name, sql in migrations():
            checksum = hashlib.sha256(sql.encode()).hexdigest()
            if version in done:
                if done[version][1] != checksum:
                    raise DatabaseError(
                        f"migration {name} was changed after it was applied "
                        f"(recorded checksum differs); add a new migration instead"
                    )
                continue
            conn.execute(sql)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (%s, %s, %s)",
                (version, name, checksum),
            )
            applied.append(name)
    return applied


class Database:
    """Where the data lives. Cheap to create; connects (and migrates) lazily."""

    def __init__(self, url: str | None = None, pgdata: Path | None = None):
        if url is None and pgdata is None:
            raise ValueError("Database needs a URL or an embedded data folder")
        self._url = url
        self._pgdata = pgdata
        self._ready = False
        self._lock = threading.RLock()
        self._idle: list[psycopg.Connection] = []

    @classmethod
    def from_settings(cls, settings) -> "Database":
        return cls(url=settings.database_url, pgdata=settings.pgdata)

    @property
    def embedded(self) -> bool:
        return self._url is None

    def url(self) -> str:
        with self._lock:
            if self._url is None:
                assert self._pgdata is not None
                self._url = start_embedded(self._pgdata)
            return self._url

    def _prepare(self) -> None:
        with self._lock:
            if self._ready:
                return
            with self._raw_connect() as conn:
                applied = migrate(conn)
            if applied:
                log.info("applied migrations: %s", ", ".join(applied))
            self._ready = True

    def _raw_connect(self) -> psycopg.Connection:
        url = self.url()
        try:
            return psycopg.connect(url, autocommit=True)
        except psycopg.OperationalError as exc:
            raise DatabaseError(f"cannot connect to PostgreSQL at {_redact(url)}: {exc}") from exc

    @contextmanager
    def connect(self) -> Iterator[psycopg.Connection]:
        """An autocommit connection on a migrated database; use `conn.transaction()` to group.
        Connections are kept for reuse (up to IDLE_CONNECTIONS): a new PostgreSQL backend
        costs a process fork, which dominated short requests (a dashboard click opened
        five). One returned with a transaction open or broken is closed instead, and
        session settings are reset before reuse."""
        self._prepare()
        conn = self._take()
        try:
            yield conn
        finally:
            self._give_back(conn)

    def _take(self) -> psycopg.Connection:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.closed:
                    return conn
        return self._raw_connect()

    def _give_back(self, conn: psycopg.Connection) -> None:
        idle = psycopg.pq.TransactionStatus.IDLE
        if conn.closed or conn.broken or conn.info.transaction_status != idle:
            conn.close()
            return
        try:
            conn.execute("RESET ALL")  # SET synchronous_commit, hnsw.ef_search, ...
        except psycopg.Error:
            conn.close()
            return
        with self._lock:
            if len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the kept connections (a process that is done with the database)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _redact(url: str) -> str:
    """Hide a password in a URL before it goes into an error message."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url
