-- Shares are shares and counts are never negative. Rows returned are failures.
select *
from {{ ref('vault_health') }}
where superseded_share < 0 or superseded_share > 1
   or memories < 0 or pending_review < 0 or mean_age_days < 0
