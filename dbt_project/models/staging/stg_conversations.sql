select
    id as conversation_id,
    source,
    title,
    coalesce(project, '(none)') as project,
    started_at
from {{ source('lake', 'conversations') }}
