-- Every executed run has exactly as many cuts in the lake as it recorded, and each cut's
-- fate agrees with its times (a restored cut has a restore time, a purged one a purge
-- time). Rows returned are failures.
select r.run_id, r.cuts as recorded, count(c.cut_key) as in_lake, null as cut_key
from {{ ref('stg_curator_runs') }} r
left join {{ ref('stg_curator_cuts') }} c on c.curator_run_id = r.run_id
where r.status = 'executed'
group by r.run_id, r.cuts
having count(c.cut_key) <> r.cuts

union all

select curator_run_id, null, null, cut_key
from {{ ref('stg_curator_cuts') }}
where (state = 'restored') <> (restored_at is not null)
   or (state = 'purged') <> (purged_at is not null)
