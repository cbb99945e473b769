select
    id as candidate_id,
    run_id,
    day as dream_day,
    conversation_id,
    score,
    category,
    namespace,
    status,
    created_at
from {{ source('lake', 'dream_candidates') }}
