select id as audit_id, memory_id, actor, action, "at" as acted_at
from {{ source('lake', 'vault_audit') }}
