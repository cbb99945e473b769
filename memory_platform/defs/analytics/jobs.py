"""The weekly report's job."""

import dagster as dg

from memory_platform.defs.analytics.assets import analytics_marts, lake_snapshots, weekly_report

weekly_report_job = dg.define_asset_job(
    "weekly_report_job",
    # The lake's snapshots and the marts are unpartitioned (rebuilt whole: seconds at a
    # million events); the report is the run's week.
    selection=dg.AssetSelection.assets(lake_snapshots, analytics_marts, weekly_report),
    description="Refresh the lake's snapshot tables, `dbt build` the marts (their tests run "
    "as asset checks) and write the week's report with its charts.",
)
