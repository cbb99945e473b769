"""Weekly snapshots: the portfolio as of each week, for history and the analytics marts.

A snapshot of the week starting Monday W holds one row per project that existed by the
week's end: its state then (replayed from orchard_history, so a snapshot of a past week
taken today says what was true then, not what is true now), the milestones recorded in the
week, and the week's activity in cairn (sessions, turns, last active day up to the week's
end). Weeks are ISO weeks in UTC, like the activity. Taking a week's snapshot again
replaces that week's rows: one row per (week, project), whatever the number of runs.

A snapshot is taken unscoped (by Dagster, for the lake and the weekly report): its activity
counts every linked conversation. Its text fields are masked before they are written
(privacy.egress: the lake is outside the store), and a scoped reader gets the rows of its
namespaces without those counts, which could rest on conversations it may not read
(orchard/reading.py).
"""

from collections import Counter
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from memory_platform.orchard.activity import ActivityIndex
from memory_platform.orchard.reading import shown_project
from memory_platform.store import Database, orchard_activity
from memory_platform.store import orchard as store
from memory_platform.vault.tokens import Scope


def week_bounds(week: date) -> tuple[datetime, datetime]:
    """[Monday 00:00, next Monday 00:00) in UTC; a day that is not a Monday is refused."""
    if week.weekday() != 0:
        raise ValueError(f"{week} is a {week:%A}; a snapshot week starts on a Monday")
    start = datetime.combine(week, time.min, tzinfo=timezone.utc)
    return start, start + timedelta(days=7)


def _day(value: Any) -> date | None:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _moment(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def take_snapshot(db: Database, week: date, *, run_id: str | None = None) -> dict[str, Any]:
    """Write the snapshot of the week starting `week` (a Monday), replacing an earlier one.
    Returns {week, projects, by_status, milestones, sessions, turns}."""
    start, end = week_bounds(week)
    with db.connect() as conn:
        states = store.states_at(conn, end)
        milestones = store.milestones_between(conn, start, end)
        links = (sorted({v for s in states for v in s["cairn_projects"]}),
                 sorted({t for s in states for t in s["cairn_titles"]}))
        index = ActivityIndex(orchard_activity.activity_rows(conn, until=end, links=links))
    rows = []
    for state in states:
        activity = index.activity(state["cairn_projects"], state["cairn_titles"])
        this_week = activity.in_week(week)
        rows.append(shown_project({
            "project_id": state["id"], "name": state["name"], "namespace": state["namespace"],
            "status": state["status"], "priority": state["priority"],
            "next_action": state["next_action"], "blockers": list(state["blockers"]),
            "deadline": _day(state["deadline"]), "last_milestone": state["last_milestone"],
            "last_milestone_at": _moment(state["last_milestone_at"]),
            "archived": state["archived"], "milestones": milestones.get(state["id"], 0),
            "sessions": this_week["sessions"], "turns": this_week["turns"],
            "last_active": activity.last_active, "run_id": run_id}))
    with db.connect() as conn:
        store.replace_snapshot(conn, week, rows)
    return {"week": week, "projects": len(rows),
            "by_status": dict(Counter(r["status"] for r in rows if not r["archived"])),
            "milestones": sum(r["milestones"] for r in rows),
            "sessions": sum(r["sessions"] for r in rows),
            "turns": sum(r["turns"] for r in rows)}


# What a snapshot row says of cairn (see the module docstring).
CAIRN_COUNTS = ("sessions", "turns", "last_active")


def read_snapshot(db: Database, scope: Scope, week: date) -> list[dict]:
    """The week's snapshot rows in scope, by name; for a scoped caller without the cairn
    counts (None)."""
    week_bounds(week)
    with db.connect() as conn:
        rows = [shown_project(r) for r in store.snapshot(conn, week)
                if scope.permits(r["namespace"])]
    if not scope.unrestricted:
        rows = [{**r, **dict.fromkeys(CAIRN_COUNTS)} for r in rows]
    return rows
