"""Connections, the embedded PostgreSQL, and versioned migrations.

One code path for both deployments: `MEMORY_PLATFORM_DATABASE_URL` names any PostgreSQL
with pgvector; without it, `pgserver` (PostgreSQL 16 + pgvector from a wheel) is started on
demand in `$MEMORY_PLATFORM_HOME/pgdata`. Either way migrations are applied on first
connect and recorded in `schema_migrations`.

Surviving a database restart (a long-running `serve` or `mcp`): a kept connection is
checked before reuse (a dead server leaves its socket readable: EOF or a termination
notice) and a dead one replaced; a connection that cannot be made to the embedded server
starts it again (at most once per RESTART_EVERY_S); an external server is simply
reconnected to once it is back. Until then callers get `DatabaseError` with the reason.

pgserver keeps the pids of the processes using the embedded server in
`pgdata/.handle_pids.json` and stops the server when the last one exits; a process killed
with SIGKILL never removes its pid, which kept PostgreSQL running forever.
`start_embedded` forgets the pids of dead processes when a process starts and again when
it exits, so the last live process stops the server.

Every wait is bounded. A connection attempt, TCP and the startup exchange included, gives
up after `connect_timeout` (CONNECT_TIMEOUT_S; libpq's own default is 130 s). With
`answer_timeout` (the hooks' Database), every statement is cancelled by the server after
that long (`statement_timeout`, set at connect so the pool's RESET ALL keeps it) and the
client gives up on a server that does not answer at all ANSWER_GRACE_S later, closing the
connection (`NoAnswer`). Without one (imports, dreams: long statements are normal) only the
pool's own statements are bounded: a ping by PING_TIMEOUT_S, the RESET ALL of a returned
connection by RESET_TIMEOUT_S, and migrations by MIGRATION_TIMEOUT_S. No lock is held
while connecting or migrating, and the lock itself is waited for at most LOCK_WAIT_S, so
one caller stuck on the database holds up no other.
"""

import atexit
import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from memory_platform.store.connection import (
    ANSWER_GRACE_S,
    BoundedConnection,
    NoAnswer,
    connection_alive,
)

log = logging.getLogger(__name__)

# Connections kept open per Database for reuse; more than this many at once are closed
# after use.
IDLE_CONNECTIONS = 4

# Serialises migrations between processes (Dagster runs, CLI) on the same database.
_MIGRATION_LOCK_KEY = 0x6D656D706C6174  # "memplat"
# At most one attempt to start the embedded server again per this many seconds: under load,
# every request would otherwise run pg_ctl.
RESTART_EVERY_S = 5.0
HANDLE_FILE = ".handle_pids.json"
_exit_hooks: set[Path] = set()
# Seconds (see the module docstring).
CONNECT_TIMEOUT_S = 10
PING_TIMEOUT_S = 5.0
RESET_TIMEOUT_S = 5.0
MIGRATION_TIMEOUT_S = 600.0
LOCK_WAIT_S = 60.0


class DatabaseError(RuntimeError):
    """The database could not be reached or prepared; the message says what to do."""


def start_embedded(pgdata: Path) -> str:
    """Start (or join) the embedded PostgreSQL in `pgdata`; return its connection URL.
    Called again after the server died (killed, crashed), it starts it again.

    pgserver counts the processes holding the server and stops it when the last one exits,
    so a CLI command leaves nothing running behind it while `memory-platform up` keeps it up.
    The pids of processes that died without saying so are forgotten first (module
    docstring).
    """
    import warnings

    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset (normal on servers, CI, root
        # shells) when pgserver computes its lock folder; the fallback under /tmp is fine.
        warnings.simplefilter("ignore")
        import pgserver  # imported lazily: loading definitions must not start a server

    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        forget_dead_holders(pgdata)
        server = pgserver.get_server(str(pgdata), cleanup_mode="stop")
        if not _postmaster_alive(server.pgdata):
            # get_server hands back this process's existing handle without looking at the
            # server: after PostgreSQL was killed, start it again (pgserver's own routine,
            # under its inter-process lock, as get_server runs it).
            log.warning("the embedded PostgreSQL in %s is not running; starting it again",
                        pgdata)
            with server._lock:
                _clear_dead_postmaster(server.pgdata)
                server.ensure_postgres_running()
    except Exception as exc:  # pgserver raises CalledProcessError/TimeoutExpired/assertions
        log_file = pgdata / "log"
        tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else ""
        raise DatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
            f"Set MEMORY_PLATFORM_DATABASE_URL to use another server.\n{tail}"
        ) from exc
    resolved = server.pgdata
    if resolved not in _exit_hooks:
        # Registered after pgserver's own exit hook, so it runs first (atexit is LIFO): the
        # last live process then sees only itself in the handle file and stops the server.
        _exit_hooks.add(resolved)
        atexit.register(forget_dead_holders, resolved)
    return server.get_uri()


def _process_alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def _postmaster_alive(pgdata: Path) -> bool:
    pid = _postmaster_pid(pgdata)
    return pid is not None and _process_alive(pid)


def _clear_dead_postmaster(pgdata: Path) -> None:
    """Remove the lock files of a postmaster that is dead but not reaped (a zombie, where
    nothing reaps orphans): pgserver would take it for a running server, and PostgreSQL
    refuses to start while its socket's lock file names a pid that still exists."""
    lock = pgdata / "postmaster.pid"
    try:
        lines = lock.read_text().split("\n")
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return
    if _process_alive(pid):
        return
    port = lines[3].strip() if len(lines) > 3 else ""
    socket_dir = Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else None
    if socket_dir is not None and port:
        (socket_dir / f".s.PGSQL.{port}.lock").unlink(missing_ok=True)
    lock.unlink(missing_ok=True)


def forget_dead_holders(pgdata: Path) -> list[int]:
    """Remove the pids of dead processes from the embedded server's handle file (under
    pgserver's lock); return them."""
    import json

    path = Path(pgdata) / HANDLE_FILE
    if not path.exists():
        return []
    from pgserver.postgres_server import PostgresServer

    with PostgresServer._lock:
        try:
            pids = [int(p) for p in json.loads(path.read_text() or "[]")]
        except (OSError, ValueError):
            return []
        dead = [p for p in pids if not _process_alive(p)]
        if dead:
            path.write_text(json.dumps([p for p in pids if p not in dead]))
    if dead:
        log.info("forgot %d dead process(es) holding the embedded PostgreSQL: %s",
                 len(dead), dead)
    return dead


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
        # bounded, and never by a short statement_timeout: a migration may rewrite a table
        seconds = int(MIGRATION_TIMEOUT_S * 1000)
        conn.execute(f"SET LOCAL statement_timeout = {seconds}")
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
    """Where the data lives. Cheap to create; connects (and migrates) lazily. Timeouts in
    seconds (module docstring): `connect_timeout` per connection attempt, `answer_timeout`
    per statement (None: unbounded)."""

    def __init__(self, url: str | None = None, pgdata: Path | None = None, *,
                 connect_timeout: float = CONNECT_TIMEOUT_S,
                 answer_timeout: float | None = None):
        if url is None and pgdata is None:
            raise ValueError("Database needs a URL or an embedded data folder")
        self._url = url
        self._pgdata = pgdata
        self._external = url is not None
        self._ready = False
        self._lock = threading.RLock()
        self._idle: list[psycopg.Connection] = []
        self._last_restart = 0.0
        self.connect_timeout = connect_timeout
        self.answer_timeout = answer_timeout

    @classmethod
    def from_settings(cls, settings, **timeouts) -> "Database":
        return cls(url=settings.database_url, pgdata=settings.pgdata, **timeouts)

    @property
    def embedded(self) -> bool:
        return not self._external

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # held only for short steps and the embedded server's start (pg_ctl's own timeout)
        if not self._lock.acquire(timeout=LOCK_WAIT_S):
            raise DatabaseError(f"the database connection pool stayed busy for {LOCK_WAIT_S:g} "
                                f"s (the embedded PostgreSQL starting?); try again")
        try:
            yield
        finally:
            self._lock.release()

    def url(self) -> str:
        with self._locked():
            if self._url is None:
                assert self._pgdata is not None
                self._url = start_embedded(self._pgdata)
            return self._url

    def _prepare(self) -> None:
        # No lock held while connecting or migrating (either may wait on the server): two
        # threads that both find the database unprepared both migrate, and the migration's
        # advisory lock makes the second one find nothing left to apply.
        if self._ready:
            return
        with self._raw_connect() as conn:
            conn.answer_timeout = MIGRATION_TIMEOUT_S + ANSWER_GRACE_S
            applied = migrate(conn)
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        self._ready = True

    def _options(self, url: str) -> dict:
        """Connection parameters beside the URL: the timeouts (module docstring)."""
        given = conninfo_to_dict(url)
        params: dict = {"autocommit": True}
        if "connect_timeout" not in given:  # a URL's own wins (a slow remote server)
            params["connect_timeout"] = max(int(self.connect_timeout), 2)  # libpq: >= 2
        if self.answer_timeout is not None:
            ms = int(self.answer_timeout * 1000)
            params["options"] = f"{given.get('options') or ''} -c statement_timeout={ms}".strip()
        return params

    def _connect_once(self, url: str) -> BoundedConnection:
        conn = BoundedConnection.connect(url, **self._options(url))
        if self.answer_timeout is not None:
            conn.answer_timeout = self.answer_timeout + ANSWER_GRACE_S
        return conn

    def _raw_connect(self) -> BoundedConnection:
        url = self.url()
        try:
            return self._connect_once(url)
        except psycopg.OperationalError as exc:
            failure = exc
        if self.embedded and self._restart_embedded():
            url = self.url()
            try:
                return self._connect_once(url)
            except psycopg.OperationalError as exc:
                failure = exc
        raise DatabaseError(f"cannot connect to PostgreSQL at {_redact(url)}: "
                            f"{str(failure).strip()}") from failure

    def _restart_embedded(self) -> bool:
        """Start the embedded server again after it died; False when an attempt was made
        less than RESTART_EVERY_S ago (the caller reports the database as down)."""
        with self._locked():
            if time.monotonic() - self._last_restart < RESTART_EVERY_S:
                return False
            self._last_restart = time.monotonic()
            self.drop_idle()
            assert self._pgdata is not None
            self._url = start_embedded(self._pgdata)
            return True

    def ping(self) -> None:
        """Raise DatabaseError (or psycopg.Error) unless the database answers now (within
        PING_TIMEOUT_S: /health reports a stalled server as down, never hangs)."""
        with self.connect() as conn, conn.bounded(PING_TIMEOUT_S):
            conn.execute("SELECT 1")

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
        dead = 0
        with self._locked():
            while self._idle:
                conn = self._idle.pop()
                if connection_alive(conn):
                    return conn
                conn.close()
                dead += 1
        if dead:
            # the server went away under kept connections (restart, crash): all of them
            # are gone, not just this one
            log.warning("replaced %d dead kept database connection(s)", dead)
            self.drop_idle()
        return self._raw_connect()

    def _give_back(self, conn: psycopg.Connection) -> None:
        idle = psycopg.pq.TransactionStatus.IDLE
        if conn.closed or conn.broken or conn.info.transaction_status != idle:
            conn.close()
            return
        try:
            with conn.bounded(RESET_TIMEOUT_S):
                conn.execute("RESET ALL")  # SET synchronous_commit, hnsw.ef_search, ...
        except psycopg.Error:
            conn.close()
            return
        with self._locked():
            if len(self._idle) < IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close the kept connections (a process that is done with the database)."""
        self.drop_idle()

    def drop_idle(self) -> None:
        with self._locked():
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


__all__ = ["Database", "DatabaseError", "NoAnswer", "connection_alive", "migrate",
           "start_embedded"]


def _redact(url: str) -> str:
    """Hide a password in a URL before it goes into an error message."""
    if "://" in url and "@" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url
