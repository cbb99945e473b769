"""The MCP server (driven by the official mcp client over stdio) and the REST API (through
its OpenAPI schema), both over the real service layer and a real database."""

import asyncio
import json
import os
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from helpers.api import local_client
from helpers.transcripts import cc_record
from memory_platform.api.app import create_app, is_loopback
from memory_platform.ingest import importer as ingest
from memory_platform.llm import ScriptedProvider

CLI = str(Path(sys.executable).parent / "memory-platform")
DAY = datetime(2026, 3, 2, tzinfo=timezone.utc)
TEXTS = [
    "the build fails with error E0502 in src/borrow.rs",
    "use a Vec<String> instead of &str in the cache",
    "we decided to move search to PostgreSQL tsvector (ADR-004)",
    "deploy the dashboard on port 5433 tomorrow",
    "lunch was a falafel wrap",
    "renamed the crate to tidepool-core",
]


@pytest.fixture
def history(db, tmp_path):
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(cc_record(i, "s-faces", DAY + timedelta(minutes=5 * i),
                                  "user" if i % 2 == 0 else "assistant", text=t))
             for i, t in enumerate(TEXTS)]
    path.write_text("\n".join(lines) + "\n")
    assert ingest.import_path(db, "claude-code", path).events_new == len(TEXTS)
    return path


def _structured(result):
    assert not result.is_error, result.content
    return result.structured_content


def test_mcp_over_stdio_with_the_official_client(home, history):
    params = StdioServerParameters(command=CLI, args=["mcp"], env=dict(os.environ))

    async def scenario():
        async with Client(params, read_timeout_seconds=120) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"cairn_search", "cairn_get", "cairn_timeline",
                                  "cairn_summarize_range", "vault_search", "vault_list",
                                  "vault_add", "vault_context", "orchard_list", "orchard_get",
                                  "orchard_milestone", "orchard_week"}
            assert "query" in tools["cairn_search"].input_schema["properties"]
            found = _structured(await client.call_tool(
                "cairn_search", {"query": "E0502", "mode": "keyword", "k": 3}))
            top = found["hits"][0]
            assert "E0502" in top["text"]
            context = _structured(await client.call_tool(
                "cairn_get", {"event_id": top["event_id"], "before": 0, "after": 2}))
            assert context["event"]["event_id"] == top["event_id"]
            assert [t["text"] for t in context["after"]] == TEXTS[1:3]
            timeline = _structured(await client.call_tool(
                "cairn_timeline", {"since": "2026-03-01", "until": "2026-03-04"}))
            assert timeline["days"] == [{"day": "2026-03-02", "source": "claude-code",
                                         "events": len(TEXTS)}]
            missing = await client.call_tool("cairn_get", {"event_id": 99999999})
            assert missing.is_error
            no_llm = await client.call_tool(
                "cairn_summarize_range", {"since": "2026-03-01", "until": "2026-03-04"})
            assert no_llm.is_error
            assert "MEMORY_PLATFORM_LLM_PROVIDER" in json.dumps(
                [c.model_dump() for c in no_llm.content])

    env_before = dict(os.environ)
    os.environ.pop("MEMORY_PLATFORM_LLM_PROVIDER", None)
    try:
        asyncio.run(scenario())
    finally:
        os.environ.clear()
        os.environ.update(env_before)


def test_rest_api_through_its_openapi_schema(db, history):
    def respond(call):
        if "Notes about" in call.prompt:
            return json.dumps({"summary": "A day on tidepool.", "highlights": []})
        return json.dumps({"points": [{"text": "worked", "event_ids": []}]})

    client = local_client(create_app(db, llm=ScriptedProvider(respond)))
    schema = client.get("/openapi.json").json()
    assert {"/search", "/events/{event_id}", "/timeline", "/summarize", "/health"} <= set(
        schema["paths"])
    params = {p["name"] for p in schema["paths"]["/search"]["get"]["parameters"]}
    assert {"q", "k", "source", "project", "since", "until", "mode"} <= params

    hits = client.get("/search", params={"q": "tsvector ADR-004", "mode": "keyword"}).json()
    assert "ADR-004" in hits[0]["text"]
    assert set(hits[0]) >= {"event_id", "source", "conversation_id", "occurred_at", "role",
                            "text", "score"}
    event = client.get(f"/events/{hits[0]['event_id']}", params={"before": 1}).json()
    assert len(event["before"]) == 1
    assert client.get("/events/424242424").status_code == 404
    days = client.get("/timeline", params={"since": "2026-03-01T00:00:00Z",
                                           "until": "2026-03-05T00:00:00Z"}).json()
    assert sum(d["events"] for d in days) == len(TEXTS)
    summary = client.post("/summarize", json={"since": "2026-03-02T00:00:00Z",
                                              "until": "2026-03-03T00:00:00Z"}).json()
    assert summary["summary"] == "A day on tidepool." and summary["events_read"] == len(TEXTS)
    assert client.get("/search", params={"q": ""}).status_code == 422


def test_rest_api_requires_the_bearer_token_when_given_one(db, history):
    client = local_client(create_app(db, token="s3cret-token"))
    assert client.get("/search", params={"q": "x", "mode": "keyword"}).status_code == 401
    wrong = {"Authorization": "Bearer nope"}
    assert client.get("/search", params={"q": "x", "mode": "keyword"},
                      headers=wrong).status_code == 401
    right = {"Authorization": "Bearer s3cret-token"}
    assert client.get("/search", params={"q": "port 5433", "mode": "keyword"},
                      headers=right).status_code == 200
    assert client.get("/health").status_code == 200


def test_serving_beyond_loopback_needs_a_token(home, db):
    """Through `serve` itself (what `memory-platform serve` runs), not an app built here: a
    serve() that opened without a token off loopback would fail this test."""
    from memory_platform.api.app import serve
    from memory_platform.vault import tokens

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    built = {}

    def keep(app, host, port):  # serve's last step, instead of binding a port
        built.update(app=app, host=host, port=port)

    with pytest.raises(ValueError, match="MEMORY_PLATFORM_API_TOKEN.*token create"):
        serve(host="0.0.0.0", port=1, token=None, run=keep)
    assert not built  # refused before building anything

    # With only a scoped token, serve off loopback lets that token in and nothing without
    # one, even after the token is revoked.
    row, secret = tokens.create(db, ["work"], name="phone")
    serve(host="0.0.0.0", port=8123, token=None, run=keep)
    assert (built["host"], built["port"]) == ("0.0.0.0", 8123)
    client = local_client(built["app"])
    assert client.get("/vault/namespaces").status_code == 401
    assert client.get("/vault/namespaces",
                      headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    tokens.revoke(db, row["id"])
    refused = client.get("/vault/namespaces")
    assert refused.status_code == 401 and "loopback" in refused.json()["detail"]
    assert client.get("/health").status_code == 200

    # With the admin token only the admin token opens it.
    serve(host="192.0.2.10", port=8124, token="admin-token", run=keep)
    client = local_client(built["app"])
    assert client.get("/search", params={"q": "x", "mode": "keyword"}).status_code == 401
    assert client.get("/vault/namespaces", headers={
        "Authorization": "Bearer admin-token"}).status_code == 200
    # ... and the address it is bound to is a Host it answers
    assert client.get("/health", headers={"Host": "192.0.2.10:8124"}).status_code == 200
    assert client.get("/health", headers={"Host": "attacker.example"}).status_code == 421

    # On loopback with nothing configured, requests need no token.
    serve(host="127.0.0.1", port=8125, token=None, run=keep)
    assert local_client(built["app"]).get("/vault/namespaces").status_code == 200
