"""Test clients for the REST app as a local browser or script reaches it."""

from fastapi.testclient import TestClient

# The app answers only loopback Host names (and configured ones): api/http_guards.py.
LOCAL = "http://127.0.0.1"


def local_client(app, **kwargs) -> TestClient:
    """A TestClient whose requests carry `Host: 127.0.0.1` (TestClient's default,
    `testserver`, gets 421 like any unknown host)."""
    return TestClient(app, base_url=LOCAL, **kwargs)


class HashEmbedder:
    """Deterministic unit vectors per text, without a model: for tests of the faces, where
    what is found matters less than what is refused."""

    name = "hash-16"
    dims = 16

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))] if text else []

    def embed(self, texts):
        import hashlib

        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
            v = np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal(
                self.dims)
            out[i] = v / np.linalg.norm(v)
        return out


def recorded_nowhere(memory_id, promoted_id, actor, old_memory_id):
    """A PromotionRecorder `record` that records nothing (no Dagster in these tests)."""
    return f"run-{memory_id}"


def thread_recorder(record=recorded_nowhere):
    """A PromotionRecorder running `record` in a thread instead of a spawned child."""
    from concurrent.futures import ThreadPoolExecutor

    from memory_platform.api.dashboard import PromotionRecorder

    recorder = PromotionRecorder(record=record,
                                 pool_factory=lambda: ThreadPoolExecutor(max_workers=1))
    recorder.QUIET_S = 0.0
    return recorder


def call_route(client, method, path, params, body, headers=None):
    """One call of a route as the access matrix and the canary sweep make it: past the
    cross-site check (tested on its own), an HTML form's CSRF token taken from its page."""
    from memory_platform.api.http_guards import FORM_PATHS

    headers = {"X-Memory-Platform": "1", **(headers or {})}
    if method == "POST" and path in FORM_PATHS:
        client.get(path)
        return client.post(path, data={"token": "wrong", "next": "/review",
                                       "csrf": client.cookies.get("mp_csrf")},
                           headers=headers)
    if method in ("GET", "HEAD", "DELETE"):
        return client.request(method, path, params=params, headers=headers)
    return client.request(method, path, params=params, json=body, headers=headers)
