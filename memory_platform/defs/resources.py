"""The resources every asset, check and sensor of the defs folder is bound to, by key."""

import dagster as dg
from dagster_dbt import DbtCliResource

from memory_platform.analytics.dbt import dbt_executable
from memory_platform.defs.analytics.assets import DBT_PROJECT
from memory_platform.resources import CuratorAgents, DatabaseResource, DigestNotifier, LLMFactory


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(resources={
        "database": DatabaseResource(), "llm": LLMFactory(), "notifier": DigestNotifier(),
        "curator_agents": CuratorAgents(),
        "dbt": DbtCliResource(project_dir=DBT_PROJECT, dbt_executable=dbt_executable())})
