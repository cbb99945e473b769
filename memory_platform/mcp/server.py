"""MCP server: Claude Code (or any MCP client) queries cairn, the vault and orchard.

    memory-platform mcp                      # stdio, for Claude Code
    memory-platform mcp --http --port 8765   # streamable HTTP at /mcp

Every tool is a thin call into the service layer (`memory_platform.query.search`,
`memory_platform.query.summarize`, `memory_platform.vault.service`); inputs are typed so clients
see a JSON schema.

Vault tools: `vault_search`, `vault_list` (paged: after_id/limit, returns total and
next_after_id), `vault_add` (an agent's suggestion: written to `<namespace>__ideas` only,
source 'agent', review 'pending'; never to a primary namespace) and `vault_context` (the
most relevant active memories within a token budget, wrapped in <memory-platform-context>).

    memory-platform mcp --namespaces work    # the vault tools see work (and its shadows) only

orchard's tools (`orchard_list`, `orchard_get`, `orchard_milestone`, `orchard_week`) are in
mcp/orchard.py, scoped the same way.

Limited to namespaces, the vault tools refuse any other with a clear error, and search,
list and context never return anything outside them. cairn's tools read the whole
conversation history, so a limited server does not offer them.
"""

import functools
from datetime import date, datetime, time, timezone
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from memory_platform.mcp.orchard import ORCHARD_INSTRUCTIONS, orchard_tools
from memory_platform.query.models import SearchHit
from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.vault.models import Category, Page, VaultHit, VaultSearchResult
from memory_platform.vault.tokens import Scope

INSTRUCTIONS = (
    "cairn is the user's complete record of their AI conversations (Claude Code, claude.ai, "
    "ChatGPT, Gemini, notes), stored verbatim. Use cairn_search to find what was said or "
    "decided, cairn_get to read a hit with its surrounding turns, cairn_timeline to see "
    "activity per day, and cairn_summarize_range for a cited report of a period."
)
VAULT_INSTRUCTIONS = (
    "The vault holds the user's durable, reviewed memories, one namespace per project or "
    "persona. Call vault_context at the start of a task for the facts worth knowing (it "
    "returns a block ready to put in a prompt), vault_search to look something up, "
    "vault_list to page through a namespace, and vault_add to suggest a new memory: it is "
    "staged for the user's review, not stored as fact."
)


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
    from memory_platform.query.search import SearchError
    from memory_platform.store import DatabaseError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ValueError, LLMError, SearchError, DatabaseError) as exc:
            raise ToolError(str(exc)) from exc

    return wrapper


def build_server(db: Database | None = None, embedder=None, llm=None, *,
                 namespaces: list[str] | None = None, vault_embedder=None) -> MCPServer:
    """The server over one database. `embedder`/`llm` default to the configured ones,
    resolved on first use (a tool that needs an LLM says which settings are missing).
    `namespaces` limits the vault tools to those primary namespaces and their shadows (and
    drops cairn's unscoped tools); `vault_embedder` defaults to the vault's."""
    from memory_platform.query import search as service

    scope = Scope.everything() if namespaces is None else Scope.of(namespaces)
    database = db or Database.from_settings(load_settings())
    server = MCPServer("memory-platform cairn", instructions=(
        INSTRUCTIONS + " " + VAULT_INSTRUCTIONS + " " + ORCHARD_INSTRUCTIONS
        if scope.unrestricted else VAULT_INSTRUCTIONS + " " + ORCHARD_INSTRUCTIONS
        + f" This server is limited to: {scope.describe()}."))

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
            SearchHit.of(h) for h in hits])

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
        from memory_platform.query.summarize import summarize_range

        model = llm or CallRecorder(provider_from_env(), db=database)
        result = summarize_range(database, model, _day_start(since), _day_start(until),
                                 service.SearchFilters(source=source, project=project))
        return RangeSummary(summary=result.summary, highlights=result.highlights,
                            events_read=result.events_read,
                            invalid_citations=result.invalid_citations)

    _vault_tools(server, database, scope, vault_embedder)
    orchard_tools(server, database, scope, llm)  # mcp/orchard.py
    if not scope.unrestricted:
        # cairn is every conversation, unscoped: a server limited to namespaces keeps to
        # the vault.
        for name in ("cairn_search", "cairn_get", "cairn_timeline", "cairn_summarize_range"):
            server.remove_tool(name)
    return server


# --- vault -------------------------------------------------------------------------------



class VaultMemory(BaseModel):
    id: int
    namespace: str
    text: str
    category: str
    source: str = Field(description="hand, dream, import or agent")
    status: str = Field(description="active or archived")
    review: str | None = Field(None, description="shadow entries: pending/approved/skipped")
    created_at: str
    updated_at: str
    valid_from: str
    valid_to: str | None = None
    superseded_by: int | None = None


class VaultPage(Page[VaultMemory]):
    pass


class VaultIdea(BaseModel):
    id: int
    namespace: str = Field(description="Where it was written: always <namespace>__ideas, "
                                       "unless the same text already existed (then its "
                                       "namespace).")
    review: str | None = Field(description="pending: waits for the user's review")
    created: bool = Field(description="False when the same text was already in the vault.")


class VaultContext(BaseModel):
    context: str = Field(description="The block to put in a prompt, wrapped in "
                                     "<memory-platform-context>; empty when nothing "
                                     "qualifies.")
    memory_ids: list[int] = Field(description="Every memory in the block, index first.")
    index_ids: list[int] = Field([], description="The standing facts (with a project).")
    namespaces: list[str]
    tokens_used: int = Field(description="Counted with the tokenizer named in `tokenizer`.")
    token_budget: int
    omitted: int = Field(description="Relevant memories left out to stay in the budget.")
    tokenizer: str = ""


def _vault_memory(row: dict) -> VaultMemory:
    return VaultMemory(**{
        k: (str(v) if isinstance(v, datetime) else v) for k, v in row.items()
        if k in VaultMemory.model_fields})


def _vault_errors(fn):
    """Scope refusals, missing ids and bad input reach the client as their own message."""
    from memory_platform.vault import service as access

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (access.Forbidden, access.NotFound, access.Conflict) as exc:
            raise ToolError(str(exc)) from exc

    return _clear_errors(wrapper)


def _vault_tools(server: MCPServer, database: Database, scope: Scope, embedder) -> None:
    from memory_platform.vault import context
    from memory_platform.vault import service as access

    limited = "" if scope.unrestricted else f" Limited to: {scope.describe()}."

    @server.tool(description="Search the user's vault of durable memories by meaning and "
                             "by exact words." + limited)
    @_vault_errors
    def vault_search(
        query: Annotated[str, Field(description="Words, a question, a port, a version.")],
        namespace: Annotated[str | None, Field(
            description="Only this namespace (a shadow such as work__ideas searches what "
                        "waits for review). Default: every primary namespace allowed.")] = None,
        k: Annotated[int, Field(ge=1, le=100, description="How many hits.")] = 10,
        include_superseded: Annotated[bool, Field(
            description="Also facts that stopped being true, marked by valid_to and "
                        "superseded_by (for 'what did we use before?').")] = False,
    ) -> VaultSearchResult:
        found = access.search(database, scope, query, namespace=namespace, k=k,
                              embedder=embedder, include_superseded=include_superseded)
        return VaultSearchResult(query=found["query"], namespaces=found["namespaces"],
                                 hits=[VaultHit(**h) for h in found["hits"]])

    @server.tool(description="One page of a vault namespace's memories, oldest first, with "
                             "the total. Keep calling with after_id=next_after_id until it "
                             "is null: the list is never cut short." + limited)
    @_vault_errors
    def vault_list(
        namespace: Annotated[str, Field(description="e.g. work, or work__ideas.")],
        after_id: Annotated[int, Field(ge=0, description="next_after_id of the previous "
                                                         "page; 0 for the first.")] = 0,
        limit: Annotated[int, Field(ge=1, le=access.MAX_PAGE,
                                    description="Memories per page.")] = access.DEFAULT_PAGE,
        status: Literal["active", "archived", "all"] = "active",
    ) -> VaultPage:
        page = access.list_page(database, scope, namespace, after_id=after_id, limit=limit,
                                status=status)
        return VaultPage(namespace=page["namespace"], status=page["status"],
                         items=[_vault_memory(r) for r in page["items"]],
                         total=page["total"], next_after_id=page["next_after_id"])

    @server.tool(description="Suggest a memory for the user's vault. It is staged in "
                             "<namespace>__ideas for the user's review (never written to "
                             "the namespace itself); text with credentials is refused."
                             + limited)
    @_vault_errors
    def vault_add(
        namespace: Annotated[str, Field(description="The namespace it belongs to, e.g. "
                                                    "work.")],
        text: Annotated[str, Field(min_length=1, description="One self-contained "
                                                             "statement.")],
        category: Category | None = None,
        why: Annotated[str | None, Field(description="Why it is worth remembering.")] = None,
        topic: Annotated[str | None, Field(description="A short slug, e.g. database "
                                                       "(default: chosen by rules).")] = None,
    ) -> VaultIdea:
        row = access.add_idea(database, scope, namespace, text, category, actor="mcp:agent",
                              why=why, embedder=embedder, topic=topic)
        return VaultIdea(id=row["id"], namespace=row["namespace"], review=row["review"],
                         created=row["created"])

    @server.tool(description="The user's memories most relevant to a query or a project, "
                             "within a token budget, as a block ready to put in a prompt."
                             + limited)
    @_vault_errors
    def vault_context(
        query: Annotated[str | None, Field(description="The task or question at hand.")] =
            None,
        project: Annotated[str | None, Field(
            description="A project path (cwd); with no query, its routed namespace's "
                        "memories.")] = None,
        namespaces: Annotated[list[str] | None, Field(
            description="Primary namespaces to draw from (default: all allowed).")] = None,
        token_budget: Annotated[int, Field(ge=64, le=50_000, description="At most this many "
                                           "tokens.")] = 1500,
    ) -> VaultContext:
        return VaultContext(**context.context(
            database, scope, query=query, project=project, namespaces=namespaces,
            token_budget=token_budget, embedder=embedder))


def serve(transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
          namespaces: list[str] | None = None) -> None:
    server = build_server(namespaces=namespaces)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)
