"""recall: categories and topics at write time, sensitive data, the context pack under a
real token count, and the Claude Code hooks run as Claude Code runs them (a subprocess,
JSON on stdin, stdout out)."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers.recall_vault import seed
from helpers.words import WORDS
from memory_platform.privacy.personal import detect, luhn_ok, mask_personal, sensitivity
from memory_platform.recall import classify, hook_client, hooks, server
from memory_platform.settings import load_settings
from memory_platform.store import memories as memory_store
from memory_platform.vault import review
from memory_platform.vault.budget import count_tokens
from memory_platform.vault.context import CONTEXT_MARKER, context
from memory_platform.vault.tokens import Scope
from memory_platform.vault.topics import classify as rules

CLI = str(Path(sys.executable).parent / "memory-platform")
REPO = Path(__file__).resolve().parents[1]


# --- categories, topics, sensitive data ----------------------------------------------------


def _filed(text: str, **kwargs) -> tuple[str, str]:
    found = rules(text, **kwargs)
    return found.category, found.topic


def test_rules_file_a_memory_or_say_they_are_unsure():
    assert _filed("We decided to drop SQLite for PostgreSQL") == ("decision", "database")
    assert _filed("I prefer pytest over unittest") == ("user", "testing")
    assert _filed("The assistant should keep answers short") == ("feedback", "working-style")
    unsure = rules("Mira said hello")
    assert (unsure.category, unsure.topic, unsure.confident) == ("episode", "unsorted", False)
    # The writer's category is kept, and an existing topic of the namespace is preferred.
    assert _filed("tidepool runs on port 5433", category="reference",
                  known_topics=["tidepool"]) == ("reference", "tidepool")
    with pytest.raises(ValueError):
        rules("x", topic="!!!")


@pytest.mark.parametrize("text, kinds", [
    ("write to ana.lopez@example.org", ("email",)),
    ("call +33 6 12 34 56 78 after 6", ("phone",)),
    ("card 4111 1111 1111 1111 expires soon", ("card",)),
    ("IBAN GB82 WEST 1234 5698 7654 32", ("iban",)),
    ("SSN 123-45-6789", ("government_id",)),
    ("she lives at 221B Baker Street", ("address",)),
    ("token sk-ant-api03-abcdefghijklmnopqrstuvwxyz", ("credential",)),
    # look-alikes: not personal
    ("git@github.com:acme/api.git", ()), ("logo@2x.png", ()), ("released 2026-03-04", ()),
    ("serve on 192.168.1.10:8080", ()), ("4111111111111112 is not a card", ()),
    ("ts 1700000000000", ()), ("version 10.2.3.4", ()), ("port 5432", ()),
])
def test_sensitive_data_is_found_and_look_alikes_are_not(text, kinds):
    assert sensitivity(text) == kinds


def test_masking_personal_data_keeps_the_rest():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert mask_personal("mail ana@example.org or +44 20 7946 0958") == \
        "mail [email masked] or [phone masked]"
    assert [f.kind for f in detect("ana@example.org, 4111-1111-1111-1111")] == ["email", "card"]


def test_every_write_gets_a_category_topic_and_sensitivity(db, home):
    ids = seed(db, home)
    with db.connect() as conn:
        rows = memory_store.memories_by_id(conn, list(ids.values()))
    assert all(r["topic"] for r in rows.values())
    assert rows[ids["postgres"]]["category"] == "decision"
    assert rows[ids["phone"]]["sensitive"] and rows[ids["phone"]]["sensitive_kinds"] == ["phone"]
    assert not rows[ids["port"]]["sensitive"]
    # The new categories are in the database's closed set; others are still refused.
    with db.connect() as conn, pytest.raises(ValueError, match="unknown category"):
        memory_store.add_memory(conn, namespace="acme", text="x", category="misc",
                                actor="test")


def test_a_promotion_carries_category_and_topic(db, home):
    with db.connect() as conn:
        shadow, _ = memory_store.add_memory(
            conn, namespace="acme__dream", text="We chose uv over pip for the acme builds",
            category="decision", topic="build-tooling", source="dream", actor="dream:r1",
            review="pending")
    done = review.approve(db, shadow, actor="cli:test", embedder=WORDS)
    with db.connect() as conn:
        promoted = memory_store.get_memory(conn, done["promoted_id"])
    assert (promoted["category"], promoted["topic"]) == ("decision", "build-tooling")


def test_backfill_classifies_old_memories_once(db, home):
    with db.connect() as conn:
        old, _ = memory_store.add_memory(conn, namespace="acme", text="The acme test suite "
                                         "runs pytest with coverage", category="project",
                                         actor="test")
        conn.execute("UPDATE memories SET sensitive = false WHERE id = %s", (old,))
        mail, _ = memory_store.add_memory(conn, namespace="acme", text="Billing questions go "
                                          "to ana@example.org", category="reference",
                                          actor="test")
        conn.execute("UPDATE memories SET sensitive = false WHERE id = %s", (mail,))
    assert classify.backfill(db) == {"classified": 2, "marked_sensitive": 1}
    assert classify.backfill(db) == {"classified": 0, "marked_sensitive": 0}
    with db.connect() as conn:
        rows = memory_store.memories_by_id(conn, [old, mail])
        trail = memory_store.audit_of(conn, old)
    assert rows[old]["topic"] == "testing" and rows[mail]["sensitive"]
    assert trail[-1]["action"] == "classify" and trail[-1]["after"]["topic"] == "testing"


# --- the context pack ----------------------------------------------------------------------


def test_pack_index_first_within_a_real_token_budget(db, home):
    ids = seed(db, home)
    pack = context(db, Scope.everything(), project="/src/acme-api", namespaces=["acme"],
                   embedder=WORDS)
    block = pack["context"]
    assert block.startswith(f"<{CONTEXT_MARKER}>") and block.endswith(f"</{CONTEXT_MARKER}>")
    assert count_tokens(block) == pack["tokens_used"] <= pack["token_budget"]
    assert pack["index_ids"] == [ids["short"], ids["pytest"], ids["postgres"]]
    assert pack["memory_ids"][:3] == pack["index_ids"] and ids["port"] in pack["memory_ids"]
    assert f"[#{ids['port']}]" in block  # each memory carries its id, to be cited
    assert block.index("Standing facts") < block.index("Relevant to")
    # Superseded and sensitive facts are never in a pack.
    assert ids["old_port"] not in pack["memory_ids"] and ids["phone"] not in pack["memory_ids"]
    assert "+33" not in block and "port 8000" not in block

    small = context(db, Scope.everything(), project="/src/acme-api", namespaces=["acme"],
                    token_budget=90, embedder=WORDS)
    assert count_tokens(small["context"]) == small["tokens_used"] <= 90
    assert small["omitted"] > 0 and len(small["memory_ids"]) < len(pack["memory_ids"])


def test_pack_never_holds_a_sensitive_or_superseded_fact_even_when_asked(db, home):
    ids = seed(db, home)
    with db.connect() as conn:  # a row written before the flag existed: caught again
        conn.execute("UPDATE memories SET sensitive = false WHERE id = %s", (ids["phone"],))
    for relevance in ("keyword", "hybrid"):
        asked = context(db, Scope.everything(), query="what is Ana's phone number in acme ops",
                        namespaces=["acme"], relevance=relevance, embedder=WORDS)
        assert ids["phone"] not in asked["memory_ids"]
        port = context(db, Scope.everything(), query="which port does the acme API run on",
                       namespaces=["acme"], relevance=relevance, embedder=WORDS)
        assert port["memory_ids"][0] == ids["port"] and ids["old_port"] not in port["memory_ids"]


# --- the hooks, as Claude Code runs them ---------------------------------------------------


def _hook(command: str, payload, env: dict | None = None) -> subprocess.CompletedProcess:
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    # The budgets are tested in test_hook_limits.py; here the answer matters, and the
    # in-process path imports for seconds on a loaded machine.
    environment = {**os.environ, "MEMORY_PLATFORM_RECALL_SERVER": "off",
                   "MEMORY_PLATFORM_PROMPT_HOOK_SECONDS": "120",
                   "MEMORY_PLATFORM_SESSION_HOOK_SECONDS": "120",
                   "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([CLI, "hook", command], input=stdin, capture_output=True,
                          text=True, env=environment, timeout=300)


def _context_of(done: subprocess.CompletedProcess, event: str) -> str:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]


@pytest.mark.slow
def test_hooks_run_as_claude_code_runs_them(db, home):
    ids = seed(db, home)
    start = {"session_id": "s-1", "transcript_path": "/tmp/s-1.jsonl", "cwd": "/src/acme-api",
             "hook_event_name": "SessionStart", "source": "startup"}
    text = _context_of(_hook("session-start", start), "SessionStart")
    assert text.startswith(f"<{CONTEXT_MARKER}>") and f"[#{ids['short']}]" in text
    assert f"[#{ids['peanuts']}]" in text  # the routing default's standing facts come too
    assert "+33" not in text and "port 8000" not in text

    ask = {"session_id": "s-2", "cwd": "/src/acme-api", "hook_event_name": "UserPromptSubmit",
           "prompt": "which port does the acme API run on?"}
    text = _context_of(_hook("prompt", ask), "UserPromptSubmit")
    assert f"[#{ids['port']}]" in text and "Standing facts" not in text
    # What the session was given already is not given again.
    again = _hook("prompt", ask)
    assert again.returncode == 0 and again.stdout == ""
    # A short reply or a slash command asks for nothing.
    assert _hook("prompt", {**ask, "session_id": "s-3", "prompt": "yes"}).stdout == ""
    assert (home / "run" / "sessions" / "s-2.json").exists()


@pytest.mark.slow
def test_a_broken_database_or_input_gives_an_empty_context_and_a_logged_error(home):
    start = {"session_id": "s-1", "cwd": "/src/acme", "hook_event_name": "SessionStart"}
    broken = _hook("session-start", start,
                   {"MEMORY_PLATFORM_DATABASE_URL": "postgresql://nobody@127.0.0.1:9/none"})
    assert broken.returncode == 0 and broken.stdout == ""
    log = (home / "logs" / "hooks.log").read_text()
    assert "SessionStart: DatabaseError: cannot connect to PostgreSQL" in log
    garbage = _hook("prompt", "{not json")
    assert garbage.returncode == 0 and garbage.stdout == ""
    assert "UserPromptSubmit: HookInputError: hook input is not JSON" in \
        (home / "logs" / "hooks.log").read_text()


def test_the_resident_process_answers_like_the_hook_itself(db, home, monkeypatch):
    ids = seed(db, home)
    monkeypatch.setattr("memory_platform.vault.memories.vault_embedder", lambda: WORDS)
    ready = threading.Event()
    thread = threading.Thread(target=server.serve, kwargs={"ready": ready.set}, daemon=True)
    thread.start()
    assert ready.wait(60)
    try:
        raw = json.dumps({"session_id": "s-9", "cwd": "/src/acme",
                          "hook_event_name": "UserPromptSubmit",
                          "prompt": "which port does the acme API run on?"}).encode()
        answer = hook_client.ask(home, "UserPromptSubmit", raw, 10.0)
        assert f"[#{ids['port']}]" in json.loads(answer)["hookSpecificOutput"][
            "additionalContext"]
        with pytest.raises(server.AlreadyRunning):
            server.serve()
    finally:
        assert server.stop()
        thread.join(30)
    assert not thread.is_alive() and not (home / "run" / "recall.sock").exists()
    with pytest.raises(hook_client.NoServer):
        hook_client.ask(home, "UserPromptSubmit", raw, 1.0)


def test_hook_input_is_checked_and_the_client_finds_home_like_the_settings(monkeypatch,
                                                                           tmp_path):
    with pytest.raises(hooks.HookInputError, match="no cwd"):
        hooks.parse_input('{"hook_event_name": "SessionStart"}', hooks.SESSION_START)
    with pytest.raises(hooks.HookInputError, match="handles UserPromptSubmit"):
        hooks.parse_input('{"hook_event_name": "Stop", "cwd": "/x"}', hooks.PROMPT)
    assert hooks.hook_output("SessionStart", "") == ""
    for value in (None, str(tmp_path / "mp"), "~/elsewhere"):
        if value is None:
            monkeypatch.delenv("MEMORY_PLATFORM_HOME", raising=False)
        else:
            monkeypatch.setenv("MEMORY_PLATFORM_HOME", value)
        assert hook_client.home() == load_settings().home


# --- the faces -----------------------------------------------------------------------------


def test_rest_serves_the_pack_and_findings_within_the_callers_scope(db, home):
    from helpers.api import local_client
    from memory_platform.api.app import create_app
    from memory_platform.vault import tokens

    ids = seed(db, home)
    _, secret = tokens.create(db, ["personal"], name="laptop")
    client = local_client(create_app(db, vault_embedder=WORDS))
    head = {"Authorization": f"Bearer {secret}"}
    assert client.get("/vault/context", params={"project": "/src/acme", "namespace": "acme"},
                      headers=head).status_code == 403
    mine = client.get("/vault/context", params={"q": "peanuts allergy", "namespace":
                                                 "personal"}, headers=head).json()
    assert mine["memory_ids"] == [ids["peanuts"]] and mine["tokenizer"]
    assert client.get("/vault/findings", headers=head).json() == {"findings": [], "total": 0}


def test_the_dashboard_masks_a_sensitive_entry_until_revealed(db, home):
    from memory_platform.api.dashboard.pages import cards
    from memory_platform.vault import queue

    with db.connect() as conn:
        memory_store.add_memory(conn, namespace="acme__ideas", text="Ana's mobile is "
                                "+33 6 12 34 56 78", source="agent", actor="mcp:agent",
                                review="pending")
    [entry], _ = queue.pending(db, "acme")
    assert entry["sensitive"] and entry["masked_text"] == "Ana's mobile is [phone masked]"
    html = cards([entry], ["acme"])
    shown = html[html.index('<div class="text'):html.index("<template>")]
    assert "[phone masked]" in shown and "+33" not in shown and 'class="reveal"' in shown
    assert "<template>Ana&#39;s mobile is +33 6 12 34 56 78</template>" in html
