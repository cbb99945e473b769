-- One row per conversation and UTC day it was active: the unit "sessions" are counted in
-- (count distinct conversation_id over any span of days).
select
    concat_ws('|', day, coalesce(conversation_id, -1)) as conversation_day_key,
    day,
    conversation_id,
    source,
    -- a conversation's project: the one its records name ('(none)' only when none does)
    coalesce(max(nullif(project, '(none)')), '(none)') as project,
    count(*) as events,
    count(*) filter (where is_turn) as turns,
    coalesce(sum(words) filter (where is_turn), 0) as words,
    min(occurred_at) as first_at,
    max(occurred_at) as last_at
from {{ ref('stg_events') }}
group by day, conversation_id, source
