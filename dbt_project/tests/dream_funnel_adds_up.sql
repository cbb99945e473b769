-- Every staged entry has exactly one review outcome, and nothing is staged that the gate
-- rejected or that scored below the threshold. Rows returned are failures.
select *
from {{ ref('dream_funnel') }}
where approved + edited + skipped + pending <> staged
   or staged > above_threshold - duplicates_rejected
   or above_threshold + below_threshold + rejected_secret <> candidates
