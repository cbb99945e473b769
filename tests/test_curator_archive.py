"""After the curator cuts: restore inside and outside the window, the vault's own archive
and restore leaving tombstones alone, purge with an injected clock, the tombstones ==
archives invariant (in PostgreSQL and in code, failing on a hand-broken state), what faces
read, and export."""

from datetime import timedelta

import psycopg
import pytest

from helpers.curator import (
    NOW,
    STALE,
    TEST_MODEL,
    NoEmbed,
    acme_namespace,
    cut_two,
    status_of,
)
from memory_platform.curator import archive, service
from memory_platform.store import memories as memory_store
from memory_platform.vault import service as vault_service
from memory_platform.vault.tokens import Scope


@pytest.fixture
def acme(db, tmp_path):
    return acme_namespace(db, tmp_path)


# --- restore, purge, invariant --------------------------------------------------------------


def test_restore_inside_the_window(db, acme):
    cut_two(db, acme)
    stale_id = acme["ids"][0]
    restored = archive.restore(db, stale_id, actor="cli:alice", now=NOW + timedelta(days=13))
    assert restored["text"] == STALE and restored["status"] == "active"
    row = status_of(db, stale_id)
    assert row["status"] == "active" and row["text"] == STALE
    with db.connect() as conn:
        vector = conn.execute("SELECT count(*) FROM memory_embeddings WHERE memory_id = %s "
                              "AND model = %s", (stale_id, TEST_MODEL)).fetchone()[0]
        assert memory_store.audit_of(conn, stale_id)[-1]["action"] == "curator_restore"
    assert vector == 1
    assert archive.invariant(db)["ok"]
    with pytest.raises(archive.RestoreRefused, match="not a curator cut"):
        archive.restore(db, stale_id, actor="cli:alice", now=NOW)


def test_restore_outside_the_window_is_refused(db, acme):
    cut_two(db, acme)
    with pytest.raises(archive.RestoreRefused, match="restore window ended"):
        archive.restore(db, acme["ids"][0], actor="cli:alice",
                        now=NOW + timedelta(days=14, seconds=1))
    assert status_of(db, acme["ids"][0])["status"] == "cut"


def test_restore_respects_the_scope_and_a_twin(db, acme):
    cut_two(db, acme)
    with pytest.raises(vault_service.NotFound):
        archive.restore(db, acme["ids"][0], actor="api:work", scope=Scope.of(["work"]), now=NOW)
    vault_service.add(db, Scope.everything(), "acme", STALE, "project", actor="test",
                      embedder=NoEmbed())
    with pytest.raises(archive.RestoreRefused, match="already states this"):
        archive.restore(db, acme["ids"][0], actor="cli:alice", now=NOW)


def test_the_vaults_own_archive_and_restore_leave_a_tombstone_alone(db, acme):
    from memory_platform.store import memory_embeddings

    done = cut_two(db, acme)
    with db.connect() as conn:  # a tombstone is never embedded (its text is a placeholder)
        waiting = {i for i, _ in memory_embeddings.memories_to_embed(conn, TEST_MODEL)}
    assert waiting == set(done.staged)  # only the merge staged for review, not embedded yet
    for change in (vault_service.archive, vault_service.restore):
        with pytest.raises(vault_service.Conflict, match="cut by the curator"):
            change(db, Scope.everything(), acme["ids"][0], actor="cli:alice")


def test_purge_with_an_injected_clock(db, acme):
    cut_two(db, acme)
    assert archive.purge(db, purged_by="test", now=NOW + timedelta(days=13)) == []
    records = archive.purge(db, purged_by="purge:test", now=NOW + timedelta(days=14))
    assert sorted(r["memory_id"] for r in records) == sorted([acme["ids"][0], acme["ids"][2]])
    record = next(r for r in records if r["memory_id"] == acme["ids"][0])
    assert record["namespace"] == "acme" and record["reason"] == "contradicted"
    assert record["content_hash"] == memory_store.content_hash(STALE)
    assert record["purged_at"] == NOW + timedelta(days=14)
    row = status_of(db, acme["ids"][0])
    assert row["status"] == "purged" and STALE not in row["text"]
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM curator_archive").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM curator_archive_vectors").fetchone()[0] == 0
    with pytest.raises(archive.RestoreRefused, match="was purged on"):
        archive.restore(db, acme["ids"][0], actor="cli:alice", now=NOW + timedelta(days=15))
    assert archive.purge(db, purged_by="test", now=NOW + timedelta(days=30)) == []
    found = archive.invariant(db)
    assert found["ok"] and {n["namespace"]: n["purged"] for n in found["by_namespace"]} == {
        "acme": 2}


def test_the_invariant_fails_on_a_hand_broken_state(db, acme):
    cut_two(db, acme)
    # PostgreSQL refuses the break at commit...
    with db.connect() as conn:
        with pytest.raises(psycopg.errors.CheckViolation, match="curator invariant"):
            with conn.transaction():
                conn.execute("DELETE FROM curator_archive WHERE memory_id = %s",
                             (acme["ids"][0],))
    assert archive.invariant(db)["ok"]
    # ...so break it by hand with the trigger off, as a restore from a bad backup could
    with db.connect() as conn:
        conn.execute("ALTER TABLE curator_archive DISABLE TRIGGER curator_pairing_on_archive")
        conn.execute("DELETE FROM curator_archive WHERE memory_id = %s", (acme["ids"][0],))
        conn.execute("ALTER TABLE curator_archive ENABLE TRIGGER curator_pairing_on_archive")
    found = archive.invariant(db)
    assert not found["ok"]
    assert {n["namespace"]: (n["tombstones"], n["archives"]) for n in found["by_namespace"]
            } == {"acme": (2, 1)}
    assert found["unpaired"][0]["memory_id"] == acme["ids"][0]
    assert found["unpaired"][0]["problem"] == "tombstone without archive"


def test_cuts_and_runs_for_faces_are_scoped(db, acme):
    cut_two(db, acme)
    everything = service.cuts(db, Scope.everything(), now=NOW + timedelta(days=1))
    assert {c["memory_id"] for c in everything} == {acme["ids"][0], acme["ids"][2]}
    assert everything[0]["seconds_left"] == 13 * 86400
    assert everything[0]["restore"].startswith("memory-platform curator restore ")
    assert service.cuts(db, Scope.of(["work"])) == []
    with pytest.raises(vault_service.Forbidden):
        service.cuts(db, Scope.of(["work"]), namespace="acme")
    assert service.runs(db, Scope.of(["work"])) == []
    [run] = service.cuts_by_run(db, Scope.of(["acme"]), now=NOW)
    assert len(run["cuts_restorable"]) == 2 and run["status"] == "executed"


def test_export_shows_tombstones_as_cut(db, acme, tmp_path):
    from memory_platform.vault.export import export_namespace

    cut_two(db, acme)
    summary = export_namespace(db, "acme", tmp_path / "export")
    assert summary["counts"]["cut"] == 2 and summary["counts"]["current"] == 8
    assert "## Cut by the curator (restorable) (2)" in (tmp_path / "export" / "acme.md"
                                                       ).read_text()
