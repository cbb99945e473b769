"""vault: review decisions as Dagster runs. shadow_memories -> vault_promotions.

Every pending shadow entry is a partition of `vault_promotions` (dynamic partitions
`pending_memories`, key = the shadow memory's id), added and removed by
`pending_memories_sensor`. Materializing a partition applies a decision to that entry:
approve by default, so selecting partitions in the Dagster UI and materializing them
approves them; the run config (`PromotionConfig`) carries an edit, a namespace change or a
supersede, which is how the CLI and the dashboard hand over their decisions through
`launch.promote_via_dagster`. Either way the promotion is a run, with who decided what in its
metadata and tags, downstream of the dream's assets in the lineage graph.
"""

from typing import Any, Literal

import dagster as dg

from memory_platform.defs.dream.assets import shadow_memories
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import PENDING_PARTITIONS_NAME, pending_memories
from memory_platform.vault import review

# A run launched from the Dagster UI carries no user name in open-source Dagster: the audit
# trail then names the run.
UI_ACTOR_PREFIX = "dagster:run-"


class PromotionConfig(dg.Config):
    """The decision a run applies. The defaults approve the entry as staged, which is what
    materializing partitions from the Dagster UI does."""

    action: Literal["approve", "supersede", "record"] = "approve"
    actor: str | None = None  # who decided, for the audit trail (default: the run)
    text: str | None = None  # an edit: approve this text instead
    namespace: str | None = None  # approve into another primary namespace
    old_memory_id: int | None = None  # supersede (and its record): the contradicted fact
    # record: a face (the dashboard) already decided in its request; the run checks that
    # decision in the database and materializes the partition with it. Idempotent.
    promoted_id: int | None = None


def _metadata(results: list[dict], actor: str) -> dict[str, Any]:
    if len(results) == 1:
        r = results[0]
        prov = r["provenance"]
        return {
            "memory_id": r["memory_id"],
            "action": r["action"],
            "actor": actor,
            "promoted_id": r["promoted_id"],
            "namespace": r["namespace"],
            "text": r["text"],
            "edited": r["edited"],
            "created": r["created"],
            "superseded_id": r["superseded_id"],
            "shadow_namespace": prov["shadow_namespace"],
            "dream_run_id": prov["dream_run_id"],
            "candidate_id": prov["candidate_id"],
            "source_event_ids": dg.MetadataValue.json(prov["source_event_ids"]),
            "score": prov["score"],
            "verdict": prov["verdict"],
        }
    return {
        "actor": actor,
        "approved": len(results),
        "decisions": dg.MetadataValue.json([
            {k: r[k] for k in ("memory_id", "action", "promoted_id", "namespace", "created")}
            for r in results]),
    }


@dg.asset(
    group_name="vault",
    kinds={"postgres", "python"},
    partitions_def=pending_memories,
    # Any day's staging may hold the entry a partition promotes; which day, dream run,
    # candidate and source turns it was is in each materialization's metadata.
    deps=[dg.AssetDep(shadow_memories, partition_mapping=dg.AllPartitionMapping())],
)
def vault_promotions(
    context: dg.AssetExecutionContext, database: DatabaseResource, config: PromotionConfig
) -> dg.MaterializeResult:
    """Review decisions applied to primary namespaces. One partition per shadow entry waiting
    for review (key: its memory id in `<namespace>__dream` or `__ideas`). Materializing a
    partition promotes that entry: a row in the primary namespace with promoted_from = the
    entry, its provenance and its vector, and the entry marked approved; with run config an
    edited text, another primary namespace, or `supersede` (the contradicted fact gets
    valid_to and superseded_by; nothing is deleted). An entry someone already decided fails
    the run with the decision that came first. Action `record` (the dashboard, which decides
    within its request) writes nothing: it checks a decision already made and materializes the
    partition with it, idempotently. Tables `memories`, `vault_audit`."""
    keys = context.partition_keys
    actor = config.actor or f"{UI_ACTOR_PREFIX}{context.run.run_id}"
    if len(keys) > 1 and (config.text or config.namespace or config.action != "approve"):
        raise ValueError("an edit, a namespace change or a supersede applies to one "
                         f"partition; this run covers {len(keys)}")
    if config.action == "supersede" and config.old_memory_id is None:
        raise ValueError("action 'supersede' needs old_memory_id, the fact it replaces")
    db = database.database()
    if config.action == "record":
        if config.promoted_id is None:
            raise ValueError("action 'record' needs promoted_id, the memory the decision wrote")
        done, actor = review.recorded_decision(db, _memory_id(keys[0]),
                                               promoted_id=config.promoted_id,
                                               old_memory_id=config.old_memory_id)
        context.log.info(f"recorded {done['action']} of memory {done['memory_id']} -> memory "
                         f"{done['promoted_id']} in {done['namespace']} by {actor}")
        return dg.MaterializeResult(metadata={**_metadata([done], actor), "recorded": True})
    results = []
    for key in keys:
        memory_id = _memory_id(key)
        if config.action == "supersede":
            done = review.supersede(db, memory_id, actor=actor, text=config.text,
                                    old_memory_id=int(config.old_memory_id))
        else:
            done = review.approve(db, memory_id, actor=actor, text=config.text,
                                  namespace=config.namespace)
        context.log.info(f"{done['action']} memory {memory_id} -> memory {done['promoted_id']} "
                         f"in {done['namespace']} by {actor}")
        results.append(done)
    return dg.MaterializeResult(metadata=_metadata(results, actor))


def _memory_id(key: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise ValueError(f"partition key {key!r} of {PENDING_PARTITIONS_NAME} is not a "
                         f"memory id") from None


VAULT_ASSETS = [vault_promotions]
