"""Who is calling, and the access rule every route declares.

Who the caller is (`caller_resolver`):

- `Authorization: Bearer <MEMORY_PLATFORM_API_TOKEN>`: the admin token, every namespace;
  audit actor `api:admin`.
- `Authorization: Bearer mp_...` (from `memory-platform token create`): the token's
  namespaces and their shadows, and its kind (`person` or `agent`, see vault/tokens.py);
  actor `api:<token name>`. Revoked or unknown: 401.
- The dashboard's login cookie carries the same bearer (set by /review/login).
- No bearer: allowed only when nothing is configured (no admin token, no live API token),
  which the app allows only on loopback. Then every namespace; actor `api:local`. As soon
  as one API token exists, requests without a bearer get 401: a token limited to `work`
  means nothing if leaving it out opened `personal`.

The rules. Every route of the app states exactly one, as a dependency made by `Rules`
(or, for routes FastAPI or Starlette make themselves, with `declare`); the scoped-token
matrix in tests/test_access_matrix.py walks the route table and fails on a route that
states none, so a new router cannot forget:

| rule | who gets in | what they see |
| --- | --- | --- |
| `public` | anyone (no data: health, docs, static files, the login form) | nothing of the memory |
| `unscoped` | the admin token or open loopback; a scoped token gets 403 | cairn, every conversation (it is not split by namespace) |
| `scoped` | any caller | what the vault services let its scope see (other namespaces: 403 by name, 404 by id) |
| `reviewer` | a caller whose token is a person's (an agent token gets 403) | review decisions on entries in its scope |
| `collector` | the collector token of the path's `{machine}`, the admin token or open loopback; any other token 403 | nothing: it appends that machine's raw records |

A collector token (vault/tokens.py) gets 403 from every rule but `collector`: it names no
namespace and reads nothing; MCP takes no tokens at all (loopback, scoped at its start).
"""

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from memory_platform.store import Database
from memory_platform.vault import service as vault_service
from memory_platform.vault import tokens
from memory_platform.vault.tokens import Scope

# Set by the dashboard's /review/login: a browser's bearer token (api/dashboard/routes.py).
SESSION_COOKIE = "mp_session"
RULE_ATTRIBUTE = "access_rule"
# Declares the bearer in the OpenAPI schema of every non-public route (clients and the
# schema-driven tests see which routes need it); the resolver reads the header itself.
BEARER = HTTPBearer(auto_error=False, description="The admin token "
                    "(MEMORY_PLATFORM_API_TOKEN) or one from `memory-platform token create`")
Bearer = Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]


class Rule(StrEnum):
    PUBLIC = "public"
    UNSCOPED = "unscoped"
    SCOPED = "scoped"
    REVIEWER = "reviewer"
    COLLECTOR = "collector"


@dataclass(frozen=True)
class Caller:
    """Who is calling: the namespaces they may touch (and whether as an agent), and the
    actor their writes are audited as. `via` is 'admin', 'token' or 'open' (loopback,
    nothing configured)."""

    scope: Scope
    actor: str
    via: str
    machine: str | None = None  # a collector token's machine (via 'collector')


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status_code=401, detail=detail,
                         headers={"WWW-Authenticate": "Bearer"})


def caller_resolver(database: Database, admin_token: str | None, *,
                    open_without_token: bool = True) -> Callable[[Request], Caller]:
    """A function resolving a request to its Caller, or raising 401.
    `open_without_token=False` (a server bound off loopback) never lets a request without
    a token in, even once every API token is revoked."""

    def resolve(request: Request) -> Caller:
        header = request.headers.get("authorization", "")
        if not header and request.cookies.get(SESSION_COOKIE):
            # the dashboard's login cookie (HttpOnly, SameSite=Strict) carries the same token
            header = f"Bearer {request.cookies[SESSION_COOKIE]}"
        if header:
            scheme, _, given = header.partition(" ")
            given = given.strip()
            if scheme.lower() != "bearer" or not given:
                raise _unauthorized("use 'Authorization: Bearer <token>'")
            if admin_token and hmac.compare_digest(given.encode(), admin_token.encode()):
                return Caller(Scope.everything(), "api:admin", "admin")
            token = tokens.verify(database, given)
            if token is None:
                raise _unauthorized("missing or wrong bearer token")
            if token.kind == "collector":
                return Caller(token.scope, token.actor, "collector", machine=token.machine)
            return Caller(token.scope, token.actor, "token")
        if admin_token:
            raise _unauthorized("missing or wrong bearer token")
        if not open_without_token:
            raise _unauthorized("a bearer token is required: this server is not bound to "
                                "loopback")
        if tokens.any_live(database):
            raise _unauthorized("a bearer token is required: API tokens exist "
                                "(see `memory-platform token list`)")
        return Caller(Scope.everything(), "api:local", "open")

    return resolve


def _marked(rule: Rule, fn: Callable) -> Callable:
    setattr(fn, RULE_ATTRIBUTE, rule)
    return fn


class Rules:
    """The rule dependencies of one app, over its caller resolver. Use one per route:
    `caller: Annotated[Caller, Depends(rules.scoped)]`, or `dependencies=[Depends(
    rules.unscoped)]` when the route does not need the caller."""

    def __init__(self, resolve_any: Callable[[Request], Caller]):
        def resolve(request: Request) -> Caller:
            caller = resolve_any(request)
            if caller.via == "collector":
                raise HTTPException(status_code=403, detail=(
                    f"a collector token only appends machine {caller.machine}'s records "
                    f"(POST /ingest/{caller.machine}/records)"))
            return caller

        self.resolve = resolve

        def public() -> None:
            return None

        def collector(request: Request, _: Bearer) -> Caller:
            caller = resolve_any(request)
            machine = request.path_params.get("machine")
            if caller.via == "token":
                raise HTTPException(status_code=403, detail=(
                    "only a collector token (memory-platform token create --kind collector "
                    "--machine NAME) or the admin token may push records"))
            if caller.via == "collector" and caller.machine != machine:
                raise HTTPException(status_code=403, detail=(
                    f"this collector token is machine {caller.machine}'s, not {machine}'s"))
            return caller

        def unscoped(request: Request, _: Bearer) -> Caller:
            caller = resolve(request)
            if not caller.scope.unrestricted:
                raise HTTPException(
                    status_code=403,
                    detail=f"cairn holds every conversation, unscoped; this token is "
                           f"limited to {caller.scope.describe()} (use the vault routes, "
                           f"or the admin token MEMORY_PLATFORM_API_TOKEN)")
            return caller

        def scoped(request: Request, _: Bearer) -> Caller:
            return resolve(request)

        def reviewer(request: Request, _: Bearer) -> Caller:
            caller = resolve(request)
            try:
                vault_service.check_reviewer(caller.scope)
            except vault_service.Forbidden as exc:
                raise HTTPException(status_code=403, detail=str(exc)) from exc
            return caller

        self.public = _marked(Rule.PUBLIC, public)
        self.unscoped = _marked(Rule.UNSCOPED, unscoped)
        self.scoped = _marked(Rule.SCOPED, scoped)
        self.reviewer = _marked(Rule.REVIEWER, reviewer)
        self.collector = _marked(Rule.COLLECTOR, collector)

    def page(self, rule: Rule, login_path: str) -> Callable:
        """The rule's dependency for an HTML page: a browser without a token is sent to
        the login form (303) instead of getting a bare 401."""
        from urllib.parse import quote

        inner = getattr(self, rule.value)

        def page_caller(request: Request, credentials: Bearer) -> Caller:
            try:
                return inner(request, credentials)
            except HTTPException as exc:
                if exc.status_code == 401:
                    raise HTTPException(status_code=303, headers={
                        "Location": f"{login_path}?next={quote(request.url.path)}"}) from exc
                raise

        return _marked(rule, page_caller)


def declare(route: Any, rule: Rule) -> None:
    """State the rule of a route FastAPI or Starlette made (the OpenAPI and docs routes, a
    static mount), which takes no dependency."""
    setattr(route, RULE_ATTRIBUTE, rule)


@dataclass(frozen=True)
class RouteEntry:
    """One route of an app as a client reaches it: its full path, methods (None for a
    mount), the route object itself, and the rules it states."""

    path: str
    methods: frozenset[str] | None
    route: Any
    rules: tuple[Rule, ...]


def route_table(app) -> list[RouteEntry]:
    """Every route of `app`, routers included (FastAPI keeps included routers as one entry
    of app.routes and resolves their routes lazily), with the rules each states."""
    from fastapi.routing import iter_route_contexts

    table = []
    for context in iter_route_contexts(app.routes):
        original = context.original_route
        methods = context.methods
        table.append(RouteEntry(path=context.path, route=original,
                                methods=frozenset(methods) if methods else None,
                                rules=tuple(rules_of(original))))
    return table


def rules_of(route: Any) -> list[Rule]:
    """Every rule a route states: its own attribute, or the rule dependencies anywhere in
    its dependency tree. A well-formed route has exactly one."""
    own = getattr(route, RULE_ATTRIBUTE, None)
    if own is not None:
        return [own]
    found: list[Rule] = []
    stack = [getattr(route, "dependant", None)]
    while stack:
        dependant = stack.pop()
        if dependant is None:
            continue
        rule = getattr(dependant.call, RULE_ATTRIBUTE, None)
        if rule is not None:
            found.append(rule)
        stack.extend(dependant.dependencies)
    return found


def answer_service(fn: Callable, *args, conflicts: tuple[type[Exception], ...] = (), **kwargs):
    """`fn(*args, **kwargs)` with the services' refusals as HTTP answers, for every router:
    Forbidden 403, NotFound 404, Conflict (and `conflicts`) 409, ValueError 422, each with
    the service's message."""
    try:
        return fn(*args, **kwargs)
    except vault_service.Forbidden as exc:
        raise HTTPException(status_code=403, detail=str(exc)) from exc
    except vault_service.NotFound as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from exc
    except (vault_service.Conflict, *conflicts) as exc:
        raise HTTPException(status_code=409, detail=str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc
