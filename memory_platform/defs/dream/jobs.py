"""The dream job."""

import dagster as dg

from memory_platform.defs.dream.assets import DREAM_ASSETS

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
