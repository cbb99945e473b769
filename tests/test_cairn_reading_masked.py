"""Found by the canary sweep: cairn's search hits (REST /search, MCP cairn_search, the CLI's
`search`) and reading one event (REST /events/{id}, MCP cairn_get) returned turns verbatim,
credentials included. Raw text stays in cairn; what leaves it is masked
(privacy/egress.outgoing)."""

import json
from datetime import datetime, timedelta, timezone

from helpers.transcripts import cc_record
from memory_platform.ingest import importer as ingest
from memory_platform.query import reading
from memory_platform.query import search as cairn_search

AWS_KEY = "AKIA" + "READINGKEY012345"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


def _import(db, tmp_path) -> list[int]:
    texts = ["we deploy today", f"with the aws key {AWS_KEY}",
             "the staging database password is hunter2"]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(cc_record(
        i, "s-read", T0 + timedelta(minutes=i), "user" if i % 2 == 0 else "assistant",
        text=t, cwd=f"/home/me/{AWS_KEY}")) + "\n" for i, t in enumerate(texts)))
    ingest.import_path(db, "claude-code", path)
    with db.connect() as conn:
        return [r[0] for r in conn.execute("SELECT id FROM events ORDER BY occurred_at")]


def test_search_hits_leave_masked(db, tmp_path):
    _import(db, tmp_path)
    hits = cairn_search.search(db, "password aws key", mode="keyword")
    assert hits and any("hunter2" in h.text for h in hits), "the raw text is found"
    shown = json.dumps([h.to_dict() for h in hits])
    assert AWS_KEY not in shown and "hunter2" not in shown
    assert "the staging database password is [secret masked]" in shown


def test_an_event_and_its_neighbours_are_masked_and_cairn_keeps_the_raw_text(db, tmp_path):
    ids = _import(db, tmp_path)
    with db.connect() as conn:
        raw = conn.execute("SELECT text FROM events WHERE id = %s", (ids[1],)).fetchone()[0]
    assert AWS_KEY in raw
    got = reading.get_event(db, ids[1], before=1, after=1)
    shown = json.dumps(got)
    assert AWS_KEY not in shown and "hunter2" not in shown
    assert got["event"]["text"] == "with the aws key [secret masked]"
    assert got["after"][0]["text"] == "the staging database password is [secret masked]"
    assert got["before"][0]["text"] == "we deploy today"
