-- One row per ISO week (its Monday) and project: the project as it stood at the week's end
-- and the week's milestones and activity (orchard/snapshots.py).
select
    concat_ws('|', week, project_id) as snapshot_key,
    week,
    project_id,
    name as project,
    namespace,
    status,
    priority,
    blockers,
    has_next_action,
    deadline,
    last_milestone_at,
    archived,
    milestones,
    sessions,
    turns,
    last_active,
    taken_at
from {{ source('lake', 'orchard_snapshots') }}
