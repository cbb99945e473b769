"""The one Definitions object: assembly only, no I/O at import time."""

import dagster as dg

from memory_platform.assets.cairn import raw_events, raw_events_lake, source_files
from memory_platform.assets.embeddings import event_embeddings
from memory_platform.checks.cairn import raw_events_checks
from memory_platform.resources import CairnResource
from memory_platform.sensors.sources import ingest_raw_events_job, source_folders_sensor

defs = dg.Definitions(
    assets=[source_files, raw_events, raw_events_lake, event_embeddings],
    asset_checks=raw_events_checks,
    jobs=[ingest_raw_events_job],
    sensors=[source_folders_sensor],
    resources={"cairn": CairnResource()},
)
