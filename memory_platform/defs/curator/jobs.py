"""The curator's jobs: weed a namespace's week, and purge expired archives."""

import dagster as dg

from memory_platform.defs.curator.assets import curator_cuts, curator_purge, curator_verdicts

curator_job = dg.define_asset_job(
    "curator_job",
    selection=dg.AssetSelection.assets(curator_verdicts, curator_cuts),
    description="Weed one namespace for one week: the agent's verdict, validated and judged "
    "by the breaker (a blocking check), then the cuts executed under lock, each archived "
    "and restorable. Target of the weekly schedule and `memory-platform curate`.",
)

# The dry run, written once: the config of `curator_dry_run_job`, and the run config
# launch.run_curate passes again (a run's config replaces its job's).
DRY_RUN = {"ops": {curator_verdicts.op.name: {"config": {"dry_run": True}}}}

curator_dry_run_job = dg.define_asset_job(
    "curator_dry_run_job",
    selection=dg.AssetSelection.assets(curator_verdicts),
    config=DRY_RUN,
    description="The agent's verdict on one namespace, recorded as a dry run: shown with its "
    "reasons and evidence, never executed. `memory-platform curate --dry-run`.",
)


curator_purge_job = dg.define_asset_job(
    "curator_purge_job",
    selection=dg.AssetSelection.assets(curator_purge),
    description="Purge the curator's archives whose restore window has ended, recording "
    "each. Target of the daily purge schedule and `memory-platform curator purge`.",
)
