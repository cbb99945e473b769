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

Every tool states its access rule where it is registered (`@tool(server, RULE)`):
`unscoped` (cairn: offered only by an unlimited server) or `scoped` (the vault services
check the server's scope). A server is an agent's face: `vault_add` only suggests. The
scoped-token matrix (tests/test_access_matrix.py) fails on a tool that states no rule.

Over HTTP the server answers only loopback Host names and MEMORY_PLATFORM_API_ALLOWED_HOSTS
(421 otherwise; the SDK's DNS rebinding protection) and POSTs must be JSON.
"""

from datetime import date, datetime, time, timezone
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field

from memory_platform.mcp.orchard import ORCHARD_INSTRUCTIONS, orchard_tools
from memory_platform.mcp.tools import TOOL_RULES, UNSCOPED, clear_errors, tool
from memory_platform.mcp.vault_tools import vault_tools
from memory_platform.query.models import SearchHit
from memory_platform.settings import load_settings
from memory_platform.store import Database
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


def build_server(db: Database | None = None, embedder=None, llm=None, *,
                 namespaces: list[str] | None = None, vault_embedder=None) -> MCPServer:
    """The server over one database. `embedder`/`llm` default to the configured ones,
    resolved on first use (a tool that needs an LLM says which settings are missing).
    `namespaces` limits the vault tools to those primary namespaces and their shadows (and
    drops cairn's unscoped tools); `vault_embedder` defaults to the vault's."""
    from memory_platform.query import reading
    from memory_platform.query import search as service

    scope = Scope.everything() if namespaces is None else Scope.of(namespaces)
    database = db or Database.from_settings(load_settings())
    server = MCPServer("memory-platform cairn", instructions=(
        INSTRUCTIONS + " " + VAULT_INSTRUCTIONS + " " + ORCHARD_INSTRUCTIONS
        if scope.unrestricted else VAULT_INSTRUCTIONS + " " + ORCHARD_INSTRUCTIONS
        + f" This server is limited to: {scope.describe()}."))

    @tool(server, UNSCOPED)
    @clear_errors
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

    @tool(server, UNSCOPED)
    @clear_errors
    def cairn_get(
        event_id: Annotated[int, Field(description="An event_id from cairn_search.")],
        before: Annotated[int, Field(ge=0, le=50)] = 3,
        after: Annotated[int, Field(ge=0, le=50)] = 3,
    ) -> EventWithContext:
        """One stored turn with the turns before and after it in its conversation."""
        found = reading.get_event(database, event_id, before=before, after=after)
        if found is None:
            raise ValueError(f"no event with id {event_id}")
        return EventWithContext(event=_turn(found["event"]),
                                before=[_turn(e) for e in found["before"]],
                                after=[_turn(e) for e in found["after"]])

    @tool(server, UNSCOPED)
    @clear_errors
    def cairn_timeline(
        since: Annotated[str, Field(description="Start date, e.g. 2026-03-01.")],
        until: Annotated[str, Field(description="End date (exclusive).")],
        source: str | None = None,
        project: str | None = None,
    ) -> Timeline:
        """How many turns were stored per day and surface in a date range."""
        filters = service.SearchFilters(source=source, project=project)
        rows = reading.timeline(database, since=_day_start(since), until=_day_start(until),
                                filters=filters)
        return Timeline(since=since, until=until, days=[
            DayCount(day=str(r["day"]), source=r["source"], events=r["events"]) for r in rows])

    @tool(server, UNSCOPED)
    @clear_errors
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

    vault_tools(server, database, scope, vault_embedder, llm)
    orchard_tools(server, database, scope, llm)  # mcp/orchard.py
    if not scope.unrestricted:
        # cairn is every conversation, unscoped: a server limited to namespaces keeps to
        # the vault.
        for name, rule in list(getattr(server, TOOL_RULES).items()):
            if rule == UNSCOPED:
                server.remove_tool(name)
                del getattr(server, TOOL_RULES)[name]
    return server


def transport_security(host: str):
    """The SDK's DNS rebinding protection for the HTTP transport: loopback Host names (any
    port) and the configured extra hosts, as the REST API answers (api/http_guards.py)."""
    from mcp.server.transport_security import TransportSecuritySettings

    extra = load_settings().allowed_hosts()
    if "*" in extra:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = ["127.0.0.1", "localhost", "[::1]", *extra]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names.append(f"[{host}]" if ":" in host else host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[h for name in names for h in (name, f"{name}:*")],
        allowed_origins=[f"{scheme}://{name}{port}" for name in names
                         for scheme in ("http", "https") for port in ("", ":*")])


def serve(transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
          namespaces: list[str] | None = None) -> None:
    server = build_server(namespaces=namespaces)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port,
                   transport_security=transport_security(host))
