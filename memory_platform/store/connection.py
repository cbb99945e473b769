"""A connection to PostgreSQL whose every wait for the server is bounded, and the check of
a kept one before reuse (store/db.py's pool uses both)."""

import select
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

# What the client waits past the server's own statement_timeout before giving up on a
# server that does not answer at all (a cancelled statement's error needs a moment too).
ANSWER_GRACE_S = 1.0


class NoAnswer(psycopg.OperationalError):
    """The server did not answer a statement in time; the connection was closed."""


class BoundedConnection(psycopg.Connection):
    """A connection whose every wait for the server is bounded by `answer_timeout` seconds
    (None: unbounded). psycopg sends every statement, transaction command and result
    through `wait`, whose timeout raises errors._WaitTimeout (an OperationalError)."""

    answer_timeout: float | None = None

    def wait(self, gen, interval=0.1, timeout=None):
        limit = self.answer_timeout if timeout is None else timeout
        try:
            return super().wait(gen, interval=interval, timeout=limit)
        except psycopg.errors._WaitTimeout:
            self.close()  # mid-statement: its state is unknown, it is never reused
            raise NoAnswer(f"PostgreSQL did not answer within {limit:g} s; gave up and "
                           f"closed the connection") from None

    @contextmanager
    def bounded(self, seconds: float) -> Iterator[None]:
        """Waits within the block bounded by `seconds` at most."""
        kept = self.answer_timeout
        self.answer_timeout = seconds if kept is None else min(kept, seconds)
        try:
            yield
        finally:
            self.answer_timeout = kept


def connection_alive(conn: psycopg.Connection) -> bool:
    """Whether a kept, idle connection can still be used, without a round trip: a server
    that stopped or died has closed the socket or sent a termination notice, both of which
    make it readable while we are not waiting for anything."""
    if conn.closed or conn.broken:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable
