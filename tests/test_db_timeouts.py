"""Every wait on the database is bounded (issue 20, defect 9): a server that accepts
connections and never answers, one that answered the startup and then stalls, a statement
that runs too long and a lock held by another connection each end in a clear error within
the Database's timeouts, never a hang; and one stuck caller holds up no other."""

import threading
import time

import psycopg

from helpers.stalls import StallingProxy, silent_server
from memory_platform.store import Database, DatabaseError
from memory_platform.store import db as store_db


def _timed(fn, limit: float):
    """(result or exception, seconds) of fn() run in a thread; fails instead of hanging
    when it takes more than `limit`."""
    box: dict = {}

    def run() -> None:
        start = time.monotonic()
        try:
            box["value"] = fn()
        except BaseException as exc:  # the caller looks at what was raised
            box["value"] = exc
        box["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"still waiting after {limit} s"
    return box["value"], box["seconds"]


def test_a_server_that_never_answers_the_startup_is_given_up_on_in_time():
    with silent_server() as url:
        error, seconds = _timed(Database(url=url).ping, 30)  # the default: libpq waits 130 s
        assert isinstance(error, DatabaseError), error
        assert "cannot connect" in str(error) and "timeout" in str(error)
        assert store_db.CONNECT_TIMEOUT_S - 1 < seconds < store_db.CONNECT_TIMEOUT_S + 3
        error, seconds = _timed(Database(url=url, connect_timeout=2).ping, 20)
        assert isinstance(error, DatabaseError) and 1.5 < seconds < 5


def test_a_server_that_stalls_after_the_startup_is_given_up_on(database_url):
    Database(url=database_url).ping()  # migrated through the direct route
    proxy = StallingProxy(database_url)
    try:
        db = Database(url=proxy.url, answer_timeout=1.0)
        db.ping()
        with db.connect() as conn:
            proxy.freeze()
            error, seconds = _timed(lambda: conn.execute("SELECT 1"), 20)
            assert isinstance(error, psycopg.OperationalError), error
            assert "did not answer within" in str(error)
            assert 0.9 < seconds < 4
            assert conn.closed  # a connection in an unknown state is not kept
        proxy.thaw()
        with db.connect() as conn:  # the next caller gets a fresh, working connection
            assert conn.execute("SELECT 2").fetchone()[0] == 2
    finally:
        proxy.close()


def test_a_stalled_server_does_not_hang_a_ping_of_a_database_without_answer_timeout(
        database_url):
    Database(url=database_url).ping()
    proxy = StallingProxy(database_url)
    try:
        db = Database(url=proxy.url)  # serve's, the CLI's: no bound on statements
        db.ping()
        proxy.freeze()
        error, seconds = _timed(db.ping, 30)  # /health must say "down", not hang
        assert isinstance(error, psycopg.OperationalError) and seconds < \
            store_db.PING_TIMEOUT_S + 3
    finally:
        proxy.close()


def test_a_statement_longer_than_the_answer_timeout_is_cancelled(database_url):
    db = Database(url=database_url, answer_timeout=1.0)
    with db.connect() as conn:
        error, seconds = _timed(lambda: conn.execute("SELECT pg_sleep(30)"), 20)
    assert isinstance(error, psycopg.errors.QueryCanceled), error
    assert seconds < 3
    with db.connect() as conn:  # session settings survive the pool's RESET ALL
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "1s"
        assert conn.execute("SELECT 3").fetchone()[0] == 3


def test_a_lock_held_by_another_connection_ends_the_wait(database_url):
    db = Database(url=database_url, answer_timeout=1.0)
    db.ping()
    with psycopg.connect(database_url, autocommit=True) as holder:
        holder.execute("CREATE TABLE held (id int)")
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE held IN ACCESS EXCLUSIVE MODE")
        with db.connect() as conn:
            error, seconds = _timed(lambda: conn.execute("SELECT * FROM held"), 20)
        holder.execute("ROLLBACK")
    assert isinstance(error, psycopg.errors.QueryCanceled), error
    assert seconds < 3


def test_a_caller_stuck_on_a_silent_server_holds_up_no_other():
    with silent_server() as url:
        db = Database(url=url, connect_timeout=2)
        results = []
        threads = [threading.Thread(target=lambda: results.append(_timed(db.ping, 20)))
                   for _ in range(3)]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        elapsed = time.monotonic() - start
    assert len(results) == 3 and all(isinstance(e, DatabaseError) for e, _ in results)
    # each waits for its own connection, not in a queue behind the others
    assert elapsed < 6, elapsed


def test_a_url_of_its_own_options_keeps_them_beside_the_statement_timeout(database_url):
    url = psycopg.conninfo.make_conninfo(database_url, options="-c work_mem=7MB")
    db = Database(url=url, answer_timeout=2.0)
    with db.connect() as conn:
        assert conn.execute("SHOW work_mem").fetchone()[0] == "7MB"
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "2s"
