-- One row per cut the curator executed (a memory can be cut again by a later run after a
-- restore: the key is the run and the memory). `state` is its fate now: archived (still
-- restorable), restored, or purged.
select
    concat_ws('|', curator_run_id, memory_id) as cut_key,
    curator_run_id,
    namespace,
    memory_id,
    handle,
    reason,
    related_memory_id,
    cut_at,
    restore_until,
    restored_at,
    purged_at,
    state,
    cast(date_trunc('week', cut_at) as date) as cut_week,
    cast(date_trunc('week', restored_at) as date) as restored_week
from {{ source('lake', 'curator_cuts') }}
