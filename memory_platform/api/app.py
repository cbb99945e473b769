"""REST API over the same service layer as the CLI and the MCP server.

    memory-platform serve                       # 127.0.0.1:8000, no token needed
    memory-platform serve --host 0.0.0.0        # refused unless a token is set or exists

Bound to loopback by default. Bound anywhere else, every request needs
`Authorization: Bearer $MEMORY_PLATFORM_API_TOKEN` (the admin token, every namespace) or a
namespace-scoped token from `memory-platform token create` (the /vault routes only), and
the server refuses to start with neither. On loopback with neither configured, requests
need no token. Who may call what is api/access.py (every route states its rule there);
what every request passes first (Host, body size, cross-site) is api/http_guards.py.

Failures answer with their meaning, never a bare 500: bad input 422 (`ValueError`, which
includes query/inputs.InvalidInput), a search that cannot run yet 409, the database down
503 with the reason (and /health says so too). Every route's query and path parameters
are checked first (`plain_text_parameters`): one holding a NUL or a lone surrogate, which
no text in the database can hold, is a 422 naming it, whatever the route.
"""

import logging
from datetime import datetime
from typing import Annotated, Literal

import psycopg
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel

from memory_platform.api import access
from memory_platform.api.access import Rule
from memory_platform.api.http_guards import (
    LOOPBACK_NAMES,
    BodyLimit,
    CrossSiteCheck,
    HostCheck,
    is_loopback_name,
)
from memory_platform.query.models import SearchHit
from memory_platform.settings import load_settings
from memory_platform.store import Database, DatabaseError
from memory_platform.vault import tokens

log = logging.getLogger(__name__)
# What a client waits before asking again while the database is down.
RETRY_AFTER_S = 5


class SummarizeRequest(BaseModel):
    since: datetime
    until: datetime
    source: str | None = None
    project: str | None = None


def is_loopback(host: str) -> bool:
    return is_loopback_name(host.strip().lower())


def _database_down(exc: Exception) -> JSONResponse:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return JSONResponse(status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)},
                        content={"detail": f"the database is unavailable: {reason}"})


def plain_text_parameters(request: Request) -> None:
    """Refuse (InvalidInput: 422) a query or path parameter that text cannot hold; every
    route depends on it (create_app), so a new route is covered the day it is added."""
    from memory_platform.query.inputs import check_text

    for name, value in request.query_params.multi_items():
        check_text(name, "a query parameter's name")
        check_text(value, f"query parameter {name!r}")
    for name, value in request.path_params.items():
        if isinstance(value, str):
            check_text(value, f"path parameter {name!r}")


def mount_routers(app, routers, catch_all) -> None:
    """Include `routers` in their order, then mount `catch_all` (the review dashboard, whose
    /review/{namespace} would answer for any /review page mounted after it) after all of
    them: the order is this function's, not a comment's."""
    for router in routers:
        app.include_router(router)
    catch_all()


def _error_handlers(app: FastAPI) -> None:
    from memory_platform.llm.base import LLMError
    from memory_platform.query.search import SearchError

    @app.exception_handler(LLMError)
    async def model_failed(request: Request, exc: LLMError) -> JSONResponse:
        # the model (a vendor, or a local server) failed or answered nonsense: its message
        # says which and why; not this server's fault, so 502
        log.error("LLM call failed for %s %s: %s", request.method, request.url.path, exc)
        return JSONResponse(status_code=502, content={"detail": str(exc)})

    @app.exception_handler(ValueError)
    async def bad_input(request: Request, exc: ValueError) -> JSONResponse:
        # Services raise ValueError (InvalidInput among them) for input they refuse, with
        # a message saying why: the CLI prints it, MCP returns it, REST answers 422.
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    @app.exception_handler(SearchError)
    async def cannot_search(request: Request, exc: SearchError) -> JSONResponse:
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    @app.exception_handler(DatabaseError)
    async def database_error(request: Request, exc: DatabaseError) -> JSONResponse:
        log.error("database unavailable for %s %s: %s", request.method, request.url.path, exc)
        return _database_down(exc)

    @app.exception_handler(psycopg.OperationalError)
    async def connection_lost(request: Request, exc: psycopg.OperationalError) -> JSONResponse:
        # A connection that died under a request (the server restarted or was killed): the
        # pool replaces it (store/db.py), so the next request gets a fresh one.
        log.error("database connection lost for %s %s: %s", request.method,
                  request.url.path, exc)
        return _database_down(exc)


def create_app(db: Database | None = None, *, token: str | None = None, embedder=None,
               llm=None, vault_embedder=None, open_without_token: bool = True,
               allowed_hosts: list[str] | None = None, max_body_bytes: int | None = None,
               recorder=None) -> FastAPI:
    """The app over one database. With `token` (the admin token), or with
    `open_without_token=False` (bound off loopback), every route but the public ones
    requires a bearer: the admin token, or a namespace-scoped API token. `allowed_hosts`
    are the Host names answered besides loopback ones (default: the setting);
    `max_body_bytes` the body limit (default: the setting)."""
    from memory_platform.query import reading
    from memory_platform.query import search as service

    settings = load_settings()
    database = db or Database.from_settings(settings)
    # FastAPIOffline serves Swagger UI and ReDoc from the package's own files: /docs works
    # on a machine with no network (issue 12); it adds /docs, /redoc and their assets.
    app = FastAPIOffline(title="memory-platform cairn", version="0.1.0",
                         description="Every AI conversation turn, verbatim and searchable.",
                         dependencies=[Depends(plain_text_parameters)])
    for route in app.routes:  # FastAPI's own: the schema, the docs pages and their assets
        access.declare(route, Rule.PUBLIC)

    resolve_caller = access.caller_resolver(database, token,
                                            open_without_token=open_without_token)
    rules = access.Rules(resolve_caller)
    app.state.resolve_caller = resolve_caller
    app.state.rules = rules
    _error_handlers(app)

    from memory_platform.api.curator import curator_router
    from memory_platform.api.dashboard import mount_dashboard
    from memory_platform.api.dashboard.curator import curator_page_router
    from memory_platform.api.dashboard.findings import findings_page_router
    from memory_platform.api.dashboard.orchard import orchard_page_router
    from memory_platform.api.ingest import ingest_router
    from memory_platform.api.orchard import orchard_router
    from memory_platform.api.recall import recall_router
    from memory_platform.api.reports import reports_router
    from memory_platform.api.vault import vault_router

    routers = [
        curator_router(database, rules),  # /curator (scoped as /vault)
        curator_page_router(database, rules),  # /review/curator
        recall_router(database, rules, embedder=vault_embedder),  # /vault/context, findings
        findings_page_router(database, rules),  # /review/findings
        vault_router(database, rules, embedder=vault_embedder),  # /vault
        orchard_router(database, rules, llm),  # /orchard
        orchard_page_router(database, rules),  # /review/orchard
        reports_router(rules),  # /reports: the weekly reports
        ingest_router(database, rules, settings.home),  # /ingest/{machine}/records
    ]
    mount_routers(app, routers, catch_all=lambda: mount_dashboard(app, database, recorder))

    cairn = [Depends(rules.unscoped)]

    @app.get("/health", dependencies=[Depends(rules.public)],
             responses={503: {"description": "the database is down; the reason is given"}})
    def health() -> JSONResponse:
        """200 when the database answers; 503 with the reason when it does not."""
        try:
            database.ping()
        except (DatabaseError, psycopg.Error) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
            return JSONResponse(status_code=503, headers={"Retry-After": str(RETRY_AFTER_S)},
                                content={"status": "down", "database": reason})
        return JSONResponse({"status": "ok"})

    @app.get("/search", dependencies=cairn, response_model=list[SearchHit])
    def search(
        q: Annotated[str, Query(min_length=1, description="Words, an error code, a question")],
        k: Annotated[int, Query(ge=1, le=100)] = 10,
        source: str | None = None, project: str | None = None, role: str | None = None,
        conversation_id: int | None = None,
        since: datetime | None = None, until: datetime | None = None,
        mode: Literal["hybrid", "dense", "keyword"] = "hybrid",
    ) -> list[dict]:
        filters = service.SearchFilters(source=source, project=project, role=role,
                                        conversation_id=conversation_id, since=since,
                                        until=until)
        return [h.to_dict() for h in service.search(database, q, k=k, filters=filters,
                                                     mode=mode, embedder=embedder)]

    @app.get("/events/{event_id}", dependencies=cairn)
    def get_event(event_id: int, before: Annotated[int, Query(ge=0, le=50)] = 0,
                  after: Annotated[int, Query(ge=0, le=50)] = 0) -> dict:
        found = reading.get_event(database, event_id, before=before, after=after)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no event with id {event_id}")
        return found

    @app.get("/timeline", dependencies=cairn)
    def timeline(since: datetime, until: datetime, source: str | None = None,
                 project: str | None = None) -> list[dict]:
        return reading.timeline(database, since=since, until=until,
                                filters=service.SearchFilters(source=source, project=project))

    @app.post("/summarize", dependencies=cairn)
    def summarize(body: SummarizeRequest) -> dict:
        from memory_platform.llm import CallRecorder, LLMNotConfigured, provider_from_env
        from memory_platform.query.summarize import summarize_range

        try:
            model = llm or CallRecorder(provider_from_env(), db=database)
        except LLMNotConfigured as exc:
            raise HTTPException(status_code=503, detail=str(exc)) from exc
        result = summarize_range(database, model, body.since, body.until,
                                 service.SearchFilters(source=body.source,
                                                       project=body.project))
        return result.to_dict()

    # Outermost last: the Host check runs first, then the body limit, then the cross-site
    # check (api/http_guards.py).
    app.add_middleware(CrossSiteCheck)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes or settings.api_max_body_bytes)
    app.add_middleware(HostCheck, allowed=settings.allowed_hosts() if allowed_hosts is None
                       else allowed_hosts)
    return app


WILDCARDS = ("0.0.0.0", "::", "")


def serve(host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          *, run=None) -> None:
    """Start the API with uvicorn (or hand the app to `run(app, host, port)`, which tests
    use to check what `serve` builds without binding a port). Off loopback it refuses to
    start with neither the admin token nor a live scoped token, and never lets a request
    without a token in."""
    settings = load_settings()
    loopback = is_loopback(host)
    database = Database.from_settings(settings)
    if not loopback and not token and not tokens.any_live(database):
        raise ValueError(
            f"refusing to serve on {host} without a token: set MEMORY_PLATFORM_API_TOKEN "
            "(the admin token; clients send it as 'Authorization: Bearer <token>'), create a "
            "namespace-scoped one with `memory-platform token create`, or bind to 127.0.0.1"
        )
    allowed = [*settings.allowed_hosts()]
    if host.strip().lower() not in WILDCARDS:
        allowed.append(host)  # the address it is bound to is its own name
    elif not loopback and not allowed:
        log.warning("bound to %s: only loopback names are answered as Host; name this "
                    "machine's in MEMORY_PLATFORM_API_ALLOWED_HOSTS", host)
    app = create_app(database, token=token, open_without_token=loopback,
                     allowed_hosts=allowed)
    log.info("answering Host %s", ", ".join([*LOOPBACK_NAMES, *allowed]))
    if run is not None:
        run(app, host, port)
        return
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level="info")
