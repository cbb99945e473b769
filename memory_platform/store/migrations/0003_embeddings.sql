-- Embeddings: derived from events, in their own table so no query on events moves vector
-- bytes. One row per (model, event, chunk); the column is an untyped `vector` so models of
-- different dimensions coexist. Each model gets its own partial HNSW index over
-- `embedding::vector(D)`, created by store.search.ensure_model on the model's first use
-- (the dimension must be a literal in the index expression, so it can't be made here).

CREATE TABLE embedding_models (
    model      text        PRIMARY KEY,             -- e.g. all-MiniLM-L6-v2, text-embedding-3-small
    -- pgvector 0.6 indexes at most 2,000 dimensions with HNSW.
    dims       integer     NOT NULL CHECK (dims BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE event_embeddings (
    event_id     bigint      NOT NULL,  -- events.id; no FK, as on events (write rate)
    model        text        NOT NULL,
    chunk        integer     NOT NULL,  -- 0-based chunk of the event's text
    span_start   integer     NOT NULL,  -- [span_start, span_end) in characters of events.text
    span_end     integer     NOT NULL,
    dims         integer     NOT NULL,
    content_hash text        NOT NULL,  -- sha256 of the exact model input (reuse key)
    embedding    vector      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, event_id, chunk),
    CHECK (vector_dims(embedding) = dims),
    CHECK (0 <= span_start AND span_start <= span_end)
);

-- Identical inputs (a repeated "continue", a re-read file) reuse a stored vector.
CREATE INDEX event_embeddings_hash_idx ON event_embeddings (model, content_hash);
