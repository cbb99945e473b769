"""SQL the Parquet lake is exported with: one SELECT per snapshot table, read in pages.

The lake copies what the reporting marts need, never a vector (rule 7) and, besides
`raw_events` (ingest/lake.py, verbatim), never a memory's or candidate's text either: the
marts count, they do not quote. Column types are fixed in SQL (casts) so every snapshot
has the same Parquet schema, empty or not.
"""

from collections.abc import Iterator

import psycopg

# name -> SELECT. Ordered by id so a snapshot's row order is stable from run to run.
# The snapshots are written one after the other in this order, each in its own transaction:
# a table whose rows point at another's is copied before the table it points at (a cut at
# its run and its memory, a purge at its run), so a row written between two copies can
# only add a target, never leave a pointer dangling in the lake.
SNAPSHOTS: dict[str, str] = {
    # Every cut the curator executed, whatever became of it since: its reason comes from
    # the executed verdict (the archive row, which also holds it, is deleted by a restore
    # or a purge); cut_at is the executing transaction's time (the run's decided_at, also
    # the time of the memory's 'cut' audit row); its fate is read from the archive (still
    # restorable), the purge record, or the first 'curator_restore' audit row after it.
    "curator_cuts": """
        SELECT r.id AS curator_run_id, r.namespace, r.week AS curator_week, c.handle,
               r.memory_ids[c.handle] AS memory_id, c.reason,
               r.memory_ids[c."of"] AS related_memory_id, r.decided_at AS cut_at,
               coalesce(a.restore_until, p.restore_until) AS restore_until,
               restored.at AS restored_at, p.purged_at,
               CASE WHEN a.id IS NOT NULL THEN 'archived'
                    WHEN p.id IS NOT NULL THEN 'purged'
                    WHEN restored.at IS NOT NULL THEN 'restored' END AS state
        FROM curator_runs r
        CROSS JOIN LATERAL jsonb_to_recordset(r.verdict->'cuts')
            AS c(handle integer, reason text, "of" integer)
        LEFT JOIN curator_archive a
            ON a.curator_run_id = r.id AND a.memory_id = r.memory_ids[c.handle]
        LEFT JOIN curator_purges p
            ON p.curator_run_id = r.id AND p.memory_id = r.memory_ids[c.handle]
        LEFT JOIN LATERAL (
            SELECT min(v.at) AS at FROM vault_audit v
            WHERE v.memory_id = r.memory_ids[c.handle] AND v.action = 'curator_restore'
              AND v.at >= r.decided_at) AS restored ON true
        WHERE r.status = 'executed'
        ORDER BY r.id, c.handle""",
    "curator_purges": """
        SELECT id, memory_id, archive_id, namespace, reason, curator_run_id, cut_at,
               restore_until, purged_at, purged_by
        FROM curator_purges ORDER BY id""",
    # Runs without the listing's memory ids, the verdict's text or the refusal's wording:
    # counts only (the proposed merges and contradictions included).
    "curator_runs": """
        SELECT id, namespace, week, dagster_run_id, status, dry_run, refusal, listed,
               ceiling::float8 AS ceiling, max_cuts, proposed_cuts,
               CASE WHEN jsonb_typeof(verdict->'merges') = 'array'
                    THEN jsonb_array_length(verdict->'merges') ELSE 0 END
                   AS proposed_merges,
               CASE WHEN jsonb_typeof(verdict->'contradictions') = 'array'
                    THEN jsonb_array_length(verdict->'contradictions') ELSE 0 END
                   AS proposed_contradictions,
               chunks, listing_tokens, agent, prompt_version, cuts, staged, executed_by,
               created_at, decided_at
        FROM curator_runs ORDER BY id""",
    "conversations": """
        SELECT id, source, native_id, title, project, started_at, first_seen_at
        FROM conversations ORDER BY id""",
    "dream_watermarks": """
        SELECT conversation_id, day, last_event_id, run_id, updated_at
        FROM dream_watermarks ORDER BY day, conversation_id""",
    "dedup_verdicts": """
        SELECT candidate_id, run_id, verdict, decided_by, neighbour_id,
               neighbour_candidate_id, similarity::float8 AS similarity, created_at
        FROM dedup_verdicts ORDER BY candidate_id""",
    "dream_candidates": """
        SELECT id, run_id, day, conversation_id, score::int AS score, category, namespace,
               status, cardinality(source_event_ids) AS source_events, llm_call_id,
               created_at
        FROM dream_candidates ORDER BY id""",
    "vault_audit": """
        SELECT id, memory_id, actor, action, at FROM vault_audit ORDER BY id""",
    "memories": """
        SELECT m.id, m.namespace, n.kind AS namespace_kind, n.primary_of, m.category,
               m.source, m.status, m.review, m.dream_run_id, m.candidate_id,
               m.score::int AS score, m.verdict, m.promoted_from, m.content_hash,
               m.valid_from, m.valid_to, m.superseded_by, m.created_at, m.updated_at
        FROM memories m JOIN vault_namespaces n ON n.name = m.namespace ORDER BY m.id""",
    "llm_calls": """
        SELECT id, created_at, provider, model, purpose, input_tokens, output_tokens,
               cost_usd::float8 AS cost_usd, latency_ms, credential_source, attempts,
               sdk_retries, ok, run_id
        FROM llm_calls ORDER BY id""",
    # The portfolio as of each week (orchard/snapshots.py): the project's name and state,
    # its blockers counted (their text, the next action and the milestone's wording stay
    # in PostgreSQL).
    "orchard_snapshots": """
        SELECT week, project_id, name, namespace, status, priority::int AS priority,
               cardinality(blockers) AS blockers,
               coalesce(btrim(next_action), '') <> '' AS has_next_action, deadline,
               last_milestone_at, archived, milestones, sessions, turns, last_active,
               run_id, taken_at
        FROM orchard_snapshots ORDER BY week, project_id""",
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
