-- API tokens: who may reach which vault namespaces over REST.
--
-- The secret is shown once, at creation, and never stored: only its sha256 is. A token
-- names the primary namespaces it may read and write; their shadows (`<ns>__dream`,
-- `<ns>__ideas`) come with them. Revoking sets revoked_at (the row stays, so the audit
-- trail's `api:<name>` still resolves to a token); a revoked token never verifies again.

CREATE TABLE api_tokens (
    id           bigserial   PRIMARY KEY,
    -- the audit trail names the token by this (actor `api:<name>`): unique for good
    name         text        NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._:-]*$'),
    token_hash   text        NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    namespaces   text[]      NOT NULL CHECK (cardinality(namespaces) > 0),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

-- "Is any token live?" decides whether an unauthenticated loopback request is let in.
CREATE INDEX api_tokens_live_idx ON api_tokens (id) WHERE revoked_at IS NULL;
