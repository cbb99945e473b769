"""Which facts a session start in a project gets: decided from the routed project (its
namespace, its repository root, the namespace's topics), never from a model or from the
working directory's basename, so the pack is the same memories whichever process builds
it (the hook cold, in its own process, or the resident one warm: recall/server.py).

    describe("/home/me/src/acme/services/web", routing)
        -> Project(namespace="acme", name="acme", root=Path("/home/me/src/acme"),
                   parts=("services", "web"), routed=True)

- The namespace is the one the routing rule names for the directory (vault/routing.py).
- The root is the repository `[repos]` ties to that namespace when the directory is inside
  it; the project's name is the root's name, else the namespace's (a `<repo>/services/web`
  session is in project `acme`, not `web`).
- Parts are the directory's path below the root (all of it without a root): a topic of the
  namespace named like a part (`web`, `billing`) ranks that topic's facts first.
- With no routing rule for the directory (the routing default), there is no project: only
  the facts of topics named like a part of the directory are relevant.

The facts themselves, and their order, are store/recall.project_facts's: current,
reviewed, non-sensitive facts of the namespace; matching topics first, then project facts,
references, decisions, the person's, feedback, episodes; newest first within each.
"""

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memory_platform.store import Database
from memory_platform.store import recall as recall_store
from memory_platform.vault.routing import Routing

SOURCE = "claude-code"
CATEGORY_ORDER = ("project", "reference", "decision", "user", "feedback", "episode")
_PART = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Project:
    namespace: str
    name: str
    root: Path | None
    parts: tuple[str, ...]
    routed: bool  # a routing rule names the namespace (not the routing default)


def describe(directory: str, routing: Routing | None = None) -> Project:
    """The project a working directory belongs to (see the module docstring)."""
    routing = routing or Routing.load()
    namespace = routing.route(project=directory, source=SOURCE)
    routed = any(r.project is not None and r.matches(project=directory, source=SOURCE)
                 for r in routing.rules)
    path = PurePosixPath(directory)
    root = routing.repos.get(namespace)
    below: tuple[str, ...] = path.parts[1:] if path.is_absolute() else path.parts
    if root is not None:
        try:
            below = path.relative_to(PurePosixPath(root)).parts
        except ValueError:
            root = None  # the repository is elsewhere: this directory is not in it
    name = root.name if root is not None else namespace
    parts = tuple(dict.fromkeys(p for p in (_PART.sub("-", x.lower()).strip("-")
                                            for x in below) if p))
    return Project(namespace, name, root, parts, routed)


def matching_topics(topics: list[str], parts: tuple[str, ...]) -> list[str]:
    """The namespace's topics named like a part of the directory, deepest part first."""
    known = set(topics)
    return [p for p in reversed(parts) if p in known]


def project_facts(db: Database, project: Project, chosen: list[str], *,
                  limit: int) -> list[int]:
    """Ids of the project's relevant facts, most relevant first (see the module
    docstring); [] when the project's namespace is not among `chosen`."""
    if project.namespace not in chosen:
        return []
    with db.connect() as conn:
        topics = matching_topics(recall_store.namespace_topics(conn, project.namespace),
                                 project.parts)
        if not project.routed and not topics:
            return []
        return recall_store.project_facts(conn, project.namespace, topics=topics,
                                          categories=CATEGORY_ORDER,
                                          topics_only=not project.routed, limit=limit)
