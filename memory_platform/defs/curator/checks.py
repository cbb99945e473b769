"""Circuit breakers of the curator, as blocking asset checks.

- `cut_ratio_within_ceiling` on curator_verdicts: a verdict of this run that would cut more
  than its namespace's ceiling fails it, so curator_cuts never starts in the same run. (A
  run that materializes curator_cuts alone is stopped by curator_cuts itself: it refuses a
  refused verdict and judges the ceiling again under lock.)
- `tombstones_match_archives` on all three curator assets: every namespace has exactly one
  archive per tombstone. Blocking: a broken invariant stops the cut step, and fails the run
  that broke it.
"""

import dagster as dg

from memory_platform.curator import archive, breaker
from memory_platform.curator.propose import verdicts_of
from memory_platform.defs.curator.assets import curator_cuts, curator_purge, curator_verdicts
from memory_platform.resources import DatabaseResource


@dg.asset_check(
    asset=curator_verdicts,
    blocking=True,
    description="Every verdict of this run cuts at most its namespace's ceiling "
    "(MEMORY_PLATFORM_CURATOR_CEILING, 40% by default, personal 25%, per namespace "
    "MEMORY_PLATFORM_CURATOR_CEILINGS); one over refuses the whole run.",
)
def cut_ratio_within_ceiling(
    context: dg.AssetCheckExecutionContext, database: DatabaseResource
) -> dg.AssetCheckResult:
    verdicts = verdicts_of(database.database(), context.run.run_id)
    judged = []
    for run in verdicts:
        judgement = breaker.judge(run["proposed_cuts"], run["listed"], run["ceiling"])
        over = (run["refusal"] == "breaker" or not judgement.passed
                or run["proposed_cuts"] > run["max_cuts"])
        judged.append({"namespace": run["namespace"], "week": run["week"].isoformat(),
                       "curator_run_id": run["id"], "proposed_cuts": run["proposed_cuts"],
                       "listed": run["listed"], "ceiling": run["ceiling"],
                       "max_cuts": run["max_cuts"], "over": over})
    over = [j for j in judged if j["over"]]
    return dg.AssetCheckResult(
        passed=not over,
        description="; ".join(f"{j['namespace']} {j['week']}: {j['proposed_cuts']} cuts of "
                              f"{j['listed']} over the ceiling of {j['ceiling']:.0%} (at most "
                              f"{j['max_cuts']})" for j in over) or None,
        metadata={"verdicts": len(judged), "over_ceiling": len(over),
                  "judged": dg.MetadataValue.json(judged)},
    )


_INVARIANT = ("Every namespace has exactly one curator archive per tombstone (a memory with "
              "status 'cut'), and every archive's memory is such a tombstone.")


@dg.multi_asset_check(
    specs=[dg.AssetCheckSpec("tombstones_match_archives", asset=asset, blocking=True,
                             description=_INVARIANT)
           for asset in (curator_verdicts, curator_cuts, curator_purge)],
    can_subset=True,
)
def tombstones_match_archives(context: dg.AssetCheckExecutionContext, database: DatabaseResource):
    """tombstones == archives, per namespace (the database refuses a commit that breaks it;
    this proves it every run)."""
    found = archive.invariant(database.database())
    broken = [n for n in found["by_namespace"] if not n["ok"]]
    metadata = {
        "by_namespace": dg.MetadataValue.json(
            {n["namespace"]: {"tombstones": n["tombstones"], "archives": n["archives"],
                              "purged": n["purged"]} for n in found["by_namespace"]}),
        "unpaired": dg.MetadataValue.json([dict(u) for u in found["unpaired"][:20]]),
    }
    description = "; ".join(f"{n['namespace']}: {n['tombstones']} tombstones, "
                            f"{n['archives']} archives" for n in broken) or None
    for key in context.selected_asset_check_keys:
        yield dg.AssetCheckResult(asset_key=key.asset_key, check_name=key.name,
                                  passed=found["ok"], metadata=metadata,
                                  description=description)


curator_checks = [cut_ratio_within_ceiling, tombstones_match_archives]
