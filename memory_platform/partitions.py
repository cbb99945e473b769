"""Every PartitionsDefinition, defined once and referenced by object."""

import dagster as dg

from memory_platform.days import history_start

# One partition per UTC day of event time. end_offset=1 makes today a partition too: a
# memory system's most interesting day is the one still in progress.
daily_partitions = dg.DailyPartitionsDefinition(start_date=history_start(), end_offset=1)

# One partition per shadow entry waiting for review (key: its memory id), added and removed
# by `pending_memories_sensor`; `vault_promotions` materializes them.
PENDING_PARTITIONS_NAME = "pending_memories"
pending_memories = dg.DynamicPartitionsDefinition(name=PENDING_PARTITIONS_NAME)

# One partition per ISO week (Monday to Sunday, UTC; key: its Monday), for the weekly
# report and the orchard's snapshots. end_offset=1 makes the week in progress a partition
# too (`report` on demand, the portfolio as it stands).
weekly_partitions = dg.WeeklyPartitionsDefinition(start_date=history_start(), day_offset=1,
                                                  end_offset=1)

# One partition per primary namespace (key: its name), added by `wiki_sensor`; each is
# that namespace's markdown wiki (`vault_wiki`).
WIKI_PARTITIONS_NAME = "wiki_namespaces"
wiki_namespaces = dg.DynamicPartitionsDefinition(name=WIKI_PARTITIONS_NAME)
