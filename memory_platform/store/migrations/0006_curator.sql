-- curator: the weekly weeding of a namespace. A model proposes cuts by small integer handle;
-- code validates them, re-verifies the listing and executes them. Nothing is hard-deleted by
-- the curator: a cut moves the memory's text and vectors into an archive and leaves its row
-- in `memories` as a tombstone (status 'cut'); a restore puts them back; after the retention
-- window a purge deletes the archive, turns the tombstone into status 'purged' and records
-- what it purged.
--
-- Two rules are held here as well as in code and in blocking asset checks:
-- * tombstones == archives: a memory has status 'cut' exactly when one archive row holds it
--   (a deferred constraint trigger checks every change at commit);
-- * the ceiling: one curator run never archives more memories than its `max_cuts`.

ALTER TABLE memories DROP CONSTRAINT memories_status_check;
ALTER TABLE memories ADD CONSTRAINT memories_status_check
    CHECK (status IN ('active', 'archived', 'cut', 'purged'));

-- The invariant check and `status` count tombstones per namespace without a scan.
CREATE INDEX memories_cut_idx ON memories (namespace) WHERE status = 'cut';

-- One row per verdict: what the model was shown (the handles and the listing's
-- fingerprint), what it proposed, and what became of it.
CREATE TABLE curator_runs (
    id              bigserial   PRIMARY KEY,
    namespace       text        NOT NULL REFERENCES vault_namespaces (name),
    week            date        NOT NULL,   -- the week partition (its first day)
    dagster_run_id  text        NOT NULL,   -- the run that asked the model
    status          text        NOT NULL CHECK (status IN ('proposed', 'refused', 'executed')),
    dry_run         boolean     NOT NULL DEFAULT false,  -- shown, never executed
    refusal         text        CHECK (refusal IN ('invalid_verdict', 'breaker', 'fingerprint')),
    refusal_detail  text,
    listed          integer     NOT NULL CHECK (listed >= 0),
    memory_ids      bigint[]    NOT NULL,   -- handle h is memory_ids[h]
    fingerprint     text        NOT NULL,
    ceiling         double precision NOT NULL CHECK (ceiling >= 0 AND ceiling <= 1),
    max_cuts        integer     NOT NULL CHECK (max_cuts >= 0),
    proposed_cuts   integer     NOT NULL CHECK (proposed_cuts >= 0),
    verdict         jsonb       NOT NULL,   -- cuts, merges, contradictions as proposed
    chunks          integer     NOT NULL DEFAULT 1,
    listing_tokens  integer     NOT NULL DEFAULT 0,  -- estimated, 4 characters a token
    repo            text,
    agent           text        NOT NULL,   -- provider/model
    prompt_version  text        NOT NULL,
    cuts            integer     NOT NULL DEFAULT 0,  -- executed
    staged          integer     NOT NULL DEFAULT 0,  -- merges/contradictions staged
    executed_by     text,                   -- the run that executed it
    created_at      timestamptz NOT NULL DEFAULT now(),
    decided_at      timestamptz,
    CHECK ((status = 'refused') = (refusal IS NOT NULL)),
    CHECK (NOT (dry_run AND status = 'executed')),
    CHECK (cardinality(memory_ids) = listed),
    CHECK (cuts <= max_cuts)
);

-- A week's partition executes once: re-running it cuts nothing twice.
CREATE UNIQUE INDEX curator_runs_one_execution ON curator_runs (namespace, week)
    WHERE status = 'executed';
CREATE INDEX curator_runs_partition_idx ON curator_runs (namespace, week, id);
CREATE INDEX curator_runs_dagster_idx ON curator_runs (dagster_run_id);
CREATE INDEX curator_runs_created_idx ON curator_runs (created_at);

-- The restorable copy of a cut memory: the row as it was, the verdict's reason and evidence,
-- and (below) its vectors. Deleted by a restore (the memory is active again) or by the purge.
CREATE TABLE curator_archive (
    id                bigserial   PRIMARY KEY,
    memory_id         bigint      NOT NULL UNIQUE REFERENCES memories (id),
    namespace         text        NOT NULL,
    curator_run_id    bigint      NOT NULL REFERENCES curator_runs (id),
    dagster_run_id    text        NOT NULL,  -- the run that cut it
    handle            integer     NOT NULL,
    reason            text        NOT NULL
        CHECK (reason IN ('stale', 'duplicate', 'contradicted', 'wrong', 'secret')),
    related_memory_id bigint      REFERENCES memories (id),  -- duplicate of / contradicted by
    evidence          jsonb       NOT NULL,
    note              text,
    memory            jsonb       NOT NULL,  -- to_jsonb(memories row) before the cut
    content_hash      text        NOT NULL,
    cut_at            timestamptz NOT NULL DEFAULT now(),
    restore_until     timestamptz NOT NULL,
    CHECK (restore_until > cut_at)
);

CREATE INDEX curator_archive_namespace_idx ON curator_archive (namespace, cut_at);
CREATE INDEX curator_archive_run_idx ON curator_archive (curator_run_id);
CREATE INDEX curator_archive_due_idx ON curator_archive (restore_until);

-- Vectors of archived memories, in their own table as everywhere else (never read by a
-- listing); deleted with their archive.
CREATE TABLE curator_archive_vectors (
    archive_id bigint      NOT NULL REFERENCES curator_archive (id) ON DELETE CASCADE,
    model      text        NOT NULL,
    dims       integer     NOT NULL,
    embedding  vector      NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (archive_id, model)
);

-- What the purge deleted: enough to audit it (which memory, which namespace, the hash of
-- its text, why it had been cut, when), nothing that restores it.
CREATE TABLE curator_purges (
    id             bigserial   PRIMARY KEY,
    memory_id      bigint      NOT NULL REFERENCES memories (id),
    archive_id     bigint      NOT NULL UNIQUE,
    namespace      text        NOT NULL,
    content_hash   text        NOT NULL,
    reason         text        NOT NULL,
    curator_run_id bigint      REFERENCES curator_runs (id),
    cut_at         timestamptz NOT NULL,
    restore_until  timestamptz NOT NULL,
    purged_at      timestamptz NOT NULL,
    purged_by      text        NOT NULL
);

CREATE INDEX curator_purges_namespace_idx ON curator_purges (namespace, purged_at);

-- Merges and flagged contradictions are never executed by the curator: each is staged as a
-- review entry in `<ns>__dream`; approving it supersedes these sources.
CREATE TABLE curator_proposals (
    id                bigserial   PRIMARY KEY,
    curator_run_id    bigint      NOT NULL REFERENCES curator_runs (id),
    namespace         text        NOT NULL,
    week              date        NOT NULL,
    kind              text        NOT NULL CHECK (kind IN ('merge', 'contradiction')),
    source_memory_ids bigint[]    NOT NULL CHECK (cardinality(source_memory_ids) >= 2),
    shadow_memory_id  bigint      NOT NULL UNIQUE REFERENCES memories (id),
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace, week, kind, source_memory_ids)
);

CREATE INDEX curator_proposals_run_idx ON curator_proposals (curator_run_id);

-- tombstones == archives, per memory, checked at commit: a cut writes the archive and the
-- tombstone in one transaction, a restore or a purge removes both; anything else (a hand
-- edit, a bug) is refused by PostgreSQL. Also the ceiling: a run's archives never exceed
-- its max_cuts.
CREATE FUNCTION curator_pairing_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    mid        bigint;
    mstatus    text;
    archived   integer;
    run        bigint;
    run_max    integer;
    run_cut    integer;
BEGIN
    IF TG_TABLE_NAME = 'memories' THEN
        mid := NEW.id;
    ELSIF TG_OP = 'DELETE' THEN
        mid := OLD.memory_id;
    ELSE
        mid := NEW.memory_id;
    END IF;
    SELECT status INTO mstatus FROM memories WHERE id = mid;
    SELECT count(*) INTO archived FROM curator_archive WHERE memory_id = mid;
    IF (mstatus IS NOT DISTINCT FROM 'cut') <> (archived = 1) THEN
        RAISE EXCEPTION 'curator invariant: memory % has status % and % archive row(s); '
            'a tombstone (status cut) and its archive are written and removed together',
            mid, coalesce(mstatus, '(none)'), archived
            USING ERRCODE = 'check_violation';
    END IF;
    IF TG_TABLE_NAME = 'curator_archive' AND TG_OP = 'INSERT' THEN
        run := NEW.curator_run_id;
        SELECT max_cuts INTO run_max FROM curator_runs WHERE id = run;
        SELECT (SELECT count(*) FROM curator_archive WHERE curator_run_id = run)
             + (SELECT count(*) FROM curator_purges WHERE curator_run_id = run)
          INTO run_cut;
        IF run_cut > run_max THEN
            RAISE EXCEPTION 'curator ceiling: run % archived % memories, its ceiling allows %',
                run, run_cut, run_max USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

-- Only rows entering or leaving status 'cut' are checked: the vault's own writes (adds,
-- edits, archives) pay nothing for this.
CREATE CONSTRAINT TRIGGER curator_pairing_on_memory_insert
    AFTER INSERT ON memories
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.status = 'cut')
    EXECUTE FUNCTION curator_pairing_check();

CREATE CONSTRAINT TRIGGER curator_pairing_on_memory_status
    AFTER UPDATE OF status ON memories
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (OLD.status = 'cut' OR NEW.status = 'cut')
    EXECUTE FUNCTION curator_pairing_check();

CREATE CONSTRAINT TRIGGER curator_pairing_on_archive
    AFTER INSERT OR UPDATE OR DELETE ON curator_archive
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION curator_pairing_check();
