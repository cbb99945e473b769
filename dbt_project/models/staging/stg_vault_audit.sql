select id as audit_id, memory_id, actor, action, at
from {{ source('lake', 'vault_audit') }}
