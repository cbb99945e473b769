"""SQL of the dream cycle: what is left to dream (watermarks), the candidates it proposed, and
what it staged. Text only: nothing here reads an embedding."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

import psycopg
from psycopg.rows import dict_row

# What a dream reads: the conversation itself. Tool calls and their results are left out,
# which also leaves out everything this system's own MCP tools returned (recalled memories
# must never be re-extracted as new ones); context packs pasted into a prompt are cut out
# by text in memory_platform.dream.propose.
DREAM_ROLES = ("user", "assistant")
DREAM_KINDS = ("message",)


@dataclass(frozen=True)
class DreamEvent:
    id: int
    conversation_id: int | None
    occurred_at: datetime
    role: str
    text: str
    source: str
    project: str | None


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time.min, tzinfo=timezone.utc)
    return start, start + timedelta(days=1)


def undreamed_events(conn: psycopg.Connection, day: date) -> dict[int | None, list[DreamEvent]]:
    """The day's conversational events above their conversation's watermark for that day,
    grouped by conversation, in id (= import, = file) order: the watermark is an id, so a
    chunk's last id covers exactly the events before it."""
    start, end = _day_bounds(day)
    rows = conn.execute(
        """SELECT e.id, e.conversation_id, e.occurred_at, e.role, e.text, e.source, e.project
           FROM events e
           LEFT JOIN dream_watermarks w
                  ON w.conversation_id = coalesce(e.conversation_id, 0) AND w.day = %s
           WHERE e.occurred_at >= %s AND e.occurred_at < %s
             AND e.role = ANY(%s) AND e.kind = ANY(%s) AND e.on_active_branch
             AND btrim(e.text) <> ''
             AND e.id > coalesce(w.last_event_id, 0)
           ORDER BY e.conversation_id, e.id""",
        (day, start, end, list(DREAM_ROLES), list(DREAM_KINDS)),
    ).fetchall()
    grouped: dict[int | None, list[DreamEvent]] = {}
    for row in rows:
        grouped.setdefault(row[1], []).append(DreamEvent(*row))
    return grouped


def conversation_info(conn: psycopg.Connection, conversation_id: int | None) -> dict:
    if conversation_id is None:
        return {"title": None, "project": None, "source": None}
    row = conn.execute(
        "SELECT title, project, source FROM conversations WHERE id = %s", (conversation_id,)
    ).fetchone()
    return {"title": row[0], "project": row[1], "source": row[2]} if row else {
        "title": None, "project": None, "source": None}


def advance_watermark(
    conn: psycopg.Connection, conversation_id: int | None, day: date, last_event_id: int,
    run_id: str,
) -> None:
    """Record that the conversation's events of `day` up to `last_event_id` are dreamed.
    Call in the transaction that writes the candidates they produced."""
    if conversation_id is None:
        conversation_id = 0  # events with no conversation share one watermark per day
    conn.execute(
        """INSERT INTO dream_watermarks (conversation_id, day, last_event_id, run_id)
           VALUES (%s, %s, %s, %s)
           ON CONFLICT (conversation_id, day) DO UPDATE
              SET last_event_id = greatest(dream_watermarks.last_event_id,
                                           excluded.last_event_id),
                  run_id = excluded.run_id, updated_at = now()""",
        (conversation_id, day, last_event_id, run_id),
    )


def first_undreamed_day(conn: psycopg.Connection, since: date) -> date | None:
    """The earliest day on or after `since` holding an event a dream has not read yet."""
    start, _ = _day_bounds(since)
    row = conn.execute(
        """SELECT min(e.occurred_at) FROM events e
           LEFT JOIN dream_watermarks w
                  ON w.conversation_id = coalesce(e.conversation_id, 0)
                 AND w.day = (e.occurred_at AT TIME ZONE 'UTC')::date
           WHERE e.occurred_at >= %s
             AND e.role = ANY(%s) AND e.kind = ANY(%s) AND e.on_active_branch
             AND btrim(e.text) <> ''
             AND e.id > coalesce(w.last_event_id, 0)""",
        (start, list(DREAM_ROLES), list(DREAM_KINDS)),
    ).fetchone()
    if row[0] is None:
        return None
    return row[0].astimezone(timezone.utc).date()


@dataclass(frozen=True)
class CandidateRow:
    text: str
    score: int
    category: str
    namespace: str
    why: str
    source_event_ids: Sequence[int]
    status: str  # proposed | below_threshold | rejected_secret
    topic: str | None = None  # the model's slug; None: the rules choose at staging


def insert_candidates(
    conn: psycopg.Connection, *, run_id: str, day: date, conversation_id: int | None,
    candidates: Sequence[CandidateRow],
) -> list[int]:
    ids = []
    for c in candidates:
        row = conn.execute(
            """INSERT INTO dream_candidates (run_id, day, conversation_id, text, score,
                   category, namespace, why, source_event_ids, status, topic)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
            (run_id, day, conversation_id, c.text, c.score, c.category, c.namespace, c.why,
             list(c.source_event_ids), c.status, c.topic),
        ).fetchone()
        ids.append(row[0])
    return ids


def candidate_counts_in(conn: psycopg.Connection, days: Sequence[date]) -> dict[str, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM dream_candidates WHERE day = ANY(%s) GROUP BY status",
        (list(days),),
    ).fetchall()
    return {status: n for status, n in rows}


def accepted_unstaged(conn: psycopg.Connection, day: date) -> list[dict]:
    """The day's candidates whose verdict lets them through (new, contradiction) and that are
    not staged yet."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT c.id, c.run_id AS candidate_run_id, c.text, c.score, c.category,
                      c.topic, c.namespace, c.why, c.source_event_ids, v.verdict, v.neighbour_id,
                      v.similarity, v.reason,
                      (SELECT min(e.occurred_at) FROM events e
                        WHERE e.id = ANY(c.source_event_ids)) AS valid_from
               FROM dream_candidates c
               JOIN dedup_verdicts v ON v.candidate_id = c.id
               WHERE c.day = %s AND c.status = 'proposed'
                 AND v.verdict IN ('new', 'contradiction')
                 AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.candidate_id = c.id)
               ORDER BY c.id""",
            (day,),
        ).fetchall()


def proposed_without_verdict_by_run(conn: psycopg.Connection, run_id: str) -> int:
    return conn.execute(
        """SELECT count(*) FROM dream_candidates c
           WHERE c.run_id = %s AND c.status = 'proposed'
             AND NOT EXISTS (SELECT 1 FROM dedup_verdicts v WHERE v.candidate_id = c.id)""",
        (run_id,),
    ).fetchone()[0]


def verdict_counts_by_run(conn: psycopg.Connection, run_id: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT verdict, count(*) FROM dedup_verdicts WHERE run_id = %s GROUP BY verdict",
        (run_id,),
    ).fetchall()
    return {verdict: n for verdict, n in rows}


def unpromoted_dream_rows_in_primary(conn: psycopg.Connection) -> list[dict]:
    """Dream rows in a primary namespace without the shadow entry they were promoted from.
    The CHECK on memories makes these impossible; the asset check proves it stays so."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT m.id, m.namespace, m.text FROM memories m
               JOIN vault_namespaces n ON n.name = m.namespace
               WHERE n.kind = 'primary' AND m.source = 'dream' AND m.promoted_from IS NULL
               LIMIT 20"""
        ).fetchall()


def staged_without_verdict(conn: psycopg.Connection, run_ids: Sequence[str]) -> list[int]:
    """Shadow memories a dream staged whose candidate has no dedup verdict (must be none)."""
    rows = conn.execute(
        """SELECT m.id FROM memories m
           WHERE m.source = 'dream' AND m.dream_run_id = ANY(%s)
             AND (m.candidate_id IS NULL OR NOT EXISTS
                  (SELECT 1 FROM dedup_verdicts v WHERE v.candidate_id = m.candidate_id))""",
        (list(run_ids),),
    ).fetchall()
    return [r[0] for r in rows]


def primary_writes_by_runs(conn: psycopg.Connection, run_ids: Sequence[str]) -> list[dict]:
    """Memories in primary namespaces written by these dream runs (must be none)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT m.id, m.namespace, m.text FROM memories m
               JOIN vault_namespaces n ON n.name = m.namespace
               WHERE n.kind = 'primary' AND m.dream_run_id = ANY(%s)""",
            (list(run_ids),),
        ).fetchall()


def staged_in_days(conn: psycopg.Connection, days: Sequence[date]) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT m.id, m.namespace, m.text, m.score, m.category, m.verdict, m.why
               FROM memories m JOIN dream_candidates c ON c.id = m.candidate_id
               WHERE c.day = ANY(%s) ORDER BY m.id""",
            (list(days),),
        ).fetchall()


def rejected_in_days(conn: psycopg.Connection, days: Sequence[date]) -> list[dict]:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(
            """SELECT c.id, c.text, v.verdict, v.neighbour_text, v.similarity, v.reason
               FROM dream_candidates c JOIN dedup_verdicts v ON v.candidate_id = c.id
               WHERE c.day = ANY(%s) ORDER BY c.id""",
            (list(days),),
        ).fetchall()
