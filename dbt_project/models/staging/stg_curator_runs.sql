-- One row per curator verdict (curator_runs). `curator_week` is the partition it weeded (a
-- Sunday, local time); `asked_week` and `decided_week` are the ISO weeks (Monday, UTC)
-- when the agent was asked and when the run was executed or refused, the calendar of the
-- report and of the other marts.
select
    id as run_id,
    namespace,
    week as curator_week,
    dagster_run_id,
    status,
    dry_run,
    refusal,
    listed,
    ceiling,
    max_cuts,
    proposed_cuts,
    proposed_merges,
    proposed_contradictions,
    cuts,
    staged,
    agent,
    prompt_version,
    created_at,
    decided_at,
    cast(date_trunc('week', created_at) as date) as asked_week,
    cast(date_trunc('week', decided_at) as date) as decided_week
from {{ source('lake', 'curator_runs') }}
