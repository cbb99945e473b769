-- Vault and shadow memories (no text beyond its hash, no vectors). For a shadow entry
-- `primary_namespace` is the namespace it stages for.
select
    id as memory_id,
    namespace,
    namespace_kind,
    coalesce(primary_of, namespace) as primary_namespace,
    category,
    source,
    status,
    review,
    candidate_id,
    promoted_from,
    content_hash,
    valid_from,
    valid_to,
    superseded_by,
    created_at,
    updated_at
from {{ source('lake', 'memories') }}
