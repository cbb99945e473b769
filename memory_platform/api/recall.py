"""recall over REST: the context pack and the findings at the review gate. Access rules
(api/access.py): the pack and the findings list are `scoped` (a token sees only its
namespaces); resolving a finding changes the vault, so it is a `reviewer`'s (a person's
token, never an agent's).

    GET  /vault/context?q=&project=&namespace=&token_budget=1500   the pack (vault/context.py)
    GET  /vault/findings?namespace=&status=open                    lint and wiki findings
    POST /vault/findings/{id}/resolve  {"action": "supersede"|"archive"|"keep",
                                        "old_id"?, "memory_id"?}   audited

The dashboard's page over the same services is /review/findings
(api/dashboard/findings.py), mounted after these routes by api/app.py's one ordered list.
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from memory_platform.api.access import Caller, Rules, answer_service
from memory_platform.recall import findings as finding_service
from memory_platform.store import Database
from memory_platform.vault import context as pack_service


class ContextPack(BaseModel):
    context: str = Field(description="The block to put in a prompt, wrapped in "
                                     "<memory-platform-context>; empty when nothing qualifies.")
    memory_ids: list[int]
    index_ids: list[int]
    namespaces: list[str]
    tokens_used: int
    token_budget: int
    omitted: int
    tokenizer: str


class Resolution(BaseModel):
    action: Literal["supersede", "archive", "keep"]
    old_id: int | None = Field(None, description="supersede: the fact that stops holding")
    memory_id: int | None = Field(None, description="archive: which of the finding's")


def _errors(fn, *args, **kwargs):
    return answer_service(fn, *args, conflicts=(finding_service.FindingConflict,), **kwargs)


def recall_router(database: Database, rules: Rules, embedder=None) -> APIRouter:
    router = APIRouter(prefix="/vault", tags=["recall"])
    CallerDep = Annotated[Caller, Depends(rules.scoped)]
    ReviewerDep = Annotated[Caller, Depends(rules.reviewer)]

    @router.get("/context", response_model=ContextPack)
    def vault_context(
        caller: CallerDep,
        q: Annotated[str | None, Query(description="The task or question at hand")] = None,
        project: Annotated[str | None, Query(description="A project path (cwd)")] = None,
        namespace: Annotated[list[str] | None, Query(
            description="Primary namespaces to draw from (default: all in scope)")] = None,
        token_budget: Annotated[int, Query(ge=64, le=50_000)] = 1500,
    ) -> dict:
        """The context pack: with a project, its namespace's standing facts first; then
        the current facts most relevant to q (or the project), within the token budget,
        each with its id. Sensitive memories are never in it."""
        return _errors(pack_service.context, database, caller.scope, query=q,
                       project=project, namespaces=namespace, token_budget=token_budget,
                       embedder=embedder)

    @router.get("/findings")
    def list_findings(
        caller: CallerDep,
        namespace: str | None = None,
        status: Literal["open", "superseded", "archived", "kept", "obsolete", "all"] = "open",
    ) -> dict:
        """Every finding in scope (no cap), oldest first, with its evidence."""
        rows = _errors(finding_service.list_findings, database, caller.scope,
                       namespace=namespace, status=None if status == "all" else status)
        return {"findings": rows, "total": len(rows)}

    @router.post("/findings/{finding_id:int}/resolve")
    def resolve_finding(caller: ReviewerDep, finding_id: int, body: Resolution) -> dict:
        """Supersede, archive or keep; the vault changes only here, audited."""
        return _errors(finding_service.resolve, database, finding_id, body.action,
                       actor=caller.actor, scope=caller.scope, old_id=body.old_id,
                       memory_id=body.memory_id)

    return router

