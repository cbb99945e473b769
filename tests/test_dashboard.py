"""The review dashboard in real headless Chromium (Debian's `chromium`, driven by Playwright
with `executable_path`), against the real app served by uvicorn on a free localhost port and
a real PostgreSQL: keyboard approvals, edit, skip, supersede, bulk approve, target namespace,
provenance pages; the database after each, and a Dagster run per promotion. Then the login
cookie of a scoped token, 403/404 outside its namespace, and a conflicting decision."""

import json
import re
from datetime import UTC, date, datetime, timedelta

import dagster as dg
import markupsafe
import pytest

from helpers.api import local_client
from helpers.browser import chromium, serving
from helpers.transcripts import cc_record
from memory_platform.api.app import create_app
from memory_platform.ingest import importer as ingest
from memory_platform.query.embeddings import get_embedder
from memory_platform.store import dedup as dedup_store
from memory_platform.store import dream as dream_store
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault import memories as vault
from memory_platform.vault import review, tokens

RUN = "run-dashboard-1"
DAY = datetime(2026, 3, 2, 9, tzinfo=UTC)



@pytest.fixture(scope="module")
def embedder():
    return get_embedder("local")


@pytest.fixture
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def server(home, db):
    """The real app (REST + dashboard) served by uvicorn in a thread: (base url, app)."""
    app = create_app(db)
    with serving(app) as url:
        yield url, app


@pytest.fixture
def turns(db, tmp_path):
    """Ten conversation turns in cairn, so provenance links open real source turns."""
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(cc_record(
        i, "s-dash", DAY + timedelta(minutes=i), "user" if i % 2 == 0 else "assistant",
        text=f"turn {i}: we talked about item {i}")) + "\n" for i in range(10)))
    ingest.import_path(db, "claude-code", path)
    with db.connect() as conn:
        return [r[0] for r in conn.execute("SELECT id FROM events ORDER BY occurred_at, id")]


def stage(db, text: str, *, namespace: str = "personal", verdict: str = "new",
          neighbour_id: int | None = None, events=()) -> int:
    """A dream's output as staging leaves it: candidate, verdict, pending shadow entry."""
    with db.connect() as conn, conn.transaction():
        [candidate] = dream_store.insert_candidates(
            conn, run_id=RUN, day=date(2026, 3, 2), conversation_id=None,
            candidates=[dream_store.CandidateRow(text, 7, "user", namespace, "worth keeping",
                                                 list(events), "proposed")])
        dedup_store.insert_verdict(
            conn, candidate_id=candidate, run_id=RUN, verdict=verdict,
            decided_by="judge" if neighbour_id else "vector", reason=f"test {verdict}",
            thresholds={"duplicate": 0.85}, neighbour_id=neighbour_id,
            neighbour_text=memory_store.get_memory(conn, neighbour_id)["text"]
            if neighbour_id else None, similarity=0.93 if neighbour_id else None)
        memory_id, _ = memory_store.add_memory(
            conn, namespace=namespace_store.shadow_of(namespace, "dream"), text=text,
            category="user", source="dream", actor=f"dream:{RUN}", review="pending",
            dream_run_id=RUN, candidate_id=candidate, source_event_ids=list(events), score=7,
            why="worth keeping", verdict=verdict)
    return memory_id


def row(db, memory_id: int) -> dict:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)


def promoted(db, shadow_id: int) -> dict | None:
    with db.connect() as conn:
        found = conn.execute("SELECT id FROM memories WHERE promoted_from = %s",
                             (shadow_id,)).fetchone()
        return memory_store.get_memory(conn, found[0]) if found else None


def actors(db, memory_id: int) -> set[tuple[str, str]]:
    return {(a["action"], a["actor"]) for a in review.audit_trail(db, [memory_id])}


def gone(page, memory_id: int) -> None:
    page.wait_for_selector(f".card[data-id='{memory_id}']", state="detached", timeout=15000)


def selected(page) -> int:
    return int(page.get_attribute(".card.sel", "data-id"))


def test_clear_a_namespace_with_the_keyboard(server, db, embedder, turns, home, browser):
    base, app = server
    fact = vault.add(db, "personal", "The database listens on port 5432.", "project", "test",
                     embedder=embedder)["id"]
    vault.add(db, "work", "Deploys happen on Fridays.", "project", "test", embedder=embedder)
    ids = {name: stage(db, text, events=turns[4:5] if name == "a" else ())
           for name, text in [("a", "The user prefers pytest."),
                              ("b", "The user drinks oat-milk flat whites."),
                              ("c", "The user runs Debian at home.")]}
    ids["d"] = stage(db, "Lunch was a falafel wrap.")
    ids["new_port"] = stage(db, "The database now listens on port 5433.",
                            verdict="contradiction", neighbour_id=fact)
    for name in ("e", "f", "g"):
        ids[name] = stage(db, f"The user keeps notes in folder {name}.")
    vault.embed_missing_memories(db, embedder)

    page = browser.new_page()
    page.goto(f"{base}/review")
    card = page.locator("a.ns", has_text="personal")
    assert card.locator(".pending").inner_text() == "8"
    card.click()
    page.wait_for_selector(".card.sel")
    assert page.inner_text("#total") == "8"
    first = page.locator(f".card[data-id='{ids['a']}']")
    assert "worth keeping" in first.inner_text()
    assert "similarity" in page.locator(f".card[data-id='{ids['new_port']}'] .near"
                                        ).inner_text()
    assert "contradicts" in page.locator(f".card[data-id='{ids['new_port']}']").inner_text()

    # provenance: the cited turn with three turns either side
    href = first.locator(f"a[href^='/review/event/{turns[4]}']").get_attribute("href")
    source = browser.new_page()
    source.goto(base + href)
    assert source.locator(".turn").count() == 7
    assert "turn 4: we talked" in source.locator(".turn.cited").inner_text()
    source.close()

    # a approves the selection; j/k move it
    assert selected(page) == ids["a"]
    page.keyboard.press("a")
    gone(page, ids["a"])
    assert selected(page) == ids["b"]
    page.keyboard.press("j")
    assert selected(page) == ids["c"]
    page.keyboard.press("k")
    page.keyboard.press("a")
    gone(page, ids["b"])
    # e: edit inline, Enter approves the edited text
    assert selected(page) == ids["c"]
    page.keyboard.press("e")
    textarea = page.locator(f".card[data-id='{ids['c']}'] textarea")
    textarea.fill("The user runs Debian 12 on the home server.")
    textarea.press("Enter")
    gone(page, ids["c"])
    # s: skip with a reason
    page.keyboard.press("s")
    reason = page.locator(f".card[data-id='{ids['d']}'] input.reason")
    reason.fill("not durable")
    reason.press("Enter")
    gone(page, ids["d"])
    # u: supersede the contradicted fact
    assert selected(page) == ids["new_port"]
    page.keyboard.press("u")
    gone(page, ids["new_port"])
    # x selects, shift-A approves the selection
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.keyboard.press("Shift+A")
    gone(page, ids["e"])
    gone(page, ids["f"])
    # another target namespace, then a
    page.locator(f".card[data-id='{ids['g']}'] select.target").select_option("work")
    page.keyboard.press("a")
    gone(page, ids["g"])
    page.wait_for_selector("#empty")
    assert page.inner_text("#total") == "0"
    page.wait_for_function(
        "document.getElementById('runs').textContent.includes('recorded')")

    actor = "dashboard:local"
    for name in ("a", "b", "e", "f"):
        p = promoted(db, ids[name])
        assert p["namespace"] == "personal" and row(db, ids[name])["review"] == "approved"
        assert ("approve", actor) in actors(db, ids[name])
        assert ("promote", actor) in actors(db, p["id"])
    assert promoted(db, ids["a"])["source_event_ids"] == [turns[4]]
    assert promoted(db, ids["c"])["text"] == "The user runs Debian 12 on the home server."
    assert row(db, ids["c"])["review_note"] == "edited"
    assert promoted(db, ids["g"])["namespace"] == "work"
    skipped = row(db, ids["d"])
    assert (skipped["review"], skipped["review_note"]) == ("skipped", "not durable")
    assert ("skip", actor) in actors(db, ids["d"])
    assert promoted(db, ids["d"]) is None
    new_fact = promoted(db, ids["new_port"])
    old = row(db, fact)
    assert old["superseded_by"] == new_fact["id"] and old["valid_to"] is not None
    assert old["status"] == "active"  # ended, not deleted
    assert ("supersede", actor) in actors(db, fact)

    # every promotion is a Dagster run on the instance the UI shows
    recorder = app.state.review_recorder
    assert recorder.drain(timeout=240), recorder.status()
    assert recorder.status()["failed"] == 0, recorder.status()
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    runs = instance.get_runs(filters=dg.RunsFilter(job_name="vault_promotion_job"))
    promotions = {ids[n] for n in ("a", "b", "c", "new_port", "e", "f", "g")}
    assert {int(r.tags["memory-platform/memory-id"]) for r in runs} == promotions
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert all(r.tags["memory-platform/trigger"] == "dashboard" for r in runs)
    event = instance.get_latest_materialization_event(
        dg.AssetKey("vault_promotions"))
    assert event is not None
    by_key = {}
    for r in runs:
        [mat] = [e for e in instance.all_logs(r.run_id)
                 if e.dagster_event and e.dagster_event.is_step_materialization]
        by_key[int(r.tags["memory-platform/memory-id"])] = {
            k: getattr(v, "value", v)
            for k, v in mat.dagster_event.step_materialization_data.materialization.metadata.items()}
    sup = by_key[ids["new_port"]]
    assert (sup["action"], sup["superseded_id"], sup["actor"], sup["recorded"]) == (
        "supersede", fact, actor, True)
    assert by_key[ids["c"]]["edited"] is True
    assert by_key[ids["g"]]["namespace"] == "work"


def test_scoped_cookie_and_a_conflicting_decision(server, db, browser):
    base, app = server
    _, secret = tokens.create(db, ["work"], name="laptop", kind="person")
    personal = stage(db, "The user prefers dark roast.")
    w1 = stage(db, "Deploys run from the release branch.", namespace="work")
    w2 = stage(db, "Standup is at 9:30.", namespace="work")

    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{base}/review")
    assert "/review/login" in page.url  # tokens exist: no open loopback access
    page.fill("input[name=token]", "mp_wrong")
    page.click("button")
    assert "not valid" in page.inner_text("main")
    page.fill("input[name=token]", secret)
    page.click("button")
    page.wait_for_url(f"{base}/review")
    cookies = {c["name"]: c for c in context.cookies()}
    assert set(cookies) == {"mp_session", "mp_csrf"}  # the session, and the form's token
    for cookie in cookies.values():
        assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict")
    assert [c.inner_text().split(" ·")[0] for c in page.locator("a.ns").all()] == ["work"]
    assert page.goto(f"{base}/review/personal").status == 403
    resp = page.request.post(f"{base}/review/api/entries/{personal}/approve", data={})
    assert resp.status == 404
    resp = page.request.post(f"{base}/review/api/entries/{w1}/approve",
                             data={"namespace": "personal"})
    assert resp.status == 403
    assert row(db, personal)["review"] == "pending" and row(db, w1)["review"] == "pending"

    page.goto(f"{base}/review/work")
    page.wait_for_selector(".card.sel")
    # someone else decides first (the CLI): the dashboard's decision gets a clear conflict
    review.approve(db, w1, actor="cli:bob")
    page.keyboard.press("a")
    msg = page.locator(f".card[data-id='{w1}'] .msg")
    msg.wait_for(state="visible")
    page.wait_for_function(f"document.querySelector(\".card[data-id='{w1}'] .msg\")"
                           ".textContent.length > 0")
    assert "already approved by cli:bob" in msg.inner_text()
    page.keyboard.press("j")
    page.keyboard.press("a")
    gone(page, w2)
    assert ("approve", "dashboard:laptop") in actors(db, w2)
    context.close()
    assert app.state.review_recorder.drain(timeout=120)
    assert app.state.review_recorder.status()["failed"] == 0


def test_memory_text_is_escaped_and_the_assets_are_the_apps_own(home, db):
    """Memory text is user data: markup in it reaches the page as text (first page and the
    ones fetched while scrolling). The stylesheet and scripts come from the app itself."""

    hostile = "<img src=x onerror=alert(1)> & <script>alert(2)</script>"
    stage(db, hostile)
    app = create_app(db)
    try:
        app.state.review_catch_up.join(timeout=60)
        with local_client(app) as client:
            page = client.get("/review/personal")
            more = client.get("/review/api/personal/entries", params={"after_id": 0}).json()
            assert page.status_code == 200 and more["count"] == 1
            for html in (page.text, more["html"]):
                assert hostile not in html
                # the card's text and the edit box's
                assert html.count(markupsafe.escape(hostile)) == 2
            assets = re.findall(r'<(?:script src|link rel="stylesheet" href)="([^"]+)"',
                                page.text)
            assert len(assets) == 3 and all(a.startswith("/review/static/") for a in assets)
            for asset in assets:
                served = client.get(asset)
                assert served.status_code == 200 and served.text.strip()
            assert "function act(" in client.get(assets[-1]).text
    finally:
        app.state.review_recorder.close()

def test_record_mode_checks_the_decision_and_is_idempotent(home, db):
    """vault_promotions action `record`: materializes a decision already made (twice: the
    same metadata), and fails the run for one the database does not show."""
    from memory_platform.defs.vault.assets import PromotionConfig
    from memory_platform.launch import promote_via_dagster

    instance = dg.DagsterInstance.ephemeral()
    entry = stage(db, "The user reads on Sundays.")
    done = review.approve(db, entry, actor="dashboard:local")
    config = PromotionConfig(action="record", actor="dashboard:local",
                             promoted_id=done["promoted_id"])
    first = promote_via_dagster(instance, entry, config, trigger="dashboard")
    again = promote_via_dagster(instance, entry, config, trigger="dashboard")
    for recorded in (first, again):
        assert (recorded["action"], recorded["promoted_id"], recorded["actor"],
                recorded["recorded"]) == ("approve", done["promoted_id"], "dashboard:local",
                                          True)
    assert promoted(db, entry)["id"] == done["promoted_id"]  # nothing written twice
    pending_entry = stage(db, "The user walks to work.")
    with pytest.raises(Exception, match="is not approved"):
        promote_via_dagster(instance, pending_entry, PromotionConfig(
            action="record", promoted_id=done["promoted_id"]), trigger="dashboard")
    assert row(db, pending_entry)["review"] == "pending"


def test_a_starting_server_records_approvals_an_earlier_one_left_unrecorded(home, db,
                                                                          embedder):
    """Decisions still queued when a server stopped are in the database but not in Dagster:
    the next server records them (once), and leaves recorded ones alone."""
    from memory_platform.defs.vault.assets import PromotionConfig
    from memory_platform.launch import promote_via_dagster
    from memory_platform.settings import load_settings

    fact = vault.add(db, "personal", "Backups run at 02:00.", "project", "test",
                     embedder=embedder)["id"]
    lost = stage(db, "The user drinks tea, not coffee.")
    lost_supersede = stage(db, "Backups run at 04:00.", verdict="contradiction",
                           neighbour_id=fact)
    kept = stage(db, "The user's laptop is a ThinkPad.")
    done_lost = review.approve(db, lost, actor="dashboard:local")
    done_sup = review.supersede(db, lost_supersede, actor="dashboard:local",
                                old_memory_id=fact)
    done_kept = review.approve(db, kept, actor="dashboard:local")
    promote_via_dagster(load_settings(), kept, PromotionConfig(
        action="record", actor="dashboard:local", promoted_id=done_kept["promoted_id"]),
        trigger="dashboard")

    app = create_app(db)
    try:
        app.state.review_catch_up.join(timeout=120)
        recorder = app.state.review_recorder
        assert recorder.drain(timeout=240), recorder.status()
        assert recorder.status()["failed"] == 0, recorder.status()
        assert recorder.recorded == 2
    finally:
        app.state.review_recorder.close()
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    runs = instance.get_runs(filters=dg.RunsFilter(job_name="vault_promotion_job"))
    by_memory = {}
    for r in runs:
        assert r.status == dg.DagsterRunStatus.SUCCESS
        by_memory.setdefault(int(r.tags["memory-platform/memory-id"]), []).append(r)
    assert {k: len(v) for k, v in by_memory.items()} == {lost: 1, lost_supersede: 1, kept: 1}
    [sup_run] = by_memory[lost_supersede]
    [mat] = [e for e in instance.all_logs(sup_run.run_id)
             if e.dagster_event and e.dagster_event.is_step_materialization]
    meta = mat.dagster_event.step_materialization_data.materialization.metadata
    assert meta["action"].value == "supersede" and meta["superseded_id"].value == fact
    assert meta["promoted_id"].value == done_sup["promoted_id"]
    assert done_lost["promoted_id"] == promoted(db, lost)["id"]

    # a second start finds nothing left to record
    again = create_app(db)
    again.state.review_catch_up.join(timeout=120)
    assert again.state.review_recorder.drain(timeout=60)
    assert again.state.review_recorder.status()["recorded"] == 0
    again.state.review_recorder.close()
    assert len(instance.get_runs(filters=dg.RunsFilter(job_name="vault_promotion_job"))) == 3
