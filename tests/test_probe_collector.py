"""The probe of 2026-12-03 (docs/security.md): the collector and its ingest route against a
hostile or mistaken peer. A 200 that is not a collector's answer (a proxy's page, another
service behind --to, fewer results than chunks sent) must neither crash the collector nor
make it forget chunks nobody answered for; a server's text reaches the terminal without
control characters; a chunk header nested past the decoder's depth is a 422, not a 500; a
machine's file named origin.json is stored as sent."""

import hashlib
import json

import httpx
import pytest

from helpers.api import HashEmbedder, local_client, thread_recorder
from helpers.world import ADMIN, bearer, build
from memory_platform.api.app import create_app
from memory_platform.collect import push, wire
from memory_platform.collect.spool import Spool

URL = "http://server/ingest/laptop/records"


def _spool(tmp_path) -> Spool:
    spool = Spool(tmp_path / "spool", 1 << 20)
    for name in ("a.md", "b.md"):
        data = f"# {name}\n".encode()
        spool.add(name[0] * 4, wire.encode({
            "root": "notes", "kind": "notes", "rel": name, "source_path": f"/n/{name}",
            "offset": 0, "through_sha256": hashlib.sha256(data).hexdigest(),
            "complete": True}, data))
    return spool


def _push(spool: Spool, answer: httpx.Response) -> push.PushOutcome:
    client = httpx.Client(transport=httpx.MockTransport(lambda request: answer))
    return push.push(client, URL, spool, {}, token="t", uid="u", save=lambda: None)


@pytest.mark.parametrize("answer", [
    httpx.Response(200, text="<html>sign in to the wifi</html>"),
    httpx.Response(200, json={}),
    httpx.Response(200, json=[1, 2]),
    httpx.Response(200, json={"chunks": [1, 2]}),
    httpx.Response(200, json={"chunks": [{"status": "stored"}]}),
    httpx.Response(200, json={"chunks": [{"status": "stored", "events_new": "9"},
                                         {"status": "stored"}]}),
    httpx.Response(200, json={"chunks": [{"status": "gone"}, {"status": "stored"}]}),
], ids=["html", "empty", "list", "not-objects", "fewer", "wrong-type", "unknown-status"])
def test_an_answer_that_is_not_a_collectors_keeps_the_spool(tmp_path, answer):
    spool = _spool(tmp_path)
    with pytest.raises(push.Away, match="not a collector's answer"):
        _push(spool, answer)
    assert len(spool.entries()) == 2


def test_a_servers_text_reaches_the_terminal_without_escapes(tmp_path):
    spool = _spool(tmp_path)
    evil = "\x1b]0;owned\x07\x1b[2Jgone"
    outcome = _push(spool, httpx.Response(200, json={"chunks": [
        {"status": "stored", "source_path": "/n/a.md", "errors": [{"line": 1,
                                                                  "message": evil}]},
        {"status": "stored"}]}))
    assert outcome.errors and not any("\x1b" in e or "\x07" in e for e in outcome.errors)
    assert len(spool.entries()) == 0
    with pytest.raises(push.Refused) as refused:
        _push(_spool(tmp_path / "again"), httpx.Response(403, json={"detail": evil}))
    assert "\x1b" not in str(refused.value)


def _chunk(rel: str, data: bytes) -> bytes:
    return wire.encode({"root": "claude-code", "kind": "claude-code", "rel": rel,
                        "source_path": f"/p/{rel}", "offset": 0, "complete": True,
                        "through_sha256": hashlib.sha256(data).hexdigest()}, data)


def test_ingest_refuses_a_deep_header_and_keeps_a_file_named_origin_json(db, home, tmp_path):
    world = build(db, tmp_path)
    app = create_app(db, token=ADMIN, embedder=HashEmbedder(), vault_embedder=HashEmbedder(),
                     recorder=thread_recorder())
    client = local_client(app, raise_server_exceptions=False)
    headers = {**bearer(world.collector), "Content-Type": wire.CONTENT_TYPE}
    import gzip

    deep = client.post("/ingest/laptop/records", content=gzip.compress(b"[" * 8000 + b"\n"),
                       headers=headers)
    assert deep.status_code == 422, deep.text
    line = json.dumps({"type": "user", "uuid": "u-origin", "sessionId": "s-origin",
                       "timestamp": "2026-03-02T10:00:00Z", "cwd": "/home/me/src/x",
                       "message": {"role": "user", "content": "a turn in origin.json"}})
    stored = client.post("/ingest/laptop/records", content=_chunk(
        "project/origin.json", (line + "\n").encode()), headers=headers)
    assert stored.status_code == 200, stored.text
    [chunk] = stored.json()["chunks"]
    assert chunk["events_new"] == 1 and not chunk["errors"], chunk
