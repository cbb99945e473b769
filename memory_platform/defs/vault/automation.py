"""Pending review entries as dynamic partitions of `vault_promotions`, so the Dagster UI shows
what waits for review and approves it by materializing partitions.

Each tick compares the pending shadow entries (ids only) with the instance's partitions of
`pending_memories`: it adds a partition per newly pending entry and deletes the partitions of
entries decided since (approved, skipped, from any face). The database is the state, so the
sensor keeps no cursor and a replayed tick requests nothing twice.
"""

import dagster as dg

from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import PENDING_PARTITIONS_NAME, pending_memories
from memory_platform.vault import queue


def partition_changes(pending_ids: list[int], existing: list[str]) -> tuple[list[str], list[str]]:
    """(keys to add, keys to delete): pending entries without a partition, by id, and
    partitions whose entry is no longer pending (or whose key is not a memory id)."""
    wanted = {str(i) for i in pending_ids}
    have = set(existing)
    to_add = [str(i) for i in sorted(set(pending_ids)) if str(i) not in have]
    to_delete = sorted(have - wanted,
                       key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0, k))
    return to_add, to_delete


@dg.sensor(
    name="pending_memories_sensor",
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Keeps the partitions of vault_promotions equal to the shadow entries pending "
    "review: adds new ones, deletes decided ones. Materialize partitions to approve them.",
)
def pending_memories_sensor(
    context: dg.SensorEvaluationContext, database: DatabaseResource
) -> dg.SensorResult | dg.SkipReason:
    pending_ids = queue.pending_ids(database.database())
    existing = list(context.instance.get_dynamic_partitions(PENDING_PARTITIONS_NAME))
    to_add, to_delete = partition_changes(pending_ids, existing)
    if not to_add and not to_delete:
        return dg.SkipReason(f"{len(pending_ids)} entries pending review; partitions in sync")
    requests = []
    if to_add:
        requests.append(pending_memories.build_add_request(to_add))
    if to_delete:
        requests.append(pending_memories.build_delete_request(to_delete))
    context.log.info(f"pending review: {len(pending_ids)}; adding {len(to_add)} partitions, "
                     f"deleting {len(to_delete)} of decided entries")
    return dg.SensorResult(dynamic_partitions_requests=requests)
