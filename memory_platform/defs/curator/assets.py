"""curator: the weekly weeding as assets. vault_promotions -> curator_verdicts ->
curator_cuts -> curator_purge, one (namespace, week) per partition.

The logic lives in memory_platform.curator (propose, execute, archive); these assets wire
it to the database, the agent and the run's metadata. The breaker holds in every launch
path: `cut_ratio_within_ceiling` (checks/curator.py) is a blocking check on
curator_verdicts, so a verdict over the ceiling never reaches curator_cuts in the same run;
and curator_cuts itself refuses a refused verdict and re-judges the ceiling under lock, so a
run that materializes curator_cuts alone (a UI click, a backfill of that asset) cuts
nothing either.
"""

from collections import Counter
from datetime import datetime, timezone
from typing import Any

import dagster as dg

from memory_platform.curator import archive, prompt
from memory_platform.curator.config import CuratorConfig, parse_week
from memory_platform.curator.execute import CuratorRefused, execute
from memory_platform.curator.propose import propose
from memory_platform.defs.vault.assets import vault_promotions
from memory_platform.llm import CallRecorder
from memory_platform.resources import CuratorAgents, DatabaseResource
from memory_platform.resources.common import LLM_POOL, curator_partitions

# One partition per run, LLM calls in the `llm` pool: a backfill of many namespaces and
# weeks cannot fan out unbounded spend, and each run's cost is in its metadata.
CURATOR_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=1)


class CuratorRunConfig(dg.Config):
    """`dry_run`: record the verdict as a dry run (shown, never executed)."""

    dry_run: bool = False


def _partitions(context: dg.AssetExecutionContext) -> list[tuple[str, str]]:
    found = []
    for key in context.partition_keys:
        dims = curator_partitions.get_partition_key_from_str(str(key)).keys_by_dimension
        found.append((dims["namespace"], dims["week"]))
    return found


def _llm_totals(recorders: list[CallRecorder]) -> dict[str, Any]:
    """The recorders' metadata summed (one recorder per namespace: each has its agent)."""
    totals: dict[str, Any] = {}
    for recorder in recorders:
        for key, value in recorder.as_metadata().items():
            if isinstance(value, dict):
                merged = Counter(totals.get(key, {}))
                merged.update(value)
                totals[key] = dict(merged)
            else:
                totals[key] = round(totals.get(key, 0) + value, 6)
    return {k: (dg.MetadataValue.json(v) if isinstance(v, dict) else v)
            for k, v in totals.items()}


def _flat(items: list[dict]) -> dict[str, Any]:
    if len(items) == 1:
        return {k: (dg.MetadataValue.json(v) if isinstance(v, (dict, list)) else v)
                for k, v in items[0].items() if v is not None}
    return {"partitions": dg.MetadataValue.json(items)}


@dg.asset(
    group_name="curator",
    kinds={"postgres", "python"},
    partitions_def=curator_partitions,
    backfill_policy=CURATOR_BACKFILL,
    pool=LLM_POOL,
    # Any review decision may have changed the namespace being weeded.
    deps=[dg.AssetDep(vault_promotions, partition_mapping=dg.AllPartitionMapping())],
)
def curator_verdicts(
    context: dg.AssetExecutionContext, database: DatabaseResource,
    curator_agents: dg.ResourceParam[CuratorAgents], config: CuratorRunConfig,
) -> dg.MaterializeResult:
    """The agent's verdict on one namespace for one week (partition: namespace x week): the
    namespace's current memories listed with handles 1..N (split into several prompts when
    the listing exceeds MEMORY_PLATFORM_CURATOR_PROMPT_TOKENS), shown to the agent situated
    in the namespace's repository when routing.toml ties one, and its proposed cuts
    (handle, reason, evidence), merges and contradictions validated by code. One row in
    `curator_runs`: proposed, or refused (invalid verdict, or over the ceiling). Cuts
    nothing. A week already executed is not asked again. Costs one agent call per prompt."""
    db = database.database()
    settings = database.settings()
    curator = CuratorConfig.load(settings)
    now = datetime.now(timezone.utc)
    recorders, outcomes = [], []
    for namespace, week in _partitions(context):
        repo = curator.repo_for(namespace)
        recorder = CallRecorder(lambda repo=repo: curator_agents.agent_for(repo, curator),
                                db=db, run_id=context.run.run_id)
        recorders.append(recorder)
        result = propose(db, namespace, parse_week(week), agent=lambda r=recorder: r,
                         dagster_run_id=context.run.run_id, config=curator, repo=repo,
                         dry_run=config.dry_run, now=now, log=context.log.info)
        outcomes.append(result.as_metadata())
    return dg.MaterializeResult(metadata={
        **_flat(outcomes),
        "prompt_version": prompt.PROMPT_VERSION,
        "routing": curator.routing_origin,
        **_llm_totals(recorders),
    })


@dg.asset(
    group_name="curator",
    kinds={"postgres", "pgvector", "python"},
    partitions_def=curator_partitions,
    backfill_policy=CURATOR_BACKFILL,
    deps=[curator_verdicts],
)
def curator_cuts(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    """The week's verdict executed (partition: namespace x week): under row locks, the
    listing's fingerprint re-verified and the ceiling judged again, then each cut archived
    (`curator_archive`: the full memory, its vectors, reason, evidence, run) with a tombstone
    left in `memories` (status 'cut'), restorable for MEMORY_PLATFORM_CURATOR_RETENTION_DAYS
    (14); merges and contradictions staged into `<ns>__dream` for review. A refused verdict,
    a changed namespace or a breach of the ceiling cuts nothing and fails this step with the
    reason. A week executes once: re-running it cuts nothing twice."""
    db = database.database()
    curator = CuratorConfig.load(database.settings())
    outcomes, refusals = [], []
    for namespace, week in _partitions(context):
        try:
            done = execute(db, namespace, parse_week(week), dagster_run_id=context.run.run_id,
                           config=curator)
        except CuratorRefused as exc:
            refusals.append(str(exc))
            continue
        context.log.info(f"{namespace} {week}: {done.status}, {done.cuts} cut, "
                         f"{len(done.staged)} staged for review")
        outcomes.append(done.as_metadata())
    if refusals:
        raise CuratorRefused("; ".join(refusals), refusal="run", run_pk=None)
    return dg.MaterializeResult(metadata=_flat(outcomes))


@dg.asset(
    group_name="curator",
    kinds={"postgres"},
    deps=[curator_cuts],
)
def curator_purge(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    """Archives whose restore window has ended, deleted (their vectors with them); each
    tombstone becomes status 'purged' and a `curator_purges` record keeps what was purged
    (memory id, namespace, content hash, reason, cut and purge times). Daily."""
    db = database.database()
    records = archive.purge(db, purged_by=f"purge:{context.run.run_id}")
    by_namespace = Counter(r["namespace"] for r in records)
    left = archive.next_purges(db)
    context.log.info(f"purged {len(records)} archives; {left['archived']} left")
    return dg.MaterializeResult(metadata={
        "purged": len(records),
        "by_namespace": dg.MetadataValue.json(dict(by_namespace)),
        "purged_memory_ids": dg.MetadataValue.json([r["memory_id"] for r in records][:200]),
        "archives_left": left["archived"],
        "next_due_at": left["next_due_at"].isoformat() if left["next_due_at"] else "none",
    })


CURATOR_ASSETS = [curator_verdicts, curator_cuts, curator_purge]
