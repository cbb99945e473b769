"""The dashboard's findings page: what lint and the wiki intake found, for a person to
resolve, one key per decision.

    GET  /review/findings?namespace=                     the page (static/findings.js:
                                                         j/k, 1-9, u a n)
    POST /review/api/findings/{finding_id}/resolve       {"action": "supersede"|"archive"|
                                                         "keep", "old_id"?, "memory_id"?}

The page shows the open findings in the caller's namespaces only, and a decision applies
only to a finding in them: both checks are the service's (recall.findings.list_findings,
for_review and resolve; another namespace is 403 by name, a finding id outside the scope
404), as is what each finding allows (supersede for a contradiction or near-duplicate of two
current facts, archive for a finding's active memories, keep for any).

Rules (api/access.py): the page `scoped` (a browser without a token goes to the login
form); a decision `reviewer`, audited as `dashboard:<token name>` like the review page's
(the memory's audit row names the finding too). The decision is JSON sent with
`X-Memory-Platform: 1`, which a cross-site page cannot send without a CORS preflight this
app never grants (api/http_guards.py).
"""

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, Field

from memory_platform.api.access import Caller, Rule, Rules
from memory_platform.api.dashboard import pages
from memory_platform.recall import findings as finding_service
from memory_platform.store import Database
from memory_platform.vault import service as vault_service

LOGIN_PATH = "/review/login"


class Decision(BaseModel):
    """The same body as api/recall.py's Resolution (not imported: api/recall.py mounts this
    router, and the modules of a package import in one direction)."""

    action: Literal["supersede", "archive", "keep"]
    old_id: int | None = Field(None, description="supersede: the fact that stops holding")
    memory_id: int | None = Field(None, description="archive: which of the finding's")


def _actor(caller: Caller) -> str:
    # as the review page's decisions (routes.py): `dashboard:<token name>`
    return "dashboard:" + caller.actor.split(":", 1)[-1]


def findings_page_router(database: Database, rules: Rules) -> APIRouter:
    router = APIRouter(prefix="/review", include_in_schema=False)
    PageCaller = Annotated[Caller, Depends(rules.page(Rule.SCOPED, LOGIN_PATH))]
    Reviewer = Annotated[Caller, Depends(rules.reviewer)]

    @router.get("/findings", response_class=HTMLResponse)
    def findings_page(caller: PageCaller, namespace: str | None = None) -> HTMLResponse:
        try:
            found = finding_service.for_review(database, caller.scope, namespace=namespace)
        except vault_service.Forbidden as exc:
            raise HTTPException(status_code=403, detail=str(exc)) from exc
        except ValueError as exc:  # a namespace name that cannot be one
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        counts = finding_service.open_counts(database, caller.scope)
        return pages.page("findings.html", findings=found, in_namespace=namespace,
                          counts=counts, scope=caller.scope.describe(),
                          actor=_actor(caller))

    @router.post("/api/findings/{finding_id:int}/resolve")
    def resolve(finding_id: int, body: Decision, caller: Reviewer) -> dict:
        try:
            done = finding_service.resolve(database, finding_id, body.action,
                                           actor=_actor(caller), scope=caller.scope,
                                           old_id=body.old_id, memory_id=body.memory_id)
        except vault_service.NotFound as exc:  # outside the scope reads as missing
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        except vault_service.Forbidden as exc:
            raise HTTPException(status_code=403, detail=str(exc)) from exc
        except (finding_service.FindingConflict, vault_service.Conflict) as exc:
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        except ValueError as exc:  # a decision the finding does not allow
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        return {"id": done["id"], "namespace": done["namespace"], "kind": done["kind"],
                "status": done["status"], "resolved_by": done["resolved_by"],
                "changed": done["changed"]}

    return router
