"""Every job, and every run tag the project sets. Sensors, schedules and `launch.py` target
these objects; nothing else defines a job."""

import dagster as dg

from memory_platform.assets.analytics import analytics_marts, lake_snapshots, weekly_report
from memory_platform.assets.cairn import raw_events, raw_events_lake
from memory_platform.assets.curator import curator_cuts, curator_purge, curator_verdicts
from memory_platform.assets.dream import DREAM_ASSETS
from memory_platform.assets.embeddings import event_embeddings
from memory_platform.assets.orchard import orchard_proposals, orchard_snapshot
from memory_platform.assets.recall import vault_lint, vault_wiki
from memory_platform.assets.vault import vault_promotions

# Dagster's own tags for a single run over a partition range.
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
PARTITION_TAG = "dagster/partition"  # a run over one partition
# Ours: who or what launched a run, and for review decisions which entry and what decision.
TRIGGER_TAG = "memory-platform/trigger"  # nightly, session-end, weekly, cli, dashboard, ...
SESSIONS_TAG = "memory-platform/sessions"  # how many ended sessions a dream run covers
ACTOR_TAG = "memory-platform/actor"
DECISION_TAG = "memory-platform/decision"
MEMORY_TAG = "memory-platform/memory-id"
# On an ingest run: what runs next over the same days once it succeeds
# (`dream_after_ingest_sensor`): "dream" for the nightly schedule and the session-end sensor.
THEN_TAG = "memory-platform/then"


def range_tags(first: str, last: str, **extra: str) -> dict[str, str]:
    """Tags asking for one run over the partition keys first..last."""
    return {RANGE_START: first, RANGE_END: last, **extra}


ingest_raw_events_job = dg.define_asset_job(
    "ingest_raw_events_job",
    selection=[raw_events, raw_events_lake, event_embeddings],
    description="Import the raw events of a day or a range of days, write their Parquet copy "
    "and embed them, so a session that just ended is searchable.",
)

# The dream is its own job, after an ingest run over the same days: its LLM assets backfill
# at most a week per run (multi_run(7)), while raw events import a range in one run
# (single_run), and one job cannot have both.
dream_job = dg.define_asset_job(
    "dream_job",
    selection=DREAM_ASSETS,
    description="Dream over what was not dreamed yet in a day (or a range of days), dedup, "
    "stage into shadow namespaces and write the digest. Launched after the ingest run of the "
    "same days. Nothing reaches a primary namespace without review.",
)

vault_promotion_job = dg.define_asset_job(
    "vault_promotion_job",
    # Without the review_backlog check: a decision should take as little time as it can
    # (the check step costs ~0.2 s a run here); the check runs with every dream run on
    # shadow_memories, and with materializations launched from the UI.
    selection=dg.AssetSelection.assets(vault_promotions).without_checks(),
    description="Apply one review decision (approve, edit, change namespace, supersede) to a "
    "pending shadow entry: the promotion as a Dagster run, whichever face it came from.",
)

curator_job = dg.define_asset_job(
    "curator_job",
    selection=dg.AssetSelection.assets(curator_verdicts, curator_cuts),
    description="Weed one namespace for one week: the agent's verdict, validated and judged "
    "by the breaker (a blocking check), then the cuts executed under lock, each archived "
    "and restorable. Target of the weekly schedule and `memory-platform curate`.",
)

curator_dry_run_job = dg.define_asset_job(
    "curator_dry_run_job",
    selection=dg.AssetSelection.assets(curator_verdicts),
    config={"ops": {curator_verdicts.op.name: {"config": {"dry_run": True}}}},
    description="The agent's verdict on one namespace, recorded as a dry run: shown with its "
    "reasons and evidence, never executed. `memory-platform curate --dry-run`.",
)

curator_purge_job = dg.define_asset_job(
    "curator_purge_job",
    selection=dg.AssetSelection.assets(curator_purge),
    description="Purge the curator's archives whose restore window has ended, recording "
    "each. Target of the daily purge schedule and `memory-platform curator purge`.",
)

build_wiki_job = dg.define_asset_job(
    "build_wiki_job",
    selection=[vault_wiki],
    description="Take people's edits to a namespace's wiki files into the vault, then rewrite "
    "the wiki from the vault (never over an edit not taken in).",
)

lint_vault_job = dg.define_asset_job(
    "lint_vault_job",
    selection=[vault_lint],
    description="Find contradictions, stale claims, orphans and near-duplicates in every "
    "primary namespace, as findings for review. Changes no memory.",
)

weekly_report_job = dg.define_asset_job(
    "weekly_report_job",
    # The lake's snapshots and the marts are unpartitioned (rebuilt whole: seconds at a
    # million events); the report is the run's week.
    selection=dg.AssetSelection.assets(lake_snapshots, analytics_marts, weekly_report),
    description="Refresh the lake's snapshot tables, `dbt build` the marts (their tests run "
    "as asset checks) and write the week's report with its charts.",
)

discover_projects_job = dg.define_asset_job(
    "discover_projects_job",
    selection=[orchard_proposals],
    description="Propose projects from cairn for the orchard (paths, claude.ai projects, "
    "repeated chat titles) with their activity. Creates no project: a person accepts.",
)

snapshot_orchard_job = dg.define_asset_job(
    "snapshot_orchard_job",
    selection=[orchard_snapshot],
    description="Write the orchard's snapshot of a week (or a range of weeks): each project "
    "as it stood at the week's end, with the week's milestones and activity.",
)

JOBS = [ingest_raw_events_job, dream_job, vault_promotion_job, curator_job,
        curator_dry_run_job, curator_purge_job, weekly_report_job, discover_projects_job,
        snapshot_orchard_job, build_wiki_job, lint_vault_job]
