"""orchard's answer shapes, shared by REST (api/orchard.py) and MCP (mcp/orchard.py), so
a field added to one face is not forgotten in the other."""

from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, Field

Status = Literal["active", "paused", "blocked", "done", "idea"]


class WeekActivity(BaseModel):
    sessions: int
    turns: int


class ProjectActivity(BaseModel):
    """Counted over the linked conversations the caller may read (orchard/reading.py)."""

    sessions: int = Field(description="Conversations with turns linked to the project.")
    turns: int = Field(description="User and assistant messages linked to the project.")
    first_active: date | None
    last_active: date | None
    this_week: WeekActivity = Field(description="The current ISO week (UTC).")


class Project(BaseModel):
    id: int
    name: str
    namespace: str
    repo: str | None
    status: Status
    priority: int = Field(description="1 (first) to 5 (last).")
    next_action: str | None
    blockers: list[str]
    deadline: date | None
    last_milestone: str | None
    last_milestone_at: datetime | None
    cairn_projects: list[str] = Field(description="Paths (with subfolders) and chat-app "
                                                  "project names whose turns are this "
                                                  "project's.")
    cairn_titles: list[str] = Field(description="Conversation titles whose turns are this "
                                                "project's.")
    archived: bool
    created_at: datetime
    updated_at: datetime
    activity: ProjectActivity | None = None


class ProjectList(BaseModel):
    projects: list[Project]
    total: int = Field(description="Every matching project is listed: never a page.")


class Change(BaseModel):
    id: int
    change: str = Field(description="create, edit, milestone, archive or restore")
    actor: str
    by_agent: bool
    at: datetime
    milestone: str | None
    before: dict | None
    after: dict


class ProjectWithHistory(Project):
    history: list[Change] = []


class ProjectChanged(Project):
    changed: bool = Field(description="False when nothing differed (e.g. the same milestone "
                                      "again): no history row was written.")


class Reason(BaseModel):
    factor: str
    points: int
    reason: str
    event_ids: list[int] = Field(description="cairn turns the reason rests on.")


class EvidenceTurn(BaseModel):
    event_id: int
    occurred_at: str
    source: str
    role: str
    text: str
    conversation_id: int | None


class RankedProject(BaseModel):
    rank: int
    id: int
    name: str
    namespace: str
    repo: str | None
    status: Status
    priority: int
    next_action: str | None
    blockers: list[str]
    deadline: date | None
    last_milestone: str | None
    last_milestone_at: datetime | None
    activity: ProjectActivity
    score: int = Field(description="The sum of the reasons' points.")
    reasons: list[Reason]
    evidence: list[EvidenceTurn] = Field(description="The project's latest turns in cairn "
                                                     "(and those mentioning its blockers), "
                                                     "from the conversations the caller may "
                                                     "read, credentials masked.")


class NotRanked(BaseModel):
    name: str
    why: str


class WeekAnswer(BaseModel):
    today: date
    week: date = Field(description="Monday of the ISO week.")
    answer: str = Field(description="What to work on, as text: the plain ranking, or its "
                                    "phrasing by the configured LLM.")
    ranked: list[RankedProject]
    not_ranked: list[NotRanked]
    phrased_by: str | None = Field(description="provider/model that worded `answer`; null: "
                                               "the plain ranking.")
    phrasing_error: str | None = Field(description="Why a configured LLM's phrasing is not "
                                                   "shown (the ranking never depends on it).")
    prompt_version: str | None
    secrets_masked: int = Field(description="Credentials masked in the evidence shown and "
                                            "in the prompt sent.")


class Proposal(BaseModel):
    id: int
    key: str
    name: str
    repo: str | None
    signals: list[dict]
    cairn_projects: list[str]
    cairn_titles: list[str]
    sessions: int
    turns: int
    weeks: list[dict]
    first_active: date | None
    last_active: date | None
    state: Literal["pending", "accepted", "dismissed"]
    project_id: int | None
    decided_by: str | None
    decided_at: datetime | None


class Accepted(BaseModel):
    proposal: Proposal
    project: Project
