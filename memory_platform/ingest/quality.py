"""Data-quality expectations on raw events, run with Great Expectations 1.x.

Plain functions over a pandas frame of one partition; the Dagster asset checks in
`checks/cairn.py` read the partition and map each result to an AssetCheckResult.
"""

from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from memory_platform.adapters.base import FUTURE_TOLERANCE, ROLES

# Columns the expectations need; the checks read nothing else (never `raw`).
QUALITY_COLUMNS = ("source", "native_id", "role", "occurred_at", "text", "attrs")


@dataclass(frozen=True)
class ExpectationOutcome:
    name: str
    passed: bool
    rows: int
    unexpected: int
    examples: list


def _expectations(start: datetime, end: datetime) -> dict:
    import great_expectations.expectations as gxe  # slow import: only when a check runs

    # Today's partition must not hold events from the future (clock or timezone bugs).
    latest = min(end, pd.Timestamp.now(tz="UTC") + pd.Timedelta(FUTURE_TOLERANCE))
    return {
        "timestamps_in_partition_window": gxe.ExpectColumnValuesToBeBetween(
            column="occurred_at", min_value=start, max_value=latest, strict_max=True
        ),
        "roles_in_allowed_set": gxe.ExpectColumnValuesToBeInSet(
            column="role", value_set=sorted(ROLES)
        ),
        "native_ids_unique": gxe.ExpectCompoundColumnsToBeUnique(
            column_list=["source", "native_id"]
        ),
        "no_empty_rows_without_reason": gxe.ExpectColumnValuesToBeInSet(
            column="empty_without_reason", value_set=[False]
        ),
    }


EXPECTATION_NAMES = (
    "timestamps_in_partition_window",
    "roles_in_allowed_set",
    "native_ids_unique",
    "no_empty_rows_without_reason",
)


def events_frame(rows: list[tuple]) -> pd.DataFrame:
    """Rows in QUALITY_COLUMNS order -> the frame the expectations read."""
    frame = pd.DataFrame(rows, columns=list(QUALITY_COLUMNS))
    if frame.empty:
        frame["empty_without_reason"] = pd.Series(dtype=bool)
        frame["occurred_at"] = pd.to_datetime(frame["occurred_at"], utc=True)
        return frame
    frame["occurred_at"] = pd.to_datetime(frame["occurred_at"], utc=True)
    empty = frame["text"].fillna("").str.strip() == ""
    has_reason = frame["attrs"].map(lambda a: bool(a and a.get("empty_reason")))
    frame["empty_without_reason"] = empty & ~has_reason
    return frame.drop(columns=["attrs"])


def validate_events(
    frame: pd.DataFrame, start: datetime, end: datetime, names=EXPECTATION_NAMES
) -> dict[str, ExpectationOutcome]:
    """Run the named expectations on one partition's events."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    # Progress bars would flood Dagster's captured logs.
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas("cairn")
    asset = source.add_dataframe_asset("raw_events")
    batch = asset.add_batch_definition_whole_dataframe("partition").get_batch(
        batch_parameters={"dataframe": frame}
    )
    expectations = _expectations(pd.Timestamp(start), pd.Timestamp(end))
    outcomes = {}
    for name in names:
        result = batch.validate(expectations[name])
        info = result.result or {}
        outcomes[name] = ExpectationOutcome(
            name=name,
            passed=bool(result.success),
            rows=len(frame),
            unexpected=int(info.get("unexpected_count") or 0),
            examples=[str(v) for v in (info.get("partial_unexpected_list") or [])[:5]],
        )
    return outcomes
