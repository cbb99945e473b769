import psycopg
import pytest

from memory_platform.store import Database, DatabaseError
from memory_platform.store.db import migrate, migrations


def test_migrations_apply_once_and_are_recorded(db):
    with db.connect() as conn:
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
        assert [r[0] for r in rows] == [v for v, _, _ in migrations()]
        assert migrate(conn) == []  # second run: nothing pending
        ext = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        assert ext is not None, "pgvector must be installed by the first migration"
        columns = {r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'")}
        assert {"raw", "text", "occurred_at", "content_hash", "text_search"} <= columns
        assert not any("embedding" in c for c in columns), "vectors live in their own table"


def test_changed_migration_is_refused(db):
    with db.connect() as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'tampered' WHERE version = 1")
        with pytest.raises(DatabaseError, match="changed after it was applied"):
            migrate(conn)


def test_unreachable_database_is_a_clear_error(tmp_path):
    db = Database(url=f"postgresql://nobody@/nowhere?host={tmp_path}&connect_timeout=2")
    with pytest.raises(DatabaseError, match="cannot connect to PostgreSQL"):
        with db.connect():
            pass


def test_full_text_column_is_generated(db):
    with db.connect() as conn:
        conn.execute(
            "INSERT INTO events (source, native_id, role, kind, occurred_at, text, raw, "
            "content_hash) VALUES ('notes', 'n1', 'user', 'message', now(), "
            "'error E0502 in src/main.rs', '{}', 'h')"
        )
        hit = conn.execute(
            "SELECT count(*) FROM events WHERE text_search @@ plainto_tsquery('english', 'E0502')"
        ).fetchone()[0]
        assert hit == 1
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO events (source, native_id, role, kind, occurred_at, text, raw, "
                "content_hash) VALUES ('notes', 'n2', 'wizard', 'message', now(), '', '{}', 'h')"
            )
