"""Filtered dense search and pgvector's iterative index scans (issue 24, point 6): on a server
whose pgvector is 0.8 or newer the filter goes inside the HNSW scan
(`hnsw.iterative_scan = relaxed_order`); on older ones (pgserver's 0.6.2, the test server)
the probe is filtered afterwards, as before. The path is chosen by the detected version."""

import psycopg
import pytest

from helpers.embeddings import HashEmbedder, add_events, at
from memory_platform.query.embeddings import embed_missing
from memory_platform.store import event_search


@pytest.mark.parametrize("text, version, iterative", [
    ("0.6.2", (0, 6, 2), False), ("0.7.4", (0, 7, 4), False), ("0.8.0", (0, 8, 0), True),
    ("0.8.1", (0, 8, 1), True), ("0.10.0", (0, 10, 0), True), ("1.0", (1, 0), True),
    ("0.8.0-dev", (0, 8, 0), True), ("", (), False), (None, (), False), ("vector", (), False),
])
def test_the_pgvector_version_is_read(text, version, iterative):
    found = event_search.pgvector_version(text)
    assert found == version
    assert (bool(found) and found >= event_search.ITERATIVE_SCAN_VERSION) is iterative


@pytest.fixture
def two_projects(db):
    """600 events in project `big`, 60 in `small`, embedded by an 8-dimension hash model."""
    embedder = HashEmbedder("hash-iter", 8)
    items = [{"native_id": f"e{i}", "text": f"turn {i} of the work", "occurred_at": at(1),
              "project": "small" if i % 11 == 0 else "big"} for i in range(660)]
    ids = add_events(db, "claude-code", items)
    embed_missing(db, embedder)
    with db.connect() as conn:
        conn.execute("ANALYZE event_embeddings")
    small = {ids[i] for i in range(660) if i % 11 == 0}
    return embedder, small


def test_this_server_s_pgvector_chooses_the_path(db):
    with db.connect() as conn:
        version = conn.execute("SELECT extversion FROM pg_extension "
                               "WHERE extname = 'vector'").fetchone()[0]
        detected = event_search.iterative_scans(conn)
        assert detected is (event_search.pgvector_version(version) >= (0, 8))
        assert event_search._iterative[conn] is detected  # asked once per connection


def test_a_filtered_probe_without_iterative_scans_filters_the_probe(db, two_projects):
    embedder, small = two_projects
    vector = embedder.embed(["which turn"])[0]
    f = event_search.Filter(project="small")
    with db.connect() as conn:
        iterative = event_search.iterative_scans(conn)
        exact = event_search.dense_pool(conn, embedder.name, embedder.dims, vector, 10, f,
                                        exact=True)
        probed = event_search.dense_pool(conn, embedder.name, embedder.dims, vector, 10, f,
                                         probe=1000)
    assert {i for i, _ in exact} <= small and len(exact) == 10
    assert {i for i, _ in probed} <= small
    if not iterative:  # the 0.6.2 path: the filter applies to the probe's 660 rows
        assert probed == exact


def test_the_iterative_path_is_taken_only_where_the_server_has_it(db, two_projects):
    """Told the server scans iteratively, the search sets hnsw.iterative_scan: a 0.6.2
    server refuses that parameter, an 0.8 one finds the same nearest rows as exact search.
    So the version decides, never a guess."""
    embedder, small = two_projects
    vector = embedder.embed(["which turn"])[0]
    f = event_search.Filter(project="small")
    with db.connect() as conn:
        real = event_search.iterative_scans(conn)
        exact = event_search.dense_pool(conn, embedder.name, embedder.dims, vector, 10, f,
                                        exact=True)
        event_search._iterative[conn] = True
        if real:
            found = event_search.dense_pool(conn, embedder.name, embedder.dims, vector, 10,
                                            f, probe=40)
            assert found == exact
        else:
            with pytest.raises(psycopg.Error, match="hnsw.iterative_scan"):
                event_search.dense_pool(conn, embedder.name, embedder.dims, vector, 10, f,
                                        probe=40)


def test_the_iterative_probe_filters_inside_the_index_scan(db):
    clause, _ = event_search.filter_clause(event_search.Filter(project="small"))
    with db.connect() as conn:
        text = event_search.dense_ann_sql("m", 8, clause, iterative=True).as_string(conn)
        older = event_search.dense_ann_sql("m", 8, clause).as_string(conn)
    probe = text[text.index("MATERIALIZED ("):text.index("LIMIT %(probe)s")]
    assert "JOIN events e" in probe and "e.\"project\" = %(f_project)s" in probe
    older_probe = older[older.index("MATERIALIZED ("):older.index("LIMIT %(probe)s")]
    assert "events" not in older_probe  # 0.6: the filter comes after the probe
