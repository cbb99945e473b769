"""The wiki's folder is the user's, so hostile: symlinks out of it (read and written through),
FIFOs, /dev/zero, NUL bytes, huge lines and thousands of junk lines (issue 20, defect 3).
Nothing outside the wiki is read or written, nothing blocks, every refusal is a finding, and
one bad file stops neither the rest of its namespace nor the other namespaces."""

import json
import time

import dagster as dg
import pytest
from typer.testing import CliRunner

from helpers.hostile_tree import deadline, fifo, zero_device
from helpers.recall_vault import seed
from helpers.words import WORDS
from memory_platform.cli import app
from memory_platform.defs.recall.automation import wiki_sensor
from memory_platform.recall import intake, wiki
from memory_platform.resources import DatabaseResource
from memory_platform.store import memories as memory_store

CANARY = "CANARY-OUTSIDE-THE-WIKI"


@pytest.fixture
def words(monkeypatch):
    monkeypatch.setattr("memory_platform.vault.memories.vault_embedder", lambda: WORDS)
    monkeypatch.setattr("memory_platform.recall.intake.vault_embedder", lambda: WORDS)
    return WORDS


@pytest.fixture
def built(db, home, words):
    """A seeded vault whose wiki was written once: (ids, the acme wiki folder)."""
    ids = seed(db, home)
    intake.sync(db, "acme")
    intake.sync(db, "personal")
    return ids, wiki.wiki_dir("acme")


def _topic_file(db, memory_id: int) -> str:
    with db.connect() as conn:
        return f"topics/{memory_store.get_memory(conn, memory_id)['topic']}.md"


def _stored(db) -> str:
    """Every memory text and every finding's evidence, as one string."""
    with db.connect() as conn:
        texts = [r[0] for r in conn.execute("SELECT text FROM memories").fetchall()]
        evidence = [json.dumps(r[0]) for r in conn.execute(
            "SELECT evidence FROM lint_findings").fetchall()]
    return "\n".join(texts + evidence)


def _findings(db, namespace="acme") -> list[dict]:
    with db.connect() as conn:
        rows = conn.execute("SELECT evidence FROM lint_findings WHERE namespace = %s "
                            "ORDER BY id", (namespace,)).fetchall()
    return [r[0] for r in rows]


def _active(db, memory_id: int) -> bool:
    with db.connect() as conn:
        return memory_store.get_memory(conn, memory_id)["status"] == "active"


def test_a_topic_symlinked_out_of_the_wiki_is_never_read(db, built, tmp_path):
    ids, folder = built
    outside = tmp_path / "outside.md"
    outside.write_text(f"- {CANARY} one\n- {CANARY} two\n")
    path = _topic_file(db, ids["port"])
    (folder / path).unlink()
    (folder / path).symlink_to(outside)
    (folder / "topics/passwd.md").symlink_to("/etc/passwd")

    with deadline(60):
        done = intake.sync(db, "acme")
    stored = _stored(db)
    assert CANARY not in stored and "root:x:0:0" not in stored
    reasons = {f["file"]: f["reason"] for f in _findings(db)}
    assert "symlink" in reasons[path] and "symlink" in reasons["topics/passwd.md"]
    assert done["intake"]["added"] == [] and done["intake"]["archived"] == []
    assert _active(db, ids["port"])  # an unreadable file is not a file whose lines were deleted
    # left as the person made it: neither written through nor replaced
    assert (folder / path).is_symlink() and path in done["build"]["held"]
    assert outside.read_text() == f"- {CANARY} one\n- {CANARY} two\n"


def test_the_build_never_writes_through_a_symlinked_folder(db, built, tmp_path):
    ids, folder = built
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for file in (folder / "topics").iterdir():
        file.unlink()
    (folder / "topics").rmdir()
    (folder / "topics").symlink_to(outside)

    with deadline(60):
        done = intake.sync(db, "acme")
    assert list(outside.iterdir()) == []
    assert (folder / "topics").is_symlink()
    assert any(f["file"] == "topics" and "symlink" in f["reason"] for f in _findings(db))
    held = done["build"]["held"]
    assert held and all(p.startswith("topics/") for p in held)
    assert _active(db, ids["port"]) and _active(db, ids["staging"])
    assert (folder / "INDEX.md").is_file()  # the rest of the wiki is still written


def test_a_fifo_or_an_endless_device_blocks_nothing(db, built):
    ids, folder = built
    path = _topic_file(db, ids["staging"])
    (folder / path).unlink()
    fifo(folder / path)
    zero_device(folder / "topics/zero.md")

    with deadline(60):
        dirty = wiki.dirty_files(db, "acme")
        done = intake.sync(db, "acme")
        tick = wiki_sensor(dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(),
                                                   resources={"database": DatabaseResource()}))
    assert {path, "topics/zero.md"} <= set(dirty)
    assert any(r.partition_key == "acme" for r in tick.run_requests)
    reasons = {f["file"]: f["reason"] for f in _findings(db)}
    assert "FIFO" in reasons[path] and "device" in reasons["topics/zero.md"]
    assert _active(db, ids["staging"]) and path in done["build"]["held"]


def test_a_nul_in_a_line_costs_only_that_line(db, built):
    ids, folder = built
    path = _topic_file(db, ids["port"])
    text = (folder / path).read_text().replace(
        "## History", "- The acme API has a \x00 in it\n- The acme API answers in 40 ms\n\n"
        "## History")
    (folder / path).write_text(text)

    done = intake.sync(db, "acme")
    [added] = done["intake"]["added"]
    with db.connect() as conn:
        assert memory_store.get_memory(conn, added)["text"] == "The acme API answers in 40 ms"
    [nul] = [f for f in _findings(db) if "NUL" in f["reason"]]
    assert nul["file"] == path and "\x00" not in nul["text"]


def test_one_namespaces_bad_files_do_not_stop_the_others(db, built):
    ids, folder = built
    path = _topic_file(db, ids["port"])
    with (folder / path).open("a") as out:
        out.write("- a \x00 NUL line\n")
    fifo(folder / "topics/blocked.md")
    personal = wiki.wiki_dir("personal") / "INDEX.md"
    personal.write_text(personal.read_text() + "- My cat is called Miso\n")

    with deadline(120):
        result = CliRunner().invoke(app, ["wiki", "build", "--json"])
    assert result.exit_code == 0, result.output
    by_namespace = {r["intake"]["namespace"]: r for r in json.loads(result.stdout)}
    assert len(by_namespace["personal"]["intake"]["added"]) == 1
    assert len(by_namespace["acme"]["intake"]["findings"]) == 2


def test_a_huge_line_or_file_is_refused_and_its_finding_stays_small(db, built):
    ids, folder = built
    path = _topic_file(db, ids["port"])
    long_line = "- " + "word " * 20_000  # 100k characters: no memory is that long
    (folder / path).write_text((folder / path).read_text() + long_line + "\n")
    (folder / "topics/huge.md").write_bytes(b"- " + b"x" * (20 << 20) + b"\n")  # 20 MB

    done = intake.sync(db, "acme")
    assert done["intake"]["added"] == []
    found = {f["file"]: f for f in _findings(db)}
    line = found[path]
    assert len(line["text"]) < 2_000 and "cut" in line["text"]
    assert "100,002 characters" in line["reason"]
    huge = found["topics/huge.md"]
    assert huge["text"] is None and "over the limit" in huge["reason"]
    assert sum(len(json.dumps(f)) for f in found.values()) < 20_000


def test_thousands_of_junk_lines_sync_fast_and_are_reported_once(db, built):
    ids, folder = built
    path = _topic_file(db, ids["port"])
    junk = "".join(f"junk line number {i} that maps to nothing\n" for i in range(2000))
    (folder / path).write_text((folder / path).read_text() + junk)

    started = time.monotonic()
    first = intake.sync(db, "acme")
    first_s = time.monotonic() - started
    started = time.monotonic()
    again = intake.sync(db, "acme")
    again_s = time.monotonic() - started
    assert first_s < 15 and again_s < 5, (first_s, again_s)
    assert path in first["build"]["held"] and path in again["build"]["held"]
    assert again["intake"]["findings"] == []
    found = [f for f in _findings(db) if f["file"] == path]
    assert len(found) <= intake.MAX_FINDINGS_PER_FILE + 1
    assert any("2,000" in f["reason"] or "more lines" in f["reason"] for f in found)
