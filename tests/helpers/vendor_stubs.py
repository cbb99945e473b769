"""A local HTTP server that speaks the Anthropic Messages and OpenAI Chat Completions wire
formats, so tests run the real `anthropic` and `openai` SDK code paths without a network.

Replies are scripted per path as a queue of (status, body, headers); every request is
recorded (path, headers, JSON body). An unscripted request gets a 599 whose body says so,
and `x-should-retry: false` so the SDK surfaces it at once instead of retrying.
"""

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"

# Error replies carry a 1 ms retry-after-ms: both SDKs honour it (preferring it over
# retry-after), which keeps their retry backoff near zero in tests. `retry-after: 0` alone
# would not: the SDKs treat 0 as "unspecified" and fall back to 0.5 s exponential backoff.
FAST_RETRY = {"retry-after-ms": "1", "retry-after": "0"}


@dataclass
class Reply:
    status: int
    body: Any  # JSON-serialisable, or str for a raw body
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any


class VendorStub:
    """Start with `with VendorStub() as stub:`; point the SDK at `stub.anthropic_base_url`
    or `stub.openai_base_url`."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._replies: dict[str, deque[Reply]] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> "VendorStub":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the SDK appends /v1/messages

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"  # the SDK appends /chat/completions

    # --- scripting ------------------------------------------------------------------------

    def script(self, path: str, status: int, body: Any, headers: dict[str, str] | None = None):
        with self._lock:
            self._replies.setdefault(path, deque()).append(Reply(status, body, headers or {}))

    def anthropic_text(
        self,
        text: str,
        *,
        input_tokens: int = 12,
        output_tokens: int = 7,
        model: str = "claude-sonnet-4-6",
        stop_reason: str = "end_turn",
    ) -> None:
        self.script(
            ANTHROPIC_PATH,
            200,
            {
                "id": f"msg_stub_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "model": model,
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            },
            {"request-id": "req_stub"},
        )

    def anthropic_error(self, status: int, error_type: str, message: str = "stub error"):
        self.script(
            ANTHROPIC_PATH,
            status,
            {"type": "error", "error": {"type": error_type, "message": message}},
            dict(FAST_RETRY),
        )

    def openai_text(
        self,
        text: str,
        *,
        prompt_tokens: int = 20,
        completion_tokens: int = 9,
        model: str = "gpt-5.4-mini-2026-03-17",
        finish_reason: str = "stop",
    ) -> None:
        self.script(
            OPENAI_PATH,
            200,
            {
                "id": f"chatcmpl-stub{len(self.requests)}",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )

    def openai_error(self, status: int, error_type: str, message: str = "stub error"):
        self.script(
            OPENAI_PATH,
            status,
            {"error": {"message": message, "type": error_type, "param": None, "code": None}},
            dict(FAST_RETRY),
        )

    def requests_to(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def unused_replies(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._replies.values())

    # --- serving --------------------------------------------------------------------------

    def _take(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            queue = self._replies.get(request.path)
            if queue:
                return queue.popleft()
        return Reply(
            599,
            {"error": {"type": "stub_error", "message": f"no scripted reply for {request.path}"}},
            {"x-should-retry": "false"},
        )


def _handler_for(stub: VendorStub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode(errors="replace")
            request = Request(
                method="POST",
                path=self.path.split("?", 1)[0],
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            reply = stub._take(request)
            payload = (
                reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            ).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the test output is for assertions, not access logs

    return Handler
