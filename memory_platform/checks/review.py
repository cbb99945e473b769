"""The review backlog as an asset check: a gate nobody looks at fails silently (the backlog
grows from 4 to 247 while nothing breaks), so its size and age are checked where they
change. On `shadow_memories`, so every dream run (nightly, after a session) reports it even
when nobody reviews; on `vault_promotions`, so a review run shows it shrinking."""

import dagster as dg

from memory_platform import review
from memory_platform.assets.dream import shadow_memories
from memory_platform.assets.vault import vault_promotions
from memory_platform.resources import CairnResource
from memory_platform.schedules import env_int

BACKLOG_MAX_ENV = "MEMORY_PLATFORM_REVIEW_BACKLOG_MAX"
DEFAULT_BACKLOG_MAX = 50
BACKLOG_MAX_AGE_ENV = "MEMORY_PLATFORM_REVIEW_BACKLOG_MAX_DAYS"
DEFAULT_BACKLOG_MAX_AGE_DAYS = 14

CHECK_NAME = "review_backlog"
_DESCRIPTION = (
    f"Warns when more than {BACKLOG_MAX_ENV} (default {DEFAULT_BACKLOG_MAX}) shadow entries "
    f"wait for review, or the oldest has waited more than {DEFAULT_BACKLOG_MAX_AGE_DAYS} days.")


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(CHECK_NAME, asset=shadow_memories, description=_DESCRIPTION),
        dg.AssetCheckSpec(CHECK_NAME, asset=vault_promotions, description=_DESCRIPTION),
    ],
    can_subset=True,
)
def review_backlog(context: dg.AssetCheckExecutionContext, cairn: CairnResource):
    """Pending entries and the age of the oldest, against their limits (warning severity:
    the backlog is a person's to clear, nothing downstream is stopped)."""
    status = review.backlog_status(
        cairn.database(), max_pending=env_int(BACKLOG_MAX_ENV, DEFAULT_BACKLOG_MAX, minimum=0),
        max_age_days=float(env_int(BACKLOG_MAX_AGE_ENV, DEFAULT_BACKLOG_MAX_AGE_DAYS)))
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
