-- LLM calls per UTC day, provider, model and purpose, with the asset that makes such calls
-- (seed llm_purposes; 'unmapped' for a purpose it does not list). Cost is the recorded
-- estimate; calls with no known price are counted apart, so a partial sum is never
-- mistaken for the total.
select
    concat_ws('|', c.day, c.provider, c.model, c.purpose) as spend_key,
    c.day,
    c.provider,
    c.model,
    c.purpose,
    coalesce(p.asset, 'unmapped') as asset,
    count(*) as calls,
    count(*) filter (where not c.ok) as failed_calls,
    sum(c.input_tokens) as input_tokens,
    sum(c.output_tokens) as output_tokens,
    coalesce(sum(c.cost_usd), 0) as cost_usd,
    count(*) filter (where c.cost_usd is null) as calls_cost_unknown,
    sum(c.latency_ms) as latency_ms
from {{ ref('stg_llm_calls') }} c
left join {{ ref('llm_purposes') }} p on p.purpose = c.purpose
group by c.day, c.provider, c.model, c.purpose, p.asset
