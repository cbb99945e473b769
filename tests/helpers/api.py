"""Test clients for the REST app as a local browser or script reaches it."""

from fastapi.testclient import TestClient

# The app answers only loopback Host names (and configured ones): api/http_guards.py.
LOCAL = "http://127.0.0.1"


def local_client(app, **kwargs) -> TestClient:
    """A TestClient whose requests carry `Host: 127.0.0.1` (TestClient's default,
    `testserver`, gets 421 like any unknown host)."""
    return TestClient(app, base_url=LOCAL, **kwargs)
