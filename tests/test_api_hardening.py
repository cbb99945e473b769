"""Regression tests for the network faces' defects of issue 11 (points 2, 3, 4, 8, 10, 11,
13, 14), each through the face a client uses: REST (the real app), MCP (the real server's
tools), the CLI (the real command)."""

import asyncio
import json

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from typer.testing import CliRunner

from helpers.api import HashEmbedder, local_client, thread_recorder
from helpers.world import (
    ADMIN,
    AWS_KEY,
    GITHUB_TOKEN,
    OPENAI_KEY,
    PERSONAL_MARK,
    TURNS,
    bearer,
    build,
)
from memory_platform.api.app import create_app
from memory_platform.llm import ScriptedProvider
from memory_platform.mcp import server as mcp_server
from memory_platform.store import memories as memory_store
from memory_platform.store.namespaces import parse_namespace
from memory_platform.vault import service as vault_service
from memory_platform.vault import sources
from memory_platform.vault.tokens import Scope

JSON = {"X-Memory-Platform": "1"}


@pytest.fixture
def world(db, tmp_path):
    return build(db, tmp_path)


@pytest.fixture
def app(db, world):
    return create_app(db, token=ADMIN, embedder=HashEmbedder(), vault_embedder=HashEmbedder(),
                      llm=ScriptedProvider(lambda call: "{}"), recorder=thread_recorder())


@pytest.fixture
def client(app):
    return local_client(app, follow_redirects=False)


def memories_of(db, namespace: str) -> list[str]:
    with db.connect() as conn:
        return [m["text"] for m in memory_store.list_memories(conn, namespace)]


# --- 2: what a scoped token sees of cairn ------------------------------------------------------


def test_a_scoped_token_sees_only_the_turns_its_entry_cites_masked(db, world, client):
    page = client.get(f"/review/event/{world.turns[1]}", params={"memory": world.work_entry},
                      headers=bearer(world.work_person))
    assert page.status_code == 200
    for secret in (OPENAI_KEY, AWS_KEY, GITHUB_TOKEN):
        assert secret not in page.text
    assert page.text.count("[secret masked]") == 3 and "3 credentials masked" in page.text
    # the entry's other cited turns are shown, the conversation around them is not
    assert TURNS[0] in page.text and TURNS[2] in page.text
    assert "unrelated turn" not in page.text and PERSONAL_MARK not in page.text

    # a turn the entry does not cite, an entry of another namespace, no entry at all
    assert client.get(f"/review/event/{world.turns[4]}", params={"memory": world.work_entry},
                      headers=bearer(world.work_person)).status_code == 403
    assert client.get(f"/review/event/{world.turns[3]}",
                      params={"memory": world.personal_entry},
                      headers=bearer(world.work_person)).status_code == 404
    assert client.get(f"/review/event/{world.turns[1]}",
                      headers=bearer(world.work_person)).status_code == 403

    # the rule is the service's: the same answer without any route
    scope = Scope.of(["work"])
    found = sources.source_turn(db, scope, world.turns[1], memory_id=world.work_entry)
    assert found["limited"] and found["masked"] == 3 and OPENAI_KEY not in str(found)
    assert [t["event_id"] for t in found["before"] + found["after"]] == [world.turns[0],
                                                                         world.turns[2]]
    with pytest.raises(vault_service.Forbidden):
        sources.source_turn(db, scope, world.turns[4], memory_id=world.work_entry)

    # the admin reviewing sees the conversation around the turn, masked too
    admin = client.get(f"/review/event/{world.turns[1]}", headers=bearer(ADMIN))
    assert admin.status_code == 200 and "unrelated turn" in admin.text
    assert OPENAI_KEY not in admin.text


# --- 3: DNS rebinding and cross-site requests -----------------------------------------------


def test_only_loopback_and_configured_hosts_are_answered(db, world):
    app = create_app(db, embedder=HashEmbedder(), vault_embedder=HashEmbedder(),
                     recorder=thread_recorder(), allowed_hosts=["memory.example.org"])
    for host, expected in [("attacker.example", 421), ("attacker.example:8000", 421),
                           ("127.0.0.1:8000", 200), ("localhost", 200), ("[::1]:8000", 200),
                           ("memory.example.org", 200), ("127.0.0.1.attacker.example", 421),
                           ("", 421)]:
        answer = local_client(app).get("/vault/search", params={"q": "port", "namespace": "work"},
                                       headers={"Host": host, **bearer(world.work_person)})
        assert answer.status_code == expected, (host, answer.status_code)
        if expected == 421:
            assert "8081" not in answer.text and "Host" in answer.json()["detail"]
    client = local_client(app, headers=bearer(world.work_person))
    evil = client.get("/vault/namespaces", headers={"Origin": "http://attacker.example"})
    assert evil.status_code == 403
    assert client.get("/vault/namespaces",
                      headers={"Origin": "http://127.0.0.1:8000"}).status_code == 200


def test_a_cross_site_form_cannot_change_anything(db, world, client):
    archived = client.delete(f"/vault/memories/{world.work_memory}", headers=bearer(ADMIN))
    assert archived.status_code == 200
    # what a cross-site form or a no-cors fetch can send: a simple POST, no custom header
    open_app = local_client(create_app(db, vault_embedder=HashEmbedder(),
                                       recorder=thread_recorder()))
    with db.connect() as conn:  # open loopback: no token anywhere
        conn.execute("UPDATE api_tokens SET revoked_at = now()")
    for content_type in (None, "application/x-www-form-urlencoded", "text/plain",
                         "multipart/form-data; boundary=x"):
        headers = {"Content-Type": content_type} if content_type else {}
        restore = open_app.post(f"/vault/memories/{world.work_memory}/restore",
                                headers=headers, content=b"")
        assert restore.status_code == 403, content_type
        assert "X-Memory-Platform" in restore.json()["detail"]
        added = open_app.post("/vault/work/memories", headers=headers,
                              content=b'{"text": "planted by a web page"}')
        assert added.status_code == 403
    assert "planted by a web page" not in memories_of(db, "work")
    with db.connect() as conn:
        assert memory_store.get_memory(conn, world.work_memory)["status"] == "archived"
    # a client that says so gets through: a JSON body, a bearer, or the custom header
    assert open_app.post(f"/vault/memories/{world.work_memory}/restore",
                         headers=JSON).status_code == 200
    assert open_app.post("/vault/work/memories",
                         json={"text": "added by a script"}).status_code == 201


def test_the_login_form_needs_its_csrf_token(world, client):
    forged = client.post("/review/login", data={"token": world.work_person,
                                                "next": "/review"})
    assert forged.status_code == 403 and "mp_session" not in forged.cookies
    form = client.get("/review/login")
    csrf = form.cookies["mp_csrf"]
    assert f'name="csrf" value="{csrf}"' in form.text
    wrong = client.post("/review/login", data={"token": world.work_person, "csrf": "x" + csrf})
    assert wrong.status_code == 403
    ok = client.post("/review/login", data={"token": world.work_person, "next": "/review",
                                            "csrf": csrf})
    assert ok.status_code == 303 and ok.headers["location"] == "/review"
    assert ok.cookies["mp_session"] == world.work_person


# --- 4: body size and memory length ----------------------------------------------------------


def test_large_bodies_are_refused_before_they_are_read(db, world):
    app = create_app(db, token=ADMIN, vault_embedder=HashEmbedder(),
                     recorder=thread_recorder(), max_body_bytes=64 * 1024)
    client = local_client(app)
    huge = json.dumps({"text": "x" * 200_000})
    declared = client.post("/vault/work/memories", content=huge, headers={
        **bearer(ADMIN), "Content-Type": "application/json"})
    assert declared.status_code == 413 and "65536 bytes" in declared.json()["detail"]

    def chunks():  # no Content-Length: the limit holds as the body streams in
        for _ in range(20):
            yield b"x" * 10_000

    streamed = client.post("/vault/work/memories", content=chunks(), headers={
        **bearer(ADMIN), "Content-Type": "application/json"})
    assert streamed.status_code == 413
    assert all(len(t) < 1000 for t in memories_of(db, "work"))


def test_a_memory_is_a_fact_not_a_file_on_every_face(db, world, client, home):
    too_long = "a fact " * (vault_service.MAX_TEXT_CHARS // 7 + 1)
    assert len(too_long) > vault_service.MAX_TEXT_CHARS
    at_limit = "b" * vault_service.MAX_TEXT_CHARS
    posted = client.post("/vault/work/memories", json={"text": too_long},
                         headers=bearer(world.work_person))
    assert posted.status_code == 422
    assert client.post("/vault/work/memories", json={"text": at_limit},
                       headers=bearer(world.work_person)).status_code == 201
    patched = client.patch(f"/vault/memories/{world.work_memory}", json={"text": too_long},
                           headers=bearer(world.work_person))
    assert patched.status_code == 422
    with pytest.raises(ToolError, match="at most 4000 characters"):
        _mcp(db, "vault_add", {"namespace": "work", "text": too_long})
    cli = _cli(["vault", "add", "work", too_long])
    assert cli.exit_code == 1 and "at most 4000 characters" in cli.output
    assert too_long not in memories_of(db, "work") + memories_of(db, "work__ideas")


# --- 8: credentials on every write path -------------------------------------------------------


def _mcp(db, tool: str, args: dict):
    server = mcp_server.build_server(db, embedder=HashEmbedder(), vault_embedder=HashEmbedder())
    return asyncio.run(server.call_tool(tool, args))


def _cli(args: list[str]):
    from memory_platform.cli.main import app

    return CliRunner().invoke(app, args)


@pytest.mark.parametrize("secret", [OPENAI_KEY, GITHUB_TOKEN, "password=hunter2hunter2"])
def test_credentials_never_enter_the_vault_on_any_face(db, world, client, home, secret):
    text = f"the deploy uses {secret} for the registry"
    posted = client.post("/vault/work/memories", json={"text": text},
                         headers=bearer(world.work_person))
    assert posted.status_code == 422 and "credential" in posted.json()["detail"]
    patched = client.patch(f"/vault/memories/{world.work_memory}", json={"text": text},
                           headers=bearer(world.work_person))
    assert patched.status_code == 422 and "credential" in patched.json()["detail"]
    as_agent = client.post("/vault/work/memories", json={"text": text},
                           headers=bearer(world.work_agent))
    assert as_agent.status_code == 422
    with pytest.raises(ToolError, match="credential"):
        _mcp(db, "vault_add", {"namespace": "work", "text": text})
    cli = _cli(["vault", "add", "work", text])
    assert cli.exit_code == 1 and "credential" in cli.output
    with db.connect() as conn:
        stored = conn.execute("SELECT count(*) FROM memories WHERE text LIKE %s",
                              (f"%{secret[:12]}%",)).fetchone()[0]
    assert stored == 0


# --- 10: odd input is a 422 on every face, never a 500 --------------------------------------


ODD_QUERIES = ["a\x00b", "\ud800 port"]
OUT_OF_RANGE = "0001-01-01T00:00:00+14:00"


def test_odd_input_is_refused_with_a_message_over_rest(db, world, client):
    admin = bearer(ADMIN)
    for route in ("/search", "/vault/search"):
        answer = client.get(route, params={"q": "a\x00b", "mode": "keyword"}, headers=admin)
        assert answer.status_code == 422 and "NUL" in answer.json()["detail"], route
        # a URL cannot carry a lone surrogate: its UTF-8 bytes are invalid and read as U+FFFD
        answer = client.get(f"{route}?q=%ED%A0%80&mode=keyword", headers=admin)
        assert answer.status_code == 200, (route, answer.text)
    for name in ("source", "project", "role"):
        answer = client.get("/search", params={"q": "port", "mode": "keyword", name: "x\x00"},
                            headers=admin)
        assert answer.status_code == 422 and "NUL" in answer.json()["detail"], name
    for params in ({"q": "port", "mode": "keyword", "until": OUT_OF_RANGE},
                   {"q": "port", "mode": "keyword", "since": "9999-12-31T23:00:00-14:00"}):
        answer = client.get("/search", params=params, headers=admin)
        assert answer.status_code == 422 and "outside the dates" in answer.json()["detail"]
    timeline = client.get("/timeline", params={"since": OUT_OF_RANGE,
                                               "until": "2026-01-01T00:00:00Z"}, headers=admin)
    assert timeline.status_code == 422
    summary = client.post("/summarize", json={"since": OUT_OF_RANGE,
                                              "until": "2026-01-01T00:00:00Z"}, headers=admin)
    assert summary.status_code == 422
    for text in ("a\x00b", "lone \ud800 surrogate"):
        raw = json.dumps({"text": text})  # JSON escapes: \u0000 and \ud800 arrive as such
        answer = client.post("/vault/work/memories", content=raw, headers={
            **admin, "Content-Type": "application/json"})
        assert answer.status_code == 422, (text, answer.text)
        patched = client.patch(f"/vault/memories/{world.work_memory}", content=raw, headers={
            **admin, "Content-Type": "application/json"})
        assert patched.status_code == 422
    # before any embedding exists: hybrid searches by keyword (never fails for want of
    # vectors); dense cannot run yet and says why, naming the flag that works
    unembedded = client.get("/search", params={"q": "port"}, headers=admin)
    assert unembedded.status_code == 200
    dense = client.get("/search", params={"q": "port", "mode": "dense"}, headers=admin)
    assert dense.status_code == 409 and "embed" in dense.json()["detail"]


def test_odd_input_is_refused_with_a_message_over_mcp(db, world):
    for q in ODD_QUERIES:
        with pytest.raises(ToolError, match="NUL|surrogate"):
            _mcp(db, "cairn_search", {"query": q, "mode": "keyword"})
        with pytest.raises(ToolError, match="NUL|surrogate"):
            _mcp(db, "vault_search", {"query": q})
        with pytest.raises(ToolError, match="NUL|surrogate"):
            _mcp(db, "vault_context", {"query": q})
    with pytest.raises(ToolError, match="outside the dates"):
        _mcp(db, "cairn_search", {"query": "port", "mode": "keyword", "until": OUT_OF_RANGE})
    with pytest.raises(ToolError, match="outside the dates"):
        _mcp(db, "cairn_timeline", {"since": OUT_OF_RANGE, "until": "2026-01-01"})
    with pytest.raises(ToolError, match="NUL"):
        _mcp(db, "cairn_search", {"query": "port", "mode": "keyword", "source": "x\x00"})
    # (the SDK's own argument check refuses it first, with its message)
    with pytest.raises(ToolError, match="unicode|surrogate"):
        _mcp(db, "vault_add", {"namespace": "work", "text": "lone \ud800"})


def test_odd_input_is_refused_with_a_message_on_the_cli(db, world, home):
    for args, message in [
        (["search", "a\x00b", "--mode", "keyword"], "NUL"),
        (["search", "port", "--mode", "keyword", "--until", OUT_OF_RANGE], "outside the dates"),
        (["vault", "add", "work", "lone \ud800 surrogate"], "surrogate"),
        (["vault", "add", "work", "a\x00b"], "NUL"),
        (["vault", "search", "a\x00b"], "NUL"),
    ]:
        done = _cli(args)
        assert done.exit_code == 1 and message in done.output, (args, done.output)
        assert "Traceback" not in done.output


# --- 11: namespace names -------------------------------------------------------------------


def test_a_namespace_with_a_trailing_newline_is_invalid(world, client):
    for name in ("work\n", "work\n__ideas", "work__ideas\n"):
        with pytest.raises(ValueError, match="invalid namespace"):
            parse_namespace(name)
    answer = client.get("/vault/work%0A/memories", headers=bearer(ADMIN))
    assert answer.status_code == 422 and "invalid namespace" in answer.json()["detail"]
    posted = client.post("/vault/work%0A/memories", json={"text": "x"}, headers=bearer(ADMIN))
    assert posted.status_code == 422


# --- 13: the recorder's status is scoped --------------------------------------------------------


def test_the_recording_status_shows_a_token_its_own_namespaces_only(db, world):
    def record(memory_id, promoted_id, actor, old_memory_id):
        raise RuntimeError(f"memory {memory_id}: {PERSONAL_MARK} is unreachable")

    recorder = thread_recorder(record)
    recorder.RETRY_DELAYS_S = ()
    recorder.submit(world.personal_entry, world.personal_entry, actor="t",
                    namespace="personal__ideas")
    assert recorder.drain(10)
    client = local_client(create_app(db, token=ADMIN, recorder=recorder))
    mine = client.get("/review/api/status", headers=bearer(world.work_person)).json()
    assert mine["failed"] == 0 and mine["last_error"] is None
    theirs = client.get("/review/api/status", headers=bearer(world.personal_person)).json()
    assert theirs["failed"] == 1 and PERSONAL_MARK in theirs["last_error"]
    assert client.get("/review/api/status", headers=bearer(ADMIN)).json()["failed"] == 1


# --- 14: token kinds ------------------------------------------------------------------------


def test_an_agent_token_suggests_and_a_person_token_writes(db, world, client, home):
    suggested = client.post("/vault/work/memories", json={"text": "the api moved to 9090"},
                            headers=bearer(world.work_agent))
    assert suggested.status_code == 201
    row = suggested.json()
    assert row["namespace"] == "work__ideas" and row["review"] == "pending"
    assert row["source"] == "agent"
    assert "the api moved to 9090" not in memories_of(db, "work")
    with db.connect() as conn:
        assert memory_store.audit_of(conn, row["id"])[0]["actor"] == "api:work-agent"
    # a reviewed memory is a person's to change; the agent's own suggestion is its own
    for change in (lambda: client.patch(f"/vault/memories/{world.work_memory}",
                                        json={"text": "changed"},
                                        headers=bearer(world.work_agent)),
                   lambda: client.delete(f"/vault/memories/{world.work_memory}",
                                         headers=bearer(world.work_agent))):
        refused = change()
        assert refused.status_code == 403 and "agent" in refused.json()["detail"]
    assert client.patch(f"/vault/memories/{row['id']}", json={"text": "the api moved to 9091"},
                        headers=bearer(world.work_agent)).status_code == 200
    # and it decides no review
    assert client.post(f"/review/api/entries/{row['id']}/approve", json={},
                       headers=bearer(world.work_agent)).status_code == 403

    written = client.post("/vault/work/memories", json={"text": "the api listens on 9092"},
                          headers=bearer(world.work_person))
    assert written.status_code == 201 and written.json()["namespace"] == "work"

    created = _cli(["token", "create", "--kind", "agent", "--namespaces", "work", "--name",
                    "bot", "--json"])
    assert created.exit_code == 0 and json.loads(created.stdout)["kind"] == "agent"
    missing = _cli(["token", "create", "--namespaces", "work"])
    assert missing.exit_code == 2 and "--kind" in missing.output
    bad = _cli(["token", "create", "--kind", "robot", "--namespaces", "work"])
    assert bad.exit_code == 1 and "unknown token kind" in bad.output


def test_tokens_made_before_kinds_existed_stay_persons(db):
    from memory_platform.store import db as store_db

    with db.connect() as conn:
        conn.execute("INSERT INTO api_tokens (name, token_hash, namespaces, kind) "
                     "VALUES ('fresh', repeat('a', 64), '{work}', DEFAULT)")
        assert conn.execute("SELECT kind FROM api_tokens").fetchone()[0] == "agent"
    migration = next(sql for version, _, sql in store_db.migrations() if version == 9)
    assert "DEFAULT 'person'" in migration and "SET DEFAULT 'agent'" in migration


# --- /docs offline (issue 12, point 8) ---------------------------------------------------------


def test_the_api_docs_load_nothing_from_elsewhere(client):
    for page in ("/docs", "/redoc"):
        html = client.get(page)
        assert html.status_code == 200
        urls = [u for u in __import__("re").findall(r"""(?:src|href)=["']([^"']+)""", html.text)]
        assert urls and all(u.startswith("/") for u in urls), (page, urls)
        assert "cdn" not in html.text.lower() and "googleapis" not in html.text
        for url in urls:
            assert client.get(url).status_code == 200, url


def test_the_mcp_http_server_answers_the_same_hosts(monkeypatch):
    from mcp.server.transport_security import TransportSecurityMiddleware

    monkeypatch.setenv("MEMORY_PLATFORM_API_ALLOWED_HOSTS", "memory.example.org")
    check = TransportSecurityMiddleware(mcp_server.transport_security("127.0.0.1"))
    for host, answered in [("127.0.0.1:8765", True), ("localhost", True), ("[::1]:8765", True),
                           ("memory.example.org:443", True), ("attacker.example", False),
                           ("attacker.example:8765", False)]:
        assert check._validate_host(host) is answered, host
    assert not check._validate_origin("http://attacker.example")
    assert check._validate_origin("http://localhost:8765")
