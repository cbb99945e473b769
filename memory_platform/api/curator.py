"""The curator over REST, with the vault's scope rules (api/vault.py): a token limited to
`work` lists only `work`'s cuts and runs (a `namespace` outside its scope is 403) and
restores only `work`'s memories (another namespace's id is 404).

    GET  /curator/cuts?namespace=&run=          restorable cuts, newest first, countdown
    POST /curator/cuts/{memory_id}/restore      within the retention window (409 outside)
    GET  /curator/runs?namespace=&refused=false runs, newest first (refused ones with why)
    GET  /curator/runs/{id}                     one verdict: proposed cuts with texts, evidence
    GET  /curator/purges?namespace=             what the purge deleted (hash, not text)

The dashboard's page over the same services is /review/curator (api/dashboard/curator.py),
mounted after these routes by api/app.py's one ordered list.
"""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel

from memory_platform.api.access import Caller, Rules, answer_service
from memory_platform.curator import service
from memory_platform.store import Database

# Ids are bigint: a larger number names nothing and is bad input (422 with the reason), as
# the service says for every face (curator.service.checked_id).
RunId = Annotated[int, Path(ge=1, le=service.MAX_ID, description="a curator run id")]
MemoryId = Annotated[int, Path(ge=1, le=service.MAX_ID, description="a cut memory's id")]


class Cut(BaseModel):
    memory_id: int
    namespace: str
    text: str | None
    category: str | None
    reason: str
    related_memory_id: int | None
    evidence: list[dict[str, Any]]
    curator_run_id: int
    dagster_run_id: str
    week: Any
    cut_at: datetime
    restore_until: datetime
    seconds_left: int
    restorable: bool
    restore: str


class Run(BaseModel):
    id: int
    namespace: str
    week: Any
    dagster_run_id: str
    status: str
    dry_run: bool
    refusal: str | None
    refusal_detail: str | None
    listed: int
    proposed_cuts: int
    max_cuts: int
    ceiling: float
    cuts: int
    staged: int
    chunks: int
    listing_tokens: int
    repo: str | None
    agent: str
    prompt_version: str
    executed_by: str | None
    created_at: datetime
    decided_at: datetime | None


class Restored(BaseModel):
    id: int
    namespace: str
    text: str
    category: str
    status: str
    restored_from_archive: int
    reason: str
    cut_at: datetime
    curator_run_id: int


def curator_router(database: Database, rules: Rules) -> APIRouter:
    """The /curator routes: reads `scoped`; a restore is a person's decision, `reviewer`
    (an agent token may not undo what a review or the curator decided)."""
    router = APIRouter(prefix="/curator", tags=["curator"])
    CallerDep = Annotated[Caller, Depends(rules.scoped)]
    ReviewerDep = Annotated[Caller, Depends(rules.reviewer)]

    @router.get("/cuts", response_model=list[Cut])
    def cuts(caller: CallerDep, namespace: str | None = None,
             run: Annotated[int | None, Query(ge=1, le=service.MAX_ID,
                                              description="a curator run id")] = None
             ) -> list[dict]:
        """Restorable cuts in the caller's namespaces, with the purge countdown."""
        return answer_service(service.cuts, database, caller.scope, namespace=namespace,
                              curator_run_id=run)

    @router.post("/cuts/{memory_id:int}/restore", response_model=Restored)
    def restore(caller: ReviewerDep, memory_id: MemoryId) -> dict:
        """Restore a cut memory within its window (audited as the caller)."""
        return answer_service(service.restore, database, caller.scope, memory_id,
                              actor=caller.actor)

    @router.get("/runs", response_model=list[Run])
    def runs(caller: CallerDep, namespace: str | None = None, refused: bool = False
             ) -> list[dict]:
        return answer_service(service.runs, database, caller.scope, namespace=namespace,
                              refused_only=refused)

    @router.get("/runs/{run_id:int}")
    def verdict(caller: CallerDep, run_id: RunId) -> dict:
        """One verdict as proposed: each cut with the text it removes, its reason and
        evidence; merges and contradictions with their sources."""
        return answer_service(service.proposed_cuts, database, caller.scope, run_id)

    @router.get("/purges")
    def purges(caller: CallerDep, namespace: str | None = None) -> list[dict]:
        return answer_service(service.purges, database, caller.scope, namespace=namespace)

    return router

