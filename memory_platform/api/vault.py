"""The vault over REST.

Who the caller is and what each kind of caller may do: api/access.py. Every route here is
`scoped`: the vault services (vault/service.py) check the caller's scope, so a namespace
outside it named in a path or query gets 403, a memory id outside it 404 (an id says
nothing about other namespaces), and search, namespace listings and counts never include
other namespaces.

Routes (all sub-second, no model in the loop but the vault embedder for new text):

    GET    /vault/namespaces
    GET    /vault/{namespace}/memories?after_id=0&limit=100&status=active
    POST   /vault/{namespace}/memories          {"text", "category"}
    GET    /vault/memories/{id}
    PATCH  /vault/memories/{id}                 {"text"?, "category"?}   (audited edit)
    DELETE /vault/memories/{id}                 (archives; never a hard delete)
    POST   /vault/memories/{id}/restore         (an archived memory active again)
    GET    /vault/search?q=&namespace=&k=10&include_superseded=false

A write with a person's token goes to the namespace named; with an agent token it is a
suggestion, staged in `<namespace>__ideas` for review like MCP `vault_add` (vault/tokens.py).
Text longer than vault.service.MAX_TEXT_CHARS, or holding a credential, is refused (422).
"""

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, Field

from memory_platform.api.access import Caller, Rules, answer_service
from memory_platform.store import Database
from memory_platform.vault import service as access
from memory_platform.vault.models import Category, Page, VaultSearchResult

# --- response and request models ---------------------------------------------------------


class Memory(BaseModel):
    id: int
    namespace: str
    text: str
    category: str
    source: str
    status: str = Field(description="active or archived")
    review: str | None = Field(None, description="shadow entries: pending, approved, skipped")
    review_note: str | None = None
    dream_run_id: str | None = None
    candidate_id: int | None = None
    source_event_ids: list[int] = []
    score: int | None = None
    why: str | None = None
    verdict: str | None = None
    promoted_from: int | None = None
    valid_from: datetime
    valid_to: datetime | None = None
    superseded_by: int | None = None
    created_at: datetime
    updated_at: datetime
    content_hash: str
    topic: str | None = Field(None, description="A short slug (None: not classified yet)")
    sensitive: bool = Field(False, description="Holds personal data: never injected")


class MemoryWritten(Memory):
    created: bool = Field(description="False when the same text was already there (its row)")


class MemoryChanged(Memory):
    changed: bool = Field(description="False when the request changed nothing")


class MemoryPage(Page[Memory]):
    pass


class Namespace(BaseModel):
    name: str
    kind: str = Field(description="primary, dream or ideas")
    primary_of: str | None
    created_at: datetime
    active: int = Field(description="active memories")


class NewMemory(BaseModel):
    text: str = Field(min_length=1, max_length=access.MAX_TEXT_CHARS,
                      description="One self-contained statement.")
    category: Category | None = Field(None, description="Default: chosen by rules")
    topic: str | None = Field(None, description="A short slug; default: chosen by rules")


class MemoryEdit(BaseModel):
    text: str | None = Field(None, min_length=1, max_length=access.MAX_TEXT_CHARS)
    category: Category | None = None
    topic: str | None = None


# --- routes ------------------------------------------------------------------------------


def vault_router(database: Database, rules: Rules, embedder=None) -> APIRouter:
    """The /vault routes over one database, every one `scoped` (api/access.py);
    `embedder` defaults to the vault embedder."""
    router = APIRouter(prefix="/vault", tags=["vault"])
    CallerDep = Annotated[Caller, Depends(rules.scoped)]

    @router.get("/namespaces", response_model=list[Namespace])
    def namespaces(caller: CallerDep) -> list[dict]:
        """The namespaces this caller may see, with their count of active memories."""
        return answer_service(access.namespaces, database, caller.scope)

    @router.get("/search", response_model=VaultSearchResult)
    def search(
        caller: CallerDep,
        q: Annotated[str, Query(min_length=1, description="Words, a question, a port")],
        namespace: Annotated[str | None, Query(
            description="Only this namespace (default: every primary one in scope)")] = None,
        k: Annotated[int, Query(ge=1, le=100)] = 10,
        include_superseded: Annotated[bool, Query(
            description="Also facts that stopped being true (marked by valid_to and "
                        "superseded_by)")] = False,
    ) -> dict:
        """Memories by meaning and by exact words, within the caller's namespaces: current
        facts only, unless include_superseded."""
        return answer_service(access.search, database, caller.scope, q, namespace=namespace, k=k,
                              embedder=embedder, include_superseded=include_superseded)

    @router.get("/memories/{memory_id:int}", response_model=Memory)
    def get_memory(caller: CallerDep, memory_id: int) -> dict:
        return answer_service(access.read, database, caller.scope, memory_id)

    @router.patch("/memories/{memory_id:int}", response_model=MemoryChanged)
    def edit_memory(caller: CallerDep, memory_id: int, body: MemoryEdit) -> dict:
        """Edit the text and/or category of an active memory; audited (before/after)."""
        return answer_service(access.edit, database, caller.scope, memory_id, actor=caller.actor,
                              text=body.text, category=body.category, embedder=embedder,
                              topic=body.topic)

    @router.delete("/memories/{memory_id:int}", response_model=MemoryChanged)
    def archive_memory(caller: CallerDep, memory_id: int) -> dict:
        """Archive the memory (status 'archived', audited). Nothing is ever hard-deleted."""
        return answer_service(access.archive, database, caller.scope, memory_id, actor=caller.actor)

    @router.post("/memories/{memory_id:int}/restore", response_model=MemoryChanged)
    def restore_memory(caller: CallerDep, memory_id: int) -> dict:
        """Make an archived memory active again (audited). 409 when an active memory of
        its namespace already states the same text."""
        return answer_service(access.restore, database, caller.scope, memory_id, actor=caller.actor)

    @router.get("/{namespace}/memories", response_model=MemoryPage)
    def list_memories(
        caller: CallerDep,
        namespace: str,
        after_id: Annotated[int, Query(ge=0, description="last id of the previous page")] = 0,
        limit: Annotated[int, Query(ge=1, le=access.MAX_PAGE)] = access.DEFAULT_PAGE,
        status: Literal["active", "archived", "all"] = "active",
    ) -> dict:
        """One page of a namespace's memories by id, with the total. Page until
        next_after_id is null; a limit above the maximum is refused, never clipped."""
        return answer_service(access.list_page, database, caller.scope, namespace,
                              after_id=after_id, limit=limit, status=status)

    @router.post("/{namespace}/memories", response_model=MemoryWritten,
                 responses={201: {"model": MemoryWritten, "description": "added"},
                            200: {"description": "the same text was already there"}})
    def add_memory(caller: CallerDep, namespace: str, body: NewMemory,
                   response: Response) -> dict:
        """Write a memory into the namespace named with a person's token; with an agent
        token it is staged in <namespace>__ideas for review (as MCP vault_add). The text
        is embedded in the same request."""
        row = answer_service(access.add, database, caller.scope, namespace, body.text,
                             body.category, actor=caller.actor, embedder=embedder,
                             topic=body.topic)
        response.status_code = 201 if row["created"] else 200
        return row

    return router
