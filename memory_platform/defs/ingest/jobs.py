"""The ingest job: a day's (or a range's) raw events, their Parquet copy and vectors."""

import dagster as dg

ingest_raw_events_job = dg.define_asset_job(
    "ingest_raw_events_job",
    # By key: the vectors are the search domain's asset, which itself reads raw_events.
    selection=["raw_events", "raw_events_lake", "event_embeddings"],
    description="Import the raw events of a day or a range of days, write their Parquet copy "
    "and embed them, so a session that just ended is searchable.",
)
