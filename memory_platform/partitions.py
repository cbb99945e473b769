"""Every PartitionsDefinition, defined once and referenced by object."""

import dagster as dg

from memory_platform.config import history_start

# One partition per UTC day of event time. end_offset=1 makes today a partition too: a
# memory system's most interesting day is the one still in progress.
daily_partitions = dg.DailyPartitionsDefinition(start_date=history_start(), end_offset=1)
