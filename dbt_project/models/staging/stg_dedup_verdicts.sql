select candidate_id, run_id, verdict, decided_by, similarity, created_at
from {{ source('lake', 'dedup_verdicts') }}
