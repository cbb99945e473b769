"""The projects, and the rules every face keeps (CLI, REST, dashboard, MCP).

- Scope: a project lives in a primary vault namespace; a caller limited to `work` lists,
  reads and changes work's projects only (another's name or id reads as missing), and
  creates none elsewhere. What it reads of cairn through a project (activity, evidence) is
  the linked conversations routed into its namespaces, and it links only cairn projects
  routed there (orchard/reading.py).
- Who writes is decided here, from the caller's Scope (vault/tokens.py), never by a face:
- People (a person's token, the admin, the CLI, the dashboard) edit anything (`add`,
  `edit`, `milestone`). Every change writes one history row (who, when, before, after) in
  the same statement; an edit that changes nothing writes none. Nothing is deleted:
  `archived` hides a project.
- Agents (an agent token over REST, any MCP server: `scope.agent`) update a project only at
  a milestone: `add` and `edit` are refused (Forbidden), an update without a milestone is
  refused, and so is more than MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY a day per
  project (status churn: `Churn`). The same milestone sent twice is recorded once. The
  database holds the first rule again: a history row by an agent must be a milestone (a
  CHECK).
- Text in (names, fields, milestones, a project's name or id) is refused when PostgreSQL
  cannot hold it (NUL, a lone surrogate: query/inputs.py), when it is too long (saying its
  length, a milestone too) or looks like a credential; at most MAX_BLOCKERS blockers and
  MAX_LINKS links of each kind. Text out passes privacy.egress (orchard/reading.py).
"""

from collections.abc import Iterable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from memory_platform.orchard.activity import ActivityIndex, is_path
from memory_platform.orchard.reading import Reader, shown_change, shown_project
from memory_platform.privacy.masking import MASK, looks_like_secret
from memory_platform.query.inputs import check_text
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database, orchard_activity
from memory_platform.store import orchard as store
from memory_platform.store.namespaces import ensure_namespace, parse_namespace
from memory_platform.vault.service import Conflict, Forbidden, NotFound, check
from memory_platform.vault.tokens import Scope

STATUSES = store.STATUSES
PRIORITIES = (1, 2, 3, 4, 5)  # 1 comes first
AGENT_ACTOR = "mcp:agent"
# At most this many blockers (each is a full-text search of the project's turns in every
# ranking) and cairn links of each kind.
MAX_BLOCKERS, MAX_LINKS = 20, 100
AGENT_WRITES = ("refused: an agent records milestones only (orchard_milestone, or POST "
                "/orchard/projects/{project}/milestones); adding or editing a project "
                "needs a person's token (memory-platform token create --kind person)")

__all__ = ["Churn", "Conflict", "Forbidden", "NotFound", "Refused", "STATUSES", "add", "edit",
           "get", "history", "list_projects", "milestone"]


class Refused(ValueError):
    """An agent's update that orchard does not take (no milestone, or churn); the message
    says why and what to do instead."""


class Churn(Refused):
    """An agent's milestone past the daily limit (REST answers 429)."""


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
    check_text(value, field)
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


def _texts(values: Iterable[str] | None, field: str, *, exact: bool = False,
           most: int = MAX_LINKS) -> list[str]:
    if isinstance(values, str):
        raise ValueError(f"{field}s are a list")
    values = list(values or ())
    if len(values) > most:
        raise ValueError(f"{len(values)} {field}s; at most {most}")
    found: list[str] = []
    for value in values:
        cleaned = _text(value, field, exact=exact)
        if cleaned and cleaned not in found:
            found.append(cleaned)
    return found


def _namespace(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("a project needs a namespace, e.g. work or personal")
    check_text(value, "namespace")
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
            out[key] = _texts(value, "blocker", most=MAX_BLOCKERS)
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
        shown_ref = str(ref) if len(str(ref)) <= 100 else str(ref)[:100] + "…"
        raise NotFound(f"no project {shown_ref!r}" + ("" if scope.unrestricted else
                       f" in {scope.describe()}"))
    return project


def resolve(conn, scope: Scope, ref: int | str) -> dict:
    """A project by id (digits) or name, within the scope (as stored: not for output)."""
    text = check_text(str(ref), "project").strip()
    found = store.find_project(conn, text)
    if found is None and text.isascii() and text.isdigit() and len(text) < 19:  # a bigint
        found = store.get_project(conn, int(text))
    return _visible(scope, found, ref)


def activity_index(db: Database, scope: Scope, projects: list[dict], *,
                   until: datetime | None = None) -> ActivityIndex:
    """The activity of these projects' links that `scope` may read (orchard/reading.py),
    from one scan of cairn."""
    values = sorted({v for p in projects for v in p["cairn_projects"]})
    titles = sorted({t for p in projects for t in p["cairn_titles"]})
    with db.connect() as conn:
        rows = orchard_activity.activity_rows(conn, until=until, links=(values, titles))
    return ActivityIndex(Reader(scope).rows(rows))


def with_activity(db: Database, scope: Scope, projects: list[dict], *,
                  today: date | None = None, index: ActivityIndex | None = None
                  ) -> list[dict]:
    """Each project with `activity`: sessions, turns, first/last active day, this week's
    sessions and turns, counting the conversations `scope` may read."""
    if not projects:
        return []
    if index is None:
        index = activity_index(db, scope, projects)
    monday = week_start(today or utc_today())
    found = []
    for project in projects:
        activity = index.activity(project["cairn_projects"], project["cairn_titles"])
        found.append({**project, "activity": {
            "sessions": activity.sessions, "turns": activity.turns,
            "first_active": activity.first_active, "last_active": activity.last_active,
            "this_week": activity.in_week(monday)}})
    return found


def in_scope(db: Database, scope: Scope, *, status: str | None = None,
             namespace: str | None = None, include_archived: bool = False) -> list[dict]:
    """The projects in scope as stored (no activity, not masked: for the services)."""
    if status is not None and status not in STATUSES:
        raise ValueError(f"unknown status {status!r}; use one of {', '.join(STATUSES)}")
    if namespace is not None:
        check(scope, check_text(namespace, "namespace"))
    namespaces = [namespace] if namespace else (
        None if scope.unrestricted else sorted(scope.primaries or ()))
    with db.connect() as conn:
        rows = store.list_projects(conn, namespaces=namespaces,
                                   include_archived=include_archived)
    return [r for r in rows if status is None or r["status"] == status]


def list_projects(db: Database, scope: Scope, *, status: str | None = None,
                  namespace: str | None = None, include_archived: bool = False,
                  activity: bool = True) -> list[dict]:
    """Every project in scope (filters: status, namespace), by name, with its activity."""
    rows = in_scope(db, scope, status=status, namespace=namespace,
                    include_archived=include_archived)
    if activity:
        rows = with_activity(db, scope, rows)
    return [shown_project(r) for r in rows]


def get(db: Database, scope: Scope, ref: int | str, *, with_history: bool = False) -> dict:
    with db.connect() as conn:
        project = resolve(conn, scope, ref)
        changes = store.history(conn, project["id"]) if with_history else None
    found = shown_project(with_activity(db, scope, [project])[0])
    if changes is not None:
        found["history"] = [shown_change(c) for c in changes]
    return found


def history(db: Database, scope: Scope, ref: int | str) -> list[dict]:
    """Every change of the project, oldest first."""
    with db.connect() as conn:
        return [shown_change(c) for c in store.history(conn, resolve(conn, scope, ref)["id"])]


# --- writing -----------------------------------------------------------------------------


def person_only(scope: Scope) -> None:
    """Refuse an agent's scope where a person must write (Forbidden, saying what an agent
    may do instead)."""
    if scope.agent:
        raise Forbidden(AGENT_WRITES)


def add(db: Database, scope: Scope, *, name: str, namespace: str, actor: str,
        **fields: Any) -> dict:
    """A person's new project (CLI, REST, dashboard, or accepting a proposal). A local repo
    path links the project to the Claude Code sessions run there unless `cairn_projects`
    says otherwise."""
    person_only(scope)
    values = clean({"name": name, "namespace": namespace, **fields})
    check(scope, values["namespace"])
    if values.get("repo") and "cairn_projects" not in values and is_path(values["repo"]):
        values["cairn_projects"] = [values["repo"]]
    Reader(scope).check_links(values.get("cairn_projects", ()))
    blocked_needs_blockers({"status": values.get("status", "active"),
                            "blockers": values.get("blockers", [])})
    with db.connect() as conn:
        try:
            return shown_project(store.insert_project(conn, values, actor=actor))
        except store.NameTaken:
            raise Conflict(f"a project named {values['name']!r} already exists") from None


def edit(db: Database, scope: Scope, ref: int | str, *, actor: str, **changes: Any) -> dict:
    """A person's edit of any field (archived=True archives, False restores). Returns the
    project with `changed`: False when nothing differed (and no history row was written)."""
    person_only(scope)
    values = clean(changes)
    if "namespace" in values:
        check(scope, values["namespace"])
    Reader(scope).check_links(values.get("cairn_projects", ()))
    with db.connect() as conn, conn.transaction():
        project = store.lock_project(conn, resolve(conn, scope, ref)["id"])
        assert project is not None  # resolved in this transaction, never deleted
        differ = {k: v for k, v in values.items() if project[k] != v}
        if not differ:
            return {**shown_project(project), "changed": False}
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
    return {**shown_project(row), "changed": True}


def day_start(now: datetime, settings: Settings) -> datetime:
    """Midnight of `now`'s day in MEMORY_PLATFORM_TIMEZONE: where an agent's daily count
    starts."""
    zone = ZoneInfo(settings.timezone)
    local = now.astimezone(zone)
    return datetime.combine(local.date(), time.min, tzinfo=zone)


def milestone(db: Database, scope: Scope, ref: int | str, what: str | None, *, actor: str,
              next_action: str | None = None, blockers: Iterable[str] | None = None,
              status: str | None = None, now: datetime | None = None,
              settings: Settings | None = None) -> dict:
    """Record a milestone (`what` was reached), optionally with the next action, the
    blockers (a list replaces the old one; [] clears it) and the status. For an agent
    (`scope.agent`) it is the only write there is, limited per project and day. Returns the
    project with `changed` (False when this milestone was already the last one recorded)."""
    settings = settings or load_settings()
    now = now or datetime.now(timezone.utc)
    agent = scope.agent
    if what is None or (isinstance(what, str) and not what.split()):
        raise Refused("refused: an update needs a milestone: say what was reached in `what` "
                      "(orchard is written at milestones, not on every turn)")
    what = _text(what, "milestone", required=True)
    changes: dict[str, Any] = {"last_milestone": what, "last_milestone_at": now}
    if next_action is not None:
        changes["next_action"] = next_action
    if blockers is not None:
        changes["blockers"] = blockers
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
            return {**shown_project(project), "changed": False}
        blocked_needs_blockers({**project, **values})
        if agent:
            limit = settings.orchard_agent_updates_per_day
            start = day_start(now, settings)
            done = store.agent_updates_between(conn, project["id"], start,
                                               start + timedelta(days=1))
            if done >= limit:
                raise Churn(
                    f"refused: agents already recorded {done} milestone(s) on "
                    f"{project['name']!r} today, the limit "
                    f"(MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY={limit}); orchard is "
                    f"kept at milestones, not status churn. Record the next one tomorrow, "
                    f"or ask the user to edit the project")
        # The history row carries the milestone's time: the daily count reads the same clock.
        row = store.update_project(conn, project["id"], values, change="milestone",
                                   actor=actor, by_agent=agent, milestone=what, at=now)
    return {**shown_project(row), "changed": True}


def utc_today() -> date:
    return datetime.now(timezone.utc).date()


def week_start(day: date) -> date:
    """The Monday of `day`'s ISO week."""
    return date.fromordinal(day.toordinal() - day.weekday())
