"""recall: the markdown wiki (deterministic, two-way, never clobbering an edit), lint
(finds planted problems, changes nothing), the findings a person resolves, and the Dagster
wiring (assets, the wiki sensor)."""

import shutil
from datetime import datetime, timedelta, timezone

import dagster as dg
import pytest

from helpers.recall_vault import seed
from helpers.words import WORDS
from memory_platform.defs.recall.assets import vault_lint, vault_wiki
from memory_platform.defs.recall.automation import wiki_sensor
from memory_platform.llm import ScriptedProvider
from memory_platform.recall import findings, intake, lint, wiki
from memory_platform.resources import DatabaseResource, LLMFactory
from memory_platform.resources.common import WIKI_PARTITIONS_NAME
from memory_platform.store import memories as memory_store
from memory_platform.vault.tokens import Scope

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)


@pytest.fixture
def words(monkeypatch):
    """The vault embedder is the bag-of-words stand-in (no torch in these tests)."""
    monkeypatch.setattr("memory_platform.vault.memories.vault_embedder", lambda: WORDS)
    monkeypatch.setattr("memory_platform.recall.intake.vault_embedder", lambda: WORDS)
    monkeypatch.setattr("memory_platform.recall.lint.vault_embedder", lambda: WORDS)
    return WORDS


def _files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*.md"))}


def _snapshot(db) -> tuple:
    with db.connect() as conn:
        rows = conn.execute("SELECT to_jsonb(m) FROM memories m ORDER BY id").fetchall()
        audit = conn.execute("SELECT count(*) FROM vault_audit").fetchone()[0]
    return [r[0] for r in rows], audit


# --- the wiki ------------------------------------------------------------------------------


def test_wiki_bytes_are_stable_across_builds(db, home, words):
    ids = seed(db, home)
    first = intake.sync(db, "acme")
    folder = wiki.wiki_dir("acme")
    built = _files(folder)
    assert first["build"]["written"] == len(built) and "INDEX.md" in built
    again = intake.sync(db, "acme")
    assert again["build"]["written"] == 0 and _files(folder) == built
    shutil.rmtree(folder)  # a fresh folder gets the very same bytes
    assert intake.sync(db, "acme")["build"]["written"] == len(built)
    assert _files(folder) == built

    index = built["INDEX.md"].decode()
    assert len(index.splitlines()) < 200 and "[database](topics/database.md)" in index
    assert f"[#{ids['short']}]" in index  # a standing fact
    topic = built[f"topics/{_topic_of(db, ids['port'])}.md"].decode()
    assert "The acme API runs on port 8080 _(since " in topic
    history = topic[topic.index("## History"):]
    assert f"[#{ids['old_port']}]" in history and f"superseded by #{ids['port']}" in history
    assert any(p.startswith("episodes/") for p in built)
    assert not any(b"+33" in data for data in built.values())  # sensitive: left out


def _topic_of(db, memory_id: int) -> str:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)["topic"]


def test_a_persons_edit_deletion_and_addition_end_in_the_vault_audited(db, home, words):
    ids = seed(db, home)
    intake.sync(db, "acme")
    path = f"topics/{_topic_of(db, ids['port'])}.md"
    staging_path = f"topics/{_topic_of(db, ids['staging'])}.md"
    assert path != staging_path
    target = wiki.wiki_dir("acme") / path
    text = target.read_text().replace("The acme API runs on port 8080",
                                      "The acme API runs on port 9090")
    text = text.replace("## History", "- The acme API answers in under 50 ms\n\n## History")
    target.write_text(text)
    staging_file = wiki.wiki_dir("acme") / staging_path
    staging_file.write_text("".join(
        line for line in staging_file.read_text().splitlines(keepends=True)
        if f"[#{ids['staging']}]" not in line))

    done = intake.sync(db, "acme")
    assert done["intake"]["edited"] == [ids["port"]]
    assert done["intake"]["archived"] == [ids["staging"]]
    [added] = done["intake"]["added"]
    with db.connect() as conn:
        port = memory_store.get_memory(conn, ids["port"])
        staging = memory_store.get_memory(conn, ids["staging"])
        new = memory_store.get_memory(conn, added)
        trails = {i: memory_store.audit_of(conn, i) for i in (ids["port"], ids["staging"],
                                                             added)}
    assert port["text"] == "The acme API runs on port 9090" and staging["status"] == "archived"
    assert (new["source"], new["topic"]) == ("hand", path[len("topics/"):-3])
    for memory_id, action, where in ((ids["port"], "edit", path),
                                     (ids["staging"], "archive", staging_path),
                                     (added, "add", path)):
        assert trails[memory_id][-1]["action"] == action
        assert trails[memory_id][-1]["actor"] == f"wiki:{where}"
    # Taken in, then rewritten from the vault: the new line now carries its id.
    assert f"[#{added}]" in target.read_text()
    assert intake.sync(db, "acme")["intake"]["edited"] == []


def test_an_unmappable_edit_is_reported_and_never_clobbered(db, home, words):
    ids = seed(db, home)
    intake.sync(db, "acme")
    path = f"topics/{_topic_of(db, ids['port'])}.md"
    target = wiki.wiki_dir("acme") / path
    original = target.read_text()
    edited = original.replace("The acme API runs on port 8000", "The API ran on port 8000")
    edited = edited.replace("## History",
                            "Some thoughts about the API, to sort out later.\n\n## History")
    target.write_text(edited)

    done = intake.sync(db, "acme")
    assert len(done["intake"]["findings"]) == 2 and done["build"]["held"] == [path]
    assert target.read_text() == edited  # kept as the person left it
    reported = findings.list_findings(db, Scope.everything(), namespace="acme")
    assert {f["evidence"]["reason"] for f in reported} == {
        "an edit of a superseded fact",
        "a line the wiki did not write and cannot map to a memory (headings, links and notes "
        "are regenerated)"}
    assert {f["kind"] for f in reported} == {"unmapped_edit"}
    # A rebuild alone, or another sync, still does not overwrite it, nor report twice.
    assert path in wiki.build(db, "acme").held and target.read_text() == edited
    assert intake.sync(db, "acme")["intake"]["findings"] == []
    # Once the person keeps (dismisses) both findings, the file is rebuilt from the vault.
    for f in reported:
        findings.resolve(db, f["id"], "keep", actor="cli:test")
    assert intake.sync(db, "acme")["build"]["written"] >= 1
    assert target.read_text() == original


def test_a_persons_own_file_in_the_wiki_is_reported_and_left_alone(db, home, words):
    seed(db, home)
    intake.sync(db, "acme")
    own = wiki.wiki_dir("acme") / "notes.md"
    own.write_text("- a to-do, not a memory\n")
    before = _snapshot(db)
    done = intake.sync(db, "acme")
    assert done["intake"]["added"] == [] and own.read_text() == "- a to-do, not a memory\n"
    [finding] = findings.list_findings(db, Scope.everything(), namespace="acme")
    assert finding["evidence"]["file"] == "notes.md"
    findings.resolve(db, finding["id"], "keep", actor="cli:test")
    intake.sync(db, "acme")
    assert own.exists() and _snapshot(db)[0] == before[0]


def test_an_edit_of_a_memory_the_vault_changed_since_is_a_conflict(db, home, words):
    ids = seed(db, home)
    intake.sync(db, "acme")
    from memory_platform.vault import service as access

    access.edit(db, Scope.everything(), ids["staging"], actor="cli:other",
                text="The acme staging database listens on port 6543", embedder=WORDS)
    target = wiki.wiki_dir("acme") / f"topics/{_topic_of(db, ids['staging'])}.md"
    target.write_text(target.read_text().replace("listens on port 5433", "listens on 5434"))
    done = intake.sync(db, "acme")
    [finding] = findings.list_findings(db, Scope.everything(), namespace="acme")
    assert finding["kind"] == "wiki_conflict" and done["intake"]["edited"] == []
    with db.connect() as conn:
        assert memory_store.get_memory(conn, ids["staging"])["text"].endswith("port 6543")


# --- lint ----------------------------------------------------------------------------------


def _lint_fixture(db, home) -> dict[str, int]:
    ids = seed(db, home)
    with db.connect() as conn:
        def add(text, **kw):
            return memory_store.add_memory(conn, namespace="acme", text=text, actor="test",
                                           topic=kw.pop("topic", "planted"), **kw)[0]
        ids["clash"] = add("The acme staging database listens on port 5432",
                           category="project")
        ids["twin"] = add("Deploys of the acme API go out every Friday afternoon",
                          category="project")
        ids["twin2"] = add("Deploys  of the acme API go out every Friday afternoon",
                           category="project")
        ids["now"] = add("The acme API is currently being migrated to gRPC",
                         category="project", valid_from=NOW - timedelta(days=90))
        ids["deadline"] = add("The acme beta program ends on 2026-01-15", category="project")
        ids["ghost"] = add("The acme cache is warmed at boot", category="project",
                           source_event_ids=[987654321])
        ids["untopical"] = add("Something about acme", category="project", topic=None)
    from memory_platform.vault.memories import embed_missing_memories

    embed_missing_memories(db, WORDS)
    return ids


def test_lint_finds_planted_problems_and_changes_nothing(db, home, words):
    ids = _lint_fixture(db, home)
    before = _snapshot(db)
    report = lint.lint_namespace(db, "acme", now=NOW)
    assert _snapshot(db) == before  # lint never changes the vault
    found = findings.list_findings(db, Scope.everything(), namespace="acme")
    by_kind: dict[str, list[set]] = {}
    for f in found:
        by_kind.setdefault(f["kind"], []).append(set(f["memory_ids"]))
    assert {ids["staging"], ids["clash"]} in by_kind["contradiction"]
    assert {ids["twin"], ids["twin2"]} in by_kind["near_duplicate"]
    assert {ids["now"]} in by_kind["stale"] and {ids["deadline"]} in by_kind["stale"]
    assert {ids["ghost"]} in by_kind["orphan"] and {ids["untopical"]} in by_kind["orphan"]
    assert not any(ids["old_port"] in s for sets in by_kind.values() for s in sets)
    assert report.found == {k: len(v) for k, v in by_kind.items()}
    contradiction = next(f for f in found if f["kind"] == "contradiction")
    assert contradiction["evidence"]["differing_tokens"] and \
        contradiction["evidence"]["similarity"] >= lint.SUBJECT

    again = lint.lint_namespace(db, "acme", now=NOW)  # nothing twice
    assert again.found == {} and again.already_known == len(found)


def test_the_dedup_judge_flags_a_grey_band_contradiction(db, home, words):
    ids = _lint_fixture(db, home)
    with db.connect() as conn:
        led, _ = memory_store.add_memory(conn, namespace="acme", text="Mira leads the acme "
                                         "design team", category="project", actor="test")
        left, _ = memory_store.add_memory(conn, namespace="acme", text="Mira left the acme "
                                          "design team", category="project", actor="test")
    from memory_platform.vault.judge import JudgeAnswer
    from memory_platform.vault.memories import embed_missing_memories

    embed_missing_memories(db, WORDS)

    llm = ScriptedProvider(answers=lambda call: JudgeAnswer(relation="contradiction",
                                                            reason="two ports"))
    report = lint.lint_namespace(db, "acme", llm=llm, now=NOW)
    assert report.judge_calls > 0
    judged = [f for f in findings.list_findings(db, Scope.everything(), namespace="acme")
              if f["evidence"]["reason"] == "the dedup judge calls it a contradiction"]
    assert {led, left} in [set(f["memory_ids"]) for f in judged]
    assert ids["staging"] not in {i for f in judged for i in f["memory_ids"]}


def test_findings_are_resolved_by_a_person_and_audited(db, home, words):
    ids = _lint_fixture(db, home)
    lint.lint_namespace(db, "acme", now=NOW)
    open_ = findings.list_findings(db, Scope.everything(), namespace="acme")
    clash = next(f for f in open_ if f["kind"] == "contradiction"
                 and set(f["memory_ids"]) == {ids["staging"], ids["clash"]})
    done = findings.resolve(db, clash["id"], "supersede", actor="cli:alice",
                            old_id=ids["staging"])
    assert done["status"] == "superseded" and done["changed"] == [ids["staging"]]
    with db.connect() as conn:
        old = memory_store.get_memory(conn, ids["staging"])
        trail = memory_store.audit_of(conn, ids["staging"])
    assert old["superseded_by"] == ids["clash"] and old["valid_to"] is not None
    assert trail[-1]["action"] == "supersede" and trail[-1]["actor"].startswith("cli:alice")
    with pytest.raises(findings.FindingConflict):
        findings.resolve(db, clash["id"], "keep", actor="cli:bob")

    ghost = next(f for f in open_ if f["memory_ids"] == [ids["ghost"]])
    assert findings.resolve(db, ghost["id"], "archive", actor="cli:alice")["changed"] == \
        [ids["ghost"]]
    twin = next(f for f in open_ if f["kind"] == "near_duplicate")
    findings.resolve(db, twin["id"], "keep", actor="cli:alice")
    from memory_platform.vault import service as access

    access.archive(db, Scope.everything(), ids["untopical"], actor="cli:alice")
    rerun = lint.lint_namespace(db, "acme", now=NOW)
    assert "near_duplicate" not in rerun.found  # kept: not raised again
    assert rerun.obsolete == 1  # the open finding about the memory archived since
    untopical = [f for f in findings.list_findings(db, Scope.everything(), namespace="acme",
                                                   status=None)
                 if f["memory_ids"] == [ids["untopical"]]]
    assert [f["status"] for f in untopical] == ["obsolete"]
    assert findings.open_counts(db)["acme"]


# --- Dagster -------------------------------------------------------------------------------


def test_wiki_sensor_requests_builds_and_the_assets_run(db, home, words):
    seed(db, home)
    instance = dg.DagsterInstance.ephemeral()
    cairn = DatabaseResource()
    result = wiki_sensor(dg.build_sensor_context(instance=instance, resources={"database": cairn}))
    assert {r.partition_key for r in result.run_requests} == {"acme", "personal"}
    instance.add_dynamic_partitions(WIKI_PARTITIONS_NAME, ["acme", "personal"])
    built = dg.materialize([vault_wiki], partition_key="acme", instance=instance,
                           resources={"database": cairn, "llm": LLMFactory(ScriptedProvider())})
    assert built.success and (wiki.wiki_dir("acme") / "INDEX.md").exists()
    # Nothing changed since: the same state, no new request.
    again = wiki_sensor(dg.build_sensor_context(instance=instance, cursor=result.cursor,
                                                resources={"database": cairn}))
    acme = [r for r in getattr(again, "run_requests", None) or [] if r.partition_key == "acme"]
    assert acme == [] or acme[0].run_key != next(
        r.run_key for r in result.run_requests if r.partition_key == "acme")
    index = wiki.wiki_dir("acme") / "INDEX.md"
    index.write_text(index.read_text() + "- The acme team ships on Tuesdays\n")
    edited = wiki_sensor(dg.build_sensor_context(instance=instance, cursor=result.cursor,
                                                 resources={"database": cairn}))
    assert any(r.partition_key == "acme" for r in edited.run_requests)
    linted = dg.materialize([vault_lint], instance=instance,
                            resources={"database": cairn, "llm": LLMFactory(ScriptedProvider())})
    assert linted.success
