"""SQL of orchard (migration 0008): projects with their append-only history, the proposals
discovery makes, and the weekly snapshots. What cairn says about a project (its activity
and turns) is store/orchard_activity.py's.

Rules kept here:
- Every write of a project writes its `orchard_history` row (who, when, before, after) in
  the same statement: the history cannot miss a change.
- Nothing deletes a project (a trigger would refuse it anyway): archiving is an edit.
- A proposal's decision is taken once: deciding a decided proposal changes nothing.
"""

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memory_platform.store.namespaces import ensure_namespace

STATUSES = ("active", "paused", "blocked", "done", "idea")
CHANGES = ("create", "edit", "milestone", "archive", "restore")
PROPOSAL_STATES = ("pending", "accepted", "dismissed")

PROJECT_COLUMNS = (
    "id", "name", "namespace", "repo", "status", "priority", "next_action", "blockers",
    "deadline", "last_milestone", "last_milestone_at", "cairn_projects", "cairn_titles",
    "archived", "created_at", "updated_at",
)
# What a person or a milestone may set (id and record times are the database's).
WRITABLE = frozenset(PROJECT_COLUMNS) - {"id", "created_at", "updated_at"}
_SELECT = sql.SQL(", ").join(sql.SQL("p.{}").format(sql.Identifier(c)) for c in PROJECT_COLUMNS)


class NameTaken(ValueError):
    """Another project already has this name (names are unique, whatever the case)."""


def _project(row) -> dict:
    return dict(zip(PROJECT_COLUMNS, row, strict=True))


def get_project(conn: psycopg.Connection, project_id: int) -> dict | None:
    row = conn.execute(sql.SQL("SELECT {} FROM orchard_projects p WHERE p.id = %s").format(
        _SELECT), (project_id,)).fetchone()
    return _project(row) if row else None


def find_project(conn: psycopg.Connection, name: str) -> dict | None:
    """The project of this name, whatever the case."""
    row = conn.execute(sql.SQL("SELECT {} FROM orchard_projects p WHERE lower(p.name) = "
                               "lower(%s)").format(_SELECT), (name.strip(),)).fetchone()
    return _project(row) if row else None


def list_projects(conn: psycopg.Connection, *, namespaces: Sequence[str] | None = None,
                  include_archived: bool = False) -> list[dict]:
    """Every project (of `namespaces` when given), by name. No cap: a portfolio is small,
    and a list that hid a project would not be a portfolio."""
    where = [sql.SQL("true")]
    params: dict[str, Any] = {}
    if namespaces is not None:
        where.append(sql.SQL("p.namespace = ANY(%(ns)s)"))
        params["ns"] = list(namespaces)
    if not include_archived:
        where.append(sql.SQL("NOT p.archived"))
    rows = conn.execute(sql.SQL("SELECT {} FROM orchard_projects p WHERE {} ORDER BY "
                                "lower(p.name)").format(_SELECT, sql.SQL(" AND ").join(where)),
                        params).fetchall()
    return [_project(r) for r in rows]


def _unique_name(fn):
    def wrapper(conn, *args, **kwargs):
        try:
            return fn(conn, *args, **kwargs)
        except psycopg.errors.UniqueViolation as exc:
            raise NameTaken("another project already has this name (names are unique, "
                            "whatever the case)") from exc
    return wrapper


@_unique_name
def insert_project(conn: psycopg.Connection, fields: dict[str, Any], *, actor: str,
                   by_agent: bool = False) -> dict:
    """Create a project (its namespace on first use) and its 'create' history row, in one
    statement."""
    unknown = set(fields) - WRITABLE
    if unknown:
        raise ValueError(f"unknown project fields {sorted(unknown)}")
    with conn.transaction():
        ensure_namespace(conn, fields["namespace"])
        cols = sql.SQL(", ").join(sql.Identifier(k) for k in fields)
        values = sql.SQL(", ").join(sql.Placeholder(k) for k in fields)
        row = conn.execute(sql.SQL(
            """WITH ins AS (INSERT INTO orchard_projects ({cols}) VALUES ({values})
                            RETURNING *),
                    hist AS (INSERT INTO orchard_history
                                 (project_id, change, actor, by_agent, after)
                             SELECT ins.id, 'create', %(_actor)s, %(_agent)s, to_jsonb(ins)
                             FROM ins)
               SELECT {cols_out} FROM ins p""").format(
            cols=cols, values=values, cols_out=_SELECT),
            {**fields, "_actor": actor, "_agent": by_agent}).fetchone()
    return _project(row)


def lock_project(conn: psycopg.Connection, project_id: int) -> dict | None:
    """The project locked FOR UPDATE (call inside a transaction): a milestone counts today's
    agent updates and writes without another writer in between."""
    row = conn.execute(sql.SQL("SELECT {} FROM orchard_projects p WHERE p.id = %s "
                               "FOR UPDATE").format(_SELECT), (project_id,)).fetchone()
    return _project(row) if row else None


@_unique_name
def update_project(conn: psycopg.Connection, project_id: int, changes: dict[str, Any], *,
                   change: str, actor: str, by_agent: bool = False,
                   milestone: str | None = None, at: datetime | None = None) -> dict:
    """Apply `changes` (column -> value) and write the history row (change, actor, before,
    after, milestone; at `at`, default the transaction's time) in the same statement. Call
    with the row locked (lock_project)."""
    unknown = set(changes) - WRITABLE
    if unknown or not changes:
        raise ValueError(f"cannot change {sorted(unknown) or 'nothing'}")
    if change not in CHANGES or change == "create":
        raise ValueError(f"unknown change {change!r}")
    sets = sql.SQL(", ").join(
        [sql.SQL("{} = {}").format(sql.Identifier(k), sql.Placeholder(k)) for k in changes]
        + [sql.SQL("updated_at = now()")])
    row = conn.execute(sql.SQL(
        """WITH old AS (SELECT to_jsonb(o) AS row FROM orchard_projects o WHERE o.id = %(_id)s),
                upd AS (UPDATE orchard_projects p SET {sets} WHERE p.id = %(_id)s RETURNING p.*),
                hist AS (INSERT INTO orchard_history
                             (project_id, change, actor, by_agent, before, after, milestone,
                              at)
                         SELECT upd.id, %(_change)s, %(_actor)s, %(_agent)s, old.row,
                                to_jsonb(upd), %(_milestone)s,
                                COALESCE(%(_at)s::timestamptz, now()) FROM upd, old)
           SELECT {cols} FROM upd p""").format(sets=sets, cols=_SELECT),
        {**changes, "_id": project_id, "_change": change, "_actor": actor,
         "_agent": by_agent, "_milestone": milestone, "_at": at}).fetchone()
    if row is None:
        raise LookupError(f"no project with id {project_id}")
    return _project(row)


def agent_updates_between(conn: psycopg.Connection, project_id: int, start: datetime,
                          end: datetime) -> int:
    """How many changes agents made to the project in [start, end)."""
    return int(conn.execute(
        "SELECT count(*) FROM orchard_history WHERE project_id = %s AND by_agent "
        "AND at >= %s AND at < %s", (project_id, start, end)).fetchone()[0])


HISTORY_COLUMNS = ("id", "project_id", "change", "actor", "by_agent", "at", "before", "after",
                   "milestone")


def history(conn: psycopg.Connection, project_id: int) -> list[dict]:
    """Every change of a project, in the order they were written."""
    rows = conn.execute(
        f"SELECT {', '.join(HISTORY_COLUMNS)} FROM orchard_history WHERE project_id = %s "
        "ORDER BY id", (project_id,)).fetchall()
    return [dict(zip(HISTORY_COLUMNS, r, strict=True)) for r in rows]


# --- proposals -------------------------------------------------------------------------------

PROPOSAL_COLUMNS = (
    "id", "key", "name", "repo", "signals", "cairn_projects", "cairn_titles", "sessions",
    "turns", "weeks", "first_active", "last_active", "state", "project_id", "decided_by",
    "decided_at", "discovered_at", "refreshed_at",
)
_PROPOSAL_SELECT = ", ".join(PROPOSAL_COLUMNS)
# What a re-discovery refreshes; never the state or the decision.
_REFRESHED = ("name", "repo", "signals", "cairn_projects", "cairn_titles", "sessions", "turns",
              "weeks", "first_active", "last_active")


def upsert_proposals(conn: psycopg.Connection, proposals: Sequence[dict]) -> dict[str, int]:
    """Insert new proposals and refresh the activity of known ones (by key), in one
    transaction. Returns {"new": n, "refreshed": m}."""
    new = 0
    with conn.transaction():
        for p in proposals:
            params = {k: p[k] for k in ("key", *_REFRESHED)}
            params["signals"], params["weeks"] = Jsonb(p["signals"]), Jsonb(p["weeks"])
            inserted = conn.execute(sql.SQL(
                """INSERT INTO orchard_proposals (key, {cols}) VALUES (%(key)s, {values})
                   ON CONFLICT (key) DO UPDATE SET {sets}, refreshed_at = now()
                   RETURNING (xmax = 0)""").format(
                cols=sql.SQL(", ").join(sql.Identifier(c) for c in _REFRESHED),
                values=sql.SQL(", ").join(sql.Placeholder(c) for c in _REFRESHED),
                sets=sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c))
                                        for c in _REFRESHED)),
                params).fetchone()[0]
            new += bool(inserted)
    return {"new": new, "refreshed": len(proposals) - new}


def list_proposals(conn: psycopg.Connection, state: str | None = "pending") -> list[dict]:
    """Proposals in `state` (None: all), most recently active first."""
    if state is not None and state not in PROPOSAL_STATES:
        raise ValueError(f"unknown proposal state {state!r}; use one of "
                         f"{', '.join(PROPOSAL_STATES)}")
    rows = conn.execute(
        f"SELECT {_PROPOSAL_SELECT} FROM orchard_proposals "
        "WHERE %(state)s::text IS NULL OR state = %(state)s "
        "ORDER BY last_active DESC NULLS LAST, key", {"state": state}).fetchall()
    return [dict(zip(PROPOSAL_COLUMNS, r, strict=True)) for r in rows]


def get_proposal(conn: psycopg.Connection, proposal_id: int, *, lock: bool = False
                 ) -> dict | None:
    row = conn.execute(f"SELECT {_PROPOSAL_SELECT} FROM orchard_proposals WHERE id = %s"
                       + (" FOR UPDATE" if lock else ""), (proposal_id,)).fetchone()
    return dict(zip(PROPOSAL_COLUMNS, row, strict=True)) if row else None


def decide_proposal(conn: psycopg.Connection, proposal_id: int, *, state: str, actor: str,
                    project_id: int | None = None) -> dict | None:
    """Accept (with the project it became) or dismiss a pending proposal; None when it is
    not pending any more."""
    row = conn.execute(
        f"""UPDATE orchard_proposals SET state = %s, project_id = %s, decided_by = %s,
                   decided_at = now()
            WHERE id = %s AND state = 'pending' RETURNING {_PROPOSAL_SELECT}""",
        (state, project_id, actor, proposal_id)).fetchone()
    return dict(zip(PROPOSAL_COLUMNS, row, strict=True)) if row else None


# --- weekly snapshots -------------------------------------------------------------------------

SNAPSHOT_COLUMNS = (
    "week", "project_id", "name", "namespace", "status", "priority", "next_action", "blockers",
    "deadline", "last_milestone", "last_milestone_at", "archived", "milestones", "sessions",
    "turns", "last_active", "run_id",
)


def states_at(conn: psycopg.Connection, until: datetime) -> list[dict]:
    """Each project as it stood just before `until` (the `after` of its last change before
    then), replayed from orchard_history; projects created later are absent."""
    rows = conn.execute(
        """SELECT DISTINCT ON (project_id) project_id, after FROM orchard_history
           WHERE at < %s ORDER BY project_id, at DESC, id DESC""", (until,)).fetchall()
    return [{**after, "id": project_id} for project_id, after in rows]


def milestones_between(conn: psycopg.Connection, start: datetime, end: datetime
                       ) -> dict[int, int]:
    rows = conn.execute(
        """SELECT project_id, count(*) FROM orchard_history
           WHERE change = 'milestone' AND at >= %s AND at < %s GROUP BY project_id""",
        (start, end)).fetchall()
    return {int(p): int(n) for p, n in rows}


def replace_snapshot(conn: psycopg.Connection, week: date, rows: Sequence[dict]) -> int:
    """The week's snapshot rows, replacing any earlier ones for that week (one transaction:
    re-running a week leaves exactly one row per project)."""
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in SNAPSHOT_COLUMNS)
    with conn.transaction():
        conn.execute("DELETE FROM orchard_snapshots WHERE week = %s", (week,))
        with conn.cursor() as cur:
            cur.executemany(
                sql.SQL("INSERT INTO orchard_snapshots ({}) VALUES ({})").format(
                    cols, sql.SQL(", ").join(sql.Placeholder(c) for c in SNAPSHOT_COLUMNS)),
                [{**r, "week": week} for r in rows])
    return len(rows)


def snapshot(conn: psycopg.Connection, week: date) -> list[dict]:
    rows = conn.execute(
        f"SELECT {', '.join(SNAPSHOT_COLUMNS)}, taken_at FROM orchard_snapshots WHERE week = %s "
        "ORDER BY lower(name)", (week,)).fetchall()
    return [dict(zip((*SNAPSHOT_COLUMNS, "taken_at"), r, strict=True)) for r in rows]
