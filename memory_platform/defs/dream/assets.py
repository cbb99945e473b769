"""still: the dream cycle as assets. raw_events -> dream_candidates -> dedup_verdicts ->
shadow_memories -> dream_digest, one UTC day per partition, ranges in one run.

The logic lives in plain modules (dream, dedup, staging, digest); these assets wire them to
the database, the LLM and the run's metadata. LLM-calling assets run in the `llm` pool and
backfill at most a week per run, so a backfill cannot fan out unbounded spend.
"""

from datetime import datetime, timezone

import dagster as dg

from memory_platform.days import days_in
from memory_platform.defs.ingest.assets import raw_events
from memory_platform.dream import dedup, digest, staging
from memory_platform.dream.propose import DreamSettings, dream_day
from memory_platform.llm import CallRecorder
from memory_platform.resources import DatabaseResource, DigestNotifier, LLMFactory
from memory_platform.resources.common import LLM_POOL, daily_partitions
from memory_platform.vault.routing import Routing

# Each run of a backfill covers at most a week: its cost shows up in the run's metadata
# before the next one starts (with the pool's limit), instead of years in one go.
DREAM_BACKFILL = dg.BackfillPolicy.multi_run(max_partitions_per_run=7)


def _span(context: dg.AssetExecutionContext) -> str:
    keys = context.partition_keys
    return f"{keys[0]}..{keys[-1]}" if len(keys) > 1 else keys[0]


def _days(context: dg.AssetExecutionContext):
    window = context.partition_time_window
    return days_in(window.start, window.end)


@dg.asset(
    group_name="dream",
    kinds={"postgres", "python"},
    partitions_def=daily_partitions,
    backfill_policy=DREAM_BACKFILL,
    pool=LLM_POOL,
    deps=[raw_events],
)
def dream_candidates(
    context: dg.AssetExecutionContext, database: DatabaseResource, llm: dg.ResourceParam[LLMFactory]
) -> dg.MaterializeResult:
    """Memories the model proposes from each day's turns not yet dreamed (a watermark per
    conversation and day), scored 1-10 for durability against the rubric in
    memory_platform/dream.py, with a category, a why, the source turn ids, and the namespace
    the routing rules choose. Only scores at or above MEMORY_PLATFORM_DREAM_MIN_SCORE (6)
    go on to the dedup gate; the rest are kept as below_threshold. Secrets are masked before
    any prompt; a candidate that still carries one is rejected. Table `dream_candidates`."""
    db = database.database()
    recorder = CallRecorder(llm.provider, db=db, run_id=context.run.run_id)
    routing = Routing.load()
    settings = DreamSettings.from_settings(database.settings())
    totals: dict[str, int] = {}
    for day in _days(context):
        report = dream_day(db, recorder, day, run_id=context.run.run_id, routing=routing,
                           settings=settings, log=context.log.info)
        for key, value in report.as_dict().items():
            if isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    context.log.info(f"dream {_span(context)}: {totals}")
    return dg.MaterializeResult(metadata={
        "partitions": _span(context),
        **totals,
        **{f"setting_{k}": v for k, v in settings.as_metadata().items()},
        "routing": routing.origin,
        **recorder.as_metadata(),
    })


@dg.asset(
    group_name="dream",
    kinds={"postgres", "pgvector", "python"},
    partitions_def=daily_partitions,
    backfill_policy=DREAM_BACKFILL,
    pool=LLM_POOL,
    deps=[dream_candidates],
)
def dedup_verdicts(
    context: dg.AssetExecutionContext, database: DatabaseResource, llm: dg.ResourceParam[LLMFactory]
) -> dg.MaterializeResult:
    """A recorded verdict for every proposed candidate (table `dedup_verdicts`): compared with
    its primary namespace, that namespace's shadows (including entries the reviewer
    skipped) and the run's earlier candidates. Above the high similarity threshold it is a
    duplicate; in the grey band an LLM judge decides same fact / contradiction / new; facts
    differing in a number, version, port, path or date are never auto-duplicates. Rejections
    keep the neighbour that decided them. Thresholds are in memory_platform/dedup.py."""
    db = database.database()
    recorder = CallRecorder(llm.provider, db=db, run_id=context.run.run_id)
    verdicts: dict[str, int] = {}
    decided = judge_calls = 0
    per_day = []
    for day in _days(context):
        result = dedup.run_dedup(db, recorder, day=day, run_id=context.run.run_id)
        decided += result.get("decided", 0)
        judge_calls += result.get("judge_calls", 0)
        for verdict, n in result.get("verdicts", {}).items():
            verdicts[verdict] = verdicts.get(verdict, 0) + n
        if result.get("candidates"):
            per_day.append({k: result.get(k) for k in (
                "day", "candidates", "decided", "verdicts", "latency_ms_p50",
                "latency_ms_p95")})
    rejected = verdicts.get("duplicate", 0) + verdicts.get("same_fact", 0)
    context.log.info(f"dedup {_span(context)}: {decided} decided {verdicts}")
    return dg.MaterializeResult(metadata={
        "partitions": _span(context),
        "decided": decided,
        "verdicts": dg.MetadataValue.json(verdicts),
        "rejection_rate": round(rejected / decided, 4) if decided else -1.0,
        "judge_calls": judge_calls,
        "thresholds": dg.MetadataValue.json(dedup.THRESHOLDS.as_metadata()),
        "per_day": dg.MetadataValue.json(per_day),
        **recorder.as_metadata(),
    })


@dg.asset(
    group_name="dream",
    kinds={"postgres", "pgvector", "python"},
    partitions_def=daily_partitions,
    backfill_policy=DREAM_BACKFILL,
    deps=[dedup_verdicts],
)
def shadow_memories(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    """Candidates the gate let through (new, or contradicting a known fact), staged into
    `<namespace>__dream` with provenance (run, source turns, score, why, verdict) and a
    vector, pending review. Never a primary namespace: the database refuses that. Re-running
    stages nothing twice (keyed on the candidate)."""
    db = database.database()
    staged, already, by_namespace = 0, 0, {}
    for day in _days(context):
        result = staging.stage_day(db, day, run_id=context.run.run_id)
        staged += result["staged"]
        already += result["already_staged"]
        for namespace, n in result["by_namespace"].items():
            by_namespace[namespace] = by_namespace.get(namespace, 0) + n
    return dg.MaterializeResult(metadata={
        "partitions": _span(context),
        "staged": staged,
        "already_staged": already,
        "by_namespace": dg.MetadataValue.json(by_namespace),
    })


@dg.asset(
    group_name="dream",
    kinds={"python"},
    partitions_def=daily_partitions,
    backfill_policy=DREAM_BACKFILL,
    deps=[shadow_memories],
)
def dream_digest(
    context: dg.AssetExecutionContext, database: DatabaseResource, notifier: DigestNotifier
) -> dg.MaterializeResult:
    """A markdown digest of the run's days: learned (staged), rejected as known,
    contradictions flagged, review backlog size and the age of its oldest entry. Written to
    $MEMORY_PLATFORM_HOME/digests/, shown here, and POSTed to the notifier's webhook when one
    is set (a failed POST fails this step after the file is written)."""
    days = _days(context)
    markdown, figures = digest.build_digest(database.database(), days, run_id=context.run.run_id,
                                            now=datetime.now(timezone.utc))
    path = digest.write_digest(database.settings().home / "digests", days, markdown)
    url = notifier.url()
    if url:
        digest.post_webhook(url, markdown)
    return dg.MaterializeResult(metadata={
        "partitions": _span(context),
        "digest": dg.MetadataValue.md(markdown),
        "path": dg.MetadataValue.path(str(path)),
        "webhook": "posted" if url else "not configured",
        **{k: (dg.MetadataValue.json(v) if isinstance(v, dict) else v)
           for k, v in figures.items() if v is not None},
    })


DREAM_ASSETS = [dream_candidates, dedup_verdicts, shadow_memories, dream_digest]
