"""SQL of API tokens (migrations 0005, 0009: the token's kind, and 0011: a collector's machine). Only hashes reach this module: the secret itself is
made, shown and hashed in `memory_platform.vault.tokens`, and never written anywhere."""

from collections.abc import Sequence

import psycopg

TOKEN_COLUMNS = ("id", "name", "kind", "namespaces", "created_at", "last_used_at",
                 "revoked_at", "machine")
# `machine`: the name of a collector token's machine (migration 0011), else NULL.
_MACHINE = "(SELECT m.name FROM machines m WHERE m.id = api_tokens.machine_id) AS machine"
_SELECT = ", ".join(TOKEN_COLUMNS[:-1]) + ", " + _MACHINE


def _row(row) -> dict:
    return dict(zip(TOKEN_COLUMNS, row, strict=True))


def insert_token(
    conn: psycopg.Connection, *, name: str | None, token_hash: str, namespaces: Sequence[str],
    kind: str = "agent", machine_id: int | None = None,
) -> dict:
    """Store a token's hash; without a name it is called `token-<id>`. A taken name raises
    ValueError (names are unique: the audit trail identifies a token by its name)."""
    try:
        row = conn.execute(
            f"""INSERT INTO api_tokens (id, name, token_hash, namespaces, kind, machine_id)
                SELECT s.id, COALESCE(%(name)s, 'token-' || s.id), %(hash)s, %(ns)s::text[],
                       %(kind)s, %(machine)s
                FROM (SELECT nextval(pg_get_serial_sequence('api_tokens', 'id')) AS id) s
                RETURNING {_SELECT}""",
            {"name": name, "hash": token_hash, "ns": list(namespaces), "kind": kind,
             "machine": machine_id},
        ).fetchone()
    except psycopg.errors.UniqueViolation as exc:
        if "token_hash" in str(exc):  # 256 random bits colliding: never, but say so
            raise RuntimeError("token hash collision; create the token again") from exc
        raise ValueError(f"a token named {name!r} already exists (revoked tokens keep "
                         f"their name); choose another --name") from exc
    except psycopg.errors.CheckViolation as exc:
        raise ValueError(f"invalid token name {name!r}: use letters, digits, '.', '_', ':' "
                         f"and '-', starting with a letter or digit") from exc
    return _row(row)


# last_used_at is refreshed at most this often: a busy client does not write (and lock its
# token's row) on every request.
TOUCH_EVERY = "60 seconds"


def live_by_hash(conn: psycopg.Connection, token_hash: str) -> tuple[dict, str] | None:
    """(token, stored hash) of the unrevoked token with this hash, marking it used (to the
    minute); None when no live token has it. The caller compares the hashes in constant
    time."""
    row = conn.execute(
        f"""WITH t AS (
                SELECT {_SELECT}, token_hash FROM api_tokens
                WHERE token_hash = %(hash)s AND revoked_at IS NULL),
            touched AS (
                UPDATE api_tokens a SET last_used_at = now() FROM t
                WHERE a.id = t.id AND (t.last_used_at IS NULL
                                       OR t.last_used_at < now() - interval '{TOUCH_EVERY}')
                RETURNING a.last_used_at)
            SELECT t.id, t.name, t.kind, t.namespaces, t.created_at,
                   COALESCE((SELECT last_used_at FROM touched), t.last_used_at),
                   t.revoked_at, t.machine, t.token_hash
            FROM t""",
        {"hash": token_hash},
    ).fetchone()
    return (_row(row[:-1]), row[-1]) if row else None


def any_live(conn: psycopg.Connection) -> bool:
    return bool(conn.execute(
        "SELECT EXISTS (SELECT 1 FROM api_tokens WHERE revoked_at IS NULL)").fetchone()[0])


def list_tokens(conn: psycopg.Connection, *, include_revoked: bool = True) -> list[dict]:
    """Every token (never its hash), oldest first."""
    where = "" if include_revoked else "WHERE revoked_at IS NULL"
    rows = conn.execute(f"SELECT {_SELECT} FROM api_tokens {where} ORDER BY id").fetchall()
    return [_row(r) for r in rows]


def revoke(conn: psycopg.Connection, token_id: int) -> dict | None:
    """Revoke a token (idempotent: revoking twice keeps the first time); None if no such
    token."""
    row = conn.execute(
        f"""UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, now())
            WHERE id = %s RETURNING {_SELECT}""",
        (token_id,),
    ).fetchone()
    return _row(row) if row else None
