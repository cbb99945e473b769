"""SQL of the machines (migration 0011): the local one (row 1, `is_local`) and those whose
collectors push to this server."""

from dataclasses import dataclass
from datetime import datetime

import psycopg

LOCAL_ID = 1


@dataclass(frozen=True)
class Machine:
    id: int
    uid: str | None
    name: str
    is_local: bool
    created_at: datetime
    last_collected_at: datetime | None


_COLUMNS = "id, uid, name, is_local, created_at, last_collected_at"


def claim_local(conn: psycopg.Connection, uid: str, name: str) -> None:
    """Give the local row this machine's stable id (and its name, unless the name is taken
    or the row was named already); a no-op once it holds one."""
    conn.execute(
        """UPDATE machines SET uid = %(uid)s,
               name = CASE WHEN name = 'local' AND NOT EXISTS (
                          SELECT 1 FROM machines WHERE name = %(name)s) THEN %(name)s
                      ELSE name END
           WHERE is_local AND uid IS NULL
             AND NOT EXISTS (SELECT 1 FROM machines WHERE uid = %(uid)s)""",
        {"uid": uid, "name": name})


def by_name(conn: psycopg.Connection, name: str) -> Machine | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM machines WHERE name = %s", (name,)).fetchone()
    return Machine(*row) if row else None


def by_id(conn: psycopg.Connection, machine_id: int) -> Machine | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM machines WHERE id = %s",
                       (machine_id,)).fetchone()
    return Machine(*row) if row else None


def ensure(conn: psycopg.Connection, name: str) -> Machine:
    """The machine called `name`, made if new."""
    try:
        conn.execute("INSERT INTO machines (name) VALUES (%s) ON CONFLICT (name) DO NOTHING",
                     (name,))
    except psycopg.errors.CheckViolation as exc:
        raise ValueError(f"invalid machine name {name!r}: up to 63 letters, digits, '.', '_' "
                         f"and '-', starting with a letter or digit") from exc
    found = by_name(conn, name)
    assert found is not None
    return found


def rename(conn: psycopg.Connection, machine_id: int, new: str) -> Machine:
    try:
        row = conn.execute(f"UPDATE machines SET name = %s WHERE id = %s RETURNING {_COLUMNS}",
                           (new, machine_id)).fetchone()
    except psycopg.errors.UniqueViolation as exc:
        raise ValueError(f"a machine named {new!r} exists already") from exc
    except psycopg.errors.CheckViolation as exc:
        raise ValueError(f"invalid machine name {new!r}: up to 63 letters, digits, '.', '_' "
                         f"and '-', starting with a letter or digit") from exc
    if row is None:
        raise ValueError(f"no machine with id {machine_id}")
    return Machine(*row)


def record_push(conn: psycopg.Connection, machine_id: int, uid: str | None) -> None:
    """A push arrived: when, and the machine's stable id if it had none yet."""
    conn.execute(
        """UPDATE machines SET last_collected_at = now(),
               uid = COALESCE(uid, CASE WHEN NOT EXISTS (
                   SELECT 1 FROM machines WHERE uid = %(uid)s) THEN %(uid)s END)
           WHERE id = %(id)s""",
        {"id": machine_id, "uid": uid})


def overview(conn: psycopg.Connection) -> list[dict]:
    """Every machine with its event count and last collection (the local one's: its last
    finished import run)."""
    rows = conn.execute(
        """SELECT m.id, m.name, m.uid, m.is_local,
                   (SELECT count(*) FROM events e WHERE e.machine_id = m.id),
                   CASE WHEN m.is_local THEN (SELECT max(finished_at) FROM import_runs
                                              WHERE origin NOT LIKE 'collect:%')
                        ELSE m.last_collected_at END
            FROM machines m ORDER BY m.id""").fetchall()
    keys = ("id", "name", "uid", "local", "events", "last_collection_at")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def names(conn: psycopg.Connection) -> dict[int, str]:
    return dict(conn.execute("SELECT id, name FROM machines").fetchall())
