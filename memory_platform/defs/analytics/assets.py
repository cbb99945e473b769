"""analytics assets: the lake's snapshot tables, the dbt marts, and the weekly report.

    raw_events_lake (ingest) ─┐
    <table>_lake snapshots ──┴─> dbt staging views ─> marts (dbt tests = asset checks)
    (lineage: the dream, vault,                             └─> weekly_report (per ISO week)
     curator and orchard assets)

Thin layer over memory_platform.analytics. The dbt project is `dbt_project/` at the top of
the repository; its manifest is prepared by `analytics.dbt.ensure_manifest` (a `dbt parse`
only when it is missing or older than the project's files: see ARCHITECTURE.md).
"""

import base64
from datetime import date

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets

from memory_platform.analytics import dbt as dbt_files
from memory_platform.analytics import lake, service
from memory_platform.analytics.report import CHARTS
from memory_platform.defs.curator.assets import curator_cuts, curator_purge, curator_verdicts
from memory_platform.defs.dream.assets import dedup_verdicts, dream_candidates, shadow_memories
from memory_platform.defs.ingest.assets import raw_events
from memory_platform.defs.orchard.assets import orchard_snapshot
from memory_platform.defs.vault.assets import vault_promotions
from memory_platform.llm import CallRecorder
from memory_platform.resources import DatabaseResource, LLMFactory
from memory_platform.resources.common import LLM_POOL, weekly_partitions

GROUP = "analytics"

# Which assets write the rows each snapshot copies (its lineage). A restore is a person's
# act through a face, not an asset: it shows in `curator_cuts_lake` without one.
SNAPSHOT_SOURCES = {
    "curator_cuts": [curator_cuts, curator_purge],
    "curator_purges": [curator_purge],
    "curator_runs": [curator_verdicts, curator_cuts],
    "conversations": [raw_events],
    "dream_watermarks": [dream_candidates],
    "dream_candidates": [dream_candidates],
    "dedup_verdicts": [dedup_verdicts],
    "memories": [shadow_memories, vault_promotions],
    "vault_audit": [shadow_memories, vault_promotions],
    "llm_calls": [dream_candidates, dedup_verdicts, curator_verdicts],
    "orchard_snapshots": [orchard_snapshot],
}


def lake_key(table: str) -> dg.AssetKey:
    """The asset that writes lake table `table` (`raw_events_lake` is ingest's)."""
    return dg.AssetKey(f"{table}_lake")


@dg.multi_asset(
    specs=[dg.AssetSpec(
        lake_key(table), deps=SNAPSHOT_SOURCES[table], group_name=GROUP,
        kinds={"parquet", "polars"}, skippable=True,
        description=f"A whole-table Parquet snapshot of `{table}` at "
                    f"`$MEMORY_PLATFORM_HOME/lake/{table}/{table}.parquet` (no text, no "
                    "vectors): what the dbt marts read. Rewritten whole and atomically on "
                    "each materialization, so re-running is idempotent.")
        for table in lake.TABLES],
    can_subset=True,
)
def lake_snapshots(context: dg.AssetExecutionContext, database: DatabaseResource):
    """Copies the selected tables from PostgreSQL to the lake (store/lake.py's SELECTs, read
    in pages into polars frames)."""
    settings, db = database.settings(), database.database()
    for table in lake.TABLES:
        if lake_key(table) not in context.selected_asset_keys:
            continue
        written = lake.write_snapshot(db, settings.lake, table)
        yield dg.MaterializeResult(asset_key=lake_key(table), metadata={
            "rows": written["rows"], "bytes": written["bytes"],
            "path": dg.MetadataValue.path(written["path"])})


class MartsTranslator(DagsterDbtTranslator):
    """dbt's sources are the lake assets (`lake.raw_events` is `raw_events_lake`), so the
    marts sit downstream of them; the project's models and seeds join the analytics group."""

    def get_asset_spec(self, manifest, unique_id, project) -> dg.AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        props = self.get_resource_props(manifest, unique_id)
        if props["resource_type"] == "source":
            return spec.replace_attributes(key=lake_key(props["name"]))
        return spec.replace_attributes(group_name=GROUP)


DBT_PROJECT = DbtProject(project_dir=dbt_files.PROJECT_DIR)


@dbt_assets(manifest=dbt_files.ensure_manifest(), project=DBT_PROJECT,
            dagster_dbt_translator=MartsTranslator(), name="analytics_marts")
def analytics_marts(context: dg.AssetExecutionContext, dbt: DbtCliResource,
                    database: DatabaseResource):
    """`dbt build` of the selected models, seeds and tests into the DuckDB warehouse
    (MEMORY_PLATFORM_WAREHOUSE): staging views over the lake, then the marts. Each dbt test
    is an asset check on its model; a failing one fails the step after reporting."""
    settings = database.settings()
    if not any(settings.lake.glob("raw_events/*/*.parquet")):
        raise FileNotFoundError(
            f"the lake has no raw events yet ({settings.lake / 'raw_events'}): materialize "
            "raw_events_lake (the ingest job, `memory-platform up`) first")
    with dbt_files.dbt_environment(settings):
        yield from dbt.cli(["build"], context=context).stream()


MART_KEYS = [dg.AssetKey(name) for name in (
    "daily_activity", "conversation_days", "dream_funnel", "dream_nights", "vault_health",
    "llm_spend", "curator_history", "portfolio_weeks")]


def _inline_images(markdown: str, images: dict[str, bytes]) -> str:
    """The report's markdown with its charts as data URIs: the Dagster UI shows metadata
    markdown but cannot reach files on this machine."""
    for name in CHARTS:
        encoded = base64.b64encode(images[name]).decode()
        markdown = markdown.replace(f"]({name}.png)", f"](data:image/png;base64,{encoded})")
    return markdown


@dg.asset(
    group_name=GROUP,
    kinds={"duckdb", "python"},
    partitions_def=weekly_partitions,
    deps=MART_KEYS,
    pool=LLM_POOL,
)
def weekly_report(context: dg.AssetExecutionContext, database: DatabaseResource,
                  llm: dg.ResourceParam[LLMFactory]) -> dg.MaterializeResult:
    """The week's report (one partition per ISO week, Monday to Sunday UTC): what was done
    (one summary per active project, with checked citations; without an LLM the report says
    so), the week's numbers from the marts, and four charts (activity by source, dream
    funnel, vault size, LLM spend) rendered offline. Written to
    `$MEMORY_PLATFORM_HOME/reports/<2026-W48>/` (report.md, report.json, PNGs), shown here,
    and served by `memory-platform serve` at /reports. Rebuilding a week replaces its
    folder."""
    monday = date.fromisoformat(context.partition_key)
    db = database.database()
    recorders: list[CallRecorder] = []

    def model() -> CallRecorder:  # LLMNotConfigured from here: a report without summaries
        recorders.append(CallRecorder(llm.provider(), db=db, run_id=context.run.run_id))
        return recorders[-1]

    built, path = service.build_week(db, database.settings(), monday, model)
    totals = built.numbers["totals"]
    return dg.MaterializeResult(metadata={
        "week": built.week,
        "report": dg.MetadataValue.md(_inline_images(built.markdown, built.images)),
        "path": dg.MetadataValue.path(str(path)),
        "turns": totals["turns"],
        "sessions": totals["sessions"],
        "summaries": built.summaries["status"],
        "projects_summarized": len(built.summaries["projects"]),
        **(recorders[0].as_metadata() if recorders else {"llm_calls": 0}),
    })


ANALYTICS_ASSETS = [lake_snapshots, analytics_marts, weekly_report]
