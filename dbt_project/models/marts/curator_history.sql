-- One row per ISO week (Monday, UTC) and namespace the curator has worked on, from the
-- namespace's first curator record to the last week with any: the verdicts asked for
-- (dry runs apart), the runs executed and refused (by refusal), the cuts by reason, the
-- share of the listed memories cut, the restores, the purges, and the archive's size at
-- the week's end. Each record counts in the week it happened: a verdict when the agent
-- was asked, an execution or a refusal when decided, a cut when executed, a restore and a
-- purge when done. Refusals count non-dry runs (a dry run is never executed).
with runs as (
    select * from {{ ref('stg_curator_runs') }}
),

cuts as (
    select * from {{ ref('stg_curator_cuts') }}
),

purges as (
    select * from {{ ref('stg_curator_purges') }}
),

happened as (
    select namespace, asked_week as week from runs
    union all
    select namespace, decided_week from runs where decided_week is not null
    union all
    select namespace, restored_week from cuts where restored_week is not null
    union all
    select namespace, purged_week from purges
),

spans as (
    select namespace, min(week) as first_week
    from happened
    group by namespace
),

bounds as (
    select min(week) as first_week, max(week) as last_week from happened
),

weeks as (
    select cast(unnest(generate_series(first_week, last_week, interval 7 day)) as date)
        as week
    from bounds
),

grid as (
    select w.week, s.namespace, cast(w.week + interval 7 day as timestamptz) as week_end
    from weeks w
    join spans s on w.week >= s.first_week
),

asked as (
    select
        namespace,
        asked_week as week,
        count(*) filter (where not dry_run) as runs,
        count(*) filter (where dry_run) as dry_runs
    from runs
    group by namespace, asked_week
),

decided as (
    select
        namespace,
        decided_week as week,
        count(*) filter (where status = 'executed') as executed_runs,
        count(*) filter (where status = 'refused' and not dry_run) as refused_runs,
        count(*) filter (where refusal = 'breaker' and not dry_run) as refused_breaker,
        count(*) filter (where refusal = 'fingerprint' and not dry_run) as refused_fingerprint,
        count(*) filter (where refusal = 'invalid_verdict' and not dry_run)
            as refused_invalid_verdict,
        coalesce(sum(listed) filter (where status = 'executed'), 0) as memories_listed,
        coalesce(sum(staged) filter (where status = 'executed'), 0) as staged_for_review
    from runs
    where decided_week is not null
    group by namespace, decided_week
),

cut as (
    select
        namespace,
        cut_week as week,
        count(*) as cuts,
        count(*) filter (where reason = 'stale') as cuts_stale,
        count(*) filter (where reason = 'duplicate') as cuts_duplicate,
        count(*) filter (where reason = 'contradicted') as cuts_contradicted,
        count(*) filter (where reason = 'wrong') as cuts_wrong,
        count(*) filter (where reason = 'secret') as cuts_secret
    from cuts
    group by namespace, cut_week
),

restored as (
    select namespace, restored_week as week, count(*) as restores
    from cuts
    where restored_week is not null
    group by namespace, restored_week
),

purged as (
    select namespace, purged_week as week, count(*) as purges
    from purges
    group by namespace, purged_week
),

archive as (
    select
        g.week,
        g.namespace,
        count(c.cut_key) as archived_at_week_end
    from grid g
    left join cuts c
        on c.namespace = g.namespace
        and c.cut_at < g.week_end
        and (c.restored_at is null or c.restored_at >= g.week_end)
        and (c.purged_at is null or c.purged_at >= g.week_end)
    group by g.week, g.namespace
)

select
    concat_ws('|', g.week, g.namespace) as history_key,
    g.week,
    strftime(g.week, '%G-W%V') as iso_week,
    g.namespace,
    coalesce(a.runs, 0) as runs,
    coalesce(a.dry_runs, 0) as dry_runs,
    coalesce(d.executed_runs, 0) as executed_runs,
    coalesce(d.refused_runs, 0) as refused_runs,
    coalesce(d.refused_breaker, 0) as refused_breaker,
    coalesce(d.refused_fingerprint, 0) as refused_fingerprint,
    coalesce(d.refused_invalid_verdict, 0) as refused_invalid_verdict,
    coalesce(d.memories_listed, 0) as memories_listed,
    coalesce(c.cuts, 0) as cuts,
    coalesce(c.cuts_stale, 0) as cuts_stale,
    coalesce(c.cuts_duplicate, 0) as cuts_duplicate,
    coalesce(c.cuts_contradicted, 0) as cuts_contradicted,
    coalesce(c.cuts_wrong, 0) as cuts_wrong,
    coalesce(c.cuts_secret, 0) as cuts_secret,
    coalesce(c.cuts / nullif(d.memories_listed, 0), 0) as cut_share,
    coalesce(d.staged_for_review, 0) as staged_for_review,
    coalesce(r.restores, 0) as restores,
    coalesce(p.purges, 0) as purges,
    ar.archived_at_week_end
from grid g
left join asked a on a.namespace = g.namespace and a.week = g.week
left join decided d on d.namespace = g.namespace and d.week = g.week
left join cut c on c.namespace = g.namespace and c.week = g.week
left join restored r on r.namespace = g.namespace and r.week = g.week
left join purged p on p.namespace = g.namespace and p.week = g.week
join archive ar on ar.namespace = g.namespace and ar.week = g.week
