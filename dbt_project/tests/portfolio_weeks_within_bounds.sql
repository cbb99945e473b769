-- A blocked project says what blocks it (orchard refuses 'blocked' without a blocker), and
-- the week's counts are never negative. Rows returned are failures.
select *
from {{ ref('portfolio_weeks') }}
where (status = 'blocked' and blockers = 0)
   or blockers < 0 or milestones < 0 or sessions < 0 or turns < 0 or sessions > turns
