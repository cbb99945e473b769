"""Discovery: projects proposed from cairn, waiting for a person.

Signals, from one scan of the raw record (store.orchard_activity.activity_rows):
- a path sessions ran in (Claude Code's and Codex's cwd); a subfolder of a git repository
  (a session there reports a branch) folds into the repository;
- a named project of a chat app (claude.ai's projects.json);
- a chat title (claude.ai, ChatGPT, Gemini) repeated in MEMORY_PLATFORM_ORCHARD_TITLE_REPEATS
  conversations or more ("Thesis chapter 3", weekly).
Signals with the same normalized name merge into one proposal (`/code/bookminder` and the
claude.ai project `Bookminder`), with its activity: sessions and turns, per week, first and
last active day. What an existing project already covers (its paths, titles or name) is
not proposed again.

Nothing here creates a project: proposals wait in `orchard_proposals` until a person
accepts one (then it becomes a project in its namespace, by default the routing rules'
namespace for its path, linked to its repo and its cairn turns) or dismisses it. A
re-discovery refreshes a proposal's activity and never its decision.

Proposals are drawn from every conversation, unscoped: listing, accepting and dismissing
them needs an unscoped person (the admin token, open loopback, the CLI); a caller limited
to namespaces is refused here, whatever the face. What they show leaves masked
(orchard/reading.py): a chat title or a path can hold a credential.
"""

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from memory_platform.orchard import projects as project_service
from memory_platform.orchard.activity import ActivityIndex, is_path, title_key, under
from memory_platform.orchard.reading import shown_project, shown_proposal
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database, orchard_activity
from memory_platform.store import orchard as store
from memory_platform.vault.routing import Routing
from memory_platform.vault.service import Conflict, Forbidden, NotFound, check
from memory_platform.vault.tokens import Scope

CHAT_SOURCES = ("claude-ai", "chatgpt", "gemini")
# Titles chat apps give by default, or too vague to name a project.
GENERIC_TITLES = frozenset({"new chat", "untitled", "new conversation", "hello", "hi", "test",
                            "help", "question", "quick question", "conversation"})


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


@dataclass
class Group:
    """One proposed project: the signals that name it and the cairn links they give."""

    name: str
    signals: list[dict] = field(default_factory=list)
    cairn_projects: list[str] = field(default_factory=list)
    cairn_titles: list[str] = field(default_factory=list)
    repo: str | None = None

    @property
    def key(self) -> str:
        return slug(self.name)


def _basename(path: str) -> list[str]:
    return [p for p in re.split(r"[\\/]", path) if p]


def find_groups(rows: list[dict], *, title_repeats: int) -> list[Group]:
    """The proposals the activity rows hold, merged by key, by key."""
    values: dict[str, dict] = {}
    for row in rows:
        if row["project"] is not None:
            found = values.setdefault(row["project"], {"git": False, "sources": set()})
            found["git"] |= bool(row["git"])
            found["sources"].add(row["source"])
    paths = sorted(v for v in values if is_path(v))
    repos = sorted((p for p in paths if values[p]["git"]), key=len)
    roots: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        root = next((r for r in repos if r != path and under(path, r)), path)
        roots[root].append(path)
    # Two roots with one folder name (~/a/api, ~/b/api) are told apart by their parent.
    names = defaultdict(list)
    for root in roots:
        names[(_basename(root) or [root])[-1]].append(root)
    groups: dict[str, Group] = {}

    def group(name: str) -> Group:
        return groups.setdefault(slug(name) or name, Group(name))

    for name, same in names.items():
        for root in same:
            parts = _basename(root) or [root]
            g = group(name if len(same) == 1 else "-".join(parts[-2:]))
            g.repo = g.repo or root
            for path in roots[root]:
                g.cairn_projects.append(path)
                g.signals.append({"kind": "path", "value": path, "git": values[path]["git"],
                                  "sources": sorted(values[path]["sources"])})
    for value in sorted(v for v in values if not is_path(v)):
        g = group(value)
        g.cairn_projects.append(value)
        g.signals.append({"kind": "named project", "value": value,
                          "sources": sorted(values[value]["sources"])})
    titled: dict[str, dict] = {}
    for row in rows:
        if row["title"] is None or row["source"] not in CHAT_SOURCES or not row["turns"]:
            continue
        found = titled.setdefault(title_key(row["title"]),
                                  {"conversations": set(), "variants": defaultdict(int)})
        found["conversations"].add(row["conversation_id"])
        found["variants"][row["title"]] += 1
    for key, found in sorted(titled.items()):
        if len(found["conversations"]) < title_repeats or key in GENERIC_TITLES:
            continue
        variants = sorted(found["variants"], key=lambda t: (-found["variants"][t], t))
        g = group(variants[0].strip())
        g.cairn_titles.extend(variants)
        g.signals.append({"kind": "title", "value": variants[0].strip(),
                          "conversations": len(found["conversations"])})
    return [groups[k] for k in sorted(groups) if groups[k].key]


def _uncovered(group: Group, known: list[dict]) -> Group | None:
    """The group without what existing projects already cover; None when nothing is left."""
    if any(slug(p["name"]) == group.key for p in known):
        return None
    links = [v for p in known for v in p["cairn_projects"]]
    titles = {title_key(t) for p in known for t in p["cairn_titles"]}

    def covered(value: str) -> bool:
        return any(value == v or (v.startswith("/") and under(value, v)) for v in links)

    left = Group(group.name, repo=group.repo)
    left.cairn_projects = [v for v in group.cairn_projects if not covered(v)]
    left.cairn_titles = [t for t in group.cairn_titles if title_key(t) not in titles]
    kept = set(left.cairn_projects) | {title_key(t) for t in left.cairn_titles}
    left.signals = [s for s in group.signals
                    if s["value"] in kept or title_key(s["value"]) in kept]
    if left.repo is not None and covered(left.repo):
        left.repo = None
    return left if left.signals else None


def discover(db: Database, settings: Settings | None = None) -> dict[str, Any]:
    """Propose projects from cairn (refreshing known proposals). Creates no project.
    Returns {found, new, refreshed, pending, proposals} (the proposals masked)."""
    settings = settings or load_settings()
    with db.connect() as conn:
        rows = orchard_activity.activity_rows(conn)
        known = store.list_projects(conn, include_archived=True)
    index = ActivityIndex(rows)
    proposals = []
    for group in find_groups(rows, title_repeats=settings.orchard_title_repeats):
        left = _uncovered(group, known)
        if left is None:
            continue
        activity = index.activity(left.cairn_projects, left.cairn_titles, exact=True)
        proposals.append({
            "key": group.key, "name": left.name, "repo": left.repo, "signals": left.signals,
            "cairn_projects": left.cairn_projects, "cairn_titles": left.cairn_titles,
            "sessions": activity.sessions, "turns": activity.turns,
            "weeks": activity.as_dict()["weeks"], "first_active": activity.first_active,
            "last_active": activity.last_active})
    with db.connect() as conn:
        counts = store.upsert_proposals(conn, proposals)
        pending = store.list_proposals(conn, "pending")
    return {"found": len(proposals), **counts, "pending": len(pending),
            "proposals": [shown_proposal(p) for p in proposals]}


def unscoped_person(scope: Scope) -> None:
    """Refuse a caller who may not decide proposals: one limited to namespaces (they are
    drawn from every conversation) or an agent."""
    project_service.person_only(scope)
    if not scope.unrestricted:
        raise Forbidden("proposals are drawn from every conversation in cairn, unscoped; "
                        f"this caller is limited to {scope.describe()} (use the admin token "
                        "MEMORY_PLATFORM_API_TOKEN, or the CLI)")


def list_proposals(db: Database, scope: Scope, state: str | None = "pending") -> list[dict]:
    unscoped_person(scope)
    with db.connect() as conn:
        return [shown_proposal(p) for p in store.list_proposals(conn, state)]


def _routed_namespace(proposal: dict) -> str:
    for signal in proposal["signals"]:
        if signal["kind"] == "path":
            return Routing.load().route(project=signal["value"], source=signal["sources"][0])
    source = next((s["sources"][0] for s in proposal["signals"] if s.get("sources")), None)
    return Routing.load().route(project=None, source=source)


def accept(db: Database, scope: Scope, proposal_id: int, *, actor: str,
           namespace: str | None = None, name: str | None = None,
           **fields: Any) -> dict:
    """A person accepts a proposal: it becomes a project (in `namespace`, by default the
    routing rules' namespace for its path) linked to its repo and cairn turns, and the
    proposal records who accepted it. Returns {proposal, project}."""
    unscoped_person(scope)
    with db.connect() as conn, conn.transaction():
        proposal = store.get_proposal(conn, proposal_id, lock=True)
        if proposal is None:
            raise NotFound(f"no proposal {proposal_id}")
        if proposal["state"] != "pending":
            raise Conflict(f"proposal {proposal_id} was already {proposal['state']} by "
                           f"{proposal['decided_by']} at {proposal['decided_at']:%Y-%m-%d %H:%M}")
        values = project_service.clean({
            "name": name or proposal["name"],
            "namespace": namespace or _routed_namespace(proposal),
            "repo": proposal["repo"], "cairn_projects": proposal["cairn_projects"],
            "cairn_titles": proposal["cairn_titles"], **fields})
        check(scope, values["namespace"])
        project_service.blocked_needs_blockers({"status": values.get("status", "active"),
                                                "blockers": values.get("blockers", [])})
        try:
            project = store.insert_project(conn, values, actor=actor)
        except store.NameTaken:
            raise Conflict(f"a project named {values['name']!r} already exists; accept under "
                           f"another name (--name) or dismiss the proposal") from None
        decided = store.decide_proposal(conn, proposal_id, state="accepted", actor=actor,
                                        project_id=project["id"])
    return {"proposal": shown_proposal(decided), "project": shown_project(project)}


def dismiss(db: Database, scope: Scope, proposal_id: int, *, actor: str) -> dict:
    """A person says this is not a project; discovery will not propose it again."""
    unscoped_person(scope)
    with db.connect() as conn:
        decided = store.decide_proposal(conn, proposal_id, state="dismissed", actor=actor)
        if decided is None:
            found = store.get_proposal(conn, proposal_id)
            if found is None:
                raise NotFound(f"no proposal {proposal_id}")
            raise Conflict(f"proposal {proposal_id} was already {found['state']} by "
                           f"{found['decided_by']}")
    return shown_proposal(decided)
