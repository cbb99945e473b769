"""The dashboard's curator page in real headless Chromium (Debian's `chromium` driven by
Playwright, as tests/test_dashboard.py), against the real app served by uvicorn and a real
PostgreSQL: the refused run loud at the top, cuts by run with reasons, evidence and purge
countdowns, restore with the keyboard (the database shows the memory active again and the
restore audited), a restore refused outside the window, memory text escaped; then the
login cookie of a token scoped to one namespace, which sees nothing of another's cuts."""

from datetime import date, timedelta

import markupsafe
import pytest

from helpers.api import local_client
from helpers.browser import chromium, serving
from helpers.curator import (
    ACME,
    DUPLICATE,
    STALE,
    TRUE_CONFIG,
    answering,
    good_plan,
    make_repo,
    seed,
    stale_cuts,
)
from memory_platform.api.app import create_app
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.execute import execute
from memory_platform.curator.propose import propose
from memory_platform.llm import ScriptedProvider
from memory_platform.store import memories as memory_store
from memory_platform.vault import tokens

WEEK = date(2026, 11, 29)
HOSTILE = "<img src=x onerror=alert(1)> Deploys go out on Fridays."
WORK = ["Deploys go out on Fridays.", HOSTILE, "Standup is at 9:30."]


def _duplicate_of_first(handles: dict[str, int]) -> dict:
    return {"cuts": [{"handle": handles[HOSTILE], "reason": "duplicate",
                      "of": handles[WORK[0]],
                      "evidence": [{"handle": handles[WORK[0]], "note": "same rule"}]}]}


@pytest.fixture
def curated(db, tmp_path):
    """acme: two cuts (the stale port with file evidence, a duplicate) and a refused run
    of the next week (the breaker); work (no repository): one cut, a duplicate whose text
    holds markup."""
    repo = make_repo(tmp_path)
    acme = seed(db, "acme", ACME)
    work = seed(db, "work", WORK, vectors=False)
    config = CuratorConfig(repos={"acme": repo["path"]})
    model = ScriptedProvider(answers=answering(good_plan))
    propose(db, "acme", WEEK, agent=lambda: model, dagster_run_id="run-acme", config=config,
            repo=repo["path"])
    execute(db, "acme", WEEK, dagster_run_id="run-acme", config=config)
    greedy = ScriptedProvider(answers=answering(stale_cuts(6)))
    refused = propose(db, "acme", WEEK + timedelta(days=7), agent=lambda: greedy,
                      dagster_run_id="run-greedy", config=config, repo=repo["path"])
    assert refused.status == "refused" and refused.refusal == "breaker"
    scripted = ScriptedProvider(answers=answering(_duplicate_of_first))
    propose(db, "work", WEEK, agent=lambda: scripted, dagster_run_id="run-work",
            config=CuratorConfig(), repo=None)
    execute(db, "work", WEEK, dagster_run_id="run-work", config=CuratorConfig())
    return {"stale": acme[ACME.index(STALE)], "duplicate": acme[ACME.index(DUPLICATE)],
            "original": acme[ACME.index(TRUE_CONFIG)],
            "work_cut": work[1], "refused": refused.run_pk}


@pytest.fixture
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def served(home, db):
    with serving(create_app(db)) as url:
        yield url


def status(db, memory_id: int) -> str:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)["status"]


def audit(db, memory_id: int) -> list[tuple[str, str]]:
    with db.connect() as conn:
        return [tuple(r) for r in conn.execute(
            "SELECT action, actor FROM vault_audit WHERE memory_id = %s ORDER BY id",
            (memory_id,))]


def selected(page) -> int:
    return int(page.get_attribute(".card.cut.sel", "data-id"))


def test_the_page_shows_refusals_and_cuts_and_restores_with_the_keyboard(served, db, curated,
                                                                          browser):
    page = browser.new_page()
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{served}/review/curator")
    # the refused run, loud and first
    refused = page.locator("#refused .card.refused")
    assert refused.count() == 1
    text = refused.inner_text()
    assert "REFUSED · circuit breaker" in text and "acme" in text
    assert "6 cuts of 8 memories (75%) is over the ceiling of 40% (at most 3)" in text
    assert page.evaluate("document.querySelector('#refused').compareDocumentPosition("
                         "document.querySelector('#cuts')) & Node.DOCUMENT_POSITION_FOLLOWING")
    # cuts by run, newest run first; each with reason, evidence and countdown
    assert [int(r.get_attribute("data-run")) for r in page.locator(".run").all()] == sorted(
        (int(r.get_attribute("data-run")) for r in page.locator(".run").all()), reverse=True)
    assert page.inner_text("#total") == "3"
    stale = page.locator(f".card.cut[data-id='{curated['stale']}']")
    assert "contradicted" in stale.inner_text() and STALE in stale.inner_text()
    assert "config/server.toml:3: port = 9090" in stale.inner_text()
    duplicate = page.locator(f".card.cut[data-id='{curated['duplicate']}']").inner_text()
    original = curated["original"]
    # the original named, and the evidence's handle shown as the memory it stood for
    assert f"duplicate of #{original}" in duplicate and f"memory #{original}" in duplicate
    assert [c.inner_text().count("purged in 13 d") for c in page.locator(".card.cut").all()
            ] == [1, 1, 1]
    hostile = page.locator(f".card.cut[data-id='{curated['work_cut']}'] .text")
    assert hostile.inner_text() == HOSTILE  # shown as text, never run

    # restore with the keyboard: j moves, r restores the selected cut
    first = selected(page)
    page.keyboard.press("j")
    second = selected(page)
    assert second != first
    page.keyboard.press("r")
    page.wait_for_selector(f".card.cut[data-id='{second}']", state="detached", timeout=15000)
    assert page.inner_text("#total") == "2"
    assert status(db, second) == "active"
    assert audit(db, second)[-1] == ("curator_restore", "dashboard:local")
    assert status(db, first) == "cut"

    # outside the window: refused with the reason, the card stays
    left = selected(page)
    with db.connect() as conn:
        conn.execute("UPDATE curator_archive SET cut_at = now() - interval '15 days', "
                     "restore_until = now() - interval '1 day' WHERE memory_id = %s", (left,))
    page.reload()
    page.wait_for_selector(".card.cut.sel")
    card = page.locator(f".card.cut[data-id='{left}']")
    assert "due for purge" in card.inner_text()
    page.locator(f".card.cut[data-id='{left}']").click()
    page.keyboard.press("r")
    page.wait_for_function(f"document.querySelector(\".card.cut[data-id='{left}'] .msg\")"
                           ".textContent.length > 0")
    assert "Refused:" in card.inner_text() and "restore window ended" in card.inner_text()
    assert status(db, left) == "cut"
    assert dialogs == []


def test_markup_in_a_cut_is_escaped(home, db, curated):
    html = local_client(create_app(db)).get("/review/curator").text
    assert HOSTILE not in html and str(markupsafe.escape(HOSTILE)) in html


def test_a_scoped_cookie_sees_only_its_namespaces_cuts(served, db, curated, browser):
    _, secret = tokens.create(db, ["work"], name="laptop", kind="person")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{served}/review/curator")
    assert "/review/login" in page.url  # a token exists: no open loopback access
    page.fill("input[name=token]", secret)
    page.click("button")
    page.wait_for_url(f"{served}/review/curator")
    ids = {int(c.get_attribute("data-id")) for c in page.locator(".card.cut").all()}
    assert ids == {curated["work_cut"]}
    assert page.locator("#refused").count() == 0  # the refused run is acme's
    main = page.inner_text("main")
    assert "acme" not in main and STALE not in main
    assert page.goto(f"{served}/review/curator?namespace=acme").status == 403
    headers = {"X-Memory-Platform": "1"}
    resp = page.request.post(f"{served}/review/api/curator/cuts/{curated['stale']}/restore",
                             data={}, headers=headers)
    assert resp.status == 404 and STALE not in resp.text()
    assert status(db, curated["stale"]) == "cut"
    # a simple cross-site request (a form post) is refused before any route
    resp = page.request.post(f"{served}/review/api/curator/cuts/{curated['work_cut']}/restore",
                             form={"x": "1"})
    assert resp.status == 403 and status(db, curated["work_cut"]) == "cut"

    page.goto(f"{served}/review/curator")
    page.wait_for_selector(".card.cut.sel")
    page.keyboard.press("r")
    page.wait_for_selector("#empty", timeout=15000)
    assert status(db, curated["work_cut"]) == "active"
    assert audit(db, curated["work_cut"])[-1] == ("curator_restore", "dashboard:laptop")
    context.close()
