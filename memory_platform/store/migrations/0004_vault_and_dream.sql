-- vault: durable memories, one namespace per project or persona; and still: the dream
-- cycle's candidates, verdicts and watermarks.
--
-- The safety property: nothing autonomous writes to a primary namespace. A dream's output
-- lives in `<namespace>__dream`; an agent's in `<namespace>__ideas`. The CHECK on memories
-- makes PostgreSQL refuse a dream-sourced row in a primary namespace unless it carries the
-- shadow entry it was promoted from (the review gate's promotion).

CREATE TABLE vault_namespaces (
    name       text        PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9._-]*$'),
    kind       text        NOT NULL CHECK (kind IN ('primary', 'dream', 'ideas')),
    -- for shadows: the primary namespace they stage for (created with them)
    primary_of text        REFERENCES vault_namespaces (name),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'primary') = (primary_of IS NULL)),
    CHECK (kind = 'primary' OR name = primary_of || '__' || kind)
);

CREATE TABLE memories (
    id               bigserial   PRIMARY KEY,
    namespace        text        NOT NULL REFERENCES vault_namespaces (name),
    text             text        NOT NULL CHECK (btrim(text) <> ''),
    category         text        NOT NULL DEFAULT 'user'
        CHECK (category IN ('user', 'feedback', 'project', 'reference')),
    source           text        NOT NULL CHECK (source IN ('hand', 'dream', 'import', 'agent')),
    status           text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    -- Shadow entries only: where the review stands. NULL in primary namespaces.
    review           text        CHECK (review IN ('pending', 'approved', 'skipped')),
    review_note      text,
    -- provenance
    dream_run_id     text,
    candidate_id     bigint      UNIQUE,   -- dream_candidates.id: staging is idempotent
    source_event_ids bigint[]    NOT NULL DEFAULT '{}',
    score            smallint    CHECK (score BETWEEN 1 AND 10),
    why              text,
    verdict          text,                 -- the dedup verdict that let it through
    promoted_from    bigint      REFERENCES memories (id),
    -- bi-temporal: valid time (when the fact holds) and record time (created/updated)
    valid_from       timestamptz NOT NULL DEFAULT now(),
    valid_to         timestamptz,
    superseded_by    bigint      REFERENCES memories (id),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    content_hash     text        NOT NULL,  -- sha256 of the normalized text
    CHECK (valid_to IS NULL OR valid_to >= valid_from),
    -- a dream writes shadows only; a dream fact reaches a primary namespace only by promotion
    CHECK (source <> 'dream' OR namespace LIKE '%\_\_dream' OR promoted_from IS NOT NULL)
);

CREATE INDEX memories_namespace_idx ON memories (namespace, id);
CREATE INDEX memories_review_idx ON memories (namespace, review, created_at)
    WHERE review IS NOT NULL;
CREATE INDEX memories_hash_idx ON memories (namespace, content_hash);

-- Vectors of memories, per model, in their own table (as for events). Each model gets a
-- partial HNSW index over embedding::vector(D), created on first use.
CREATE TABLE memory_embeddings (
    memory_id  bigint      NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    model      text        NOT NULL REFERENCES embedding_models (model),
    dims       integer     NOT NULL,
    embedding  vector      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model, memory_id),
    CHECK (vector_dims(embedding) = dims)
);

-- Per (conversation, day): the highest event id already dreamed. Event ids grow in import
-- order, so a transcript that grew later is dreamed again from where it stopped, and a
-- backfill of other days is unaffected.
CREATE TABLE dream_watermarks (
    conversation_id bigint      NOT NULL,
    day             date        NOT NULL,
    last_event_id   bigint      NOT NULL,
    run_id          text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, day)
);

CREATE TABLE dream_candidates (
    id               bigserial   PRIMARY KEY,
    run_id           text        NOT NULL,
    day              date        NOT NULL,     -- the partition whose events proposed it
    conversation_id  bigint,
    text             text        NOT NULL,
    score            smallint    NOT NULL CHECK (score BETWEEN 1 AND 10),
    category         text        NOT NULL
        CHECK (category IN ('user', 'feedback', 'project', 'reference')),
    namespace        text        NOT NULL,     -- the primary namespace routing chose
    why              text        NOT NULL,
    source_event_ids bigint[]    NOT NULL,
    -- proposed: goes to the dedup gate; below_threshold / rejected_secret: recorded, stops
    status           text        NOT NULL
        CHECK (status IN ('proposed', 'below_threshold', 'rejected_secret')),
    llm_call_id      bigint,
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX dream_candidates_day_idx ON dream_candidates (day, status);

CREATE TABLE dedup_verdicts (
    candidate_id   bigint      PRIMARY KEY REFERENCES dream_candidates (id),
    run_id         text        NOT NULL,
    -- new and contradiction go on to staging; duplicate and same_fact stop here
    verdict        text        NOT NULL
        CHECK (verdict IN ('new', 'duplicate', 'same_fact', 'contradiction')),
    decided_by     text        NOT NULL CHECK (decided_by IN ('vector', 'judge')),
    neighbour_id   bigint      REFERENCES memories (id),
    -- the neighbour may be another candidate of the same run (not yet a memory)
    neighbour_candidate_id bigint REFERENCES dream_candidates (id),
    neighbour_text text,
    similarity     real,
    reason         text        NOT NULL,
    thresholds     jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- Every state change of a memory: who or what, when, before and after.
CREATE TABLE vault_audit (
    id         bigserial   PRIMARY KEY,
    memory_id  bigint      REFERENCES memories (id),
    actor      text        NOT NULL,  -- cli:<user>, dream:<run id>, api:<token name>, ...
    action     text        NOT NULL,  -- add, edit, approve, skip, archive, supersede, ...
    before     jsonb,
    after      jsonb,
    at         timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX vault_audit_memory_idx ON vault_audit (memory_id, at);
