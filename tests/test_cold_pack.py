"""The first session of the day: with no resident process (the hook packs in its own
process, keyword relevance, no model), a session start in a routed project gets the same
memories as with the resident process warm (issue 23, point 1)."""

import json
import threading

from helpers.recall_vault import FACTS, seed
from helpers.words import WORDS
from memory_platform.recall import hook_client, hooks, server
from memory_platform.store import memories as memory_store
from memory_platform.vault import memories as vault
from memory_platform.vault.project import describe
from memory_platform.vault.routing import Routing

REPO_ROUTING = ('default = "personal"\n[[rules]]\nproject = "/src/acme*"\n'
                'namespace = "acme"\n[repos]\nacme = "/src/acme"\n')


def _seed(db, home) -> dict[str, int]:
    ids = seed(db, home)
    (home / "routing.toml").write_text(REPO_ROUTING)
    with db.connect() as conn:
        web, _ = memory_store.add_memory(conn, namespace="acme", topic="web",
                                         text="The acme web front end builds with vite",
                                         category="project", actor="test")
    ids["web"] = web
    vault.embed_missing_memories(db, WORDS)
    return ids


def _start(cwd: str, session: str) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": f"/tmp/{session}.jsonl",
                       "cwd": cwd, "hook_event_name": "SessionStart",
                       "source": "startup"}).encode()


def _context(output: str) -> str:
    return json.loads(output)["hookSpecificOutput"]["additionalContext"]


def test_the_project_comes_from_its_routing_not_the_directory_name(home):
    (home / "routing.toml").write_text(REPO_ROUTING)
    project = describe("/src/acme/services/web", Routing.load())
    assert (project.namespace, project.name, project.parts, project.routed) == \
        ("acme", "acme", ("services", "web"), True)
    elsewhere = describe("/home/me/notes", Routing.load())
    assert (elsewhere.namespace, elsewhere.routed) == ("personal", False)


def test_a_cold_session_start_gets_the_same_pack_as_a_warm_one(db, home, monkeypatch):
    ids = _seed(db, home)
    monkeypatch.setenv("MEMORY_PLATFORM_RECALL_SERVER", "off")  # cold: nothing is spawned
    cold = _context(server.run_local("SessionStart", _start("/src/acme/services/web", "c")))
    monkeypatch.setattr("memory_platform.vault.memories.vault_embedder", lambda: WORDS)
    ready = threading.Event()
    thread = threading.Thread(target=server.serve, kwargs={"ready": ready.set}, daemon=True)
    thread.start()
    assert ready.wait(60)
    try:
        warm = _context(hook_client.ask(home, "SessionStart",
                                        _start("/src/acme/services/web", "w"), 30.0))
    finally:
        assert server.stop()
        thread.join(30)
    assert cold == warm
    # The project's facts, not only the standing ones; the topic of the directory first.
    assert "Relevant to project acme:" in cold and "project web" not in cold
    relevant = cold[cold.index("Relevant to project acme:"):]
    assert relevant.index(f"[#{ids['web']}]") < relevant.index(f"[#{ids['port']}]")
    for key in ("port", "staging", "migration"):
        assert f"[#{ids[key]}]" in relevant
    for key in ("old_port", "phone"):  # superseded and sensitive stay out
        assert f"[#{ids[key]}]" not in cold
    assert FACTS["phone"][1] not in cold


def test_the_pack_is_the_same_for_every_relevance(db, home):
    _seed(db, home)
    raw = _start("/src/acme-api", "s")
    keyword = hooks.run_hook("SessionStart", raw, relevance="keyword", db=db)
    hybrid = hooks.run_hook("SessionStart", raw, relevance="hybrid", db=db, embedder=WORDS)
    assert keyword == hybrid and "Relevant to project acme:" in _context(keyword)
