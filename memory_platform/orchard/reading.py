"""What a caller reads of cairn through orchard, and how orchard's text leaves the store.

cairn is every conversation, verbatim, and it is not split by namespace (vault/sources.py).
orchard reads it through a project's links (`cairn_projects`, `cairn_titles`); which
namespace a conversation belongs to is the routing file's answer (vault/routing.py) for the
conversation's project (its cwd, or its chat app's project) and source, the same answer
that sends its memories to a namespace (dream/propose.py). So:

- An unscoped caller (the admin token, open loopback, the CLI, Dagster's assets) reads
  every conversation a project links to.
- A caller limited to namespaces reads only the linked conversations routed into them: a
  project's activity (sessions, turns), the turns it quotes as evidence and the turns that
  mention its blockers come from those, never from another. A conversation with a turn
  routed elsewhere, and an event outside any conversation, are not read. The rule is held
  when the project is read (`Reader.rows`), whatever it links to: a link an unscoped person
  made, a routing file changed since.
- A caller limited to namespaces links only cairn projects the routing file sends into
  them (`Reader.check_links`): a work token cannot attach `/home/me/diary` when it routes to
  personal. The check reads the routing file, never cairn, so its answer says nothing about
  what cairn holds; titles have no routing of their own and are held at read time only.
- Every text orchard gives out (a project's fields, its history, evidence, a proposal, a
  snapshot row, the prompt) passes `privacy.egress.outgoing`: credentials are masked for
  every caller, unscoped ones included.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from memory_platform.orchard.activity import is_path
from memory_platform.privacy.egress import outgoing
from memory_platform.privacy.masking import MASK
from memory_platform.vault.routing import Routing
from memory_platform.vault.service import Forbidden
from memory_platform.vault.tokens import Scope

# The sources whose conversations carry each kind of link (a path: a cwd; a name: a chat
# app's project). A link is routed for each, and for no source at all.
PATH_SOURCES = ("claude-code", "codex", "gemini")
NAME_SOURCES = ("claude-ai",)
# A project's text fields, and its lists of text.
PROJECT_TEXTS = ("name", "repo", "next_action", "last_milestone")
PROJECT_LISTS = ("blockers", "cairn_projects", "cairn_titles")


class Reader:
    """The conversations `scope` may read through orchard (see the module docstring). The
    routing file is read once, when a scoped caller first needs it."""

    def __init__(self, scope: Scope, routing: Routing | None = None):
        self.scope = scope
        self._routing = routing
        self._routes: dict[tuple[str | None, str | None], str] = {}

    @property
    def unrestricted(self) -> bool:
        return self.scope.unrestricted

    def namespace_of(self, project: str | None, source: str | None) -> str:
        key = (project, source)
        if key not in self._routes:
            if self._routing is None:
                self._routing = Routing.load()
            self._routes[key] = self._routing.route(project=project, source=source)
        return self._routes[key]

    def _permitted(self, row: dict) -> bool:
        return row["conversation_id"] is not None and self.scope.permits(
            self.namespace_of(row["route_project"], row["route_source"]))

    def rows(self, rows: Sequence[dict]) -> list[dict]:
        """The activity rows (store.orchard_activity.activity_rows) of the conversations the
        scope may read: all of them for an unscoped caller."""
        if self.unrestricted:
            return list(rows)
        refused = {r["conversation_id"] for r in rows if not self._permitted(r)}
        return [r for r in rows if r["conversation_id"] not in refused]

    def check_links(self, cairn_projects: Iterable[str]) -> None:
        """Refuse (Forbidden) a cairn project a scoped caller may not link: one the routing
        file sends outside its namespaces, whatever source recorded it."""
        if self.unrestricted:
            return
        for value in cairn_projects:
            sources = PATH_SOURCES if is_path(value) else NAME_SOURCES
            routed = sorted({self.namespace_of(value, s) for s in (None, *sources)})
            if not any(self.scope.permits(n) for n in routed):
                raise Forbidden(
                    f"cairn project {value!r} belongs to {', '.join(routed)} by the routing "
                    f"rules ({self._routing.origin}); this caller is limited to "
                    f"{self.scope.describe()}: link only cairn projects routed there")


def shown(text: str) -> tuple[str, int]:
    """`text` as it leaves the store, and how many credentials were masked in it."""
    out = outgoing(text)
    return out, max(out.count(MASK) - text.count(MASK), 0)


def shown_project(project: dict[str, Any] | None) -> dict[str, Any] | None:
    """A project (or a history row's before/after) with its text fields as they leave."""
    if project is None:
        return None
    out = dict(project)
    for key in PROJECT_TEXTS:
        if isinstance(out.get(key), str):
            out[key] = outgoing(out[key])
    for key in PROJECT_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [outgoing(v) if isinstance(v, str) else v for v in out[key]]
    return out


def shown_change(change: dict[str, Any]) -> dict[str, Any]:
    return {**change, "before": shown_project(change["before"]),
            "after": shown_project(change["after"]),
            "milestone": outgoing(change["milestone"]) if change["milestone"] else
            change["milestone"]}


def shown_proposal(proposal: dict[str, Any]) -> dict[str, Any]:
    out = shown_project(proposal)
    out["signals"] = [{**s, "value": outgoing(s["value"])} if isinstance(s.get("value"), str)
                      else s for s in proposal["signals"]]
    return out
