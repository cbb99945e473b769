"""What every domain's Dagster definitions share: the partitions (each defined once and
referenced by object), the pool of LLM-calling steps, and every run tag the project sets."""

import dagster as dg

from memory_platform.days import history_start
from memory_platform.settings import load_settings

# One partition per UTC day of event time. end_offset=1 makes today a partition too: a
# memory system's most interesting day is the one still in progress.
daily_partitions = dg.DailyPartitionsDefinition(start_date=history_start(), end_offset=1)

# One partition per shadow entry waiting for review (key: its memory id), added and removed
# by `pending_memories_sensor`; `vault_promotions` materializes them.
PENDING_PARTITIONS_NAME = "pending_memories"
pending_memories = dg.DynamicPartitionsDefinition(name=PENDING_PARTITIONS_NAME)

# The curator: one partition per (primary namespace, week). Namespaces are dynamic, added by
# `curator_namespaces_sensor` (and by a face launching a run for a new one); weeks start on
# Sunday 00:00 in MEMORY_PLATFORM_TIMEZONE (read when definitions load, an environment read)
# and the week in progress is a partition too, so the Sunday-morning run curates it.
CURATOR_NAMESPACES_NAME = "curator_namespaces"
curator_namespaces = dg.DynamicPartitionsDefinition(name=CURATOR_NAMESPACES_NAME)
curator_weeks = dg.WeeklyPartitionsDefinition(
    start_date=history_start(), day_offset=0, timezone=load_settings().timezone, end_offset=1)
curator_partitions = dg.MultiPartitionsDefinition(
    {"namespace": curator_namespaces, "week": curator_weeks})


def curator_key(namespace: str, week: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"namespace": namespace, "week": week})


# One partition per ISO week (Monday to Sunday, UTC; key: its Monday), for the weekly
# report and the orchard's snapshots. end_offset=1 makes the week in progress a partition
# too (`report` on demand, the portfolio as it stands).
weekly_partitions = dg.WeeklyPartitionsDefinition(start_date=history_start(), day_offset=1,
                                                  end_offset=1)

# One partition per primary namespace (key: its name), added by `wiki_sensor`; each is
# that namespace's markdown wiki (`vault_wiki`).
WIKI_PARTITIONS_NAME = "wiki_namespaces"
wiki_namespaces = dg.DynamicPartitionsDefinition(name=WIKI_PARTITIONS_NAME)


# Steps that call an LLM share one pool (the dream, the curator, the lint, the report):
# its limit (dagster.yaml) keeps a backfill from sending many calls at once.
LLM_POOL = "llm"

# Dagster's own tags for a single run over a partition range.
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"
PARTITION_TAG = "dagster/partition"  # a run over one partition
# Ours: who or what launched a run, and for review decisions which entry and what decision.
TRIGGER_TAG = "memory-platform/trigger"  # nightly, session-end, weekly, cli, dashboard, ...
SESSIONS_TAG = "memory-platform/sessions"  # how many ended sessions a dream run covers
ACTOR_TAG = "memory-platform/actor"
DECISION_TAG = "memory-platform/decision"
MEMORY_TAG = "memory-platform/memory-id"
# On an ingest run: what runs next over the same days once it succeeds
# (`dream_after_ingest_sensor`): "dream" for the nightly schedule and the session-end sensor.
THEN_TAG = "memory-platform/then"


def range_tags(first: str, last: str, **extra: str) -> dict[str, str]:
    """Tags asking for one run over the partition keys first..last."""
    return {RANGE_START: first, RANGE_END: last, **extra}
