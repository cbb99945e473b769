"""The dashboard's routes: who may see what, the service each calls, and the page or JSON
it answers with. No SQL and no review rules here: those are vault.queue (what waits),
vault.review (the decisions), vault.service (namespaces and memories, scoped),
recall.findings (the open findings the overview counts) and query.search (the source
turns)."""

import hmac
import secrets
from typing import Annotated
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.requests import Request as StarletteRequest

from memory_platform.api import access
from memory_platform.api.access import SESSION_COOKIE, Caller, Rule, Rules
from memory_platform.api.dashboard import pages
from memory_platform.api.dashboard.recorder import PromotionRecorder
from memory_platform.recall import findings as finding_service
from memory_platform.store import Database
from memory_platform.vault import queue as review_queue
from memory_platform.vault import review, sources
from memory_platform.vault import service as vault_service

PAGE = review_queue.PAGE_SIZE
CONTEXT_TURNS = 3
# The login form's CSRF token (double submit): a cookie only this site's pages can read
# back into the form (SameSite=Strict, so a cross-site POST carries none).
CSRF_COOKIE = "mp_csrf"
LOGIN_PATH = "/review/login"


class ApproveBody(BaseModel):
    text: str | None = None
    namespace: str | None = None


class SkipBody(BaseModel):
    reason: str | None = None


class SupersedeBody(BaseModel):
    old_memory_id: int
    text: str | None = None


class BulkBody(BaseModel):
    ids: list[int] = Field(min_length=1)


def _actor(caller: Caller) -> str:
    return "dashboard:" + caller.actor.split(":", 1)[-1]


def dashboard_router(database: Database, rules: Rules,
                     recorder: PromotionRecorder | None = None) -> APIRouter:
    """The /review pages and their JSON actions; decisions are recorded as Dagster runs by
    `recorder` (default: a PromotionRecorder on the `memory-platform up` instance). Pages
    and reads are `scoped`, decisions `reviewer` (a person's token), the login form
    `public` (api/access.py)."""
    router = APIRouter(prefix="/review", include_in_schema=False)
    recorder = recorder or PromotionRecorder()
    router.recorder = recorder  # for tests and the benchmark
    resolve = rules.resolve

    # a browser without a token goes to the login form
    PageCaller = Annotated[Caller, Depends(rules.page(Rule.SCOPED, LOGIN_PATH))]
    ApiCaller = Annotated[Caller, Depends(rules.scoped)]
    Reviewer = Annotated[Caller, Depends(rules.reviewer)]
    public = [Depends(rules.public)]

    def visible(caller: Caller, namespace: str) -> None:
        if not caller.scope.permits(namespace):
            raise HTTPException(status_code=403, detail=f"this token is limited to "
                                f"{caller.scope.describe()}; {namespace!r} is outside it")

    def pending_page(caller: Caller, namespace: str, after_id: int) -> dict:
        """One page of the namespace's pending entries: entries, total, next_after_id, and
        targets (the primary namespaces in scope, to approve an entry into)."""
        visible(caller, namespace)
        try:
            entries, total = review_queue.pending(database, namespace, after_id=after_id,
                                                  limit=PAGE)
        except ValueError as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        targets = [n["name"] for n in vault_service.primary_namespaces(database, caller.scope)]
        last = entries[-1]["id"] if entries else None
        more = last is not None and len(entries) == PAGE
        return {"entries": entries, "total": total, "targets": targets,
                "next_after_id": last if more else None}

    def own_entry(caller: Caller, memory_id: int, target: str | None = None) -> dict:
        """The memory, when it is in the caller's scope (404 otherwise: an id says nothing
        about other namespaces); 403 for a target namespace outside it."""
        try:
            row = vault_service.get(database, caller.scope, memory_id)
        except vault_service.NotFound as exc:
            raise HTTPException(status_code=404, detail=f"no memory {memory_id}") from exc
        if target is not None:
            visible(caller, target)
        return row

    def decide(fn, *args, **kwargs) -> dict:
        try:
            return fn(*args, **kwargs)
        except review.ReviewConflict as exc:
            raise HTTPException(status_code=409, detail=str(exc)) from exc
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc

    def record(done: dict, namespace: str) -> None:
        recorder.submit(done["memory_id"], done["promoted_id"], actor=done["actor"],
                        old_memory_id=done.get("superseded_id"), namespace=namespace)

    # --- pages

    @router.get("/login", response_class=HTMLResponse, dependencies=public)
    def login_form(request: Request, next: str = "/review", error: str = "") -> HTMLResponse:
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        response = pages.page("login.html", next=next, error=error, csrf=csrf)
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict",
                            path=LOGIN_PATH, secure=request.url.scheme == "https")
        return response

    @router.post("/login", dependencies=public)
    async def login(request: Request) -> RedirectResponse:
        try:
            form = parse_qs((await request.body()).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise HTTPException(status_code=422, detail="the form is not UTF-8") from exc
        given = (form.get("csrf") or [""])[0]
        expected = request.cookies.get(CSRF_COOKIE, "")
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            # A login form posted from another site (login CSRF), or a stale page.
            raise HTTPException(status_code=403, detail="the login form has expired or "
                                "came from another site; reload /review/login")
        token = (form.get("token") or [""])[0].strip()
        target = (form.get("next") or ["/review"])[0]
        if not target.startswith("/review") or target.startswith("//"):
            target = "/review"  # no open redirect
        probe = StarletteRequest({"type": "http", "method": "GET", "path": "/review",
                                  "headers": [(b"authorization", f"Bearer {token}".encode())]})
        try:
            resolve(probe)
        except (HTTPException, ValueError):
            return RedirectResponse(f"/review/login?next={quote(target)}&error="
                                    f"{quote('that token is not valid')}", status_code=303)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict",
                            path="/", secure=request.url.scheme == "https")
        return response

    @router.get("", response_class=HTMLResponse)
    def overview(caller: PageCaller) -> HTMLResponse:
        cards = [c for c in review_queue.overview(database) if caller.scope.permits(c["namespace"])]
        return pages.page("overview.html", namespaces=cards, actor=_actor(caller),
                          findings=finding_service.open_counts(database, caller.scope),
                          scope=caller.scope.describe())

    @router.get("/event/{event_id:int}", response_class=HTMLResponse)
    def event(event_id: int, caller: PageCaller, memory: int | None = None) -> HTMLResponse:
        # What a caller may see of cairn is vault.sources' rule: a scoped token, only the
        # turns its own entry cites, masked.
        try:
            found = sources.source_turn(database, caller.scope, event_id, memory_id=memory,
                                        context=CONTEXT_TURNS)
        except vault_service.Forbidden as exc:
            raise HTTPException(status_code=403, detail=str(exc)) from exc
        except vault_service.NotFound as exc:
            raise HTTPException(status_code=404, detail=str(exc)) from exc
        return pages.page("event.html", event_id=event_id, found=found)

    @router.get("/{namespace}", response_class=HTMLResponse)
    def namespace_page(namespace: str, caller: PageCaller) -> HTMLResponse:
        return pages.page("namespace.html", namespace=namespace,
                          **pending_page(caller, namespace, 0))

    # --- JSON

    @router.get("/api/status")
    def status(caller: ApiCaller) -> dict:
        """The recording of decisions in the caller's namespaces only (another
        namespace's errors name its memories)."""
        return recorder.status(caller.scope)

    @router.get("/api/{namespace}/entries")
    def more_entries(namespace: str, caller: ApiCaller, after_id: int = 0) -> dict:
        found = pending_page(caller, namespace, after_id)
        return {"html": pages.cards(found["entries"], found["targets"]),
                "total": found["total"], "count": len(found["entries"]),
                "next_after_id": found["next_after_id"]}

    @router.post("/api/entries/{memory_id:int}/approve")
    def approve(memory_id: int, body: ApproveBody, caller: Reviewer) -> dict:
        entry = own_entry(caller, memory_id, body.namespace)
        done = decide(review.approve, database, memory_id, actor=_actor(caller),
                      text=body.text, namespace=body.namespace)
        record(done, entry["namespace"])
        return done

    @router.post("/api/entries/{memory_id:int}/supersede")
    def supersede(memory_id: int, body: SupersedeBody, caller: Reviewer) -> dict:
        entry = own_entry(caller, memory_id)
        own_entry(caller, body.old_memory_id)
        done = decide(review.supersede, database, memory_id, actor=_actor(caller),
                      old_memory_id=body.old_memory_id, text=body.text)
        record(done, entry["namespace"])
        return done

    @router.post("/api/entries/{memory_id:int}/skip")
    def skip(memory_id: int, body: SkipBody, caller: Reviewer) -> dict:
        # A skip promotes nothing, so it is no vault_promotions run; vault_audit records it.
        own_entry(caller, memory_id)
        row = decide(review.skip, database, memory_id, actor=_actor(caller),
                     reason=body.reason)
        return {"memory_id": row["id"], "action": "skip", "review_note": row["review_note"]}

    @router.post("/api/bulk-approve")
    def bulk_approve(body: BulkBody, caller: Reviewer) -> dict:
        namespaces = {memory_id: own_entry(caller, memory_id)["namespace"]
                      for memory_id in body.ids}
        actor = _actor(caller)
        results = review.bulk_approve(database, body.ids, actor=actor)
        for r in results:
            if r["outcome"] == "approved":
                recorder.submit(r["id"], r["promoted_id"], actor=actor,
                                namespace=namespaces[r["id"]])
        return {"results": results}

    return router


def mount_dashboard(app, database: Database, recorder: PromotionRecorder | None = None) -> None:
    """Mount /review on the app, with the app's caller resolver, and its CSS and JS at
    /review/static (no auth: they are the package's own files, no data). The recorder is
    kept as `app.state.review_recorder`, and starts catching up on approvals an earlier
    server left unrecorded (its thread: `app.state.review_catch_up`)."""
    router = dashboard_router(database, app.state.rules, recorder)
    app.state.review_recorder = router.recorder
    app.state.review_catch_up = router.recorder.catch_up(database)
    app.mount(pages.STATIC_URL, StaticFiles(directory=pages.STATIC_DIR), name="review-static")
    access.declare(app.routes[-1], Rule.PUBLIC)  # the package's own CSS and JS, no data
    app.include_router(router)
