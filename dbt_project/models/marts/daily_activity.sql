-- One row per (day, source, machine, project, role, hour of day), UTC: every record, the turns
-- among them (user/assistant messages), their words, and the conversations they were in.
select
    concat_ws('|', day, source, machine, project, role, hour_of_day) as activity_key,
    day,
    source,
    machine,
    project,
    role,
    hour_of_day,
    count(*) as events,
    count(*) filter (where is_turn) as turns,
    coalesce(sum(words) filter (where is_turn), 0) as words,
    count(distinct conversation_id) as sessions
from {{ ref('stg_events') }}
group by day, source, machine, project, role, hour_of_day
