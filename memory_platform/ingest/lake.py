"""The Parquet lake: a portable copy of each raw-event partition, readable by DuckDB."""

from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memory_platform.store import Database, event_reads

# The lake keeps the verbatim record too (it is the durable copy of the substrate), and the
# name of the machine the event was collected on (partitions written before it have no
# such column: readers take the files by name, a missing machine is the local one).
LAKE_COLUMNS = (*event_reads.EVENT_COLUMNS, "raw", "machine")

_SCHEMA = pa.schema([
    ("id", pa.int64()), ("source", pa.string()), ("native_id", pa.string()),
    ("conversation_id", pa.int64()), ("parent_native_id", pa.string()), ("role", pa.string()),
    ("kind", pa.string()), ("author", pa.string()),
    ("occurred_at", pa.timestamp("us", tz="UTC")), ("text", pa.string()),
    ("project", pa.string()), ("git_branch", pa.string()), ("is_sidechain", pa.bool_()),
    ("on_active_branch", pa.bool_()), ("attrs", pa.string()), ("content_hash", pa.string()),
    ("source_file_id", pa.int64()), ("source_line", pa.int32()),
    ("ingested_at", pa.timestamp("us", tz="UTC")), ("raw", pa.string()),
    ("machine", pa.string()),
])

def partition_path(lake: Path, day: str) -> Path:
    return lake / "raw_events" / f"date={day}" / "events.parquet"


def write_partition(db: Database, lake: Path, day: str, start: datetime, end: datetime) -> dict:
    """Write one day's events to Parquet atomically (temp file, then rename). The JSON
    columns (raw, attrs) arrive as PostgreSQL's JSON text and are written as they come."""
    target = partition_path(lake, day)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".parquet.tmp")
    rows_written = 0
    with db.connect() as conn, pq.ParquetWriter(tmp, _SCHEMA, compression="zstd") as writer:
        for page in event_reads.events_in_window(conn, start, end, LAKE_COLUMNS,
                                                 json_as_text=True):
            columns = list(zip(*page, strict=True))
            arrays = dict(zip(LAKE_COLUMNS, columns, strict=True))
            writer.write_table(pa.table(arrays, schema=_SCHEMA))
            rows_written += len(page)
    tmp.replace(target)
    return {"path": str(target), "rows": rows_written, "bytes": target.stat().st_size}
