"""SQL that reads cairn for orchard: the activity behind discovery, rankings and snapshots,
and a project's turns (the evidence a ranking cites). Reads only; no vector, no `raw`.

A project's turns are the events whose `project` is one of its `cairn_projects` (a path
also covers its subfolders) or whose conversation's title is one of its `cairn_titles`
(whatever the case). A turn is a user or assistant message; a session is a conversation.
Each activity row also carries what the routing file routes its conversation by (the
conversation's project and source, else the event's: as the dream does), so orchard can
keep a scoped caller to the conversations of its namespaces (orchard/reading.py); the turn
reads take the conversations so kept.
"""

from collections.abc import Sequence
from datetime import datetime

import psycopg

# One row of activity_rows: turns and last event per (project value, conversation title,
# conversation, source, ISO week starting Monday in UTC).
ACTIVITY_COLUMNS = ("project", "title", "conversation_id", "source", "week", "turns", "events",
                    "first_at", "last_at", "git", "route_project", "route_source")
TURN_COLUMNS = ("event_id", "occurred_at", "source", "role", "text", "project", "title",
                "conversation_id")
# Evidence is read, not dumped: this much of each turn's text comes back.
TURN_TEXT_CHARS = 2000


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _match_params(cairn_projects: Sequence[str], cairn_titles: Sequence[str]) -> dict:
    return {"values": list(cairn_projects),
            "patterns": [_like_escape(v.rstrip("/")) + "/%" for v in cairn_projects
                         if v.startswith("/")],
            "titles": [" ".join(t.split()).lower() for t in cairn_titles]}


# The events of a project's links (see the module docstring); titles compared as
# title_key does in orchard/activity.py: trimmed, spaces collapsed, lower case.
_LINKED = """(e.project = ANY(%(values)s::text[]) OR e.project LIKE ANY(%(patterns)s::text[])
        OR lower(regexp_replace(btrim(c.title), '[[:space:]]+', ' ', 'g'))
           = ANY(%(titles)s::text[]))"""

def activity_rows(conn: psycopg.Connection, *, until: datetime | None = None,
                  links: tuple[Sequence[str], Sequence[str]] | None = None) -> list[dict]:
    """Events that name a project or sit in a titled conversation, aggregated per (project,
    title, conversation, source, week): one scan of events, so discovery, a ranking and a
    snapshot cost one read whatever the number of projects. `until` (exclusive) cuts the
    history at a week's end; `links` (cairn_projects, cairn_titles) keeps the rows of those
    projects only."""
    where = "(e.project IS NOT NULL OR c.title IS NOT NULL)"
    params: dict = {"until": until}
    if links is not None and not any(links):
        return []  # projects linked to nothing: no scan for an empty answer
    if links is not None:
        where = _LINKED
        params.update(_match_params(*links))
    rows = conn.execute(
        f"""SELECT e.project, c.title, e.conversation_id, e.source,
                   date_trunc('week', e.occurred_at AT TIME ZONE 'UTC')::date,
                   count(*) FILTER (WHERE e.role IN ('user', 'assistant')
                                    AND e.kind = 'message'),
                   count(*), min(e.occurred_at), max(e.occurred_at),
                   bool_or(e.git_branch IS NOT NULL),
                   COALESCE(c.project, e.project), COALESCE(c.source, e.source)
            FROM events e LEFT JOIN conversations c ON c.id = e.conversation_id
            WHERE {where}
              AND (%(until)s::timestamptz IS NULL OR e.occurred_at < %(until)s)
            GROUP BY 1, 2, 3, 4, 5, 11, 12""", params).fetchall()
    return [dict(zip(ACTIVITY_COLUMNS, r, strict=True)) for r in rows]


_PROJECT_TURNS = f"""
    SELECT e.id, e.occurred_at, e.source, e.role, left(e.text, %(chars)s), e.project, c.title,
           e.conversation_id
    FROM events e LEFT JOIN conversations c ON c.id = e.conversation_id
    WHERE e.role IN ('user', 'assistant') AND e.kind = 'message' AND e.on_active_branch
      AND NOT e.is_sidechain AND btrim(e.text) <> '' AND {_LINKED}
      AND (%(until)s::timestamptz IS NULL OR e.occurred_at < %(until)s)
      AND (%(conversations)s::bigint[] IS NULL
           OR e.conversation_id = ANY(%(conversations)s::bigint[]))"""


def _conversations(conversations: Sequence[int] | None) -> list[int] | None:
    return None if conversations is None else [int(c) for c in conversations]


def _nothing(cairn_projects, cairn_titles, conversations) -> bool:
    """Linked to nothing, or to no conversation the caller may read: no read at all."""
    return (not cairn_projects and not cairn_titles) or (
        conversations is not None and not conversations)


def recent_turns(conn: psycopg.Connection, cairn_projects: Sequence[str],
                 cairn_titles: Sequence[str], *, limit: int, since: datetime | None = None,
                 until: datetime | None = None,
                 conversations: Sequence[int] | None = None) -> list[dict]:
    """The project's last `limit` turns in [since, until), newest first; only those of
    `conversations` when given (None: every linked conversation). A `since` near the
    project's last activity keeps the read to a range of the occurred_at index instead of
    walking back through everything newer than a dormant project's last turn."""
    if _nothing(cairn_projects, cairn_titles, conversations):
        return []
    rows = conn.execute(
        _PROJECT_TURNS + " AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s)"
        " ORDER BY e.occurred_at DESC, e.id DESC LIMIT %(limit)s",
        {**_match_params(cairn_projects, cairn_titles), "limit": limit, "until": until,
         "since": since, "chars": TURN_TEXT_CHARS,
         "conversations": _conversations(conversations)}).fetchall()
    return [dict(zip(TURN_COLUMNS, r, strict=True)) for r in rows]


def turns_mentioning(conn: psycopg.Connection, cairn_projects: Sequence[str],
                     cairn_titles: Sequence[str], words: Sequence[str], *, limit: int,
                     until: datetime | None = None,
                     conversations: Sequence[int] | None = None) -> list[dict]:
    """The project's turns holding the most of `words` (full-text, english stemming, so
    'migrations' finds 'migration'), the newest first among equals; only those of
    `conversations` when given."""
    words = [w for w in words if w.strip()]
    if not words or _nothing(cairn_projects, cairn_titles, conversations):
        return []
    # websearch_to_tsquery never fails on user text (quotes, colons, a stray '&').
    query = " or ".join(words)
    rows = conn.execute(
        _PROJECT_TURNS + " AND e.text_search @@ websearch_to_tsquery('english', %(q)s)"
        " ORDER BY ts_rank(e.text_search, websearch_to_tsquery('english', %(q)s)) DESC,"
        " e.occurred_at DESC, e.id DESC LIMIT %(limit)s",
        {**_match_params(cairn_projects, cairn_titles), "limit": limit, "until": until,
         "q": query, "chars": TURN_TEXT_CHARS,
         "conversations": _conversations(conversations)}).fetchall()
    return [dict(zip(TURN_COLUMNS, r, strict=True)) for r in rows]
