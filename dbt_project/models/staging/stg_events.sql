-- A table, not a view like the other staging models: its word count (a regex split of every
-- text) is the costliest expression of the project, and two marts read it.
{{ config(materialized='table') }}

-- One row per raw event (any record: turn, tool call, tool result, meta). Times are UTC
-- (the profile sets DuckDB's TimeZone), so `day` matches the daily partitions.
select
    id as event_id,
    source,
    conversation_id,
    role,
    kind,
    coalesce(project, '(none)') as project,
    coalesce(machine, 'local') as machine,
    occurred_at,
    cast(occurred_at as date) as day,
    hour(occurred_at) as hour_of_day,
    on_active_branch,
    -- What a person would call a turn: a message said by the user or the assistant.
    role in ('user', 'assistant') and kind = 'message' as is_turn,
    -- Only what the dream reads counts as read by it (store/dream.py: DREAM_ROLES/KINDS).
    role in ('user', 'assistant') and kind = 'message' and on_active_branch
        and trim(text) <> '' as is_dreamable,
    case when trim(text) = '' then 0
         else len(string_split_regex(trim(text), '\s+')) end as words
from {{ source('lake', 'raw_events') }}
