"""The vault's REST and MCP surfaces against a real PostgreSQL and the real local model:
API tokens stored hashed, namespace scoping over REST and over MCP (a stdio server started
with --namespaces work, driven by the official mcp client), listing with no cap, audit rows
for every REST change, archive instead of delete, and context packs within their budget."""

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from helpers.api import local_client
from memory_platform.api.app import create_app
from memory_platform.dream.propose import CONTEXT_MARKER, strip_injected
from memory_platform.query.embeddings import get_embedder
from memory_platform.store import memories as memory_store
from memory_platform.vault import context as vault_context
from memory_platform.vault import service as access
from memory_platform.vault import tokens
from memory_platform.vault.budget import count_tokens
from memory_platform.vault.tokens import Scope

CLI = str(Path(sys.executable).parent / "memory-platform")

WORK = [
    "the tidepool dev database runs on PostgreSQL port 5433",
    "tidepool deploys go through the staging cluster first",
    "prefers pytest with -n 1 on the shared build machine",
]
PERSONAL = [
    "allergic to peanuts",
    "the dentist appointment is every March",
]


@pytest.fixture(scope="module")
def local_embedder():
    # Loading the model takes seconds: once per module.
    return get_embedder("local")


def seed(db) -> dict[str, list[int]]:
    ids: dict[str, list[int]] = {"work": [], "personal": []}
    with db.connect() as conn:
        for namespace, texts in (("work", WORK), ("personal", PERSONAL)):
            for text in texts:
                memory_id, _ = memory_store.add_memory(conn, namespace=namespace, text=text,
                                                       actor="test")
                ids[namespace].append(memory_id)
    return ids


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def audit_rows(db, memory_id: int) -> list[dict]:
    with db.connect() as conn:
        return memory_store.audit_of(conn, memory_id)


# --- tokens ------------------------------------------------------------------------------


def test_tokens_are_stored_hashed_and_stop_working_when_revoked(db):
    row, secret = tokens.create(db, "work, personal", name="laptop")
    assert secret.startswith("mp_") and len(secret) > 40
    assert row["name"] == "laptop" and row["namespaces"] == ["work", "personal"]
    with db.connect() as conn:
        stored = conn.execute("SELECT to_jsonb(t)::text, token_hash FROM api_tokens t"
                              ).fetchall()
    assert len(stored) == 1
    dumped, token_hash = stored[0]
    assert secret not in dumped and secret[3:] not in dumped  # the secret is nowhere
    assert token_hash == hashlib.sha256(secret.encode()).hexdigest()

    found = tokens.verify(db, secret)
    assert found is not None and found.actor == "api:laptop"
    assert found.scope.permits("work") and found.scope.permits("work__ideas")
    assert found.scope.permits("personal__dream") and not found.scope.permits("acme")
    assert tokens.list_tokens(db)[0]["last_used_at"] is not None
    assert tokens.verify(db, secret + "x") is None
    assert tokens.verify(db, "mp_" + "A" * 43) is None
    assert tokens.verify(db, "") is None

    default_named, _ = tokens.create(db, ["acme"])
    assert default_named["name"] == f"token-{default_named['id']}"
    with pytest.raises(ValueError, match="already exists"):
        tokens.create(db, "work", name="laptop")
    with pytest.raises(ValueError, match="shadow namespace"):
        tokens.create(db, "work__ideas")
    with pytest.raises(ValueError, match="at least one namespace"):
        tokens.create(db, " , ")
    with pytest.raises(ValueError, match="reserved"):
        tokens.create(db, "work", name="admin")

    tokens.revoke(db, row["id"])
    assert tokens.verify(db, secret) is None
    assert tokens.revoke(db, row["id"])["revoked_at"] is not None  # idempotent
    with pytest.raises(ValueError, match="no token"):
        tokens.revoke(db, 987654)


def test_token_cli_shows_the_secret_once(home, db):
    from memory_platform.cli.main import app

    runner = CliRunner()
    created = runner.invoke(app, ["token", "create", "--kind", "agent", "--namespaces", "work",
                                  "--name", "ci"])
    assert created.exit_code == 0, created.output
    secret = next(line for line in created.stdout.splitlines() if line.startswith("mp_"))
    assert tokens.verify(db, secret).scope == Scope.of(["work"], agent=True)
    listed = runner.invoke(app, ["token", "list"])
    assert listed.exit_code == 0 and "ci" in listed.stdout and secret not in listed.stdout
    as_json = json.loads(runner.invoke(app, ["token", "list", "--json"]).stdout)
    assert as_json[0]["namespaces"] == ["work"] and "token_hash" not in as_json[0]
    revoked = runner.invoke(app, ["token", "revoke", str(as_json[0]["id"])])
    assert revoked.exit_code == 0 and "revoked" in revoked.stdout
    assert tokens.verify(db, secret) is None
    bad = runner.invoke(app, ["token", "create", "--kind", "person", "--namespaces", "Work"])
    assert bad.exit_code == 1 and "invalid namespace" in bad.output


# --- REST ----------------------------------------------------------------------------------


def test_rest_scopes_every_route_to_the_tokens_namespaces(db, local_embedder):
    ids = seed(db)
    _, work = tokens.create(db, "work", name="work-agent")
    _, personal = tokens.create(db, "personal", name="phone")
    client = local_client(create_app(db, token="admin-secret", vault_embedder=local_embedder))
    w, p = bearer(work), bearer(personal)

    assert client.get("/vault/namespaces").status_code == 401
    assert client.get("/vault/namespaces", headers=bearer("mp_nope")).status_code == 401
    assert [n["name"] for n in client.get("/vault/namespaces", headers=w).json()] == ["work"]
    admin = client.get("/vault/namespaces", headers=bearer("admin-secret")).json()
    assert [n["name"] for n in admin] == ["personal", "work"]

    page = client.get("/vault/work/memories", headers=w)
    assert page.status_code == 200 and page.json()["total"] == len(WORK)
    assert client.get("/vault/personal/memories", headers=w).status_code == 403
    assert client.get("/vault/personal__ideas/memories", headers=w).status_code == 403
    assert client.get("/vault/personal/memories", headers=p).status_code == 200
    # Ids of another namespace read as missing, for every verb.
    other = ids["personal"][0]
    assert client.get(f"/vault/memories/{other}", headers=w).status_code == 404
    assert client.patch(f"/vault/memories/{other}", headers=w,
                        json={"text": "hacked"}).status_code == 404
    assert client.delete(f"/vault/memories/{other}", headers=w).status_code == 404
    assert client.post("/vault/personal/memories", headers=w,
                       json={"text": "x"}).status_code == 403
    assert client.get(f"/vault/memories/{ids['work'][0]}", headers=w).status_code == 200

    hits = client.get("/vault/search", headers=w, params={"q": "peanuts allergy"}).json()
    assert hits["namespaces"] == ["work"]
    assert hits["hits"] and all(h["namespace"] == "work" for h in hits["hits"])
    assert client.get("/vault/search", headers=w,
                      params={"q": "peanuts", "namespace": "personal"}).status_code == 403
    found = client.get("/vault/search", headers=p, params={"q": "peanuts"}).json()["hits"]
    assert found[0]["text"] == PERSONAL[0] and found[0]["match"] == "both"

    # cairn is every conversation, unscoped: a scoped token may not read it.
    assert client.get("/search", headers=w, params={"q": "x"}).status_code == 403
    assert client.get("/search", headers=bearer("admin-secret"),
                      params={"q": "x", "mode": "keyword"}).status_code == 200

    # Nothing of personal changed.
    with db.connect() as conn:
        assert [m["text"] for m in memory_store.list_memories(conn, "personal")] == PERSONAL


def test_rest_without_any_token_configured_is_open_on_loopback_until_a_token_exists(
        db, local_embedder):
    seed(db)
    client = local_client(create_app(db, vault_embedder=local_embedder))
    added = client.post("/vault/work/memories", json={"text": "uses ruff for linting"})
    assert added.status_code == 201
    assert audit_rows(db, added.json()["id"])[0]["actor"] == "api:local"
    row, secret = tokens.create(db, "work", name="agent")
    # A token limited to work means nothing if leaving it out opened everything.
    assert client.get("/vault/personal/memories").status_code == 401
    assert client.get("/vault/work/memories", headers=bearer(secret)).status_code == 200
    tokens.revoke(db, row["id"])
    assert client.get("/vault/personal/memories").status_code == 200
    assert client.get("/vault/work/memories", headers=bearer(secret)).status_code == 401


def test_rest_changes_are_audited_and_delete_archives(db, local_embedder):
    seed(db)
    _, secret = tokens.create(db, "work", name="editor", kind="person")
    client = local_client(create_app(db, vault_embedder=local_embedder))
    h = bearer(secret)

    added = client.post("/vault/work/memories", headers=h,
                        json={"text": "the release train leaves on Thursdays",
                              "category": "project"})
    assert added.status_code == 201
    memory = added.json()
    assert memory["source"] == "hand" and memory["review"] is None
    again = client.post("/vault/work/memories", headers=h,
                        json={"text": "the release  train leaves on Thursdays"})
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["id"] == memory["id"]
    assert client.post("/vault/work__dream/memories", headers=h,
                       json={"text": "x"}).status_code == 422
    assert client.post("/vault/Work/memories", headers=h, json={"text": "x"}).status_code \
        in (403, 422)
    assert client.post("/vault/work/memories", headers=h,
                       json={"text": "x", "category": "nope"}).status_code == 422

    mid = memory["id"]
    edited = client.patch(f"/vault/memories/{mid}", headers=h,
                          json={"text": "the release train leaves on Fridays"})
    assert edited.status_code == 200 and edited.json()["changed"] is True
    assert edited.json()["text"] == "the release train leaves on Fridays"
    assert edited.json()["content_hash"] == memory_store.content_hash(edited.json()["text"])
    # The new text is embedded: search finds it by meaning.
    hits = client.get("/vault/search", headers=h,
                      params={"q": "which weekday does the release go out"}).json()["hits"]
    assert hits[0]["id"] == mid
    recat = client.patch(f"/vault/memories/{mid}", headers=h, json={"category": "reference"})
    assert recat.json()["category"] == "reference"
    same = client.patch(f"/vault/memories/{mid}", headers=h, json={"category": "reference"})
    assert same.json()["changed"] is False
    assert client.patch(f"/vault/memories/{mid}", headers=h, json={}).status_code == 422

    archived = client.delete(f"/vault/memories/{mid}", headers=h)
    assert archived.status_code == 200 and archived.json()["status"] == "archived"
    assert client.delete(f"/vault/memories/{mid}", headers=h).json()["changed"] is False
    assert client.patch(f"/vault/memories/{mid}", headers=h,
                        json={"text": "back"}).status_code == 409
    # Archived, not deleted: still readable, listed under status=archived only.
    assert client.get(f"/vault/memories/{mid}", headers=h).json()["status"] == "archived"
    active = client.get("/vault/work/memories", headers=h).json()
    assert mid not in [m["id"] for m in active["items"]]
    gone = client.get("/vault/work/memories", headers=h, params={"status": "archived"}).json()
    assert [m["id"] for m in gone["items"]] == [mid] and gone["total"] == 1
    assert client.get("/vault/memories/99999999", headers=h).status_code == 404

    # Restorable: active again (audited), found by search again; twice changes nothing.
    restored = client.post(f"/vault/memories/{mid}/restore", headers=h)
    assert restored.status_code == 200 and restored.json()["status"] == "active"
    assert restored.json()["changed"] is True
    assert client.post(f"/vault/memories/{mid}/restore", headers=h).json()["changed"] is False
    hits = client.get("/vault/search", headers=h,
                      params={"q": "which weekday does the release go out"}).json()["hits"]
    assert hits[0]["id"] == mid
    assert client.post("/vault/memories/99999999/restore", headers=h).status_code == 404
    # Restoring an archived twin of an active memory would state it twice: 409.
    twin = client.post("/vault/work/memories", headers=h, json={"text": "ship it"}).json()
    client.delete(f"/vault/memories/{twin['id']}", headers=h)
    client.post("/vault/work/memories", headers=h, json={"text": "ship  it"})
    clash = client.post(f"/vault/memories/{twin['id']}/restore", headers=h)
    assert clash.status_code == 409 and "already states" in clash.json()["detail"]

    trail = audit_rows(db, mid)
    assert [(a["action"], a["actor"]) for a in trail] == [
        ("add", "api:editor"), ("edit", "api:editor"), ("edit", "api:editor"),
        ("archive", "api:editor"), ("restore", "api:editor")]
    assert trail[1]["before"]["text"] == "the release train leaves on Thursdays"
    assert trail[1]["after"]["text"] == "the release train leaves on Fridays"
    assert trail[2]["before"]["category"] == "project"
    assert trail[2]["after"]["category"] == "reference"
    assert trail[3]["before"]["status"] == "active" and trail[3]["after"]["status"] == "archived"
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE id = %s",
                            (mid,)).fetchone()[0] == 1


def test_rest_listing_pages_to_the_end_with_no_cap(db):
    with db.connect() as conn, conn.transaction():
        for i in range(1_234):
            memory_store.add_memory(conn, namespace="big", text=f"fact number {i}", actor="test")
        for i in range(150):
            memory_store.add_memory(conn, namespace="mid", text=f"mid fact {i}", actor="test")
    client = local_client(create_app(db))

    def page_all(namespace, limit=None):
        seen, after, pages = [], 0, 0
        while True:
            params = {"after_id": after} | ({"limit": limit} if limit else {})
            page = client.get(f"/vault/{namespace}/memories", params=params)
            assert page.status_code == 200, page.text
            body = page.json()
            seen += [m["id"] for m in body["items"]]
            pages += 1
            if body["next_after_id"] is None:
                return seen, body["total"], pages
            assert body["next_after_id"] == body["items"][-1]["id"]
            after = body["next_after_id"]

    seen, total, pages = page_all("mid")  # the default page is 100: more than one page
    assert total == 150 and len(seen) == 150 == len(set(seen)) and pages == 2
    seen, total, pages = page_all("big", limit=1000)
    assert total == 1_234 and len(seen) == 1_234 == len(set(seen)) and pages == 2
    seen, total, pages = page_all("big", limit=100)
    assert total == 1_234 and sorted(seen) == seen and len(set(seen)) == 1_234 and pages == 13
    exact = client.get("/vault/mid/memories", params={"limit": 150}).json()
    assert len(exact["items"]) == 150 and exact["next_after_id"] is None
    # A page bigger than the maximum is refused, not silently clipped.
    assert client.get("/vault/big/memories", params={"limit": 1001}).status_code == 422
    assert client.get("/vault/nowhere/memories").status_code == 404


def test_openapi_lists_the_vault_routes(db):
    schema = local_client(create_app(db)).get("/openapi.json").json()
    paths = schema["paths"]
    assert {"/vault/namespaces", "/vault/{namespace}/memories", "/vault/memories/{memory_id}",
            "/vault/search", "/search", "/health"} <= set(paths)
    assert {"get", "post"} <= set(paths["/vault/{namespace}/memories"])
    assert {"get", "patch", "delete"} <= set(paths["/vault/memories/{memory_id}"])
    params = {p["name"] for p in paths["/vault/{namespace}/memories"]["get"]["parameters"]}
    assert {"namespace", "after_id", "limit", "status"} <= params
    page = schema["components"]["schemas"]["MemoryPage"]["properties"]
    assert {"items", "total", "next_after_id"} <= set(page)


# --- context packs -----------------------------------------------------------------------


def test_context_is_relevant_wrapped_and_within_budget(db, home, local_embedder):
    ids = seed(db)
    with db.connect() as conn:
        old, _ = memory_store.add_memory(conn, namespace="work", text="the tidepool database "
                                         "runs on port 5432", actor="test")
        conn.execute("UPDATE memories SET superseded_by = %s WHERE id = %s",
                     (ids["work"][0], old))
        idea, _ = memory_store.add_memory(conn, namespace="work__ideas", text="tidepool database "
                                          "port might move to 6543", source="agent", actor="test")
        for i in range(60):
            memory_store.add_memory(conn, namespace="work", text=f"tidepool service {i} is "
                                    f"described in the on-call runbook", actor="test")
    scope = Scope.of(["work"])
    pack = vault_context.context(db, scope, query="which port does the tidepool database use",
                          token_budget=300, embedder=local_embedder)
    block = pack["context"]
    assert block.startswith(f"<{CONTEXT_MARKER}>") and block.endswith(f"</{CONTEXT_MARKER}>")
    assert count_tokens(block) == pack["tokens_used"] <= 300
    assert pack["memory_ids"][0] == ids["work"][0] and pack["omitted"] > 0
    assert old not in pack["memory_ids"] and idea not in pack["memory_ids"]
    assert not set(ids["personal"]) & set(pack["memory_ids"])
    assert strip_injected(f"before {block} after") == ("before  after", 1)

    bigger = vault_context.context(db, scope, query="tidepool", token_budget=4000,
                            embedder=local_embedder)
    assert len(bigger["memory_ids"]) > len(pack["memory_ids"])
    assert count_tokens(bigger["context"]) <= 4000

    # A project alone: its routed namespace's memories.
    (home / "routing.toml").write_text(
        'default = "personal"\n[[rules]]\nproject = "/src/tidepool*"\nnamespace = "work"\n')
    by_project = vault_context.context(db, Scope.everything(), project="/src/tidepool",
                                embedder=local_embedder)
    assert by_project["namespaces"] == ["work"] and by_project["memory_ids"]
    with pytest.raises(access.Forbidden):
        vault_context.context(db, scope, query="peanuts", namespaces=["personal"],
                       embedder=local_embedder)
    nothing = vault_context.context(db, Scope.of(["acme"]), query="anything",
                             embedder=local_embedder)
    assert nothing["context"] == "" and nothing["memory_ids"] == []


# --- MCP -----------------------------------------------------------------------------------


def _structured(result):
    assert not result.is_error, result.content
    return result.structured_content


def _error_text(result) -> str:
    assert result.is_error
    return json.dumps([c.model_dump() for c in result.content])


def test_mcp_limited_to_work_over_stdio_with_the_official_client(home, db):
    ids = seed(db)
    params = StdioServerParameters(command=CLI, args=["mcp", "--namespaces", "work"],
                                   env=dict(os.environ))

    async def scenario():
        async with Client(params, read_timeout_seconds=180) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"vault_search", "vault_list", "vault_add", "vault_context",
                                  "orchard_list", "orchard_get", "orchard_milestone",
                                  "orchard_week"}
            assert {"namespace", "after_id", "limit"} <= set(
                tools["vault_list"].input_schema["properties"])

            refused = await client.call_tool("vault_list", {"namespace": "personal"})
            assert "outside" in _error_text(refused)
            page = _structured(await client.call_tool(
                "vault_list", {"namespace": "work", "limit": 2}))
            assert page["total"] == len(WORK) and len(page["items"]) == 2
            rest = _structured(await client.call_tool(
                "vault_list", {"namespace": "work", "after_id": page["next_after_id"]}))
            assert rest["next_after_id"] is None
            assert [m["id"] for m in page["items"] + rest["items"]] == ids["work"]

            added = _structured(await client.call_tool(
                "vault_add", {"namespace": "work", "text": "the CI cache lives in S3",
                              "category": "project", "why": "asked twice"}))
            assert added["namespace"] == "work__ideas" and added["review"] == "pending"
            assert added["created"] is True
            for namespace in ("personal", "personal__ideas"):
                denied = await client.call_tool(
                    "vault_add", {"namespace": namespace, "text": "sneaky"})
                assert "outside" in _error_text(denied)
            dream = await client.call_tool("vault_add", {"namespace": "work__dream",
                                                         "text": "x"})
            assert "__ideas" in _error_text(dream)
            secret = await client.call_tool(
                "vault_add", {"namespace": "work", "text": "the key is sk-ant-api03-"
                              "abcdefghijklmnopqrstuvwxyz0123456789"})
            assert "credential" in _error_text(secret)

            found = _structured(await client.call_tool(
                "vault_search", {"query": "allergic to peanuts"}))
            assert found["namespaces"] == ["work"]
            assert all(h["namespace"] == "work" for h in found["hits"])
            assert "outside" in _error_text(await client.call_tool(
                "vault_search", {"query": "peanuts", "namespace": "personal"}))

            pack = _structured(await client.call_tool(
                "vault_context", {"query": "what port does the dev database use",
                                  "token_budget": 100}))
            block = pack["context"]
            assert block.startswith(f"<{CONTEXT_MARKER}>")
            assert block.endswith(f"</{CONTEXT_MARKER}>")
            assert len(block) <= 400 and pack["tokens_used"] <= 100
            assert pack["memory_ids"][0] == ids["work"][0]
            assert "peanuts" not in block
            assert "outside" in _error_text(await client.call_tool(
                "vault_context", {"query": "x", "namespaces": ["personal"]}))
            return added["id"]

    idea_id = asyncio.run(scenario())
    with db.connect() as conn:
        row = memory_store.get_memory(conn, idea_id)
        assert (row["namespace"], row["source"], row["review"], row["why"]) == (
            "work__ideas", "agent", "pending", "asked twice")
        assert memory_store.count_memories(conn, "work") == len(WORK)  # no write to the primary
        assert memory_store.count_memories(conn, "personal") == len(PERSONAL)
        assert conn.execute("SELECT count(*) FROM vault_namespaces WHERE name LIKE "
                            "'personal\\_\\_%'").fetchone()[0] == 0
    assert audit_rows(db, idea_id)[0]["actor"] == "mcp:agent"
