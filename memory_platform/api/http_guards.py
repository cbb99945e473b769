"""What every request passes before any route sees it: the Host check (DNS rebinding), the
body limit, and the cross-site check on state-changing requests. Plain ASGI middleware, so
a refusal costs no route, no body parse and no database round trip.

- **Host** (`HostCheck`): on the default open loopback setup a web page the user visits
  could point a DNS name it controls at 127.0.0.1 and read the memory through it. Only
  loopback names, the address `serve` is bound to and `MEMORY_PLATFORM_API_ALLOWED_HOSTS`
  are answered; any other Host gets 421, as the MCP HTTP server does. An `Origin` from
  anywhere else gets 403.
- **Body size** (`BodyLimit`): a request body larger than `MEMORY_PLATFORM_API_MAX_BODY_BYTES`
  gets 413 before it is read into memory (by its Content-Length, or as it streams).
- **Cross-site** (`CrossSiteCheck`): a browser sends a cross-site POST without asking only
  when it is a "simple" request (a form's content types, no custom header). So every
  POST, PUT, PATCH and DELETE must carry a JSON content type, an `Authorization` header or
  the `X-Memory-Platform` header, none of which a cross-site form or a no-cors fetch can
  send; HTML forms of the app itself (`FORM_PATHS`: the login form) check a CSRF token
  instead (api/dashboard/routes.py).
"""

import json
from collections import deque
from collections.abc import Iterable
from ipaddress import ip_address
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
CUSTOM_HEADER = "x-memory-platform"
# The app's own HTML forms: they POST form-encoded and check a CSRF token themselves.
FORM_PATHS = frozenset({"/review/login"})


async def _refuse(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def host_name(host: str) -> str:
    """The name of a Host header or an Origin's netloc, without its port, lowercased;
    `[::1]:8000` -> `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def is_loopback_name(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ip_address(name).is_loopback
    except ValueError:
        return False


class HostCheck:
    """421 for a Host outside `allowed` (plus every loopback name); 403 for an Origin
    header naming another host. `allowed` containing "*" turns both off."""

    def __init__(self, app: ASGIApp, allowed: Iterable[str] = ()):
        self.app = app
        self.allowed = frozenset(host_name(h) for h in allowed if h.strip())
        self.any = "*" in self.allowed

    def permits(self, name: str) -> bool:
        return self.any or is_loopback_name(name) or name in self.allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.any:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = host_name(headers.get("host", ""))
        if not host or not self.permits(host):
            await _refuse(send, 421, f"this server does not answer for Host {host!r}: only "
                          f"loopback names and MEMORY_PLATFORM_API_ALLOWED_HOSTS (DNS "
                          f"rebinding protection)")
            return
        origin = headers.get("origin")
        if origin and origin != "null":
            netloc = urlsplit(origin).netloc
            if not netloc or not self.permits(host_name(netloc)):
                await _refuse(send, 403, f"requests from pages of {origin} are refused")
                return
        await self.app(scope, receive, send)


class CrossSiteCheck:
    """403 for a state-changing request a cross-site page could send without asking (see
    the module docstring)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS \
                or scope["path"] in FORM_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        json_body = content_type == "application/json" or content_type.endswith("+json")
        if not (json_body or "authorization" in headers or CUSTOM_HEADER in headers):
            await _refuse(send, 403, "a state-changing request needs 'Content-Type: "
                          "application/json', an Authorization header or the "
                          "'X-Memory-Platform: 1' header (what a cross-site form cannot "
                          "send)")
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """413 for a request body above `max_bytes`: by Content-Length before reading, or as
    soon as the streamed body passes it; the body is read once and replayed to the app."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    def _too_large(self) -> str:
        return (f"the request body is larger than {self.max_bytes} bytes "
                f"(MEMORY_PLATFORM_API_MAX_BODY_BYTES); a memory is one fact")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None:
            try:
                too_large = int(declared) > self.max_bytes
            except ValueError:
                await _refuse(send, 400, f"invalid Content-Length {declared!r}")
                return
            if too_large:
                await _refuse(send, 413, self._too_large())
                return
        body = bytearray()
        pending: deque[Message] = deque()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                pending.append(message)
                break
            body.extend(message.get("body", b""))
            if len(body) > self.max_bytes:
                await _refuse(send, 413, self._too_large())
                return
            if not message.get("more_body", False):
                break
        pending.appendleft({"type": "http.request", "body": bytes(body), "more_body": False})

        async def replay() -> Message:
            return pending.popleft() if pending else await receive()

        await self.app(scope, replay, send)
