-- The reasons add up to the cuts and the refusals to the refused runs, a share is a
-- share, no count is negative. Rows returned are failures.
select *
from {{ ref('curator_history') }}
where cuts <> cuts_stale + cuts_duplicate + cuts_contradicted + cuts_wrong + cuts_secret
   or refused_runs <> refused_breaker + refused_fingerprint + refused_invalid_verdict
   or cut_share < 0 or cut_share > 1 or cuts > memories_listed
   or runs < 0 or dry_runs < 0 or restores < 0 or purges < 0 or archived_at_week_end < 0
