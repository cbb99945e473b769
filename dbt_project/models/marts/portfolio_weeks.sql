-- One row per ISO week (Monday, UTC) and project with an orchard snapshot: the project as
-- it stood at the week's end (status, priority, blockers counted, deadline, archived) with
-- the week's milestones, sessions and turns, and how long it had been since its last turn
-- and its last milestone. Those day counts are taken as of the week's last day, or of the
-- day the snapshot was taken if that came first (the week in progress).
with snapshots as (
    select
        *,
        least(cast(week + interval 6 day as date), cast(taken_at as date)) as as_of
    from {{ ref('stg_orchard_snapshots') }}
)

select
    snapshot_key as portfolio_key,
    week,
    strftime(week, '%G-W%V') as iso_week,
    project_id,
    project,
    namespace,
    status,
    priority,
    archived,
    blockers,
    has_next_action,
    deadline,
    milestones,
    sessions,
    turns,
    last_active,
    last_milestone_at,
    as_of,
    date_diff('day', last_active, as_of) as days_since_active,
    date_diff('day', cast(last_milestone_at as date), as_of) as days_since_milestone,
    date_diff('day', as_of, deadline) as days_to_deadline
from snapshots
