select
    id as call_id,
    created_at,
    cast(created_at as date) as day,
    provider,
    model,
    coalesce(nullif(purpose, ''), '(unspecified)') as purpose,
    input_tokens,
    output_tokens,
    cost_usd,
    latency_ms,
    credential_source,
    ok,
    run_id
from {{ source('lake', 'llm_calls') }}
