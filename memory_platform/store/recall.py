"""SQL of recall: topics, the classification backfill, the wiki's file state, lint's reads
and the findings a person resolves at the review gate.

Rules kept here:
- A finding is written once per fingerprint (ON CONFLICT DO NOTHING): re-running lint or
  the wiki intake adds nothing twice, and a finding a person kept stays kept.
- Nothing here changes a memory: recall's changes to memories go through
  store/memories.py (update_memory, add_memory), which writes their audit rows.
- No vector is read.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memory_platform.store.event_search import query_lexemes
from memory_platform.store.memories import MEMORY_COLUMNS

_COLS = sql.SQL(", ").join(sql.SQL("m.{}").format(sql.Identifier(c)) for c in MEMORY_COLUMNS)
FINDING_KINDS = ("contradiction", "stale", "orphan", "near_duplicate", "unmapped_edit",
                 "wiki_conflict")
RESOLUTIONS = ("superseded", "archived", "kept", "obsolete")


def _memories(rows) -> list[dict]:
    return [dict(zip(MEMORY_COLUMNS, r, strict=True)) for r in rows]


# --- topics and the backfill -------------------------------------------------------------


def namespace_topics(conn: psycopg.Connection, namespace: str) -> list[str]:
    """The topics of a namespace's active memories, by name."""
    return [r[0] for r in conn.execute(
        """SELECT DISTINCT topic FROM memories
           WHERE namespace = %s AND status = 'active' AND topic IS NOT NULL ORDER BY 1""",
        (namespace,)).fetchall()]


def unclassified(conn: psycopg.Connection, *, after_id: int, limit: int) -> list[dict]:
    """Memories with no topic yet (written before topics existed), by id."""
    return _memories(conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.topic IS NULL AND m.id > %s "
                "ORDER BY m.id LIMIT %s").format(_COLS), (after_id, limit)).fetchall())


def unsorted_current(conn: psycopg.Connection, namespace: str, topic: str) -> list[dict]:
    """A namespace's current memories filed under `topic` (the classifier's unsure
    bucket), by id."""
    return _memories(conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.namespace = %s AND m.topic = %s "
                "AND m.status = 'active' AND m.valid_to IS NULL ORDER BY m.id").format(_COLS),
        (namespace, topic)).fetchall())




def set_sensitivity(conn: psycopg.Connection, memory_id: int, kinds: Sequence[str]) -> None:
    """Mark a memory's sensitivity from its text (the backfill of rows written before the
    flag existed). Not a change of the memory's content: no audit row, as for a vector."""
    conn.execute("UPDATE memories SET sensitive = %s, sensitive_kinds = %s::text[] "
                 "WHERE id = %s", (bool(kinds), list(kinds), memory_id))


# --- what the wiki and the pack read -------------------------------------------------------


def wiki_memories(conn: psycopg.Connection, namespace: str) -> list[dict]:
    """Every active memory of a primary namespace, current and superseded, by id (no cap:
    the wiki mirrors the whole namespace)."""
    return _memories(conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.namespace = %s AND m.status = 'active' "
                "ORDER BY m.id").format(_COLS), (namespace,)).fetchall())


def standing_facts(conn: psycopg.Connection, namespaces: Sequence[str], categories:
                   Sequence[str], limit: int) -> list[dict]:
    """Current, non-sensitive memories of the given categories (the index of a pack), the
    categories' order first, then oldest first: standing facts change least."""
    return _memories(conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.namespace = ANY(%(ns)s) "
                "AND m.status = 'active' AND m.review IS NULL AND m.valid_to IS NULL "
                "AND m.superseded_by IS NULL AND NOT m.sensitive "
                "AND m.category = ANY(%(cats)s) "
                "ORDER BY array_position(%(cats)s, m.category), m.valid_from, m.id "
                "LIMIT %(limit)s").format(_COLS),
        {"ns": list(namespaces), "cats": list(categories), "limit": limit}).fetchall())


def project_facts(conn: psycopg.Connection, namespace: str, *, topics: Sequence[str],
                  categories: Sequence[str], topics_only: bool, limit: int) -> list[int]:
    """Ids of a namespace's current, reviewed, non-sensitive facts for a session start in
    its project (vault/project.py): the facts of `topics` first (in their order), then by
    `categories`' order, newest first. `topics_only`: only the facts of `topics`."""
    rows = conn.execute(
        "SELECT m.id FROM memories m WHERE m.namespace = %(ns)s AND m.status = 'active' "
        "AND m.review IS NULL AND m.valid_to IS NULL AND m.superseded_by IS NULL "
        "AND NOT m.sensitive AND (NOT %(only)s OR m.topic = ANY(%(topics)s::text[])) "
        "ORDER BY coalesce(array_position(%(topics)s::text[], m.topic), 2147483647), "
        "coalesce(array_position(%(cats)s::text[], m.category), 2147483647), "
        "m.valid_from DESC, m.id DESC LIMIT %(limit)s",
        {"ns": namespace, "topics": list(topics), "cats": list(categories),
         "only": topics_only, "limit": limit}).fetchall()
    return [int(r[0]) for r in rows]


# A stem in more current memories than this says nothing about which one a prompt is about
# ("service", "run"): it is left out of the full-text query. Counting stops at the cap, so
# a common stem costs the same at 10k rows as at 1M.
COMMON_STEM_ROWS = 200

_ELIGIBLE_FACT = ("m.status = 'active' AND m.namespace = ANY(%(ns)s) AND m.review IS NULL "
                  "AND m.valid_to IS NULL AND m.superseded_by IS NULL AND NOT m.sensitive")


def fulltext_matches(conn: psycopg.Connection, query: str, namespaces: Sequence[str], *,
                     limit: int) -> list[dict]:
    """Current, non-sensitive primary memories sharing rare words (English stems, stop
    words dropped) with `query`, from the GIN index: id, matched (distinct rare stems the
    memory holds), terms (rare stems in the query). Most stems matched first. Stems held by
    more than COMMON_STEM_ROWS memories are not searched."""
    # The query's first stems (store.event_search.MAX_QUERY_LEXEMES: a 5,000-word query
    # nested its sum too deep for PostgreSQL). A stem with a quote or a backslash (a path,
    # code) cannot be a bare tsquery operand.
    stems = [t for t in query_lexemes(conn, query) if "'" not in t and "\\" not in t]
    if not stems:
        return []
    rare = [r[0] for r in conn.execute(
        "SELECT s.t FROM unnest(%(stems)s::text[], %(operands)s::text[]) s(t, q) "
        "WHERE (SELECT count(*) FROM (SELECT 1 FROM memories m "
        "WHERE to_tsvector('english', m.text) @@ s.q::tsquery AND " + _ELIGIBLE_FACT
        + " LIMIT %(cap)s) hits) < %(cap)s ORDER BY s.t",
        {"stems": stems, "operands": [_quote(t) for t in stems], "ns": list(namespaces),
         "cap": COMMON_STEM_ROWS + 1}).fetchall()]
    if not rare:
        return []
    matched = sql.SQL(" + ").join(
        sql.SQL("(v.tsv @@ {}::tsquery)::int").format(sql.Literal(_quote(t)))
        for t in rare)
    rows = conn.execute(
        sql.SQL("SELECT v.id, {matched} FROM (SELECT m.id, to_tsvector('english', m.text) AS tsv "
                "FROM memories m WHERE to_tsvector('english', m.text) @@ %(q)s::tsquery AND "
                + _ELIGIBLE_FACT + ") v ORDER BY 2 DESC, v.id LIMIT %(limit)s"
                ).format(matched=matched),
        {"q": " | ".join(_quote(t) for t in rare), "ns": list(namespaces),
         "limit": limit}).fetchall()
    return [{"id": int(r[0]), "matched": int(r[1]), "terms": len(rare)} for r in rows]


def _quote(stem: str) -> str:
    """A stem (no quote, no backslash: filtered above) as a quoted tsquery operand."""
    return f"'{stem}'"


def vault_fingerprints(conn: psycopg.Connection) -> dict[str, int]:
    """Per primary namespace: the latest audit id of its memories (0 for none). It moves
    with every add, edit, archive, promotion and supersede, whichever face made it."""
    rows = conn.execute(
        """SELECT n.name, coalesce(max(a.id), 0)
           FROM vault_namespaces n
           LEFT JOIN memories m ON m.namespace = n.name
           LEFT JOIN vault_audit a ON a.memory_id = m.id
           WHERE n.kind = 'primary' GROUP BY n.name ORDER BY n.name""").fetchall()
    return {r[0]: int(r[1]) for r in rows}


# --- the wiki's file state ---------------------------------------------------------------


def wiki_files(conn: psycopg.Connection, namespace: str) -> dict[str, dict]:
    """path -> {sha256, lines} of what the wiki build last wrote for a namespace."""
    rows = conn.execute(
        "SELECT path, sha256, lines, written_at FROM wiki_files WHERE namespace = %s",
        (namespace,)).fetchall()
    return {r[0]: {"sha256": r[1], "lines": r[2], "written_at": r[3]} for r in rows}


def record_wiki_file(conn: psycopg.Connection, namespace: str, path: str, sha256: str,
                     lines: dict[str, str]) -> None:
    conn.execute(
        """INSERT INTO wiki_files (namespace, path, sha256, lines) VALUES (%s, %s, %s, %s)
           ON CONFLICT (namespace, path) DO UPDATE
           SET sha256 = EXCLUDED.sha256, lines = EXCLUDED.lines, written_at = now()""",
        (namespace, path, sha256, Jsonb(lines)))


def forget_wiki_file(conn: psycopg.Connection, namespace: str, path: str) -> None:
    conn.execute("DELETE FROM wiki_files WHERE namespace = %s AND path = %s",
                 (namespace, path))


# --- lint's reads ------------------------------------------------------------------------


def current_facts(conn: psycopg.Connection, namespace: str) -> list[dict]:
    """A primary namespace's current facts (active, valid_to unset), by id."""
    return _memories(conn.execute(
        sql.SQL("SELECT {} FROM memories m WHERE m.namespace = %s AND m.status = 'active' "
                "AND m.review IS NULL AND m.valid_to IS NULL ORDER BY m.id").format(_COLS),
        (namespace,)).fetchall())


def fact_vectors(conn: psycopg.Connection, model: str, ids: Sequence[int]
                 ) -> tuple[list[int], np.ndarray]:
    """(ids, unit vectors) of the given memories for `model`: lint scores every pair of a
    namespace's current facts, so it reads their vectors once (ids without one are left
    out)."""
    rows = conn.execute(
        "SELECT memory_id, embedding::text FROM memory_embeddings "
        "WHERE model = %s AND memory_id = ANY(%s) ORDER BY memory_id",
        (model, [int(i) for i in ids])).fetchall()
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    return ([int(r[0]) for r in rows],
            np.asarray([orjson.loads(r[1]) for r in rows], dtype=np.float32))


def missing_sources(conn: psycopg.Connection, namespace: str) -> dict[int, list[int]]:
    """Current facts citing source events of which none exists any more: id -> cited ids."""
    rows = conn.execute(
        """SELECT m.id, m.source_event_ids FROM memories m
           WHERE m.namespace = %s AND m.status = 'active' AND m.valid_to IS NULL
             AND cardinality(m.source_event_ids) > 0
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.id = ANY(m.source_event_ids))
           ORDER BY m.id""", (namespace,)).fetchall()
    return {int(r[0]): list(r[1]) for r in rows}


def source_projects(conn: psycopg.Connection, ids: Sequence[int]) -> dict[int, list[str]]:
    """memory id -> the distinct project paths (cwd) of the conversations its source events
    belong to."""
    rows = conn.execute(
        """SELECT m.id, array_agg(DISTINCT coalesce(e.project, c.project))
           FROM memories m JOIN events e ON e.id = ANY(m.source_event_ids)
           LEFT JOIN conversations c ON c.id = e.conversation_id
           WHERE m.id = ANY(%s) AND coalesce(e.project, c.project) IS NOT NULL
           GROUP BY m.id""", ([int(i) for i in ids],)).fetchall()
    return {int(r[0]): [p for p in r[1] if p] for r in rows}


# --- findings ----------------------------------------------------------------------------


def insert_finding(conn: psycopg.Connection, *, namespace: str, kind: str,
                   memory_ids: Sequence[int], evidence: dict[str, Any], fingerprint: str,
                   run_id: str | None) -> int | None:
    """Record a finding; None when one with this fingerprint exists (whatever its state)."""
    if kind not in FINDING_KINDS:
        raise ValueError(f"unknown finding kind {kind!r}")
    row = conn.execute(
        """INSERT INTO lint_findings (namespace, kind, memory_ids, evidence, fingerprint,
               run_id)
           VALUES (%s, %s, %s::bigint[], %s, %s, %s)
           ON CONFLICT (fingerprint) DO NOTHING RETURNING id""",
        (namespace, kind, [int(i) for i in memory_ids], Jsonb(evidence), fingerprint,
         run_id)).fetchone()
    return int(row[0]) if row else None


_FINDING_KEYS = ("id", "namespace", "kind", "memory_ids", "evidence", "fingerprint",
                 "status", "run_id", "created_at", "resolved_at", "resolved_by")


def findings(conn: psycopg.Connection, *, namespaces: Sequence[str] | None = None,
             status: str | None = "open", kinds: Sequence[str] | None = None) -> list[dict]:
    """Findings by id (all of them: no cap), filtered by namespace, status and kind."""
    where = [sql.SQL("TRUE")]
    params: dict[str, Any] = {}
    if namespaces is not None:
        where.append(sql.SQL("namespace = ANY(%(ns)s)"))
        params["ns"] = list(namespaces)
    if status is not None:
        where.append(sql.SQL("status = %(status)s"))
        params["status"] = status
    if kinds is not None:
        where.append(sql.SQL("kind = ANY(%(kinds)s)"))
        params["kinds"] = list(kinds)
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(sql.SQL("SELECT {} FROM lint_findings WHERE {} ORDER BY id").format(
            sql.SQL(", ").join(map(sql.Identifier, _FINDING_KEYS)),
            sql.SQL(" AND ").join(where)), params).fetchall()


def lock_finding(conn: psycopg.Connection, finding_id: int) -> dict | None:
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(sql.SQL("SELECT {} FROM lint_findings WHERE id = %s FOR UPDATE").format(
            sql.SQL(", ").join(map(sql.Identifier, _FINDING_KEYS))), (finding_id,)).fetchone()


def close_finding(conn: psycopg.Connection, finding_id: int, status: str, actor: str) -> None:
    if status not in RESOLUTIONS:
        raise ValueError(f"unknown resolution {status!r}; use one of {', '.join(RESOLUTIONS)}")
    conn.execute("UPDATE lint_findings SET status = %s, resolved_at = now(), resolved_by = %s "
                 "WHERE id = %s AND status = 'open'", (status, actor, finding_id))


def open_counts(conn: psycopg.Connection) -> dict[str, dict[str, int]]:
    """namespace -> kind -> open findings (what the digest and the status show)."""
    out: dict[str, dict[str, int]] = {}
    for ns, kind, n in conn.execute(
            "SELECT namespace, kind, count(*) FROM lint_findings WHERE status = 'open' "
            "GROUP BY 1, 2 ORDER BY 1, 2").fetchall():
        out.setdefault(ns, {})[kind] = int(n)
    return out
