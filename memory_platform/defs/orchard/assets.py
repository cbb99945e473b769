"""orchard assets: projects proposed from cairn, and the portfolio as of each week.

    raw_events[day] ─> orchard_proposals          (discovery; creates no project)
    raw_events[days of the week] ─> orchard_snapshot[week]

Thin layer: the work is in `memory_platform.orchard.discovery` and
`memory_platform.orchard.snapshots`.
"""

from datetime import date

import dagster as dg

from memory_platform.defs.ingest.assets import raw_events
from memory_platform.orchard import discovery, snapshots
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import weekly_partitions

MAX_PROPOSALS_IN_METADATA = 50


@dg.asset(
    group_name="orchard",
    kinds={"postgres", "python"},
    # Discovery reads the whole raw record: every day's events may name a project.
    deps=[dg.AssetDep(raw_events, partition_mapping=dg.AllPartitionMapping())],
)
def orchard_proposals(context: dg.AssetExecutionContext,
                      database: DatabaseResource) -> dg.MaterializeResult:
    """Projects proposed from cairn, waiting for a person (table `orchard_proposals`). One
    row is one proposed project: the signals that name it (a Claude Code path and its git
    repo, a claude.ai project, a chat title repeated in several conversations), merged by
    name, with its activity (sessions and turns per week, first and last active day).
    Creates no project: `memory-platform orchard accept` (or the dashboard) does, when a
    person says so. Re-running refreshes the activity of known proposals and never their
    decision."""
    found = discovery.discover(database.database(), database.settings())
    table = "\n".join(
        f"| {p['name']} | {p['repo'] or ''} | {', '.join(s['kind'] for s in p['signals'])} | "
        f"{p['sessions']} | {p['turns']} | {p['last_active'] or ''} |"
        for p in found["proposals"][:MAX_PROPOSALS_IN_METADATA])
    context.log.info(f"discovery: {found['found']} proposals ({found['new']} new), "
                     f"{found['pending']} waiting for a person")
    return dg.MaterializeResult(metadata={
        "proposals": found["found"],
        "new": found["new"],
        "refreshed": found["refreshed"],
        "pending_review": found["pending"],
        "found": dg.MetadataValue.md(
            "| name | repo | signals | sessions | turns | last active |\n"
            "| --- | --- | --- | --- | --- | --- |\n" + table if table else "none"),
    })


@dg.asset(
    group_name="orchard",
    kinds={"postgres", "python"},
    partitions_def=weekly_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    # A week's snapshot counts the turns of that week's days.
    deps=[dg.AssetDep(raw_events, partition_mapping=dg.TimeWindowPartitionMapping())],
)
def orchard_snapshot(context: dg.AssetExecutionContext,
                     database: DatabaseResource) -> dg.MaterializeResult:
    """The portfolio as of each week (table `orchard_snapshots`), for history and the
    analytics marts. One partition is one ISO week (UTC, keyed by its Monday); one row is
    one project as it stood at the week's end (status, priority, next action, blockers,
    deadline, last milestone: replayed from the project's history) with the week's
    milestones, sessions and turns. Re-running a week replaces its rows (one per project);
    a range backfill is one run."""
    db = database.database()
    weeks = []
    for key in context.partition_keys:
        weeks.append(snapshots.take_snapshot(db, date.fromisoformat(key),
                                             run_id=context.run.run_id))
    keys = context.partition_keys
    return dg.MaterializeResult(metadata={
        "weeks": f"{keys[0]}..{keys[-1]}" if len(keys) > 1 else keys[0],
        "projects": weeks[-1]["projects"],
        "by_status_last_week": weeks[-1]["by_status"],
        "milestones": sum(w["milestones"] for w in weeks),
        "sessions": sum(w["sessions"] for w in weeks),
        "turns": sum(w["turns"] for w in weeks),
    })


ORCHARD_ASSETS = [orchard_proposals, orchard_snapshot]
