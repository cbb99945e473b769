"""Data-quality checks on raw_events, one per expectation (Great Expectations 1.x)."""

import dagster as dg

from memory_platform.defs.ingest.assets import raw_events
from memory_platform.ingest import quality
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import daily_partitions
from memory_platform.store import event_reads


def _check(name: str, description: str):
    @dg.asset_check(
        asset=raw_events,
        name=name,
        description=description,
        partitions_def=daily_partitions,
        blocking=True,
    )
    def _run(context: dg.AssetCheckExecutionContext, database: DatabaseResource) -> dg.AssetCheckResult:
        window = context.partition_time_window
        rows: list[tuple] = []
        with database.database().connect() as conn:
            for page in event_reads.events_in_window(conn, window.start, window.end,
                                                     quality.QUALITY_COLUMNS):
                rows.extend(page)
        outcome = quality.validate_events(
            quality.events_frame(rows), window.start, window.end, names=[name]
        )[name]
        return dg.AssetCheckResult(
            passed=outcome.passed,
            metadata={
                "rows": outcome.rows,
                "unexpected": outcome.unexpected,
                "examples": ", ".join(outcome.examples) or "none",
            },
        )

    return _run


raw_events_checks = [
    _check(
        "timestamps_in_partition_window",
        "Every event of the partition has occurred_at inside the partition's UTC day.",
    ),
    _check("roles_in_allowed_set", "Every role is one of user, assistant, system, tool, other."),
    _check("native_ids_unique", "(source, native_id) is unique: nothing was stored twice."),
    _check(
        "no_empty_rows_without_reason",
        "An event with empty text says why in attrs.empty_reason (meta record, image only...).",
    ),
]
