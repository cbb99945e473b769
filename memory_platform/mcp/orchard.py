"""orchard's MCP tools, registered by server.build_server: the user's portfolio of projects
for agents.

    orchard_list(status?, namespace?, include_archived?)   every project, never a page
    orchard_get(project, history?)
    orchard_milestone(project, what, next_action?, blockers?, status?)
    orchard_week(phrase?)                                   what to work on this week

An MCP server is an agent's face, so the tools run with the agent's Scope (`agent=True`) and
the orchard service keeps the agent rules, as for an agent token over REST: the only write
is orchard_milestone, only at a milestone (an update without `what` is refused), and at
most MEMORY_PLATFORM_ORCHARD_AGENT_UPDATES_PER_DAY a day per project (orchard/projects.py).
A server limited to namespaces (`memory-platform mcp --namespaces work`) lists, reads and
updates the projects of those namespaces only; another project reads as missing. The
activity and evidence it shows come from the linked conversations routed into those
namespaces, masked (orchard/reading.py). A refusal or bad input (NUL, a text over its
length) reaches the client as its own message.
"""

import dataclasses
import functools
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memory_platform.mcp.tools import SCOPED, clear_errors, tool
from memory_platform.orchard.models import (
    ProjectChanged,
    ProjectList,
    ProjectWithHistory,
    Status,
    WeekAnswer,
)
from memory_platform.store import Database
from memory_platform.vault.tokens import Scope

ORCHARD_INSTRUCTIONS = (
    "orchard is the user's portfolio of projects: status, priority, next action, blockers, "
    "last milestone. Call orchard_week when asked what to work on (a ranked answer with "
    "reasons and evidence), orchard_list and orchard_get to see where projects stand, and "
    "orchard_milestone when a real milestone is reached (a feature shipped, a decision "
    "taken), never on every turn: say what was reached, and the next action, blockers or "
    "status if they changed."
)


def _orchard_errors(fn):
    """Refusals (churn, no milestone), scope, missing projects and bad input reach the client
    as their own message (the SDK hides any other exception behind a generic one)."""
    from memory_platform.llm.base import LLMError
    from memory_platform.store import DatabaseError
    from memory_platform.vault.service import Conflict, Forbidden, NotFound

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (Forbidden, NotFound, Conflict, ValueError, LLMError, DatabaseError) as exc:
            raise ToolError(str(exc)) from exc

    return clear_errors(wrapper)


def orchard_tools(server: MCPServer, database: Database, scope: Scope, llm=None) -> None:
    """Register the four orchard tools on `server`, within `scope`. `llm` phrases
    orchard_week (default: the configured one, if any, resolved at each call)."""
    from memory_platform.orchard import projects, week
    from memory_platform.orchard.projects import AGENT_ACTOR

    limited = "" if scope.unrestricted else f" Limited to: {scope.describe()}."
    scope = dataclasses.replace(scope, agent=True)  # the caller is an agent (module docstring)
    Ref = Annotated[str, Field(description="The project's name (any case) or id.")]

    @tool(server, SCOPED, description="Every project of the user's portfolio with status, priority, "
                             "next action, blockers, last milestone and activity (sessions "
                             "and turns, last active day). Never cut short." + limited)
    @_orchard_errors
    def orchard_list(
        status: Annotated[Status | None, Field(description="Only this status.")] = None,
        namespace: Annotated[str | None, Field(description="Only this namespace.")] = None,
        include_archived: bool = False,
    ) -> ProjectList:
        found = projects.list_projects(database, scope, status=status, namespace=namespace,
                                       include_archived=include_archived)
        return ProjectList(projects=found, total=len(found))

    @tool(server, SCOPED, description="One project, with its activity and, on request, every change "
                             "(who, when, before/after)." + limited)
    @_orchard_errors
    def orchard_get(
        project: Ref,
        history: Annotated[bool, Field(description="Include every change.")] = False,
    ) -> ProjectWithHistory:
        return ProjectWithHistory(**projects.get(database, scope, project,
                                                 with_history=history))

    @tool(server, SCOPED, description="Record a milestone of a project: what was reached, and "
                             "optionally the next action, the blockers (the list replaces "
                             "the old one; [] clears it) and the status. The only way an "
                             "agent updates a project: an update without a milestone, or "
                             "too many in a day, is refused." + limited)
    @_orchard_errors
    def orchard_milestone(
        project: Ref,
        what: Annotated[str, Field(description="The milestone reached, one sentence, e.g. "
                                               "'search endpoint merged'.")],
        next_action: Annotated[str | None, Field(description="The next concrete step.")] = None,
        blockers: Annotated[list[str] | None, Field(
            description="What blocks progress now (replaces the list).")] = None,
        status: Annotated[Status | None, Field(description="A new status, if it changed "
                                                           "with this milestone.")] = None,
    ) -> ProjectChanged:
        return ProjectChanged(**projects.milestone(
            database, scope, project, what, actor=AGENT_ACTOR,
            next_action=next_action, blockers=blockers, status=status))

    @tool(server, SCOPED, description="What the user should work on this week: their projects ranked "
                             "by a transparent score (priority, status and blockers, days "
                             "since last activity, deadline, next action), each with its "
                             "reasons and the latest turns from their conversations as "
                             "evidence. Phrased by the configured LLM when there is one; "
                             "the ranking is always the code's." + limited)
    @_orchard_errors
    def orchard_week(
        phrase: Annotated[bool, Field(description="Let the configured LLM word the answer "
                                                  "(false: the plain ranking).")] = True,
    ) -> WeekAnswer:
        model = (llm or week.configured_llm(database)) if phrase else None
        return WeekAnswer(**week.week(database, scope, llm=model))
