-- One row per purge record: an archive deleted once its restore window ended.
select
    id as purge_id,
    memory_id,
    archive_id,
    namespace,
    reason,
    curator_run_id,
    cut_at,
    restore_until,
    purged_at,
    cast(date_trunc('week', purged_at) as date) as purged_week
from {{ source('lake', 'curator_purges') }}
