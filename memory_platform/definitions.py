"""The one Definitions object: assembly only, no I/O at import time."""

import dagster as dg
from dagster_dbt import DbtCliResource

from memory_platform.analytics.dbt import dbt_executable
from memory_platform.assets.analytics import ANALYTICS_ASSETS, DBT_PROJECT
from memory_platform.assets.cairn import raw_events, raw_events_lake, source_files
from memory_platform.assets.curator import CURATOR_ASSETS
from memory_platform.assets.dream import DREAM_ASSETS
from memory_platform.assets.embeddings import event_embeddings
from memory_platform.assets.orchard import ORCHARD_ASSETS
from memory_platform.assets.recall import RECALL_ASSETS
from memory_platform.assets.vault import VAULT_ASSETS
from memory_platform.checks.cairn import raw_events_checks
from memory_platform.checks.curator import curator_checks
from memory_platform.checks.dream import dream_checks
from memory_platform.checks.review import review_checks
from memory_platform.jobs import JOBS
from memory_platform.resources import CairnResource, CuratorAgents, DigestNotifier, LLMFactory
from memory_platform.sensors.curator import (
    curator_namespaces_sensor,
    daily_curator_purge_schedule,
    weekly_curator_schedule,
)
from memory_platform.sensors.dream_after_ingest import dream_after_ingest_sensor
from memory_platform.sensors.orchard import (
    daily_project_discovery_schedule,
    weekly_orchard_schedule,
)
from memory_platform.sensors.recall import (
    lint_after_dream_sensor,
    weekly_lint_schedule,
    wiki_sensor,
)
from memory_platform.sensors.review import pending_memories_sensor
from memory_platform.sensors.schedules import nightly_dream_schedule
from memory_platform.sensors.session_end import session_end_sensor
from memory_platform.sensors.sources import source_folders_sensor
from memory_platform.sensors.weekly_report import weekly_report_schedule

defs = dg.Definitions(
    assets=[source_files, raw_events, raw_events_lake, event_embeddings, *DREAM_ASSETS,
            *VAULT_ASSETS, *CURATOR_ASSETS, *ANALYTICS_ASSETS, *ORCHARD_ASSETS,
            *RECALL_ASSETS],
    asset_checks=[*raw_events_checks, *dream_checks, *review_checks, *curator_checks],
    jobs=JOBS,
    sensors=[source_folders_sensor, session_end_sensor, dream_after_ingest_sensor,
             pending_memories_sensor, curator_namespaces_sensor, wiki_sensor,
             lint_after_dream_sensor],
    schedules=[nightly_dream_schedule, weekly_curator_schedule, daily_curator_purge_schedule,
               weekly_report_schedule, weekly_orchard_schedule, daily_project_discovery_schedule,
               weekly_lint_schedule],
    resources={"cairn": CairnResource(), "llm": LLMFactory(), "notifier": DigestNotifier(),
               "curator_agents": CuratorAgents(),
               "dbt": DbtCliResource(project_dir=DBT_PROJECT,
                                     dbt_executable=dbt_executable())},
)
