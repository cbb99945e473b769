-- The dream funnel per dreamed day and primary namespace: candidates proposed -> above the
-- score threshold -> rejected as already known (duplicate / same fact) -> staged in the
-- shadow namespace -> the review's outcome (approved as staged, approved with an edit,
-- skipped, still pending). `dream_day` is the UTC day whose turns were dreamed.
with candidates as (
    select * from {{ ref('stg_dream_candidates') }}
),

verdicts as (
    select * from {{ ref('stg_dedup_verdicts') }}
),

shadows as (
    select * from {{ ref('stg_memories') }} where candidate_id is not null
),

promoted as (
    select promoted_from, min(content_hash) as content_hash
    from {{ ref('stg_memories') }}
    where promoted_from is not null
    group by promoted_from
),

staged as (
    select
        s.candidate_id,
        s.review,
        s.review = 'approved' and p.content_hash is not null
            and p.content_hash <> s.content_hash as edited
    from shadows s
    left join promoted p on p.promoted_from = s.memory_id
)

select
    concat_ws('|', c.dream_day, c.namespace) as funnel_key,
    c.dream_day,
    c.namespace,
    count(*) as candidates,
    count(*) filter (where c.status = 'proposed') as above_threshold,
    count(*) filter (where c.status = 'below_threshold') as below_threshold,
    count(*) filter (where c.status = 'rejected_secret') as rejected_secret,
    count(v.candidate_id) as judged,
    count(*) filter (where v.verdict in ('duplicate', 'same_fact')) as duplicates_rejected,
    count(*) filter (where v.verdict = 'contradiction') as contradictions,
    count(s.candidate_id) as staged,
    count(*) filter (where s.review = 'approved' and not s.edited) as approved,
    count(*) filter (where s.review = 'approved' and s.edited) as edited,
    count(*) filter (where s.review = 'skipped') as skipped,
    count(*) filter (where s.review = 'pending') as pending
from candidates c
left join verdicts v on v.candidate_id = c.candidate_id
left join staged s on s.candidate_id = c.candidate_id
group by c.dream_day, c.namespace
