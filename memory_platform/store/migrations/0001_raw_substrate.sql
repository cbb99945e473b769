-- cairn: the raw substrate. Every turn verbatim, plus the catalog of files it came from.
-- Embeddings get their own table in a later migration: no vector column on events.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE source_files (
    id              bigserial PRIMARY KEY,
    kind            text        NOT NULL,             -- adapter: claude-code, chatgpt, ...
    path            text        NOT NULL,             -- absolute path (a zip counts as one file)
    size_bytes      bigint      NOT NULL,
    mtime_ns        bigint      NOT NULL,
    sha256          text        NOT NULL,             -- of the whole file when last seen
    min_event_at    timestamptz,
    max_event_at    timestamptz,
    event_count     bigint      NOT NULL DEFAULT 0,   -- events the file holds (last parse)
    error_count     integer     NOT NULL DEFAULT 0,
    -- State of the last complete import; the catalog scan leaves these alone.
    imported_sha256 text,
    parsed_bytes    bigint      NOT NULL DEFAULT 0,   -- append-only files: consumed prefix
    parsed_lines    bigint      NOT NULL DEFAULT 0,
    prefix_sha256   text,                              -- sha256 of bytes [0, parsed_bytes)
    first_seen_at   timestamptz NOT NULL DEFAULT now(),
    last_scan_at    timestamptz,
    last_import_at  timestamptz,
    UNIQUE (kind, path)
);

CREATE TABLE conversations (
    id            bigserial PRIMARY KEY,
    source        text        NOT NULL,
    native_id     text        NOT NULL,
    title         text,
    project       text,
    started_at    timestamptz,
    attrs         jsonb       NOT NULL DEFAULT '{}',
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source, native_id)
);

CREATE TABLE events (
    id                     bigserial PRIMARY KEY,
    source                 text        NOT NULL,
    native_id              text        NOT NULL,
    -- No foreign keys on this hot table: their per-row trigger checks halved the import
    -- rate. Both ids are resolved by store.raw.write_events in the same transaction.
    conversation_id        bigint,
    parent_native_id       text,
    role                   text        NOT NULL
        CHECK (role IN ('user', 'assistant', 'system', 'tool', 'other')),
    kind                   text        NOT NULL,
    author                 text,                       -- model or tool name
    occurred_at            timestamptz NOT NULL,
    text                   text        NOT NULL,       -- readable text, verbatim
    raw                    jsonb       NOT NULL,       -- the original record
    project                text,                       -- cwd or export project
    git_branch             text,
    is_sidechain           boolean     NOT NULL DEFAULT false,
    on_active_branch       boolean     NOT NULL DEFAULT true,
    attrs                  jsonb       NOT NULL DEFAULT '{}',
    content_hash           text        NOT NULL,
    source_file_id         bigint,
    source_line            integer,
    ingested_at            timestamptz NOT NULL DEFAULT now(),
    -- tsvector caps at 1 MB, so index the first 200k characters of very long tool output.
    text_search            tsvector GENERATED ALWAYS AS
        (to_tsvector('english'::regconfig, left(text, 200000))) STORED,
    UNIQUE (source, native_id)
);

CREATE INDEX events_occurred_at_idx ON events (occurred_at);
CREATE INDEX events_conversation_idx ON events (conversation_id, occurred_at);
CREATE INDEX events_text_search_idx ON events USING gin (text_search);

-- A record whose content changed under the same native id (an edited ChatGPT message, a
-- re-written Gemini CLI record). The events row keeps the first version; later ones land here.
CREATE TABLE event_revisions (
    id             bigserial PRIMARY KEY,
    event_id       bigint      NOT NULL REFERENCES events (id),
    content_hash   text        NOT NULL,
    occurred_at    timestamptz NOT NULL,
    text           text        NOT NULL,
    raw            jsonb       NOT NULL,
    source_file_id bigint      REFERENCES source_files (id),
    source_line    integer,
    ingested_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_id, content_hash)
);

CREATE TABLE import_runs (
    id              bigserial PRIMARY KEY,
    origin          text        NOT NULL,              -- cli, dagster:<run id>, ...
    kind            text,
    target          text        NOT NULL,
    window_start    timestamptz,
    window_end      timestamptz,
    started_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    files           integer     NOT NULL DEFAULT 0,
    events_new      bigint      NOT NULL DEFAULT 0,
    events_existing bigint      NOT NULL DEFAULT 0,
    events_revised  bigint      NOT NULL DEFAULT 0,
    error_count     integer     NOT NULL DEFAULT 0,
    status          text        NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'succeeded', 'failed'))
);

CREATE TABLE import_errors (
    id            bigserial PRIMARY KEY,
    import_run_id bigint      NOT NULL REFERENCES import_runs (id),
    file          text        NOT NULL,
    line          integer,
    record_id     text,
    message       text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
