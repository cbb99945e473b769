-- orchard: the portfolio of the user's projects (status, blockers, next action), beside the
-- memory path. Small and true: people edit anything, agents write milestones only.
--
-- Rules held by PostgreSQL as well as by the code (orchard/projects.py):
-- - status is a closed set; a project lives in a primary vault namespace (its scope);
-- - nothing is hard-deleted: a project is archived (a trigger refuses DELETE);
-- - orchard_history is append-only (a trigger refuses UPDATE and DELETE), one row per
--   change with who, when, before and after;
-- - an agent's change is a milestone, always (a CHECK on orchard_history);
-- - a proposal from discovery creates nothing: only a person's accept links it to a project.

CREATE TABLE orchard_projects (
    id                bigserial   PRIMARY KEY,
    name              text        NOT NULL
        CHECK (name = btrim(name) AND name <> '' AND length(name) <= 100),
    -- the scope: a token for `work` sees the projects of `work` only
    namespace         text        NOT NULL REFERENCES vault_namespaces (name),
    repo              text,                  -- a local path or a URL
    status            text        NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'paused', 'blocked', 'done', 'idea')),
    priority          smallint    NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 5),  -- 1 first
    next_action       text,
    blockers          text[]      NOT NULL DEFAULT '{}',
    deadline          date,
    last_milestone    text,
    last_milestone_at timestamptz,
    -- which cairn turns are this project's: events.project values (a Claude Code cwd, whose
    -- subfolders count too, or a claude.ai project name) and conversation titles
    cairn_projects    text[]      NOT NULL DEFAULT '{}',
    cairn_titles      text[]      NOT NULL DEFAULT '{}',
    archived          boolean     NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((last_milestone IS NULL) = (last_milestone_at IS NULL))
);

-- `orchard show bookminder` names a project by its name, whatever the case.
CREATE UNIQUE INDEX orchard_projects_name_idx ON orchard_projects (lower(name));
CREATE INDEX orchard_projects_namespace_idx ON orchard_projects (namespace);

CREATE TABLE orchard_history (
    id         bigserial   PRIMARY KEY,
    project_id bigint      NOT NULL REFERENCES orchard_projects (id),
    change     text        NOT NULL
        CHECK (change IN ('create', 'edit', 'milestone', 'archive', 'restore')),
    actor      text        NOT NULL CHECK (actor <> ''),  -- cli:dana, api:laptop, mcp:agent
    by_agent   boolean     NOT NULL,
    at         timestamptz NOT NULL DEFAULT now(),
    before     jsonb,                 -- NULL for 'create'
    after      jsonb       NOT NULL,
    milestone  text,
    CHECK ((change = 'create') = (before IS NULL)),
    CHECK (change <> 'milestone' OR btrim(coalesce(milestone, '')) <> ''),
    -- agents write milestones only: no free-form status churn
    CHECK (NOT by_agent OR change = 'milestone')
);

-- "How many agent updates today?" and "the state as of a week's end" read by project and time.
CREATE INDEX orchard_history_project_idx ON orchard_history (project_id, at, id);

CREATE FUNCTION orchard_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% on %: orchard keeps every project and every change (archive a '
                    'project instead)', TG_OP, TG_TABLE_NAME;
END $$;

CREATE TRIGGER orchard_history_append_only BEFORE UPDATE OR DELETE ON orchard_history
    FOR EACH ROW EXECUTE FUNCTION orchard_refuse_change();
CREATE TRIGGER orchard_projects_never_deleted BEFORE DELETE ON orchard_projects
    FOR EACH ROW EXECUTE FUNCTION orchard_refuse_change();

-- What discovery found in cairn, waiting for a person. One row per proposed project (key:
-- its normalized name, which merges a cwd `.../bookminder` with a claude.ai project
-- `Bookminder`); re-discovery refreshes the activity and never the decision.
CREATE TABLE orchard_proposals (
    id             bigserial   PRIMARY KEY,
    key            text        NOT NULL UNIQUE,
    name           text        NOT NULL,
    repo           text,
    signals        jsonb       NOT NULL,   -- [{kind, value, git?, conversations?}]
    cairn_projects text[]      NOT NULL DEFAULT '{}',
    cairn_titles   text[]      NOT NULL DEFAULT '{}',
    sessions       integer     NOT NULL,
    turns          integer     NOT NULL,
    weeks          jsonb       NOT NULL,   -- [{week, sessions, turns}], oldest first
    first_active   date,
    last_active    date,
    state          text        NOT NULL DEFAULT 'pending'
        CHECK (state IN ('pending', 'accepted', 'dismissed')),
    project_id     bigint      REFERENCES orchard_projects (id),
    decided_by     text,
    decided_at     timestamptz,
    discovered_at  timestamptz NOT NULL DEFAULT now(),
    refreshed_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((state = 'accepted') = (project_id IS NOT NULL)),
    CHECK ((state = 'pending') = (decided_by IS NULL))
);

-- The portfolio as of each week (Monday), for history and the analytics marts: the state
-- at the week's end (replayed from orchard_history) and the week's activity. One row per
-- (week, project); a re-run replaces its week's rows.
CREATE TABLE orchard_snapshots (
    week              date        NOT NULL CHECK (extract(isodow FROM week) = 1),
    project_id        bigint      NOT NULL REFERENCES orchard_projects (id),
    name              text        NOT NULL,
    namespace         text        NOT NULL,
    status            text        NOT NULL,
    priority          smallint    NOT NULL,
    next_action       text,
    blockers          text[]      NOT NULL,
    deadline          date,
    last_milestone    text,
    last_milestone_at timestamptz,
    archived          boolean     NOT NULL,
    milestones        integer     NOT NULL,  -- milestones recorded during the week
    sessions          integer     NOT NULL,  -- conversations with turns in the week
    turns             integer     NOT NULL,  -- user and assistant messages in the week
    last_active       date,                  -- last day with a turn, up to the week's end
    run_id            text,
    taken_at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (week, project_id)
);
