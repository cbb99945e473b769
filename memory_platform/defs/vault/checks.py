"""The review backlog as an asset check: a gate nobody looks at fails silently (the backlog
grows from 4 to 247 while nothing breaks), so its size and age are checked where they
change. On `shadow_memories`, so every dream run (nightly, after a session) reports it even
when nobody reviews; on `vault_promotions`, so a review run shows it shrinking."""

import dagster as dg

from memory_platform.defs.dream.assets import shadow_memories
from memory_platform.defs.vault.assets import vault_promotions
from memory_platform.resources import DatabaseResource
from memory_platform.vault import queue

CHECK_NAME = "review_backlog"
_DESCRIPTION = (
    "Warns when more than MEMORY_PLATFORM_REVIEW_BACKLOG_MAX (default 50) shadow entries "
    "wait for review, or the oldest has waited more than "
    "MEMORY_PLATFORM_REVIEW_BACKLOG_MAX_DAYS (default 14) days.")


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(CHECK_NAME, asset=shadow_memories, description=_DESCRIPTION),
        dg.AssetCheckSpec(CHECK_NAME, asset=vault_promotions, description=_DESCRIPTION),
    ],
    can_subset=True,
)
def review_backlog(context: dg.AssetCheckExecutionContext, database: DatabaseResource):
    """Pending entries and the age of the oldest, against their limits (warning severity:
    the backlog is a person's to clear, nothing downstream is stopped)."""
    settings = database.settings()
    status = queue.backlog_status(
        database.database(), max_pending=settings.review_backlog_max,
        max_age_days=float(settings.review_backlog_max_days))
    reasons = []
    if status["too_many"]:
        reasons.append(f"{status['pending']} entries wait for review (limit "
                       f"{status['max_pending']})")
    if status["too_old"]:
        reasons.append(f"the oldest has waited {status['oldest_age_days']:.1f} days (limit "
                       f"{status['max_age_days']:g})")
    metadata = {
        "pending": status["pending"],
        "oldest_age_days": (None if status["oldest_age_days"] is None
                            else round(status["oldest_age_days"], 2)),
        "by_namespace": dg.MetadataValue.json(status["by_namespace"]),
        "max_pending": status["max_pending"],
        "max_age_days": status["max_age_days"],
    }
    for key in context.selected_asset_check_keys:
        yield dg.AssetCheckResult(
            asset_key=key.asset_key, check_name=key.name, passed=status["ok"],
            severity=dg.AssetCheckSeverity.WARN, metadata=metadata,
            description="; ".join(reasons) or None)


review_checks = [review_backlog]
