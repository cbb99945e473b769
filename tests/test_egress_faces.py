"""The one egress rule (privacy.egress.outgoing) on the faces that print or return stored
text: lint and wiki findings over REST and the CLI, the review queue and the findings page
deciding masking from the text as well as the stored flag, and the CLI printing user text
as text (no rich markup, no emoji codes)."""

import json

from typer.testing import CliRunner

from helpers.api import local_client
from memory_platform.api.app import create_app
from memory_platform.recall import findings
from memory_platform.store import memories as memory_store
from memory_platform.store import recall as recall_store
from memory_platform.vault.tokens import Scope

KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET = f"deploy with aws_access_key_id={KEY} and password=hunter2-Zq9"
EMAIL = "ana.lopez@acme-corp.com"
HOSTILE = "bad100.jsonl:100: :smile: [red]alarm[/red] [bold]x"


def _plant(db) -> dict:
    with db.connect() as conn:
        mid = memory_store.add_memory(conn, namespace="acme", text=SECRET,
                                      actor="test", topic="t", category="project")[0]
        # stored before its pattern was known: the flag says nothing, the text still does
        conn.execute("UPDATE memories SET sensitive = false WHERE id = %s", (mid,))
        fid = recall_store.insert_finding(
            conn, namespace="acme", kind="unmapped_edit", memory_ids=[mid],
            evidence={"file": "topics/deploys.md", "file_sha256": "ab" * 32, "line": 3,
                      "text": f"- {SECRET} mail {EMAIL} {HOSTILE}",
                      "reason": f"{HOSTILE} quoting {KEY}",
                      "memories": [{"id": mid, "text": f"{SECRET} {EMAIL} {HOSTILE}",
                                    "content_hash": "cd" * 32}]},
            fingerprint="egress-test", run_id=None)
    return {"memory": mid, "finding": fid}


def _clean(text: str) -> None:
    assert KEY not in text and "hunter2-Zq9" not in text and EMAIL not in text, text


def test_findings_evidence_is_masked_over_rest_and_the_service(home, db):
    _plant(db)
    body = local_client(create_app(db)).get("/vault/findings").text
    _clean(body)
    assert "[secret masked]" in body and "topics/deploys.md" in body
    [row] = findings.list_findings(db, Scope.everything())
    _clean(json.dumps(row, default=str))
    # hashes are not text: they pass unchanged (for_review compares them)
    assert row["evidence"]["file_sha256"] == "ab" * 32
    assert row["evidence"]["memories"][0]["content_hash"] == "cd" * 32


def test_lint_list_masks_evidence_and_prints_user_text_as_text(home, db):
    from memory_platform.cli.main import app

    _plant(db)
    plain = CliRunner().invoke(app, ["lint", "list"])
    assert plain.exit_code == 0, plain.output
    _clean(plain.output)
    # markup and emoji codes in a stored text are printed as they are
    assert ":smile:" in plain.output and "[red]alarm[/red]" in plain.output, plain.output
    assert "bad100.jsonl:100:" in plain.output and "\U0001f4af" not in plain.output
    as_json = CliRunner().invoke(app, ["lint", "list", "--json"])
    assert as_json.exit_code == 0, as_json.output
    _clean(as_json.output)


def test_the_findings_page_masks_credentials_of_a_memory_not_marked_sensitive(home, db):
    ids = _plant(db)
    [shown] = findings.for_review(db, Scope.everything())
    [memory] = shown["memories"]
    assert memory["id"] == ids["memory"] and not memory["sensitive"]
    _clean(memory["text"] + memory["masked_text"])
    html = local_client(create_app(db)).get("/review/findings").text
    assert KEY not in html and "hunter2-Zq9" not in html


def test_a_source_turn_of_a_sensitive_memory_is_masked_for_a_scoped_caller(db, tmp_path):
    """vault/sources.py passes privacy.egress: credentials always, and a scoped caller
    reading the turn a sensitive memory cites gets its personal data masked too."""
    from datetime import datetime, timezone

    from helpers.transcripts import cc_record
    from memory_platform.ingest import importer as ingest
    from memory_platform.vault import sources

    path = tmp_path / "s.jsonl"
    day = datetime(2026, 3, 2, tzinfo=timezone.utc)
    path.write_text(json.dumps(cc_record(0, "s-egress", day, "user",
                                         text=f"mail {EMAIL}; {SECRET}")) + "\n")
    ingest.import_path(db, "claude-code", path)
    with db.connect() as conn:
        [turn] = [r[0] for r in conn.execute("SELECT id FROM events")]
        mid = memory_store.add_memory(conn, namespace="work", text=f"Ana writes from {EMAIL}",
                                      actor="test", source_event_ids=[turn])[0]
    scoped = sources.source_turn(db, Scope.of(["work"]), turn, memory_id=mid)
    _clean(json.dumps(scoped, default=str))
    assert scoped["masked"] >= 2 and "[email masked]" in scoped["event"]["text"]
    admin = sources.source_turn(db, Scope.everything(), turn)
    assert KEY not in json.dumps(admin, default=str)


def test_the_wiki_shows_no_credential_whatever_the_stored_flag(home, db):
    """The wiki is egress too: a memory holding a credential (or, by default, personal
    data) is left out of it even when its row says `sensitive: false`."""
    from memory_platform.recall import wiki

    with db.connect() as conn:
        ids = [memory_store.add_memory(conn, namespace="acme", text=text, actor="test",
                                       topic="ops", category="project")[0]
               for text in (SECRET, f"Ana answers at {EMAIL}", "Deploys run on Fridays")]
        conn.execute("UPDATE memories SET sensitive = false WHERE id = ANY(%s)", (ids,))
    wiki.build(db, "acme", home=home)
    folder = wiki.wiki_dir("acme", home)
    shown = "\n".join(p.read_text() for p in folder.rglob("*.md"))
    assert "Deploys run on Fridays" in shown
    _clean(shown)


def test_vault_reads_mask_a_stored_credential_on_every_face(home, db):
    """A credential stored before its pattern existed (a password written as a sentence,
    issue 20 point 2) leaves the vault masked: REST get and list, the CLI list, search."""
    from helpers.api import HashEmbedder
    from memory_platform.cli.main import app
    from memory_platform.vault import service

    prose = "The acme staging database password is Q7x!v29pLm-k"
    with db.connect() as conn:
        mid = memory_store.add_memory(conn, namespace="acme", text=f"{SECRET}. {prose}",
                                      actor="test", topic="ops", category="project")[0]
    client = local_client(create_app(db))
    answers = [client.get(f"/vault/memories/{mid}").text,
               client.get("/vault/acme/memories").text,
               CliRunner().invoke(app, ["vault", "list", "acme"]).output,
               json.dumps(service.search(db, Scope.everything(), "staging database",
                                         embedder=HashEmbedder()), default=str)]
    assert all("staging database" in a for a in answers), answers
    for answer in answers:
        _clean(answer)
        assert "Q7x!v29pLm-k" not in answer, answer
