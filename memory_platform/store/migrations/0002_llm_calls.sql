-- Every LLM call: what it cost and which credential paid for it (an ANTHROPIC_API_KEY in the
-- environment silently wins over a subscription login, so the source is recorded, not guessed).
-- Failed calls are rows too: refused structured answers still spent tokens.

CREATE TABLE llm_calls (
    id                bigserial PRIMARY KEY,
    created_at        timestamptz NOT NULL DEFAULT now(),
    provider          text        NOT NULL,            -- anthropic, openai, claude-cli, ...
    model             text        NOT NULL,            -- as the vendor reported it when known
    purpose           text        NOT NULL DEFAULT '', -- summary, dream_score, curator, ...
    input_tokens      integer     NOT NULL DEFAULT 0,  -- summed over the call's attempts
    output_tokens     integer     NOT NULL DEFAULT 0,
    cost_usd          numeric(14, 8),                  -- estimate; NULL: unknown price
    latency_ms        integer     NOT NULL,
    credential_source text        NOT NULL,            -- e.g. env:ANTHROPIC_API_KEY, never a key
    attempts          integer     NOT NULL,            -- structured-output re-asks included
    sdk_retries       integer     NOT NULL DEFAULT 0,  -- 429/5xx retried inside the vendor SDK
    ok                boolean     NOT NULL,
    error             text,
    run_id            text,                            -- Dagster run, when called from one
    CHECK (ok = (error IS NULL))
);

CREATE INDEX llm_calls_created_at ON llm_calls (created_at);
CREATE INDEX llm_calls_run_id ON llm_calls (run_id) WHERE run_id IS NOT NULL;
