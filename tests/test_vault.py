"""The vault store against a real PostgreSQL: namespaces, the audit trail, idempotent staging,
the database refusing a dream row in a primary namespace, listing with no cap, nearest
neighbours (exact and HNSW, namespace and review filters), the backlog, and the CLI with the
real local model."""

import hashlib
import json

import numpy as np
import psycopg
import pytest
from psycopg import sql
from typer.testing import CliRunner

from memory_platform.query.embeddings import get_embedder
from memory_platform.store import embeddings as embedding_store
from memory_platform.store import memories as memory_store
from memory_platform.store import memory_embeddings, memory_search
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault import memories as service
from memory_platform.vault import service as scoped_service
from memory_platform.vault.tokens import Scope

MODEL, DIMS = "test-random-16", 16  # random unit vectors: neighbour logic without a model


@pytest.fixture(scope="module")
def local_embedder():
    # Loading the model takes seconds: once per module.
    return get_embedder("local")


def unit(rng: np.random.Generator, n: int = 1) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def add(conn, namespace, text, **kw) -> int:
    memory_id, created = memory_store.add_memory(conn, namespace=namespace, text=text,
                                                 actor="test", **kw)
    assert created
    return memory_id


# --- namespaces --------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "", "Personal", "-lead", "has space", "a/b", "x" * 101, "my__project", "__dream",
    "a__dream__dream", "a__ideas__dream",
])
def test_invalid_namespace_names_are_refused_with_a_reason(name):
    with pytest.raises(ValueError, match="invalid namespace"):
        namespace_store.parse_namespace(name)


def test_namespaces_are_created_once_and_a_shadow_creates_its_primary(db):
    with db.connect() as conn:
        assert namespace_store.ensure_namespace(conn, "proj.x-1") == "primary"
        assert namespace_store.ensure_namespace(conn, "proj.x-1") == "primary"  # idempotent
        assert namespace_store.ensure_namespace(conn, "work__dream") == "dream"
        assert namespace_store.ensure_namespace(conn, "work__ideas") == "ideas"
        rows = conn.execute(
            "SELECT name, kind, primary_of FROM vault_namespaces ORDER BY name").fetchall()
        with pytest.raises(ValueError, match="invalid namespace"):
            namespace_store.ensure_namespace(conn, "Work")
    assert rows == [("proj.x-1", "primary", None), ("work", "primary", None),
                    ("work__dream", "dream", "work"), ("work__ideas", "ideas", "work")]
    assert namespace_store.shadow_of("work", "dream") == "work__dream"
    with pytest.raises(ValueError):
        namespace_store.shadow_of("work__dream", "dream")


# --- writes ------------------------------------------------------------------------------


def test_add_writes_the_memory_and_its_audit_row_in_one_go(db):
    with db.connect() as conn:
        memory_id, created = memory_store.add_memory(
            conn, namespace="personal", text="  Prefers   tabs\nover spaces ",
            category="feedback", actor="cli:alice")
        shadow_id = add(conn, "personal__dream", "Uses fish shell", source="dream",
                        dream_run_id="run-1", source_event_ids=[3, 4], score=7, why="stable")
        memory = memory_store.get_memory(conn, memory_id)
        shadow = memory_store.get_memory(conn, shadow_id)
        audit = conn.execute(
            "SELECT memory_id, actor, action, before, after FROM vault_audit ORDER BY id"
        ).fetchall()
        with pytest.raises(ValueError, match="unknown category"):
            memory_store.add_memory(conn, namespace="personal", text="x", category="misc",
                                    actor="test")
        with pytest.raises(ValueError, match="needs some text"):
            memory_store.add_memory(conn, namespace="personal", text=" \n ", actor="test")
        count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    assert created and count == 2
    assert memory["text"] == "Prefers   tabs\nover spaces"  # trimmed, otherwise verbatim
    assert memory["content_hash"] == hashlib.sha256(b"Prefers tabs over spaces").hexdigest()
    assert memory["content_hash"] == memory_store.content_hash("Prefers tabs over spaces")
    assert memory["review"] is None and memory["status"] == "active"
    assert shadow["review"] == "pending" and shadow["source_event_ids"] == [3, 4]
    assert [(a[0], a[1], a[2], a[3]) for a in audit] == [
        (memory_id, "cli:alice", "add", None), (shadow_id, "test", "add", None)]
    assert audit[0][4]["text"] == memory["text"] and audit[0][4]["id"] == memory_id
    assert audit[1][4]["dream_run_id"] == "run-1" and audit[1][4]["score"] == 7


def test_staging_a_candidate_twice_adds_it_once(db):
    with db.connect() as conn:
        conn.execute(
            """INSERT INTO dream_candidates (id, run_id, day, text, score, category, namespace,
                   why, source_event_ids, status)
               VALUES (41, 'run-1', '2026-03-01', 'Deploys on Fridays are banned', 8,
                       'project', 'work', 'a rule', '{1}', 'proposed')""")
        first = memory_store.add_memory(conn, namespace="work__dream", text="Deploys on Fridays "
                                        "are banned", source="dream", actor="dream:run-1",
                                        candidate_id=41)
        again = memory_store.add_memory(conn, namespace="work__dream", text="Deploys on Fridays "
                                        "are banned", source="dream", actor="dream:run-2",
                                        candidate_id=41)
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM vault_audit)"
        ).fetchone()
    assert first[1] is True and again == (first[0], False)
    assert counts == (1, 1)


def test_the_database_refuses_a_dream_row_in_a_primary_namespace(db):
    with db.connect() as conn:
        with pytest.raises(psycopg.errors.CheckViolation):
            memory_store.add_memory(conn, namespace="personal", text="Likes rust", source="dream",
                                    actor="dream:run-1")
        # The refused insert took its audit row with it, and raw SQL is refused the same way.
        assert conn.execute("SELECT count(*) FROM vault_audit").fetchone()[0] == 0
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                """INSERT INTO memories (namespace, text, source, content_hash)
                   VALUES ('personal', 'Likes rust', 'dream', 'h')""")
        staged = add(conn, "personal__dream", "Likes rust", source="dream")
        # Promotion is the only way in: a dream row that names its shadow entry.
        promoted = add(conn, "personal", "Likes rust", source="dream", promoted_from=staged)
        rows = conn.execute("SELECT id, namespace FROM memories ORDER BY id").fetchall()
    assert rows == [(staged, "personal__dream"), (promoted, "personal")]


# --- listing -----------------------------------------------------------------------------


def test_listing_returns_every_memory_past_100_and_1000_with_the_total(db):
    with db.connect() as conn:
        with conn.transaction():  # one commit for the lot: keeps the test fast
            big = [add(conn, "big", f"fact number {i}") for i in range(1_234)]
            small = [add(conn, "small", f"small fact {i}") for i in range(150)]
            add(conn, "big__dream", "a staged fact", source="dream")
        conn.execute("UPDATE memories SET status = 'archived' WHERE id = ANY(%s)", (big[:4],))
        page = memory_store.list_memories(conn, "big", limit=100)
        assert [m["id"] for m in page] == big[4:104]
        assert "embedding" not in page[0]
        assert memory_store.count_memories(conn, "big", status=None) == 1_234

    rows, total = service.list_all(db, "big", page_size=100)
    assert total == len(rows) == 1_230
    assert [m["id"] for m in rows] == big[4:]
    rows, total = service.list_all(db, "big", page_size=1_000, status=None)
    assert total == len(rows) == 1_234 and len({m["id"] for m in rows}) == 1_234
    rows, total = service.list_all(db, "small")
    assert total == 150 and [m["id"] for m in rows] == small
    # Exactly one page's worth still ends (a full last page is followed by an empty one).
    rows, total = service.list_all(db, "small", page_size=150)
    assert total == len(rows) == 150
    assert [m["id"] for m in service.iter_memories(db, "small", page_size=7)] == small
    with pytest.raises(ValueError, match="no vault namespace 'smal'"):
        service.list_all(db, "smal")


# --- nearest neighbours ------------------------------------------------------------------


def _neighbour_fixture(db):
    """3,000 random memories in `bulk`, a few in `a`, `b`, `a__dream` and `tiny`, with
    vectors; returns ids and vectors by label."""
    rng = np.random.default_rng(7)
    ids, vectors = {}, {}
    with db.connect() as conn:
        # Register the model now, build its index after the bulk load: one HNSW build is
        # far cheaper than 3,000 index inserts.
        embedding_store.ensure_model(conn, MODEL, DIMS)
        rows = []
        with conn.transaction():
            for label, namespace, kw in [
                ("a0", "a", {}), ("a1", "a", {}), ("a2", "a", {}),
                ("a_archived", "a", {}), ("b0", "b", {}),
                ("pending", "a__dream", {"source": "dream"}),
                ("skipped", "a__dream", {"source": "dream", "review": "skipped"}),
                ("approved", "a__dream", {"source": "dream", "review": "approved"}),
                ("t0", "tiny", {}), ("t1", "tiny", {}), ("t2", "tiny", {}),
            ]:
                ids[label] = add(conn, namespace, f"memory {label}", **kw)
                vectors[label] = unit(rng)[0]
                rows.append((ids[label], vectors[label]))
            namespace_store.ensure_namespace(conn, "bulk")
            # Bulk rows by plain SQL (add_memory is tested above); only their vectors matter.
            bulk_ids = [r[0] for r in conn.execute(
                """INSERT INTO memories (namespace, text, source, content_hash)
                   SELECT 'bulk', 'bulk ' || i, 'hand', md5(i::text)
                   FROM generate_series(1, 3000) i RETURNING id""").fetchall()]
            rows.extend(zip(bulk_ids, unit(rng, 3_000), strict=True))
            assert memory_embeddings.write_memory_embeddings(conn, MODEL, DIMS, rows) == len(rows)
        memory_embeddings.ensure_memory_model(conn, MODEL, DIMS)
        conn.execute("UPDATE memories SET status = 'archived' WHERE id = %s",
                     (ids["a_archived"],))
        conn.execute("ANALYZE memories")
        conn.execute("ANALYZE memory_embeddings")
    return ids, vectors


def test_nearest_memories_respects_namespaces_and_review_states(db):
    ids, vectors = _neighbour_fixture(db)
    with db.connect() as conn:
        for method in ("exact", "hnsw"):
            hits = memory_search.nearest_memories(conn, MODEL, DIMS, vectors["a1"],
                                                  ["a", "a__dream"], k=10, method=method)
            found = {h["id"] for h in hits}
            # Everything eligible in scope, nothing else: archived primaries and approved
            # shadow rows are out; a skipped entry stays findable so it is not re-proposed.
            assert found == {ids[x] for x in ("a0", "a1", "a2", "pending", "skipped")}, method
            assert hits[0]["id"] == ids["a1"] and hits[0]["similarity"] == pytest.approx(1, 1e-5)
            assert [h["similarity"] for h in hits] == sorted(
                (h["similarity"] for h in hits), reverse=True)
            assert {h["namespace"] for h in hits} == {"a", "a__dream"}
            assert set(hits[0]) == {"id", "namespace", "text", "review", "status", "valid_to",
                                    "superseded_by", "similarity"}
        only_pending = memory_search.nearest_memories(conn, MODEL, DIMS, vectors["skipped"],
                                                      ["a__dream"], k=5, reviews=("pending",))
        assert [h["id"] for h in only_pending] == [ids["pending"]]
        assert memory_search.nearest_memories(conn, MODEL, DIMS, vectors["b0"], ["nowhere"]) == []


def test_exact_and_hnsw_paths_both_return_k(db, monkeypatch):
    ids, vectors = _neighbour_fixture(db)
    rng = np.random.default_rng(11)
    queries = unit(rng, 5)
    with db.connect() as conn:
        for query in queries:
            exact = memory_search.nearest_memories(conn, MODEL, DIMS, query, ["bulk"], k=20,
                                                   method="exact")
            ann = memory_search.nearest_memories(conn, MODEL, DIMS, query, ["bulk"], k=20,
                                                 method="hnsw")
            auto = memory_search.nearest_memories(conn, MODEL, DIMS, query, ["bulk"], k=20)
            assert len(exact) == len(ann) == len(auto) == 20
            assert {h["namespace"] for h in ann + auto} == {"bulk"}
            # HNSW is approximate: most of the true neighbours.
            assert len({h["id"] for h in ann} & {h["id"] for h in exact}) >= 16
        # Under the bound, the default is the exact scan.
        monkeypatch.setattr(memory_search, "EXACT_MAX_ROWS", 5_000)
        for query in queries:
            auto = memory_search.nearest_memories(conn, MODEL, DIMS, query, ["bulk"], k=20)
            exact = memory_search.nearest_memories(conn, MODEL, DIMS, query, ["bulk"], k=20,
                                                   method="exact")
            assert [h["id"] for h in auto] == [h["id"] for h in exact]
        # 3 rows among 3,011: the probe finds few or none of them, the fallback finds all.
        tiny = memory_search.nearest_memories(conn, MODEL, DIMS, vectors["t1"], ["tiny"], k=3,
                                              method="hnsw")
        assert [h["id"] for h in tiny][0] == ids["t1"]
        assert {h["id"] for h in tiny} == {ids["t0"], ids["t1"], ids["t2"]}

        # The probe's SQL must match the model's partial index (literal model and dims).
        with conn.transaction():
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = conn.execute(
                sql.SQL("EXPLAIN ") + memory_search.ann_neighbours_sql(MODEL, DIMS),
                {"q": "[" + ",".join(["0.25"] * DIMS) + "]", "ns": ["bulk"], "k": 5,
                 "probe": 40, "reviews": ["pending"], "current": True},
            ).fetchall()
        assert memory_embeddings.memory_index_name(MODEL) in "\n".join(r[0] for r in plan)


def test_model_dimensions_are_checked(db):
    with db.connect() as conn:
        memory_embeddings.ensure_memory_model(conn, MODEL, DIMS)
        memory_embeddings.ensure_memory_model(conn, MODEL, DIMS)  # idempotent
        with pytest.raises(ValueError, match="registered with 16 dimensions"):
            memory_embeddings.ensure_memory_model(conn, MODEL, 32)
        memory_id = add(conn, "a", "x")
        with pytest.raises(ValueError, match="16 dimensions"):
            memory_embeddings.write_memory_embeddings(conn, MODEL, DIMS, [(memory_id, np.ones(8))])
        with pytest.raises(ValueError, match="16 dimensions"):
            memory_search.nearest_memories(conn, MODEL, DIMS, np.ones(8), ["a"])
        indexes = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memory_embeddings'")}
    assert memory_embeddings.memory_index_name(MODEL) in indexes


def test_backlog_counts_pending_entries_per_shadow_namespace(db):
    with db.connect() as conn:
        add(conn, "work__dream", "first", source="dream")
        add(conn, "work__dream", "second", source="dream")
        add(conn, "work__dream", "skipped", source="dream", review="skipped")
        add(conn, "home__ideas", "an idea", source="agent")
        namespace_store.ensure_namespace(conn, "quiet__dream")
        add(conn, "work", "a real fact")
        conn.execute("UPDATE memories SET created_at = '2026-01-02T00:00:00Z' "
                     "WHERE text = 'first'")
        rows = namespace_store.backlog(conn)
    assert [(r["namespace"], r["pending"]) for r in rows] == [
        ("home__ideas", 1), ("quiet__dream", 0), ("work__dream", 2)]
    assert rows[2]["oldest_created_at"].isoformat().startswith("2026-01-02")
    assert rows[1]["oldest_created_at"] is None


# --- service and CLI with the real local model -------------------------------------------


def test_service_search_embeds_what_is_missing_and_matches_tokens(db, local_embedder):
    with db.connect() as conn:
        # Written by a path that does not embed (as an import would be).
        add(conn, "ops", "The staging database listens on port 5433")
        add(conn, "ops", "Backups run every night at 02:00 UTC")
        add(conn, "ops__dream", "Grafana lives on port 3000", source="dream")
    everything = Scope.everything()
    hits = scoped_service.search(db, everything, "which port does the staging database use",
                                 k=2, embedder=local_embedder)["hits"]
    assert hits[0]["text"] == "The staging database listens on port 5433"
    assert hits[0]["match"] == "semantic" and hits[0]["similarity"] > 0.5
    assert all(h["namespace"] == "ops" for h in hits)  # shadows only when named
    with db.connect() as conn:
        assert memory_embeddings.memories_to_embed(conn, local_embedder.name) == []
    token = scoped_service.search(db, everything, "3000", namespace="ops__dream",
                                  embedder=local_embedder)["hits"]
    assert token[0]["text"] == "Grafana lives on port 3000" and token[0]["match"] == "both"
    assert service.embed_missing_memories(db, local_embedder)["embedded"] == 0


def test_cli_add_list_and_search(home, local_embedder):
    from memory_platform.cli.main import app

    runner = CliRunner()

    def invoke(*args):
        return runner.invoke(app, list(args), catch_exceptions=False)

    first = invoke("vault", "add", "personal", "Prefers pytest over unittest",
                   "--category", "feedback")
    assert first.exit_code == 0, first.output
    assert "added #" in first.stdout
    assert invoke("vault", "add", "personal", "Runs the dev server on port 8123").exit_code == 0
    again = invoke("vault", "add", "personal", "Prefers  pytest over unittest", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["created"] is False

    listed = invoke("vault", "list", "personal", "--json")
    assert listed.exit_code == 0, listed.output
    data = json.loads(listed.stdout)
    assert data["namespace"] == "personal" and data["total"] == 2
    assert [m["text"] for m in data["memories"]] == [
        "Prefers pytest over unittest", "Runs the dev server on port 8123"]
    assert data["memories"][0]["category"] == "feedback"
    human = invoke("vault", "list", "personal")
    assert "total: 2 memories in personal" in human.stdout
    assert "[feedback] " in human.stdout  # printed as text, not read as a style tag

    # Text with brackets is printed as it is (rich would read "[/x]" as a closing tag).
    assert invoke("vault", "add", "notes", "Set [tool.ruff] in pyproject, not [/x]"
                  ).exit_code == 0
    odd = invoke("vault", "list", "notes")
    assert odd.exit_code == 0 and "Set [tool.ruff] in pyproject, not [/x]" in odd.stdout
    odd_search = invoke("vault", "search", "ruff configuration", "--namespace", "notes")
    assert odd_search.exit_code == 0 and "[tool.ruff]" in odd_search.stdout

    found = invoke("vault", "search", "which test framework do I like", "--json", "--k", "1")
    assert found.exit_code == 0, found.output
    [hit] = json.loads(found.stdout)
    assert hit["text"] == "Prefers pytest over unittest" and hit["namespace"] == "personal"

    port = next(m for m in data["memories"] if "8123" in m["text"])["id"]
    archived = invoke("vault", "archive", str(port))
    assert archived.exit_code == 0 and f"archived #{port} in personal" in archived.stdout
    assert json.loads(invoke("vault", "list", "personal", "--json").stdout)["total"] == 1
    restored = invoke("vault", "restore", str(port), "--json")
    assert restored.exit_code == 0 and json.loads(restored.stdout)["status"] == "active"
    assert "already active" in invoke("vault", "restore", str(port)).stdout
    unknown = runner.invoke(app, ["vault", "restore", "99999999"])
    assert unknown.exit_code == 1 and "no memory with id 99999999" in unknown.stderr

    missing = runner.invoke(app, ["vault", "list", "nosuch"])
    assert missing.exit_code == 1
    assert "no vault namespace 'nosuch'" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    bad = runner.invoke(app, ["vault", "add", "Personal", "x"])
    assert bad.exit_code == 1 and "invalid namespace" in bad.stderr


def test_search_shows_current_facts_unless_history_is_asked(db, home, local_embedder):
    """A superseded fact stays (bi-temporal) but stops answering 'which port?': search
    leaves it out by default and shows it, marked, when history is asked for."""
    from memory_platform.cli.main import app
    from memory_platform.store import review as review_store

    old = service.add(db, "infra", "The database listens on port 5432.", "project", "test",
                      embedder=local_embedder)["id"]
    new = service.add(db, "infra", "The database listens on port 6543.", "project", "test",
                      embedder=local_embedder)["id"]
    with db.connect() as conn, conn.transaction():
        review_store.supersede(conn, old, new, actor="test")

    everything = Scope.everything()
    current = scoped_service.search(db, everything, "which port does the database listen on",
                                    k=5, embedder=local_embedder)["hits"]
    assert [h["id"] for h in current] == [new]
    assert current[0]["valid_to"] is None
    assert [h["id"] for h in scoped_service.search(
        db, everything, "5432", k=5, embedder=local_embedder)["hits"]] == [new]
    both = scoped_service.search(db, everything, "which port does the database listen on",
                                 k=5, embedder=local_embedder, include_superseded=True)["hits"]
    old_hit = next(h for h in both if h["id"] == old)
    assert old_hit["superseded_by"] == new and old_hit["valid_to"] is not None
    scoped = scoped_service.search(db, Scope.everything(), "port 5432", k=5,
                                 embedder=local_embedder, include_superseded=True)
    assert old in [h["id"] for h in scoped["hits"]]
    assert old not in [h["id"] for h in scoped_service.search(
        db, Scope.everything(), "port 5432", k=5, embedder=local_embedder)["hits"]]

    runner = CliRunner()
    shown = runner.invoke(app, ["vault", "search", "database port", "--history"],
                          catch_exceptions=False)
    assert shown.exit_code == 0 and f"superseded by #{new}" in shown.stdout
    plain = runner.invoke(app, ["vault", "search", "database port"], catch_exceptions=False)
    assert "superseded" not in plain.stdout and f"#{new}" in plain.stdout
