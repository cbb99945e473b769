"""A small world for the access tests: cairn turns (one holding credentials), memories in
`work` and `personal`, review entries in each that cite turns, an open lint finding in
each, and tokens of each kind.

Everything of `personal` carries the marker PERSONAL_MARK, so a test can check that no
answer to a `work` token contains any of it."""

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from helpers.transcripts import cc_record
from memory_platform.ingest import importer as ingest
from memory_platform.store import memories as memory_store
from memory_platform.store import recall as recall_store
from memory_platform.vault import tokens

ADMIN = "admin-secret-token"
PERSONAL_MARK = "zebrafinch"
DAY = datetime(2026, 3, 2, tzinfo=timezone.utc)
# Shaped like real keys (the masker's patterns), made up.
OPENAI_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"
GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
TURNS = [
    "we should move the work api to port 8081",
    f"set OPENAI_API_KEY={OPENAI_KEY} and the aws key {AWS_KEY}, github {GITHUB_TOKEN}",
    "the work api now listens on 8081",
    f"my {PERSONAL_MARK} diary: the dentist is in March",
    "an unrelated turn before",
    "another unrelated turn after",
]


@dataclass
class World:
    turns: list[int]
    work_memory: int
    personal_memory: int
    work_entry: int  # pending in work__ideas, cites turns 0..2
    personal_entry: int  # pending in personal__ideas, cites turn 3
    work_person: str
    work_agent: str
    personal_person: str
    personal_project: int = 0  # an orchard project of personal (by id: its name is marked)
    work_finding: int = 0  # an open lint finding about work_memory
    personal_finding: int = 0  # one about personal_memory (its evidence quotes the mark)
    collector: str = ""  # machine `laptop`'s collector token (may only push for laptop)


def bearer(secret: str) -> dict:
    return {"Authorization": f"Bearer {secret}"}


def build(db, tmp_path) -> World:
    path = tmp_path / "world.jsonl"
    path.write_text("".join(json.dumps(cc_record(
        i, "s-world", DAY + timedelta(minutes=i), "user" if i % 2 == 0 else "assistant",
        text=text)) + "\n" for i, text in enumerate(TURNS)))
    ingest.import_path(db, "claude-code", path)
    with db.connect() as conn:
        turns = [r[0] for r in conn.execute("SELECT id FROM events ORDER BY occurred_at, id")]
        work_memory, _ = memory_store.add_memory(
            conn, namespace="work", text="the work api listens on port 8081", actor="test")
        personal_memory, _ = memory_store.add_memory(
            conn, namespace="personal", text=f"{PERSONAL_MARK}: dentist every March",
            actor="test")
        work_entry, _ = memory_store.add_memory(
            conn, namespace="work__ideas", text="the work api moved to port 8081",
            source="agent", review="pending", actor="test", source_event_ids=turns[0:3])
        personal_entry, _ = memory_store.add_memory(
            conn, namespace="personal__ideas", text=f"{PERSONAL_MARK} diary is private",
            source="agent", review="pending", actor="test", source_event_ids=[turns[3]])
        findings = [recall_store.insert_finding(
            conn, namespace=namespace, kind="stale", memory_ids=[memory_id],
            evidence={"reason": "planted for the access tests",
                      "memories": [{"id": memory_id, "text": text}]},
            fingerprint=f"world-{namespace}", run_id=None)
            for namespace, memory_id, text in (
                ("work", work_memory, "the work api listens on port 8081"),
                ("personal", personal_memory, f"{PERSONAL_MARK}: dentist every March"))]
    from memory_platform.orchard import projects
    from memory_platform.vault.tokens import Scope

    projects.add(db, Scope.everything(), name="work-api", namespace="work", actor="test")
    personal_project = projects.add(db, Scope.everything(), name=f"{PERSONAL_MARK}-garden",
                                    namespace="personal", actor="test")["id"]
    _, work_person = tokens.create(db, ["work"], name="work-person", kind="person")
    _, work_agent = tokens.create(db, ["work"], name="work-agent", kind="agent")
    _, personal_person = tokens.create(db, ["personal"], name="personal-person",
                                       kind="person")
    _, collector = tokens.create(db, None, name="laptop-collector", kind="collector",
                                 machine="laptop")
    tokens.create(db, None, name="desk-collector", kind="collector", machine="desk")
    return World(turns, work_memory, personal_memory, work_entry, personal_entry,
                 work_person, work_agent, personal_person, personal_project, *findings,
                 collector)
