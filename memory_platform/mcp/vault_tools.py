"""The vault's MCP tools: vault_search, vault_list, vault_add (a suggestion, staged in
`<namespace>__ideas`) and vault_context, all `scoped` (the vault services check the
server's scope)."""

import functools
from datetime import datetime
from typing import Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from memory_platform.mcp.tools import SCOPED, clear_errors, tool
from memory_platform.store import Database
from memory_platform.vault.models import Category, Page, VaultHit, VaultSearchResult
from memory_platform.vault.tokens import Scope


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
    created: bool = Field(description="False when the vault already knows it: the same "
                                      "text, or the dedup gate found the same fact (then "
                                      "`id` is that memory's).")
    verdict: str | None = Field(None, description="The dedup gate's verdict: new or "
                                "contradiction (staged), duplicate or same_fact (not added); "
                                "null when it needed a judge and none was available.")
    reason: str | None = Field(None, description="Why, in one line.")


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

    return clear_errors(wrapper)


def vault_tools(server: MCPServer, database: Database, scope: Scope, embedder,
                llm=None) -> None:
    from memory_platform.vault import context
    from memory_platform.vault import service as access

    def idea_judge():
        """The dedup gate's judge for vault_add: the server's LLM, else the configured one;
        None when no LLM is configured (a grey-band idea is then staged unjudged, and the
        answer says so)."""
        if llm is not None:
            return llm
        from memory_platform.llm import CallRecorder, LLMNotConfigured, provider_from_env
        try:
            return CallRecorder(provider_from_env(), db=database)
        except LLMNotConfigured:
            return None

    limited = "" if scope.unrestricted else f" Limited to: {scope.describe()}."

    @tool(server, SCOPED,
          description="Search the user's vault of durable memories by meaning and "
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

    @tool(server, SCOPED,
          description="One page of a vault namespace's memories, oldest first, with "
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

    @tool(server, SCOPED,
          description="Suggest a memory for the user's vault. It is staged in "
                             "<namespace>__ideas for the user's review (never written to "
                             "the namespace itself), unless the vault already knows it "
                             "(created=false); text with credentials is refused."
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
                              why=why, embedder=embedder, topic=topic, llm=idea_judge())
        return VaultIdea(id=row["id"], namespace=row["namespace"], review=row["review"],
                         created=row["created"], verdict=row["verdict"],
                         reason=row["reason"])

    @tool(server, SCOPED,
          description="The user's memories most relevant to a query or a project, "
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
        from memory_platform.query.inputs import check_optional_text

        check_optional_text(query, "query")
        check_optional_text(project, "project")
        return VaultContext(**context.context(
            database, scope, query=query, project=project, namespaces=namespaces,
            token_budget=token_budget, embedder=embedder))
