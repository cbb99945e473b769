"""MCP server: Claude Code (or any MCP client) queries cairn through four tools.

    memory-platform mcp                      # stdio, for Claude Code
    memory-platform mcp --http --port 8765   # streamable HTTP at /mcp

Every tool is a thin call into the service layer (`memory_platform.search`,
`memory_platform.summarize`); inputs are typed so clients see a JSON schema.
"""

from datetime import date, datetime, time, timezone
from typing import Annotated, Literal

import functools

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from memory_platform.config import load_settings
from memory_platform.store import Database

INSTRUCTIONS = (
    "cairn is the user's complete record of their AI conversations (Claude Code, claude.ai, "
    "ChatGPT, Gemini, notes), stored verbatim. Use cairn_search to find what was said or "
    "decided, cairn_get to read a hit with its surrounding turns, cairn_timeline to see "
    "activity per day, and cairn_summarize_range for a cited report of a period."
)


class SearchHit(BaseModel):
    event_id: int
    source: str
    conversation_id: int | None
    occurred_at: str
    role: str
    kind: str | None = None
    project: str | None = None
    text: str
    score: float


class SearchResult(BaseModel):
    query: str
    mode: str
    hits: list[SearchHit]


class Turn(BaseModel):
    event_id: int
    occurred_at: str
    role: str
    source: str
    text: str


class EventWithContext(BaseModel):
    event: Turn
    before: list[Turn]
    after: list[Turn]


class DayCount(BaseModel):
    day: str
    source: str
    events: int


class Timeline(BaseModel):
    since: str
    until: str
    days: list[DayCount]


class RangeSummary(BaseModel):
    summary: str
    highlights: list[dict]
    events_read: int
    invalid_citations: int


def _day_start(value: str) -> datetime:
    """'2026-03-01' or a full ISO timestamp -> aware UTC datetime."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"not a date or ISO timestamp: {value!r}") from exc
    if isinstance(parsed, date) and not isinstance(parsed, datetime):
        parsed = datetime.combine(parsed, time.min)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _turn(event: dict) -> Turn:
    return Turn(event_id=event["event_id"], occurred_at=str(event["occurred_at"]),
                role=event["role"], source=event["source"], text=event["text"])


def _clear_errors(fn):
    """Known failures reach the client as their own message (the SDK hides any other
    exception behind a generic 'Error executing tool')."""
    from memory_platform.llm.base import LLMError
    from memory_platform.search import SearchError
    from memory_platform.store import DatabaseError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ValueError, LLMError, SearchError, DatabaseError) as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def build_server(db: Database | None = None, embedder=None, llm=None) -> MCPServer:
    """The server over one database. `embedder`/`llm` default to the configured ones,
    resolved on first use (a tool that needs an LLM says which settings are missing)."""
    from memory_platform import search as service

    database = db or Database.from_settings(load_settings())
    server = MCPServer("memory-platform cairn", instructions=INSTRUCTIONS)

    @server.tool()
    @_clear_errors
    def cairn_search(
        query: Annotated[str, Field(description="What to look for: words, an error code, a "
                                                "path, or a question in plain language.")],
        k: Annotated[int, Field(ge=1, le=100, description="How many hits.")] = 10,
        source: Annotated[str | None, Field(description="claude-code, claude-ai, chatgpt, "
                                                        "gemini, notes or codex")] = None,
        project: Annotated[str | None, Field(description="Project path (Claude Code cwd).")] = None,
        role: Annotated[str | None, Field(description="user, assistant, tool, system")] = None,
        since: Annotated[str | None, Field(description="Start date, e.g. 2026-03-01.")] = None,
        until: Annotated[str | None, Field(description="End date (exclusive).")] = None,
        mode: Literal["hybrid", "dense", "keyword"] = "hybrid",
    ) -> SearchResult:
        """Search every stored conversation turn by meaning and by exact words."""
        filters = service.SearchFilters(
            source=source, project=project, role=role,
            since=_day_start(since) if since else None,
            until=_day_start(until) if until else None,
        )
        hits = service.search(database, query, k=k, filters=filters, mode=mode,
                              embedder=embedder)
        return SearchResult(query=query, mode=mode, hits=[
            SearchHit(**{key: value for key, value in h.to_dict().items()
                         if key in SearchHit.model_fields}) for h in hits])

    @server.tool()
    @_clear_errors
    def cairn_get(
        event_id: Annotated[int, Field(description="An event_id from cairn_search.")],
        before: Annotated[int, Field(ge=0, le=50)] = 3,
        after: Annotated[int, Field(ge=0, le=50)] = 3,
    ) -> EventWithContext:
        """One stored turn with the turns before and after it in its conversation."""
        found = service.get_event(database, event_id, before=before, after=after)
        if found is None:
            raise ValueError(f"no event with id {event_id}")
        return EventWithContext(event=_turn(found["event"]),
                                before=[_turn(e) for e in found["before"]],
                                after=[_turn(e) for e in found["after"]])

    @server.tool()
    @_clear_errors
    def cairn_timeline(
        since: Annotated[str, Field(description="Start date, e.g. 2026-03-01.")],
        until: Annotated[str, Field(description="End date (exclusive).")],
        source: str | None = None,
        project: str | None = None,
    ) -> Timeline:
        """How many turns were stored per day and surface in a date range."""
        filters = service.SearchFilters(source=source, project=project)
        rows = service.timeline(database, since=_day_start(since), until=_day_start(until),
                                filters=filters)
        return Timeline(since=since, until=until, days=[
            DayCount(day=str(r["day"]), source=r["source"], events=r["events"]) for r in rows])

    @server.tool()
    @_clear_errors
    def cairn_summarize_range(
        since: Annotated[str, Field(description="Start date, e.g. 2026-03-01.")],
        until: Annotated[str, Field(description="End date (exclusive).")],
        source: str | None = None,
        project: str | None = None,
    ) -> RangeSummary:
        """A cited summary of what happened in a date range (needs a configured LLM)."""
        from memory_platform.llm import CallRecorder, provider_from_env
        from memory_platform.summarize import summarize_range

        model = llm or CallRecorder(provider_from_env(), db=database)
        result = summarize_range(database, model, _day_start(since), _day_start(until),
                                 service.SearchFilters(source=source, project=project))
        return RangeSummary(summary=result.summary, highlights=result.highlights,
                            events_read=result.events_read,
                            invalid_citations=result.invalid_citations)

    return server


def serve(transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    server = build_server()
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
