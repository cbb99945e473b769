"""The lake's snapshot tables: whole-table Parquet copies of the state the marts read.

Raw events are partitioned by day (ingest/lake.py: immutable once the day is over). The
tables here change in place (a review decision, a superseded fact, a new call logged), so
each is copied whole, atomically: written to a temporary file, then renamed over the last
snapshot. Re-running rewrites the same file; a reader never sees half of one. Rows move
from PostgreSQL in pages into polars frames (no Python loop per row), one file per table at
`lake/<table>/<table>.parquet`.
"""

from pathlib import Path

import polars as pl

from memory_platform.store import Database
from memory_platform.store import lake as store

_TS = pl.Datetime("us", "UTC")

# Parquet schema of each snapshot, in the column order of its SELECT in store/lake.py.
SCHEMAS: dict[str, dict[str, pl.DataType]] = {
    "curator_cuts": {
        "curator_run_id": pl.Int64, "namespace": pl.String, "curator_week": pl.Date,
        "handle": pl.Int32, "memory_id": pl.Int64, "reason": pl.String,
        "related_memory_id": pl.Int64, "cut_at": _TS, "restore_until": _TS,
        "restored_at": _TS, "purged_at": _TS, "state": pl.String,
    },
    "curator_purges": {
        "id": pl.Int64, "memory_id": pl.Int64, "archive_id": pl.Int64, "namespace": pl.String,
        "reason": pl.String, "curator_run_id": pl.Int64, "cut_at": _TS,
        "restore_until": _TS, "purged_at": _TS, "purged_by": pl.String,
    },
    "curator_runs": {
        "id": pl.Int64, "namespace": pl.String, "week": pl.Date, "dagster_run_id": pl.String,
        "status": pl.String, "dry_run": pl.Boolean, "refusal": pl.String, "listed": pl.Int32,
        "ceiling": pl.Float64, "max_cuts": pl.Int32, "proposed_cuts": pl.Int32,
        "proposed_merges": pl.Int32, "proposed_contradictions": pl.Int32,
        "chunks": pl.Int32, "listing_tokens": pl.Int32, "agent": pl.String,
        "prompt_version": pl.String, "cuts": pl.Int32, "staged": pl.Int32,
        "executed_by": pl.String, "created_at": _TS, "decided_at": _TS,
    },
    "conversations": {
        "id": pl.Int64, "source": pl.String, "native_id": pl.String, "title": pl.String,
        "project": pl.String, "started_at": _TS, "first_seen_at": _TS,
    },
    "dream_watermarks": {
        "conversation_id": pl.Int64, "day": pl.Date, "last_event_id": pl.Int64,
        "run_id": pl.String, "updated_at": _TS,
    },
    "dream_candidates": {
        "id": pl.Int64, "run_id": pl.String, "day": pl.Date, "conversation_id": pl.Int64,
        "score": pl.Int32, "category": pl.String, "namespace": pl.String,
        "status": pl.String, "source_events": pl.Int32, "llm_call_id": pl.Int64,
        "created_at": _TS,
    },
    "dedup_verdicts": {
        "candidate_id": pl.Int64, "run_id": pl.String, "verdict": pl.String,
        "decided_by": pl.String, "neighbour_id": pl.Int64,
        "neighbour_candidate_id": pl.Int64, "similarity": pl.Float64, "created_at": _TS,
    },
    "memories": {
        "id": pl.Int64, "namespace": pl.String, "namespace_kind": pl.String,
        "primary_of": pl.String, "category": pl.String, "source": pl.String,
        "status": pl.String, "review": pl.String, "dream_run_id": pl.String,
        "candidate_id": pl.Int64, "score": pl.Int32, "verdict": pl.String,
        "promoted_from": pl.Int64, "content_hash": pl.String, "valid_from": _TS,
        "valid_to": _TS, "superseded_by": pl.Int64, "created_at": _TS, "updated_at": _TS,
    },
    "vault_audit": {
        "id": pl.Int64, "memory_id": pl.Int64, "actor": pl.String, "action": pl.String,
        "at": _TS,
    },
    "llm_calls": {
        "id": pl.Int64, "created_at": _TS, "provider": pl.String, "model": pl.String,
        "purpose": pl.String, "input_tokens": pl.Int64, "output_tokens": pl.Int64,
        "cost_usd": pl.Float64, "latency_ms": pl.Int64, "credential_source": pl.String,
        "attempts": pl.Int32, "sdk_retries": pl.Int32, "ok": pl.Boolean, "run_id": pl.String,
    },
    "orchard_snapshots": {
        "week": pl.Date, "project_id": pl.Int64, "name": pl.String, "namespace": pl.String,
        "status": pl.String, "priority": pl.Int32, "blockers": pl.Int32,
        "has_next_action": pl.Boolean, "deadline": pl.Date, "last_milestone_at": _TS,
        "archived": pl.Boolean, "milestones": pl.Int32, "sessions": pl.Int32,
        "turns": pl.Int32, "last_active": pl.Date, "run_id": pl.String, "taken_at": _TS,
    },
}
# In store/lake.py's order: a table is copied before the tables its rows point at.
TABLES = tuple(store.SNAPSHOTS)
assert set(TABLES) == set(SCHEMAS), "every snapshot query has a schema"


def snapshot_path(lake: Path, table: str) -> Path:
    return lake / table / f"{table}.parquet"


def write_snapshot(db: Database, lake: Path, table: str) -> dict:
    """Copy one table to `lake/<table>/<table>.parquet` whole; returns path, rows, bytes."""
    schema = SCHEMAS[table]
    frames = []
    with db.connect() as conn:
        for page in store.snapshot_pages(conn, table):
            frames.append(pl.DataFrame(page, schema=schema, orient="row"))
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    target = snapshot_path(lake, table)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".parquet.tmp")
    frame.write_parquet(tmp, compression="zstd", statistics=True)
    tmp.replace(target)
    return {"table": table, "path": str(target), "rows": frame.height,
            "bytes": target.stat().st_size}


def write_snapshots(db: Database, lake: Path, tables=TABLES) -> list[dict]:
    """Every snapshot table (or the ones named), one after the other."""
    return [write_snapshot(db, lake, table) for table in tables]
