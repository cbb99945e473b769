"""REST API over the same service layer as the CLI and the MCP server.

    memory-platform serve                       # 127.0.0.1:8000, no token needed
    memory-platform serve --host 0.0.0.0        # refused unless a token is set or exists

Bound to loopback by default. Bound anywhere else, every request needs
`Authorization: Bearer $MEMORY_PLATFORM_API_TOKEN` (the admin token, every namespace) or a
namespace-scoped token from `memory-platform token create` (the /vault routes only), and
the server refuses to start with neither. On loopback with neither configured, requests
need no token. See api/vault.py.
"""

import ipaddress
from datetime import datetime
from typing import Annotated, Literal

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from pydantic import BaseModel

from memory_platform.query.models import SearchHit
from memory_platform.settings import load_settings
from memory_platform.store import Database
from memory_platform.vault import tokens


class SummarizeRequest(BaseModel):
    since: datetime
    until: datetime
    source: str | None = None
    project: str | None = None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def create_app(db: Database | None = None, *, token: str | None = None, embedder=None,
               llm=None, vault_embedder=None, open_without_token: bool = True) -> FastAPI:
    """The app over one database. With `token` (the admin token), or with
    `open_without_token=False` (bound off loopback), every route but /health requires a
    bearer: the admin token, or a namespace-scoped API token for the /vault routes."""
    from memory_platform.query import search as service

    database = db or Database.from_settings(load_settings())
    app = FastAPI(title="memory-platform cairn", version="0.1.0",
                  description="Every AI conversation turn, verbatim and searchable.")

    from memory_platform.api.vault import caller_resolver, vault_router

    # Who is calling (admin token, a namespace-scoped API token, or open loopback): see
    # api/vault.py. Other routes (the dashboard) can depend on app.state.resolve_caller.
    resolve_caller = caller_resolver(database, token, open_without_token=open_without_token)
    app.state.resolve_caller = resolve_caller

    def authorize(request: Request) -> None:
        caller = resolve_caller(request)
        if not caller.scope.unrestricted:
            raise HTTPException(
                status_code=403,
                detail=f"cairn holds every conversation, unscoped; this token is limited "
                       f"to {caller.scope.describe()} (use the vault routes, or the admin "
                       f"token MEMORY_PLATFORM_API_TOKEN)")

    guarded = [Depends(authorize)]
    app.include_router(vault_router(database, resolve_caller, embedder=vault_embedder))
    from memory_platform.api.recall import recall_router

    app.include_router(recall_router(database, resolve_caller, embedder=vault_embedder))
    from memory_platform.api.dashboard import mount_dashboard
    from memory_platform.api.orchard import mount_orchard

    # /orchard and /review/orchard, before the dashboard's /review/{namespace} catches it
    mount_orchard(app, database, resolve_caller, llm=llm)
    mount_dashboard(app, database)  # /review: the review dashboard
    from memory_platform.api.reports import reports_router

    app.include_router(reports_router(resolve_caller))  # /reports: the weekly reports

    @app.get("/health")
    def health() -> dict:
        with database.connect() as conn:
            conn.execute("SELECT 1")
        return {"status": "ok"}

    @app.get("/search", dependencies=guarded, response_model=list[SearchHit])
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

    @app.get("/events/{event_id}", dependencies=guarded)
    def get_event(event_id: int, before: Annotated[int, Query(ge=0, le=50)] = 0,
                  after: Annotated[int, Query(ge=0, le=50)] = 0) -> dict:
        found = service.get_event(database, event_id, before=before, after=after)
        if found is None:
            raise HTTPException(status_code=404, detail=f"no event with id {event_id}")
        return found

    @app.get("/timeline", dependencies=guarded)
    def timeline(since: datetime, until: datetime, source: str | None = None,
                 project: str | None = None) -> list[dict]:
        return service.timeline(database, since=since, until=until,
                                filters=service.SearchFilters(source=source, project=project))

    @app.post("/summarize", dependencies=guarded)
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

    return app


def serve(host: str = "127.0.0.1", port: int = 8000, token: str | None = None) -> None:
    import uvicorn

    loopback = is_loopback(host)
    database = Database.from_settings(load_settings())
    if not loopback and not token and not tokens.any_live(database):
        raise ValueError(
            f"refusing to serve on {host} without a token: set MEMORY_PLATFORM_API_TOKEN "
            "(the admin token; clients send it as 'Authorization: Bearer <token>'), create a "
            "namespace-scoped one with `memory-platform token create`, or bind to 127.0.0.1"
        )
    app = create_app(database, token=token, open_without_token=loopback)
    uvicorn.run(app, host=host, port=port, log_level="info")
