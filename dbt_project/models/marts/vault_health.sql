-- One row per UTC day and primary namespace, from the first day the vault changed to the
-- last: its size at the end of the day (current, active facts), what was added that day,
-- the average age of what it holds, the share of everything it ever held that has been
-- superseded, and the review backlog of its shadow namespaces (entries staged by then and
-- not yet decided, and how long the oldest has waited). An archived memory, or one the
-- curator cut (status 'cut', later 'purged'), counts as gone from its last 'archive' or
-- 'cut' audit entry (or its last update).
with memories as (
    select * from {{ ref('stg_memories') }}
),

audit as (
    select
        memory_id,
        max(acted_at) filter (where action in ('archive', 'cut')) as archived_at,
        min(acted_at) filter (where action in ('approve', 'skip')) as decided_at
    from {{ ref('stg_vault_audit') }}
    group by memory_id
),

facts as (
    select
        m.*,
        case when m.status in ('archived', 'cut', 'purged')
             then coalesce(a.archived_at, m.updated_at) end
            as gone_at,
        case when m.review in ('approved', 'skipped')
             then coalesce(a.decided_at, m.updated_at) end as decided_at
    from memories m
    left join audit a on a.memory_id = m.memory_id
),

bounds as (
    select
        min(cast(created_at as date)) as first_day,
        max(cast(greatest(created_at, updated_at) as date)) as last_day
    from memories
),

days as (
    select cast(unnest(generate_series(first_day, last_day, interval 1 day)) as date) as day
    from bounds
),

grid as (
    select
        d.day,
        cast(d.day + interval 1 day as timestamptz) as day_end,
        n.namespace
    from days d
    cross join (select distinct primary_namespace as namespace from memories) n
)

select
    concat_ws('|', g.day, g.namespace) as health_key,
    g.day,
    g.namespace,
    count(*) filter (
        where f.namespace_kind = 'primary' and f.created_at < g.day_end
          and (f.valid_to is null or f.valid_to >= g.day_end)
          and (f.gone_at is null or f.gone_at >= g.day_end)
    ) as memories,
    count(*) filter (
        where f.namespace_kind = 'primary' and cast(f.created_at as date) = g.day
    ) as added,
    count(*) filter (
        where f.namespace_kind = 'primary' and f.valid_to < g.day_end
    ) as superseded,
    coalesce(
        count(*) filter (where f.namespace_kind = 'primary' and f.valid_to < g.day_end)
        / nullif(count(*) filter (
            where f.namespace_kind = 'primary' and f.created_at < g.day_end), 0),
        0) as superseded_share,
    coalesce(avg(epoch(g.day_end - f.created_at) / 86400.0) filter (
        where f.namespace_kind = 'primary' and f.created_at < g.day_end
          and (f.valid_to is null or f.valid_to >= g.day_end)
          and (f.gone_at is null or f.gone_at >= g.day_end)
    ), 0) as mean_age_days,
    count(*) filter (
        where f.namespace_kind <> 'primary' and f.review is not null
          and f.created_at < g.day_end
          and (f.decided_at is null or f.decided_at >= g.day_end)
    ) as pending_review,
    coalesce(max(epoch(g.day_end - f.created_at) / 86400.0) filter (
        where f.namespace_kind <> 'primary' and f.review is not null
          and f.created_at < g.day_end
          and (f.decided_at is null or f.decided_at >= g.day_end)
    ), 0) as oldest_pending_days
from grid g
left join facts f on f.primary_namespace = g.namespace
group by g.day, g.namespace
