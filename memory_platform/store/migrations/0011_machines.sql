-- Many machines, one memory (issue 24): every event records the machine it was collected on.
--
-- Row 1 is this database's own machine (`is_local`): every event imported before this
-- migration was read from this machine's folders, so the column's default is 1 and adding it
-- rewrites nothing (a constant default is stored once in the catalog). The machine's stable
-- id (`uid`) is the one it made at its first run (HOME/machine.json); the local row takes it
-- the first time the platform runs after this migration. Other machines are rows made by
-- `memory-platform token create --kind collector --machine NAME`; they push through
-- POST /ingest/{machine}/records.

CREATE TABLE machines (
    id                bigserial   PRIMARY KEY,
    uid               text        UNIQUE,               -- NULL until the machine says it
    name              text        NOT NULL UNIQUE
        CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    is_local          boolean     NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    last_collected_at timestamptz                        -- last push received (remote ones)
);
CREATE UNIQUE INDEX machines_one_local_idx ON machines (is_local) WHERE is_local;
INSERT INTO machines (id, name, is_local) VALUES (1, 'local', true);
SELECT setval(pg_get_serial_sequence('machines', 'id'), 1);

ALTER TABLE events ADD COLUMN machine_id bigint NOT NULL DEFAULT 1;
CREATE INDEX events_machine_idx ON events (machine_id, occurred_at);
-- The machine a catalogued file holds the records of (its first registration decides): a
-- later import of it (a daily partition's window) gives its new events that machine.
ALTER TABLE source_files ADD COLUMN machine_id bigint NOT NULL DEFAULT 1;

-- A collector token is bound to one machine and names no namespace.
ALTER TABLE api_tokens ADD COLUMN machine_id bigint REFERENCES machines (id);
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_kind_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_kind_check
    CHECK (kind IN ('person', 'agent', 'collector'));
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_namespaces_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_namespaces_check
    CHECK (kind = 'collector' OR cardinality(namespaces) > 0);
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_collector_machine_check
    CHECK ((kind = 'collector') = (machine_id IS NOT NULL));
