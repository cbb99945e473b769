-- Per (conversation, day): the highest event id the dream has read. Conversation 0 stands
-- for events without a conversation (store/dream.py).
select conversation_id, day as dream_day, last_event_id
from {{ source('lake', 'dream_watermarks') }}
