-- Token kinds (issue 11, point 14): a token is a person's or an agent's.
--
-- An agent token's writes are suggestions: REST stages them in `<ns>__ideas` for review,
-- like MCP `vault_add`, so an agent holding a token cannot bypass the review gate. Tokens
-- made before kinds existed wrote straight into primary namespaces, so they are `person`
-- (their behaviour is unchanged); `memory-platform token create` asks for the kind.

ALTER TABLE api_tokens
    ADD COLUMN kind text NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'agent'));
-- Rows written from now on without a kind are agents: least privilege.
ALTER TABLE api_tokens ALTER COLUMN kind SET DEFAULT 'agent';
