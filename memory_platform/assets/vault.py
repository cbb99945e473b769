"""vault: review decisions as Dagster runs. shadow_memories -> vault_promotions.

Every pending shadow entry is a partition of `vault_promotions` (dynamic partitions
`pending_memories`, key = the shadow memory's id), added and removed by
`pending_memories_sensor`. Materializing a partition applies a decision to that entry:
approve by default, so selecting partitions in the Dagster UI and materializing them
approves them; the run config (`PromotionConfig`) carries an edit, a namespace change or a
supersede, which is how the CLI (and later the dashboard) hand over their decisions through
`promote_via_dagster`. Either way the promotion is a run, with who decided what in its
metadata and tags, downstream of the dream's assets in the lineage graph.
"""

from collections.abc import Mapping
from typing import Any, Literal

import dagster as dg

from memory_platform import review
from memory_platform.assets.dream import shadow_memories
from memory_platform.resources import CairnResource
from memory_platform.store import vault as vault_store

PENDING_PARTITIONS_NAME = "pending_memories"
# Defined here, beside the only asset that uses it (partitions.py holds the time-based
# ones); the sensor and promote_via_dagster reference this object.
pending_memories = dg.DynamicPartitionsDefinition(name=PENDING_PARTITIONS_NAME)

TRIGGER_TAG = "memory-platform/trigger"
ACTOR_TAG = "memory-platform/actor"
DECISION_TAG = "memory-platform/decision"
MEMORY_TAG = "memory-platform/memory-id"

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
    context: dg.AssetExecutionContext, cairn: CairnResource, config: PromotionConfig
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
    db = cairn.database()
    if config.action == "record":
        done, actor = _recorded(db, _memory_id(keys[0]), config)
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


def _recorded(db, memory_id: int, config: PromotionConfig) -> tuple[dict, str]:
    """The decision already made on `memory_id`, checked against the database, in the shape
    review.approve returns, and who made it. Raises ValueError when the database does not
    show that decision (the run fails: nothing is recorded that did not happen)."""
    from memory_platform.store import review as review_store

    if config.promoted_id is None:
        raise ValueError("action 'record' needs promoted_id, the memory the decision wrote")
    with db.connect() as conn:
        shadow = vault_store.get_memory(conn, memory_id)
        promoted = vault_store.get_memory(conn, config.promoted_id)
        decided = review_store.last_decision(conn, memory_id)
        old = (vault_store.get_memory(conn, config.old_memory_id)
               if config.old_memory_id is not None else None)
    if shadow is None or shadow["review"] != "approved" or decided is None:
        raise ValueError(f"memory {memory_id} is not approved "
                         f"(review: {shadow and shadow['review']}); nothing to record")
    note = shadow["review_note"] or ""
    created = promoted is not None and promoted["promoted_from"] == memory_id
    if promoted is None or not (created or f"memory {config.promoted_id}" in note):
        raise ValueError(f"memory {config.promoted_id} is not what approving memory "
                         f"{memory_id} wrote")
    if old is not None and old["superseded_by"] != config.promoted_id:
        raise ValueError(f"memory {config.old_memory_id} was not superseded by memory "
                         f"{config.promoted_id}")
    done = {
        "memory_id": memory_id, "action": "supersede" if old is not None else "approve",
        "promoted_id": promoted["id"], "namespace": promoted["namespace"],
        "text": promoted["text"], "edited": note.startswith("edited"), "created": created,
        "superseded_id": old["id"] if old is not None else None,
        "provenance": {"shadow_namespace": shadow["namespace"],
                       "dream_run_id": shadow["dream_run_id"],
                       "candidate_id": shadow["candidate_id"],
                       "source_event_ids": list(shadow["source_event_ids"] or []),
                       "score": shadow["score"], "verdict": shadow["verdict"]},
    }
    return done, decided["actor"]


def _memory_id(key: str) -> int:
    try:
        return int(key)
    except ValueError:
        raise ValueError(f"partition key {key!r} of {PENDING_PARTITIONS_NAME} is not a "
                         f"memory id") from None


vault_promotion_job = dg.define_asset_job(
    "vault_promotion_job",
    # Without the review_backlog check: a decision should take as little time as it can
    # (the check step costs ~0.2 s a run here); the check runs with every dream run on
    # shadow_memories, and with materializations launched from the UI.
    selection=dg.AssetSelection.assets(vault_promotions).without_checks(),
    description="Apply one review decision (approve, edit, change namespace, supersede) to a "
    "pending shadow entry: the promotion as a Dagster run, whichever face it came from.",
)

VAULT_ASSETS = [vault_promotions]


# --- running a decision from another face -------------------------------------------------

# Dagster's console lines would bury the CLI's own output; the run's events are still stored.
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _promotion_job() -> dg.JobDefinition:
    from memory_platform.definitions import defs

    try:
        return defs.resolve_job_def(vault_promotion_job.name)
    except dg.DagsterInvariantViolationError:  # not registered in definitions.py (yet)
        # The same job and asset objects, with the project's resources.
        return dg.Definitions(
            assets=[vault_promotions], jobs=[vault_promotion_job],
            resources={"cairn": CairnResource()},
        ).resolve_job_def(vault_promotion_job.name)


def _validate(decision: PromotionConfig) -> None:
    """Refuse what cannot succeed before a run is recorded for it."""
    if decision.namespace is not None:
        kind, _ = vault_store.parse_namespace(decision.namespace)
        if kind != "primary":
            raise ValueError(f"{decision.namespace!r} is a shadow namespace; approve into a "
                             f"primary one")
    if decision.text is not None and not decision.text.strip():
        raise ValueError("an edited memory needs some text")
    if decision.action == "supersede" and decision.old_memory_id is None:
        raise ValueError("action 'supersede' needs old_memory_id, the fact it replaces")
    if decision.action == "record" and decision.promoted_id is None:
        raise ValueError("action 'record' needs promoted_id, the memory the decision wrote")


def promote_via_dagster(
    settings_or_instance: Any,
    memory_id: int,
    decision: PromotionConfig | Mapping[str, Any] | None = None,
    *,
    trigger: str = "cli",
) -> dict:
    """Apply a decision to one pending entry as a run of `vault_promotion_job`, executed in
    this process on the instance the Dagster UI shows (a `Settings`, whose
    `$MEMORY_PLATFORM_HOME/dagster` is prepared as `memory-platform dream` does, or a
    `DagsterInstance`). The entry's partition is added first if the sensor has not yet.
    Returns the decision (as review.approve does) plus run_id. Raises ReviewConflict when
    the entry was already decided (the run is recorded as failed with that message)."""
    from memory_platform.runner import prepare_instance

    if isinstance(settings_or_instance, dg.DagsterInstance):
        instance = settings_or_instance
    else:
        instance = prepare_instance(settings_or_instance)
    if decision is None:
        decision = PromotionConfig()
    elif not isinstance(decision, PromotionConfig):
        decision = PromotionConfig(**dict(decision))
    _validate(decision)
    key = str(int(memory_id))
    # The partition must exist before a run can target it. Adding it here, on the face's
    # launch path, is the same request the sensor makes on its next tick (idempotent).
    if not instance.has_dynamic_partition(PENDING_PARTITIONS_NAME, key):
        instance.add_dynamic_partitions(PENDING_PARTITIONS_NAME, [key])
    config = decision.model_dump(exclude_none=True)
    tags = {TRIGGER_TAG: trigger, DECISION_TAG: decision.action, MEMORY_TAG: key}
    if decision.actor:
        tags[ACTOR_TAG] = decision.actor
    run = _promotion_job().execute_in_process(
        instance=instance, partition_key=key, tags=tags, raise_on_error=True,
        run_config={"ops": {vault_promotions.op.name: {"config": config}}, **_QUIET},
    )
    events = run.asset_materializations_for_node(vault_promotions.op.name)
    metadata = {k: getattr(v, "value", v) for k, v in events[-1].metadata.items()}
    return {**metadata, "run_id": run.run_id}
