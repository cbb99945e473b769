-- recall: categories and topics at write time, sensitive data, the wiki's file state and
-- lint findings.
--
-- Categories: the closed set grows by `decision` (what was chosen and why) and `episode`
-- (something that happened on a day; also where a memory goes when the classifier is
-- unsure, never into a wrong topic). Every memory gets a topic, a short slug; NULL means
-- "not classified yet" (rows from before this migration until recall's backfill, or a
-- direct store write that named none), never a topic of its own.

ALTER TABLE memories DROP CONSTRAINT memories_category_check;
ALTER TABLE memories ADD CONSTRAINT memories_category_check
    CHECK (category IN ('user', 'feedback', 'project', 'reference', 'decision', 'episode'));
ALTER TABLE dream_candidates DROP CONSTRAINT dream_candidates_category_check;
ALTER TABLE dream_candidates ADD CONSTRAINT dream_candidates_category_check
    CHECK (category IN ('user', 'feedback', 'project', 'reference', 'decision', 'episode'));

ALTER TABLE memories ADD COLUMN topic text
    CHECK (topic ~ '^[a-z0-9][a-z0-9-]{0,47}$');
ALTER TABLE dream_candidates ADD COLUMN topic text
    CHECK (topic ~ '^[a-z0-9][a-z0-9-]{0,47}$');

-- Personal data or a credential-looking string in the text (privacy/personal.py): such a
-- memory is never injected into a session, never written to the wiki unless a setting says
-- so, and shown masked in the dashboard until revealed. Set by every write of the text.
-- sensitive_kinds names what was found (email, phone, card, iban, government_id, address,
-- credential), never the value.
ALTER TABLE memories ADD COLUMN sensitive boolean NOT NULL DEFAULT false;
ALTER TABLE memories ADD COLUMN sensitive_kinds text[] NOT NULL DEFAULT '{}';

-- The backfill and the wiki read a namespace's current memories by topic.
CREATE INDEX memories_topic_idx ON memories (namespace, topic) WHERE status = 'active';
CREATE INDEX memories_unclassified_idx ON memories (id) WHERE topic IS NULL;
-- The prompt hook's keyword relevance: full-text over current memories (store/recall.py).
CREATE INDEX memories_text_search_idx ON memories
    USING gin (to_tsvector('english'::regconfig, text)) WHERE status = 'active';

-- What the wiki build last wrote, per file: a rebuild compares a file's bytes with
-- `sha256` before writing it, so a person's edit not yet taken in is never overwritten;
-- `lines` (memory id -> the line as written) is what an edit is compared with to tell an
-- edited line from a deleted or an added one.
CREATE TABLE wiki_files (
    namespace  text        NOT NULL REFERENCES vault_namespaces (name),
    path       text        NOT NULL CHECK (path !~ '(^/|\.\.)'),  -- under wiki/<namespace>/
    sha256     text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    lines      jsonb       NOT NULL DEFAULT '{}',
    written_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, path)
);

-- Findings a person resolves at the review gate: lint's (contradictions, stale claims,
-- orphans, near-duplicates) and the wiki intake's (an edit that could not be mapped, a
-- file changed since the last build that could not be taken in). A finding never changes
-- the vault by itself; resolving it does, audited. `fingerprint` makes a re-run add
-- nothing twice (and a finding a person kept is not raised again for the same texts).
CREATE TABLE lint_findings (
    id            bigserial   PRIMARY KEY,
    namespace     text        NOT NULL,
    kind          text        NOT NULL CHECK (kind IN ('contradiction', 'stale', 'orphan',
                                  'near_duplicate', 'unmapped_edit', 'wiki_conflict')),
    memory_ids    bigint[]    NOT NULL DEFAULT '{}',
    evidence      jsonb       NOT NULL,
    fingerprint   text        NOT NULL UNIQUE,
    -- open: waits for a person; superseded / archived / kept: what they decided;
    -- obsolete: the memories it named changed or ended since (closed by a later run)
    status        text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'superseded',
                                  'archived', 'kept', 'obsolete')),
    run_id        text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    resolved_at   timestamptz,
    resolved_by   text,
    CHECK ((status = 'open') = (resolved_at IS NULL))
);

CREATE INDEX lint_findings_open_idx ON lint_findings (namespace, kind) WHERE status = 'open';
