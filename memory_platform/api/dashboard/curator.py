"""The dashboard's curator page: what the weekly curator cut, and one key to undo it.

    GET  /review/curator?namespace=                       the page (static/curator.js: j/k r)
    POST /review/api/curator/cuts/{memory_id}/restore     restore one cut (JSON, no body)

The page shows, in the caller's namespaces only (curator.service reads through the scope):
the runs refused in the last REFUSED_DAYS days first and loudly (the breaker, a namespace
that changed before cutting, an invalid verdict: nothing was cut in them), then every run
that cut something, newest first, each cut with its text, reason, the memory it duplicates
or contradicts, its evidence (file:line, commit, memory) and its purge countdown.

Rules (api/access.py): the page `scoped` (a browser without a token goes to the login
form); a restore `reviewer`, audited as `dashboard:<token name>` like the review page's
decisions. The restore is JSON sent with `X-Memory-Platform: 1`, which a cross-site page
cannot send without a CORS preflight this app never grants (api/http_guards.py).
"""

from datetime import datetime, timezone
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path
from fastapi.responses import HTMLResponse

from memory_platform.api.access import Caller, Rule, Rules
from memory_platform.api.dashboard import pages
from memory_platform.curator import archive, service

LOGIN_PATH = "/review/login"
REFUSED_DAYS = 14  # the retention window: a refusal stays on the page as long as a cut would
REFUSALS = {"breaker": "circuit breaker", "fingerprint": "the namespace changed before cutting",
            "invalid_verdict": "invalid verdict"}


def _actor(caller: Caller) -> str:
    # as the review page's decisions (routes.py): `dashboard:<token name>`
    return "dashboard:" + caller.actor.split(":", 1)[-1]


def _refused(database, caller: Caller, namespace: str | None, now: datetime) -> list[dict]:
    """Refused runs with what they proposed (so a person sees why the breaker tripped)."""
    found = []
    for run in service.refused_runs(database, caller.scope, days=REFUSED_DAYS, now=now):
        if namespace is not None and run["namespace"] != namespace:
            continue
        proposed = service.proposed_cuts(database, caller.scope, run["id"])
        found.append({**run, "why": REFUSALS.get(run["refusal"], run["refusal"]),
                      "proposed": proposed["cuts"]})
    return found


def curator_page_router(database, rules: Rules) -> APIRouter:
    router = APIRouter(prefix="/review", include_in_schema=False)
    PageCaller = Annotated[Caller, Depends(rules.page(Rule.SCOPED, LOGIN_PATH))]
    Reviewer = Annotated[Caller, Depends(rules.reviewer)]

    @router.get("/curator", response_class=HTMLResponse)
    def curator_page(caller: PageCaller, namespace: str | None = None) -> HTMLResponse:
        now = datetime.now(timezone.utc)
        try:
            runs = service.cuts_by_run(database, caller.scope, namespace=namespace, now=now)
        except service.Forbidden as exc:
            raise HTTPException(status_code=403, detail=str(exc)) from exc
        refused = _refused(database, caller, namespace, now)
        cuts = [c for r in runs for c in r["cuts_restorable"]]
        next_purge = min((c["restore_until"] for c in cuts), default=None)
        return pages.page("curator.html", runs=runs, refused=refused, cuts=len(cuts),
                          next_purge=next_purge, namespace=namespace, now=now,
                          refused_days=REFUSED_DAYS, scope=caller.scope.describe(),
                          actor=_actor(caller))

    @router.post("/api/curator/cuts/{memory_id:int}/restore")
    def restore(memory_id: Annotated[int, Path(ge=1, le=service.MAX_ID)],
                caller: Reviewer) -> dict:
        try:
            row = service.restore(database, caller.scope, memory_id, actor=_actor(caller))
        except service.NotFound as exc:  # outside the scope reads as missing
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        except archive.RestoreRefused as exc:  # window over, purged, already active
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        return {"memory_id": row["id"], "namespace": row["namespace"], "text": row["text"],
                "status": row["status"], "actor": _actor(caller)}

    return router
