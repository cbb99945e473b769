-- One row per dreamed UTC day: how much the dream read (turns below its watermarks) and
-- the funnel summed over namespaces.
with watermarks as (
    select * from {{ ref('stg_dream_watermarks') }}
),

read as (
    select
        w.dream_day,
        count(distinct w.conversation_id) as conversations_read,
        count(e.event_id) as turns_read
    from watermarks w
    left join {{ ref('stg_events') }} e
        on e.day = w.dream_day
        and coalesce(e.conversation_id, 0) = w.conversation_id
        and e.event_id <= w.last_event_id
        and e.is_dreamable
    group by w.dream_day
),

funnel as (
    select
        dream_day,
        sum(candidates) as candidates,
        sum(above_threshold) as above_threshold,
        sum(duplicates_rejected) as duplicates_rejected,
        sum(staged) as staged,
        sum(approved) as approved,
        sum(edited) as edited,
        sum(skipped) as skipped,
        sum(pending) as pending
    from {{ ref('dream_funnel') }}
    group by dream_day
)

select
    coalesce(r.dream_day, f.dream_day) as dream_day,
    coalesce(r.conversations_read, 0) as conversations_read,
    coalesce(r.turns_read, 0) as turns_read,
    coalesce(f.candidates, 0) as candidates,
    coalesce(f.above_threshold, 0) as above_threshold,
    coalesce(f.duplicates_rejected, 0) as duplicates_rejected,
    coalesce(f.staged, 0) as staged,
    coalesce(f.approved, 0) as approved,
    coalesce(f.edited, 0) as edited,
    coalesce(f.skipped, 0) as skipped,
    coalesce(f.pending, 0) as pending
from read r
full outer join funnel f on f.dream_day = r.dream_day
