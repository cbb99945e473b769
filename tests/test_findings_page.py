"""The dashboard's findings page in real headless Chromium (Debian's `chromium` driven by
Playwright, as tests/test_curator_page.py), against the real app served by uvicorn and a
real PostgreSQL, with findings lint itself planted: each open finding with its kind, its
memories (a sensitive one masked until revealed) and its evidence; supersede with the
keyboard, archive and keep by button, each checked in the database (the finding resolved
by `dashboard:<token>`, the memory's audit row naming the finding); the overview's count
per namespace. Then the login cookie of a token scoped to `personal`, which neither sees
nor resolves acme's findings. And `memory-platform status --json`'s counts."""

import io
import json
import re
from datetime import datetime, timedelta, timezone

import markupsafe
import pytest
from rich.console import Console
from typer.testing import CliRunner

from helpers.api import local_client
from helpers.browser import chromium, serving
from helpers.recall_vault import seed
from helpers.words import WORDS
from memory_platform.api.app import create_app
from memory_platform.recall import findings, lint
from memory_platform.store import memories as memory_store
from memory_platform.store import recall as recall_store
from memory_platform.vault import tokens
from memory_platform.vault.tokens import Scope

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
CLASH = "The acme staging database listens on port 5432"
PHONE = "+33 6 12 34 56 78"
HOSTILE = "<img src=x onerror=alert(1)> The acme cache is warmed at boot"
RUST = "I am currently learning Rust in the evenings"


@pytest.fixture
def planted(db, home) -> dict:
    """acme: the recall test vault plus a contradiction (port 5432 / 5433), a sensitive
    near-duplicate (Ana's phone twice), an orphan whose text holds markup (its source turn
    is gone), a stale claim; personal: a stale claim. Found by lint, not written by hand."""
    ids = seed(db, home)
    with db.connect() as conn:
        def add(namespace, text, **kw):
            return memory_store.add_memory(conn, namespace=namespace, text=text,
                                           actor="test", topic="planted",
                                           category=kw.pop("category", "project"), **kw)[0]
        ids["clash"] = add("acme", CLASH)
        ids["phone2"] = add("acme", f"Ana from the acme ops team has the phone number "
                            f"{PHONE}.", category="reference")
        ids["ghost"] = add("acme", HOSTILE, source_event_ids=[987654321])
        ids["grpc"] = add("acme", "The acme API is currently being migrated to gRPC",
                          valid_from=NOW - timedelta(days=90))  # stays open
        ids["rust"] = add("personal", RUST, valid_from=NOW - timedelta(days=90))
    for namespace in ("acme", "personal"):
        lint.lint_namespace(db, namespace, embedder=WORDS, now=NOW)
    open_ = findings.list_findings(db, Scope.everything())

    def finding(kind: str, *memory_ids: int) -> int:
        [found] = [f["id"] for f in open_ if f["kind"] == kind
                   and set(f["memory_ids"]) == set(memory_ids)]
        return found

    return {**ids, "f_clash": finding("contradiction", ids["staging"], ids["clash"]),
            "f_phone": finding("near_duplicate", ids["phone"], ids["phone2"]),
            "f_ghost": next(f["id"] for f in open_ if f["kind"] == "orphan"
                            and f["memory_ids"] == [ids["ghost"]]
                            and "source" in f["evidence"]["reason"]),
            "f_rust": finding("stale", ids["rust"]),
            "f_grpc": finding("stale", ids["grpc"]),
            "open": {f["id"] for f in open_}}


@pytest.fixture
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def served(home, db):
    with serving(create_app(db)) as url:
        yield url


def finding_row(db, finding_id: int) -> dict:
    with db.connect() as conn:
        status, by = conn.execute("SELECT status, resolved_by FROM lint_findings WHERE id = %s",
                                  (finding_id,)).fetchone()
    return {"status": status, "resolved_by": by}


def memory(db, memory_id: int) -> dict:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)


def audit(db, memory_id: int) -> list[tuple[str, str]]:
    with db.connect() as conn:
        return [tuple(r) for r in conn.execute(
            "SELECT action, actor FROM vault_audit WHERE memory_id = %s ORDER BY id",
            (memory_id,))]


def card(page, finding_id: int):
    return page.locator(f".card.finding[data-id='{finding_id}']")


def test_findings_are_shown_and_resolved_by_keyboard_and_button(served, db, planted, browser):
    p = planted
    page = browser.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{served}/review")
    acme_open = len([f for f in findings.list_findings(db, Scope.everything(),
                                                       namespace="acme")])
    assert page.inner_text(".ns-findings .card.findings[data-ns='acme'] .open") == \
        str(acme_open)
    assert page.inner_text(".card.findings[data-ns='personal'] .open") == "1"
    page.click("header a[href='/review/findings']")
    page.wait_for_url(f"{served}/review/findings")
    assert {int(c.get_attribute("data-id")) for c in page.locator(".card.finding").all()} \
        == p["open"]
    assert page.inner_text("#total") == str(len(p["open"]))

    # each finding: its kind, its memories, its evidence
    clash = card(page, p["f_clash"])
    assert clash.locator(".kind").inner_text() == "contradiction"
    assert "same subject, different significant tokens" in clash.inner_text()
    assert "differing tokens: 5432, 5433" in clash.inner_text()
    assert [t.inner_text() for t in clash.locator(".memory .text").all()] == [
        "The acme staging database listens on port 5433", CLASH]
    ghost = card(page, p["f_ghost"])
    assert ghost.locator(".text").inner_text() == HOSTILE  # shown as text, never run
    assert "source event ids: 987654321" in ghost.inner_text()
    assert ghost.locator("button[data-act=supersede]").count() == 0  # an orphan: no pair
    # a sensitive memory is masked until revealed
    phone = card(page, p["f_phone"])
    texts = phone.locator(".memory .text")
    assert texts.count() == 2 and PHONE not in phone.inner_text()
    assert all("[phone masked]" in t.inner_text() for t in texts.all())
    phone.locator("button.reveal").first.click()
    assert PHONE in texts.first.inner_text()

    # supersede with the keyboard: select the contradiction, choose the old fact, u
    page.keyboard.press("k")
    for _ in range(len(p["open"])):
        if page.get_attribute(".card.finding.sel", "data-id") == str(p["f_clash"]):
            break
        page.keyboard.press("j")
    assert page.get_attribute(".card.finding.sel", "data-id") == str(p["f_clash"])
    page.keyboard.press("2")  # the new port first, to see the choice followed
    assert f"u: #{p['clash']} stops holding" in clash.locator(".plan").inner_text()
    page.keyboard.press("1")  # 5433, the older fact: it stops holding
    assert f"u: #{p['staging']} stops holding, superseded by #{p['clash']}" in \
        clash.locator(".plan").inner_text()
    page.keyboard.press("u")
    page.wait_for_selector(f".card.finding[data-id='{p['f_clash']}']", state="detached",
                           timeout=15000)
    assert page.inner_text("#total") == str(len(p["open"]) - 1)
    assert finding_row(db, p["f_clash"]) == {"status": "superseded",
                                             "resolved_by": "dashboard:local"}
    old = memory(db, p["staging"])
    assert old["superseded_by"] == p["clash"] and old["valid_to"] is not None
    assert audit(db, p["staging"])[-1] == ("supersede",
                                           f"dashboard:local (finding {p['f_clash']})")
    assert memory(db, p["clash"])["valid_to"] is None

    # archive by button: the orphan's memory, restorable
    ghost.locator("button[data-act=archive]").click()
    ghost.wait_for(state="detached", timeout=15000)
    assert finding_row(db, p["f_ghost"])["status"] == "archived"
    assert memory(db, p["ghost"])["status"] == "archived"
    assert audit(db, p["ghost"])[-1] == ("archive", f"dashboard:local (finding {p['f_ghost']})")

    # keep by button: nothing changes but the finding
    before = audit(db, p["phone"]) + audit(db, p["phone2"])
    phone.locator("button[data-act=keep]").click()
    phone.wait_for(state="detached", timeout=15000)
    assert finding_row(db, p["f_phone"]) == {"status": "kept",
                                             "resolved_by": "dashboard:local"}
    assert audit(db, p["phone"]) + audit(db, p["phone2"]) == before

    # a finding resolved elsewhere meanwhile: the page says so, the card stays
    rust = card(page, p["f_rust"])
    findings.resolve(db, p["f_rust"], "keep", actor="cli:alice")
    rust.click()
    page.keyboard.press("n")
    page.wait_for_function(f"document.querySelector(\".card.finding[data-id='{p['f_rust']}']"
                           f" .msg\").textContent.length > 0")
    assert "Conflict: finding" in rust.inner_text() and "already kept by cli:alice" in \
        rust.inner_text()

    page.goto(f"{served}/review")
    left = len(findings.list_findings(db, Scope.everything(), namespace="acme"))
    assert left == acme_open - 3 and left >= 1
    assert page.inner_text(".card.findings[data-ns='acme'] .open") == str(left)
    assert page.locator(".card.findings[data-ns='personal']").count() == 0
    assert dialogs == []


def test_markup_is_escaped_and_evidence_masked(home, db, planted):
    # a wiki edit the intake could not map, quoting a credential and an e-mail address
    line = "- deploy with token=s3cr3t-deploy-9 and ask ana.lopez@acme-corp.com"
    with db.connect() as conn:
        wiki = recall_store.insert_finding(
            conn, namespace="acme", kind="unmapped_edit", memory_ids=[],
            evidence={"file": "topics/deploys.md", "file_sha256": "ab" * 32, "line": 3,
                      "text": line, "reason": "a new line outside a topic"},
            fingerprint="test-wiki-line", run_id=None)
    html = local_client(create_app(db)).get("/review/findings").text
    assert HOSTILE not in html and str(markupsafe.escape(HOSTILE)) in html
    # the sensitive texts are only in the reveal's <template>, never shown as text
    outside = [part.split("</template>", 1)[-1] for part in html.split("<template>")]
    assert len(outside) == 3 and all(PHONE not in part for part in outside)
    assert html.count(PHONE) == 2
    start = html.index(f'data-id="{wiki}"')
    end = html.find('class="card finding"', start)
    shown = html[start:end if end != -1 else len(html)]  # the wiki finding's card
    assert "s3cr3t-deploy-9" not in html and "ana.lopez@acme-corp.com" not in html
    assert "token=[secret masked]" in shown and "[email masked]" in shown
    assert "topics/deploys.md" in shown and "ab" * 32 not in html  # a hash says nothing
    assert 'data-archive=""' in shown and "data-act=\"keep\"" in shown  # keep only


def test_a_scoped_cookie_neither_sees_nor_resolves_another_namespaces_findings(
        served, db, planted, browser):
    p = planted
    _, secret = tokens.create(db, ["personal"], name="laptop", kind="person")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{served}/review/findings")
    assert "/review/login" in page.url  # a token exists: no open loopback access
    page.fill("input[name=token]", secret)
    page.click("button")
    page.wait_for_url(f"{served}/review/findings")
    assert [int(c.get_attribute("data-id")) for c in page.locator(".card.finding").all()] \
        == [p["f_rust"]]
    main = page.inner_text("main")
    assert "acme" not in main and CLASH not in main
    assert page.goto(f"{served}/review/findings?namespace=acme").status == 403
    page.goto(f"{served}/review")
    assert [c.get_attribute("data-ns") for c in page.locator(".card.findings").all()] == \
        ["personal"]

    headers = {"X-Memory-Platform": "1"}
    resp = page.request.post(f"{served}/review/api/findings/{p['f_clash']}/resolve",
                             data={"action": "keep"}, headers=headers)
    assert resp.status == 404 and CLASH not in resp.text()
    assert finding_row(db, p["f_clash"])["status"] == "open"
    # a simple cross-site request (a form post) is refused before any route
    resp = page.request.post(f"{served}/review/api/findings/{p['f_rust']}/resolve",
                             form={"action": "keep"})
    assert resp.status == 403 and finding_row(db, p["f_rust"])["status"] == "open"

    page.goto(f"{served}/review/findings")
    page.wait_for_selector(".card.finding.sel")
    page.keyboard.press("a")  # archive the stale claim's memory
    page.wait_for_selector("#empty", timeout=15000)
    assert finding_row(db, p["f_rust"]) == {"status": "archived",
                                            "resolved_by": "dashboard:laptop"}
    assert audit(db, p["rust"])[-1] == ("archive", f"dashboard:laptop (finding {p['f_rust']})")
    context.close()


def test_an_agent_token_reads_findings_but_cannot_resolve_them(home, db, planted):
    _, agent = tokens.create(db, ["personal"], name="bot", kind="agent")
    client = local_client(create_app(db))
    head = {"Authorization": f"Bearer {agent}", "X-Memory-Platform": "1"}
    assert client.get("/review/findings", headers=head).status_code == 200
    refused = client.post(f"/review/api/findings/{planted['f_rust']}/resolve",
                          json={"action": "keep"}, headers=head)
    assert refused.status_code == 403
    assert finding_row(db, planted["f_rust"])["status"] == "open"
    # a person's token: a decision the finding does not allow is refused with the reason
    _, person = tokens.create(db, ["personal"], name="me", kind="person")
    wrong = client.post(f"/review/api/findings/{planted['f_rust']}/resolve",
                        json={"action": "supersede", "old_id": planted["rust"]},
                        headers={"Authorization": f"Bearer {person}", "X-Memory-Platform": "1"})
    assert wrong.status_code == 422 and "cannot be resolved by supersede" in wrong.text
    assert finding_row(db, planted["f_rust"])["status"] == "open"


def test_status_json_counts_open_findings_per_namespace(home, db, planted, monkeypatch):
    from memory_platform.cli.main import app

    result = CliRunner().invoke(app, ["status", "--json"])
    assert result.exit_code == 0, result.output
    vault = {v["namespace"]: v for v in json.loads(result.output)["vault"]}
    counts = findings.open_counts(db)
    assert vault["acme"]["lint_findings_open"] == sum(counts["acme"].values()) >= 4
    assert vault["acme"]["lint_findings_open_by_kind"]["contradiction"] >= 1
    assert vault["personal"]["lint_findings_open"] == 1
    assert vault["personal"]["lint_findings_open_by_kind"] == {"stale": 1}

    findings.resolve(db, planted["f_rust"], "keep", actor="cli:alice")
    again = json.loads(CliRunner().invoke(app, ["status", "--json"]).output)
    personal = next(v for v in again["vault"] if v["namespace"] == "personal")
    assert personal["lint_findings_open"] == 0 and personal["lint_findings_open_by_kind"] == {}
    # the table, on a console wide enough for its columns (rich sizes it at import)
    wide = Console(width=250, file=io.StringIO())
    monkeypatch.setattr("memory_platform.cli.ingest.out", wide)
    assert CliRunner().invoke(app, ["status"]).exit_code == 0
    cells = [[c.strip() for c in re.split("[│┃]", line)[1:-1]]
             for line in wide.file.getvalue().splitlines() if line[:1] in "│┃"]
    rows = {row[0]: row for row in cells if row}
    column = rows["namespace"].index("open findings")
    assert rows["acme"][column] == str(vault["acme"]["lint_findings_open"])
    assert rows["personal"][column] == "0"
