"""orchard over REST: the portfolio of projects, edited by people.

Who the caller is comes from the app's rules (api/access.py): the admin token, a
namespace-scoped API token, the dashboard's login cookie, or open loopback. A scoped token
sees and changes the projects of its namespaces only: another namespace in a query or a
body gets 403, another namespace's project 404 (by id or by name). Proposals come from the
whole, unscoped conversation history, so their routes need the admin token (or open
loopback), as cairn's do.

    GET    /orchard/projects?status=&namespace=&include_archived=false   every one, no page
    POST   /orchard/projects                     {name, namespace, repo?, status?, ...}
    GET    /orchard/projects/{project}?history=false      (name or id)
    PATCH  /orchard/projects/{project}           any field; {"archived": true} archives
    POST   /orchard/projects/{project}/milestones {what, next_action?, blockers?, status?}
    GET    /orchard/projects/{project}/history
    GET    /orchard/week?phrase=true              what to work on this week
    GET    /orchard/proposals?state=pending       (unscoped callers only)
    POST   /orchard/proposals/{id}/accept         {namespace?, name?, status?, priority?, ...}
    POST   /orchard/proposals/{id}/dismiss

A person's token (or the admin) writes any field, with no daily limit, audited in the
project's history as `api:<token name>`. An agent token keeps the agent rules, as over MCP
(orchard/projects.py decides them from the token's Scope): adding or editing a project is
403, a milestone is its only write, and past the daily limit it is 429. Bad input (NUL, a
lone surrogate, a text over its length) is 422 with the reason. What a scoped token reads
of cairn through a project (activity, evidence) is the linked conversations routed into its
namespaces, masked (orchard/reading.py).
"""

from datetime import date
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Response
from pydantic import BaseModel, Field

from memory_platform.api.access import Caller, Rules, answer_service
from memory_platform.orchard import discovery, projects, week
from memory_platform.orchard.models import (
    Accepted,
    Change,
    Project,
    ProjectChanged,
    ProjectList,
    ProjectWithHistory,
    Proposal,
    Status,
    WeekAnswer,
)
from memory_platform.store import Database


class NewProject(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    namespace: str = Field(description="A primary vault namespace: the project's scope.")
    repo: str | None = Field(None, description="A local path (links the Claude Code "
                                               "sessions run there) or a URL.")
    status: Status = "active"
    priority: int = Field(3, ge=1, le=5, description="1 (first) to 5 (last).")
    next_action: str | None = None
    blockers: list[str] = []
    deadline: date | None = None
    cairn_projects: list[str] | None = None
    cairn_titles: list[str] = []


class ProjectEdit(BaseModel):
    """Only the fields sent change; `null` clears next_action, repo or deadline."""

    name: str | None = Field(None, min_length=1, max_length=100)
    namespace: str | None = None
    repo: str | None = None
    status: Status | None = None
    priority: int | None = Field(None, ge=1, le=5)
    next_action: str | None = None
    blockers: list[str] | None = None
    deadline: date | None = None
    cairn_projects: list[str] | None = None
    cairn_titles: list[str] | None = None
    archived: bool | None = None


class NewMilestone(BaseModel):
    what: str = Field(min_length=1, description="The milestone reached.")
    next_action: str | None = None
    blockers: list[str] | None = Field(None, description="Replaces the list; [] clears it.")
    status: Status | None = None


class Acceptance(BaseModel):
    namespace: str | None = Field(None, description="Default: the routing rules' namespace "
                                                    "for the proposal's path.")
    name: str | None = None
    status: Status = "active"
    priority: int = Field(3, ge=1, le=5)
    next_action: str | None = None


def _milestone(*args, **kwargs) -> dict:
    """projects.milestone, with an agent's churn as 429 (a daily limit, not bad input)."""
    try:
        return projects.milestone(*args, **kwargs)
    except projects.Churn as exc:
        raise HTTPException(status_code=429, detail=str(exc)) from exc


def orchard_router(database: Database, rules: Rules,
                   llm=None) -> APIRouter:
    """The /orchard routes over one database; `llm` phrases /orchard/week (default: the
    configured one, if any)."""
    router = APIRouter(prefix="/orchard", tags=["orchard"])
    # projects are `scoped` (the orchard services check the namespaces); proposals come
    # from the whole conversation history: `unscoped`
    CallerDep = Annotated[Caller, Depends(rules.scoped)]
    Unscoped = Annotated[Caller, Depends(rules.unscoped)]

    @router.get("/projects", response_model=ProjectList)
    def list_projects(caller: CallerDep, status: Status | None = None,
                      namespace: str | None = None, include_archived: bool = False) -> dict:
        """Every project the caller may see (filters: status, namespace), with activity."""
        found = answer_service(projects.list_projects, database, caller.scope, status=status,
                               namespace=namespace, include_archived=include_archived)
        return {"projects": found, "total": len(found)}

    @router.post("/projects", response_model=Project, status_code=201)
    def add_project(caller: CallerDep, body: NewProject) -> dict:
        fields = body.model_dump(exclude_none=True)
        return answer_service(projects.add, database, caller.scope, actor=caller.actor, **fields)

    @router.get("/projects/{project}", response_model=ProjectWithHistory)
    def get_project(caller: CallerDep, project: str, history: bool = False) -> dict:
        return answer_service(projects.get, database, caller.scope, project, with_history=history)

    @router.patch("/projects/{project}", response_model=ProjectChanged)
    def edit_project(caller: CallerDep, project: str, body: ProjectEdit) -> dict:
        """Change any field (a person's edit, in the project's history with before/after);
        {"archived": true} archives, false restores. Nothing is ever deleted."""
        changes = body.model_dump(exclude_unset=True)
        for key in ("name", "namespace", "status", "priority", "archived"):
            if key in changes and changes[key] is None:
                raise HTTPException(status_code=422, detail=f"{key} cannot be null")
        return answer_service(projects.edit, database, caller.scope, project, actor=caller.actor,
                              **changes)

    @router.post("/projects/{project}/milestones", response_model=ProjectChanged)
    def add_milestone(caller: CallerDep, project: str, body: NewMilestone,
                      response: Response) -> dict:
        """Record a milestone (a person's: not limited per day; an agent token's: limited,
        429 past the limit). 201 when recorded, 200 when it was already the last one."""
        row = answer_service(_milestone, database, caller.scope, project, body.what,
                             actor=caller.actor, next_action=body.next_action,
                             blockers=body.blockers, status=body.status)
        response.status_code = 201 if row["changed"] else 200
        return row

    @router.get("/projects/{project}/history", response_model=list[Change])
    def project_history(caller: CallerDep, project: str) -> list[dict]:
        return answer_service(projects.history, database, caller.scope, project)

    @router.get("/week", response_model=WeekAnswer)
    def what_this_week(caller: CallerDep, phrase: Annotated[bool, Query(
            description="Let the configured LLM word the answer")] = True) -> dict:
        """Projects ranked by a transparent score, each with reasons and evidence turns."""
        model = (llm or week.configured_llm(database)) if phrase else None
        return answer_service(week.week, database, caller.scope, llm=model)

    @router.get("/proposals", response_model=list[Proposal])
    def list_proposals(caller: Unscoped, state: Literal["pending", "accepted", "dismissed",
                                                         "all"] = "pending") -> list[dict]:
        return answer_service(discovery.list_proposals, database, caller.scope,
                              None if state == "all" else state)

    @router.post("/proposals/{proposal_id:int}/accept", response_model=Accepted,
                 status_code=201)
    def accept(caller: Unscoped, proposal_id: int, body: Acceptance) -> dict:
        """A person accepts: the proposal becomes a project."""
        return answer_service(discovery.accept, database, caller.scope, proposal_id,
                              actor=caller.actor, **body.model_dump(exclude_none=True))

    @router.post("/proposals/{proposal_id:int}/dismiss", response_model=Proposal)
    def dismiss(caller: Unscoped, proposal_id: int) -> dict:
        return answer_service(discovery.dismiss, database, caller.scope, proposal_id,
                              actor=caller.actor)

    return router

