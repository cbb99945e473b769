"""SQL for search's second stage (query/rerank.py): where each candidate sits in its
conversation (the turns before and after it, its length, its time), the events holding a
query verbatim as a phrase, and the leading text of candidates for near-duplicate checks.
No vector is read here."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql

from memory_platform.store.event_search import Filter, filter_clause


@dataclass(frozen=True)
class Placement:
    """A candidate in its conversation: the previous and next turns with text (None at the
    ends, or for an event without a conversation), its own length and time."""

    event_id: int
    previous: int | None
    following: int | None
    chars: int
    occurred_at: datetime


def placements(conn: psycopg.Connection, ids: Sequence[int], *,
               near: Sequence[int] | None = None,
               short_chars: int | None = None) -> dict[int, Placement]:
    """Placement of each given event (primary-key and conversation-index lookups). With
    `near` or `short_chars`, the previous and next turns are looked up only for the events
    in `near` and those of at most `short_chars` characters (None for the others): the
    lookups are most of the statement's cost."""
    if not ids:
        return {}
    every = near is None and short_chars is None
    wanted = "true" if every else "(e.id = ANY(%(near)s) OR length(e.text) <= %(short)s)"
    query = sql.SQL(
        """SELECT e.id, prev.id, nxt.id, length(e.text), e.occurred_at
           FROM events e
           LEFT JOIN LATERAL (
               SELECT p.id FROM events p
               WHERE {wanted} AND p.conversation_id = e.conversation_id
                 AND (p.occurred_at, p.id) < (e.occurred_at, e.id) AND p.text ~ '\\S'
               ORDER BY p.occurred_at DESC, p.id DESC LIMIT 1) prev ON true
           LEFT JOIN LATERAL (
               SELECT n.id FROM events n
               WHERE {wanted} AND n.conversation_id = e.conversation_id
                 AND (n.occurred_at, n.id) > (e.occurred_at, e.id) AND n.text ~ '\\S'
               ORDER BY n.occurred_at, n.id LIMIT 1) nxt ON true
           WHERE e.id = ANY(%(ids)s)""").format(wanted=sql.SQL(wanted))
    rows = conn.execute(query, {"ids": list(ids), "near": list(near or []),
                                "short": -1 if short_chars is None else short_chars}
                        ).fetchall()
    return {int(r[0]): Placement(int(r[0]), r[1], r[2], int(r[3] or 0), r[4]) for r in rows}


def matching(conn: psycopg.Connection, ids: Sequence[int], f: Filter | None) -> set[int]:
    """Which of the given events match the filter."""
    if not ids:
        return set()
    clause, params = filter_clause(f)
    query = sql.SQL("SELECT e.id FROM events e WHERE e.id = ANY(%(ids)s){}").format(clause)
    return {int(r[0]) for r in conn.execute(query, {**params, "ids": list(ids)})}


def phrase_matches(conn: psycopg.Connection, text: str, f: Filter | None,
                   limit: int) -> list[int]:
    """Up to `limit` events (matching the filter) holding the lexemes of `text` in its
    order and spacing (phraseto_tsquery, english configuration), found through the GIN
    index."""
    clause, params = filter_clause(f)
    query = sql.SQL(
        "SELECT e.id FROM events e "
        "WHERE e.text_search @@ phraseto_tsquery('english'::regconfig, %(phrase)s){filters} "
        "LIMIT %(limit)s").format(filters=clause)
    rows = conn.execute(query, {**params, "phrase": text, "limit": limit})
    return sorted(int(r[0]) for r in rows)


def leading_text(conn: psycopg.Connection, ids: Sequence[int],
                 chars: int) -> dict[int, str]:
    """The first `chars` characters of each given event's text."""
    if not ids:
        return {}
    rows = conn.execute("SELECT e.id, left(e.text, %s) FROM events e WHERE e.id = ANY(%s)",
                        (chars, list(ids)))
    return {int(i): t or "" for i, t in rows}
