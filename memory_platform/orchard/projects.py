"""The projects, and the rules every face keeps (CLI, REST, dashboard, MCP).

- Scope: a project lives in a primary vault namespace; a caller limited to `work` lists,
  reads and changes work's projects only (another's name or id reads as missing), and
  creates none elsewhere.
- People edit anything (`edit`, `milestone` with agent=False). Every change writes one
  history row (who, when, before, after) in the same statement; an edit that changes
  nothing writes none. Nothing is deleted: `archived` hides a project.
- Agents (MCP) update a project only at a milestone (`milestone` with agent=True): an
  update without one is refused, and so is more than
  MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY a day per project (status churn). The same
  milestone sent twice is recorded once. The database holds the first rule again: a
  history row by an agent must be a milestone (a CHECK).
"""

from collections.abc import Iterable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from memory_platform.orchard.activity import ActivityIndex, is_path
from memory_platform.privacy.masking import MASK, looks_like_secret
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database, orchard_activity
from memory_platform.store import orchard as store
from memory_platform.store.namespaces import ensure_namespace, parse_namespace
from memory_platform.vault.service import Conflict, Forbidden, NotFound, check
from memory_platform.vault.tokens import Scope

STATUSES = store.STATUSES
PRIORITIES = (1, 2, 3, 4, 5)  # 1 comes first
AGENT_ACTOR = "mcp:agent"

__all__ = ["Conflict", "Forbidden", "NotFound", "Refused", "STATUSES", "add", "edit", "get",
           "history", "list_projects", "milestone"]


class Refused(ValueError):
    """An agent's update that orchard does not take (no milestone, or churn); the message
    says why and what to do instead."""


# --- validation --------------------------------------------------------------------------


def _text(value: Any, field: str, *, required: bool = False, limit: int = 2000,
          exact: bool = False) -> str | None:
    """Trimmed text (spaces collapsed, unless `exact`: a path is matched as it is)."""
    if value is None:
        if required:
            raise ValueError(f"a project needs a {field}")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{field} must be text")
    value = value.strip() if exact else " ".join(value.split())
    if not value:
        if required:
            raise ValueError(f"a project needs a {field}")
        return None
    if len(value) > limit:
        raise ValueError(f"{field} is {len(value)} characters; at most {limit}")
    if MASK in value or looks_like_secret(value):
        raise ValueError(f"refused: the {field} looks like it holds a credential; secrets "
                         "stay out of orchard (it is shown to agents and models)")
    return value


def _texts(values: Iterable[str] | None, field: str, *, exact: bool = False) -> list[str]:
    if isinstance(values, str):
        raise ValueError(f"{field}s are a list")
    found: list[str] = []
    for value in values or ():
        cleaned = _text(value, field, exact=exact)
        if cleaned and cleaned not in found:
            found.append(cleaned)
    return found


def _namespace(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("a project needs a namespace, e.g. work or personal")
    kind, primary = parse_namespace(value.strip())
    if kind != "primary":
        raise ValueError(f"{value!r} is a shadow namespace; a project lives in a primary "
                         f"one ({primary!r})")
    return value.strip()


def _day(value: Any) -> date | None:
    if value is None or isinstance(value, date) and not isinstance(value, datetime):
        return value
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise ValueError(f"deadline {value!r} is not a date like 2026-04-30") from None


def clean(fields: dict[str, Any]) -> dict[str, Any]:
    """Validated, normalized project fields; a bad value is a ValueError saying which."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "name":
            out[key] = _text(value, "name", required=True, limit=100)
        elif key == "namespace":
            out[key] = _namespace(value)
        elif key == "repo":
            out[key] = _text(value, "repo", exact=True)
        elif key in ("next_action", "last_milestone"):
            out[key] = _text(value, key.replace("_", " "))
        elif key == "status":
            if value not in STATUSES:
                raise ValueError(f"unknown status {value!r}; use one of {', '.join(STATUSES)}")
            out[key] = value
        elif key == "priority":
            if isinstance(value, bool) or not isinstance(value, int) or value not in PRIORITIES:
                raise ValueError(f"priority {value!r}: use 1 (first) to 5 (last)")
            out[key] = value
        elif key == "blockers":
            out[key] = _texts(value, "blocker")
        elif key == "cairn_projects":
            out[key] = _texts(value, "cairn project", exact=True)
        elif key == "cairn_titles":
            out[key] = _texts(value, "cairn title")
        elif key == "deadline":
            out[key] = _day(value)
        elif key == "archived":
            out[key] = bool(value)
        elif key == "last_milestone_at":
            out[key] = value
        else:
            raise ValueError(f"unknown project field {key!r}")
    return out


def blocked_needs_blockers(project: dict) -> None:
    """A project is blocked by something: status 'blocked' with no blocker is refused."""
    if project["status"] == "blocked" and not project["blockers"]:
        raise ValueError("status 'blocked' needs a blocker: say what blocks it")


# --- reading -----------------------------------------------------------------------------


def _visible(scope: Scope, project: dict | None, ref: Any) -> dict:
    if project is None or not scope.permits(project["namespace"]):
        raise NotFound(f"no project {ref!r}" + ("" if scope.unrestricted else
                       f" in {scope.describe()}"))
    return project


def resolve(conn, scope: Scope, ref: int | str) -> dict:
    """A project by id (digits) or name, within the scope."""
    text = str(ref).strip()
    found = store.find_project(conn, text)
    if found is None and text.isdigit():
        found = store.get_project(conn, int(text))
    return _visible(scope, found, ref)


def with_activity(db: Database, projects: list[dict], *, today: date | None = None
                  ) -> list[dict]:
    """Each project with `activity`: sessions, turns, first/last active day, this week's
    sessions and turns (one scan of cairn for all of them)."""
    if not projects:
        return []
    values = sorted({v for p in projects for v in p["cairn_projects"]})
    titles = sorted({t for p in projects for t in p["cairn_titles"]})
    with db.connect() as conn:
        index = ActivityIndex(orchard_activity.activity_rows(conn, links=(values, titles)))
    monday = week_start(today or utc_today())
    found = []
    for project in projects:
        activity = index.activity(project["cairn_projects"], project["cairn_titles"])
        found.append({**project, "activity": {
            "sessions": activity.sessions, "turns": activity.turns,
            "first_active": activity.first_active, "last_active": activity.last_active,
            "this_week": activity.in_week(monday)}})
    return found


def list_projects(db: Database, scope: Scope, *, status: str | None = None,
                  namespace: str | None = None, include_archived: bool = False,
                  activity: bool = True) -> list[dict]:
    """Every project in scope (filters: status, namespace), by name, with its activity."""
    if status is not None and status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if namespace is not None:
        check(scope, namespace)
    namespaces = [namespace] if namespace else (
        None if scope.unrestricted else sorted(scope.primaries or ()))
    with db.connect() as conn:
        rows = store.list_projects(conn, namespaces=namespaces,
                                   include_archived=include_archived)
    rows = [r for r in rows if status is None or r["status"] == status]
    return with_activity(db, rows) if activity else rows


def get(db: Database, scope: Scope, ref: int | str, *, with_history: bool = False) -> dict:
    with db.connect() as conn:
        project = resolve(conn, scope, ref)
        changes = store.history(conn, project["id"]) if with_history else None
    found = with_activity(db, [project])[0]
    if changes is not None:
        found["history"] = changes
    return found


def history(db: Database, scope: Scope, ref: int | str) -> list[dict]:
    """Every change of the project, oldest first."""
    with db.connect() as conn:
        return store.history(conn, resolve(conn, scope, ref)["id"])


# --- writing -----------------------------------------------------------------------------


def add(db: Database, scope: Scope, *, name: str, namespace: str, actor: str,
        **fields: Any) -> dict:
    """A person's new project (CLI, REST, dashboard, or accepting a proposal). A local repo
    path links the project to the Claude Code sessions run there unless `cairn_projects`
    says otherwise."""
    values = clean({"name": name, "namespace": namespace, **fields})
    check(scope, values["namespace"])
    if values.get("repo") and "cairn_projects" not in values and is_path(values["repo"]):
        values["cairn_projects"] = [values["repo"]]
    blocked_needs_blockers({"status": values.get("status", "active"),
                            "blockers": values.get("blockers", [])})
    with db.connect() as conn:
        try:
            return store.insert_project(conn, values, actor=actor)
        except store.NameTaken:
            raise Conflict(f"a project named {values['name']!r} already exists") from None


def edit(db: Database, scope: Scope, ref: int | str, *, actor: str, **changes: Any) -> dict:
    """A person's edit of any field (archived=True archives, False restores). Returns the
    project with `changed`: False when nothing differed (and no history row was written)."""
    values = clean(changes)
    if "namespace" in values:
        check(scope, values["namespace"])
    with db.connect() as conn, conn.transaction():
        project = store.lock_project(conn, resolve(conn, scope, ref)["id"])
        assert project is not None  # resolved in this transaction, never deleted
        differ = {k: v for k, v in values.items() if project[k] != v}
        if not differ:
            return {**project, "changed": False}
        blocked_needs_blockers({**project, **differ})
        kind = "edit"
        if set(differ) == {"archived"}:
            kind = "archive" if differ["archived"] else "restore"
        if "namespace" in differ:
            ensure_namespace(conn, differ["namespace"])
        try:
            row = store.update_project(conn, project["id"], differ, change=kind, actor=actor)
        except store.NameTaken:
            raise Conflict(f"a project named {differ.get('name')!r} already exists") from None
    return {**row, "changed": True}


def day_start(now: datetime, settings: Settings) -> datetime:
    """Midnight of `now`'s day in MEMORY_PLATFORM_TIMEZONE: where an agent's daily count
    starts."""
    zone = ZoneInfo(settings.timezone)
    local = now.astimezone(zone)
    return datetime.combine(local.date(), time.min, tzinfo=zone)


def milestone(db: Database, scope: Scope, ref: int | str, what: str | None, *, actor: str,
              agent: bool, next_action: str | None = None,
              blockers: Iterable[str] | None = None, status: str | None = None,
              now: datetime | None = None, settings: Settings | None = None) -> dict:
    """Record a milestone (`what` was reached), optionally with the next action, the
    blockers (a list replaces the old one; [] clears it) and the status. From an agent
    (`agent=True`) it is the only write there is, limited per project and day. Returns the
    project with `changed` (False when this milestone was already the last one recorded)."""
    settings = settings or load_settings()
    now = now or datetime.now(timezone.utc)
    try:
        what = _text(what, "milestone", required=True)
    except ValueError as exc:
        if "credential" in str(exc):
            raise
        raise Refused("refused: an update needs a milestone: say what was reached in `what` "
                      "(orchard is written at milestones, not on every turn)") from None
    changes: dict[str, Any] = {"last_milestone": what, "last_milestone_at": now}
    if next_action is not None:
        changes["next_action"] = next_action
    if blockers is not None:
        changes["blockers"] = list(blockers)
    if status is not None:
        changes["status"] = status
    values = clean(changes)
    with db.connect() as conn, conn.transaction():
        project = store.lock_project(conn, resolve(conn, scope, ref)["id"])
        assert project is not None
        if project["archived"]:
            raise Conflict(f"project {project['name']!r} is archived; a person restores it "
                           f"first (memory-platform orchard edit {project['id']} --restore)")
        news = {k: v for k, v in values.items() if k != "last_milestone_at"
                and project[k] != v}
        if not news:  # the same milestone again (a retried call): recorded once
            return {**project, "changed": False}
        blocked_needs_blockers({**project, **values})
        if agent:
            limit = settings.orchard_agent_updates_per_day
            start = day_start(now, settings)
            done = store.agent_updates_between(conn, project["id"], start,
                                               start + timedelta(days=1))
            if done >= limit:
                raise Refused(
                    f"refused: agents already recorded {done} milestone(s) on "
                    f"{project['name']!r} today, the limit "
                    f"(MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY={limit}); orchard is "
                    f"kept at milestones, not status churn. Record the next one tomorrow, "
                    f"or ask the user to edit the project")
        # The history row carries the milestone's time: the daily count reads the same clock.
        row = store.update_project(conn, project["id"], values, change="milestone",
                                   actor=actor, by_agent=agent, milestone=what, at=now)
    return {**row, "changed": True}


def utc_today() -> date:
    return datetime.now(timezone.utc).date()


def week_start(day: date) -> date:
    """The Monday of `day`'s ISO week."""
    return date.fromordinal(day.toordinal() - day.weekday())
