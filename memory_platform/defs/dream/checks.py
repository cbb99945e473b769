"""Circuit breakers of the dream cycle. They judge the run that just materialized the asset
(its run id is on every row it wrote), so a broken run stops what comes after it."""

import dagster as dg

from memory_platform.defs.dream.assets import dedup_verdicts, shadow_memories
from memory_platform.resources import DatabaseResource
from memory_platform.store import dream as store

# Warn outside this band: 0% rejected suggests a gate that lets everything through, more
# than 80% a synthesizer re-deriving what is already known. Below MIN_DECISIONS a rate
# says nothing, so it is recorded without a warning.
REJECTION_RATE_WARN_ABOVE = 0.80
MIN_DECISIONS = 5


@dg.asset_check(
    asset=shadow_memories,
    blocking=True,
    description="No dream run wrote to a primary namespace: this run's rows, and every dream "
    "row in a primary namespace that was not promoted by review.",
)
def no_primary_namespace_writes(
    context: dg.AssetCheckExecutionContext, database: DatabaseResource
) -> dg.AssetCheckResult:
    with database.database().connect() as conn:
        by_run = store.primary_writes_by_runs(conn, [context.run.run_id])
        unpromoted = store.unpromoted_dream_rows_in_primary(conn)
    bad = by_run + [r for r in unpromoted if r["id"] not in {b["id"] for b in by_run}]
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={"violations": len(bad),
                  "examples": dg.MetadataValue.json([dict(r) for r in bad[:5]])},
    )


@dg.asset_check(
    asset=shadow_memories,
    blocking=True,
    description="Every memory this run staged has the dedup verdict that let it through.",
)
def staged_have_verdicts(
    context: dg.AssetCheckExecutionContext, database: DatabaseResource
) -> dg.AssetCheckResult:
    with database.database().connect() as conn:
        missing = store.staged_without_verdict(conn, [context.run.run_id])
    return dg.AssetCheckResult(
        passed=not missing,
        metadata={"staged_without_verdict": len(missing), "memory_ids": str(missing[:20])},
    )


@dg.asset_check(
    asset=dedup_verdicts,
    blocking=True,
    description="Every candidate this run proposed has a verdict before anything is staged.",
)
def candidates_all_decided(
    context: dg.AssetCheckExecutionContext, database: DatabaseResource
) -> dg.AssetCheckResult:
    with database.database().connect() as conn:
        undecided = store.proposed_without_verdict_by_run(conn, context.run.run_id)
    return dg.AssetCheckResult(passed=undecided == 0, metadata={"undecided": undecided})


@dg.asset_check(
    asset=dedup_verdicts,
    description="The share of this run's candidates rejected as already known. Warns at 0% "
    f"or above {REJECTION_RATE_WARN_ABOVE:.0%} (with at least {MIN_DECISIONS} decisions).",
)
def dedup_rejection_rate(
    context: dg.AssetCheckExecutionContext, database: DatabaseResource
) -> dg.AssetCheckResult:
    with database.database().connect() as conn:
        counts = store.verdict_counts_by_run(conn, context.run.run_id)
    decided = sum(counts.values())
    rejected = counts.get("duplicate", 0) + counts.get("same_fact", 0)
    rate = rejected / decided if decided else None
    suspicious = (rate is not None and decided >= MIN_DECISIONS
                  and (rate == 0 or rate > REJECTION_RATE_WARN_ABOVE))
    return dg.AssetCheckResult(
        passed=not suspicious,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"decided": decided, "rejected": rejected,
                  "rejection_rate": -1.0 if rate is None else round(rate, 4),
                  "verdicts": dg.MetadataValue.json(counts)},
    )


dream_checks = [no_primary_namespace_writes, staged_have_verdicts, candidates_all_decided,
                dedup_rejection_rate]
