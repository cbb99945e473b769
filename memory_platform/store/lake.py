"""SQL the Parquet lake is exported with: one SELECT per snapshot table, read in pages.

The lake copies what the reporting marts need, never a vector (rule 7) and, besides
`raw_events` (ingest/lake.py, verbatim), never a memory's or candidate's text either: the
marts count, they do not quote. Column types are fixed in SQL (casts) so every snapshot
has the same Parquet schema, empty or not.
"""

from collections.abc import Iterator

import psycopg

# name -> SELECT. Ordered by id so a snapshot's row order is stable from run to run.
SNAPSHOTS: dict[str, str] = {
    "conversations": """
        SELECT id, source, native_id, title, project, started_at, first_seen_at
        FROM conversations ORDER BY id""",
    "dream_watermarks": """
        SELECT conversation_id, day, last_event_id, run_id, updated_at
        FROM dream_watermarks ORDER BY day, conversation_id""",
    "dream_candidates": """
        SELECT id, run_id, day, conversation_id, score::int AS score, category, namespace,
               status, cardinality(source_event_ids) AS source_events, llm_call_id,
               created_at
        FROM dream_candidates ORDER BY id""",
    "dedup_verdicts": """
        SELECT candidate_id, run_id, verdict, decided_by, neighbour_id,
               neighbour_candidate_id, similarity::float8 AS similarity, created_at
        FROM dedup_verdicts ORDER BY candidate_id""",
    "memories": """
        SELECT m.id, m.namespace, n.kind AS namespace_kind, n.primary_of, m.category,
               m.source, m.status, m.review, m.dream_run_id, m.candidate_id,
               m.score::int AS score, m.verdict, m.promoted_from, m.content_hash,
               m.valid_from, m.valid_to, m.superseded_by, m.created_at, m.updated_at
        FROM memories m JOIN vault_namespaces n ON n.name = m.namespace ORDER BY m.id""",
    "vault_audit": """
        SELECT id, memory_id, actor, action, at FROM vault_audit ORDER BY id""",
    "llm_calls": """
        SELECT id, created_at, provider, model, purpose, input_tokens, output_tokens,
               cost_usd::float8 AS cost_usd, latency_ms, credential_source, attempts,
               sdk_retries, ok, run_id
        FROM llm_calls ORDER BY id""",
}


def snapshot_pages(
    conn: psycopg.Connection, table: str, page_size: int = 50_000
) -> Iterator[list[tuple]]:
    """The rows of one snapshot in pages, from a server-side cursor (a large table is never
    one giant result in memory)."""
    query = SNAPSHOTS[table]
    with conn.transaction(), conn.cursor(name=f"lake_{table}") as cursor:
        cursor.itersize = page_size
        cursor.execute(query)
        while True:
            page = cursor.fetchmany(page_size)
            if not page:
                return
            yield page


def row_count(conn: psycopg.Connection, table: str) -> int:
    """How many rows the snapshot query returns (to check a written file against)."""
    row = conn.execute(f"SELECT count(*) FROM ({SNAPSHOTS[table]}) AS s").fetchone()
    assert row is not None
    return int(row[0])
