"""SQL of the vault's namespaces: a primary namespace and its shadows (`<name>__dream` for
what the dream proposes, `<name>__ideas` for what an agent suggests), how a name is
checked, and the review backlog per shadow namespace."""

import re

import psycopg
from psycopg import sql

SHADOW_KINDS = ("dream", "ideas")

# fullmatch, never `$`: `$` also matches before a final newline, so "work\n" passed the
# check and then hit the database's CHECK (a 500).
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")
MAX_NAME_LENGTH = 100


def parse_namespace(name: str) -> tuple[str, str | None]:
    """(kind, primary) of a namespace name: ('primary', None) or ('dream'|'ideas', primary).
    Raises ValueError on a name the vault would refuse, saying why."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or len(name) > MAX_NAME_LENGTH:
        raise ValueError(
            f"invalid namespace {name!r}: use lowercase letters, digits, '.', '_' and '-', "
            f"starting with a letter or digit, at most {MAX_NAME_LENGTH} characters"
        )
    base, sep, suffix = name.rpartition("__")
    if sep and suffix in SHADOW_KINDS and base:
        if "__" in base:
            raise ValueError(f"invalid namespace {name!r}: a shadow namespace belongs to a "
                             f"primary one, and {base!r} is not a primary name")
        parse_namespace(base)
        return suffix, base
    if "__" in name:
        # '__' is reserved for the shadow suffixes, so a name's kind is never ambiguous.
        raise ValueError(f"invalid namespace {name!r}: '__' is reserved for shadow "
                         f"namespaces (<namespace>__dream, <namespace>__ideas)")
    return "primary", None


def shadow_of(primary: str, kind: str) -> str:
    """The shadow namespace of `kind` ('dream' or 'ideas') for a primary namespace."""
    if kind not in SHADOW_KINDS:
        raise ValueError(f"unknown shadow kind {kind!r}; use one of {SHADOW_KINDS}")
    if parse_namespace(primary)[0] != "primary":
        raise ValueError(f"{primary!r} is itself a shadow namespace")
    return f"{primary}__{kind}"


def ensure_namespace(conn: psycopg.Connection, name: str) -> str:
    """Create the namespace if missing (a shadow's primary first); return its kind."""
    kind, primary = parse_namespace(name)
    rows = [(name, kind, primary)] if primary is None else [
        (primary, "primary", None), (name, kind, primary)]
    # One statement: VALUES are inserted in order, so the primary exists before its shadow
    # refers to it, and an existing namespace costs no lock.
    conn.execute(
        sql.SQL("INSERT INTO vault_namespaces (name, kind, primary_of) VALUES {} "
                "ON CONFLICT (name) DO NOTHING").format(
            sql.SQL(", ").join(sql.SQL("(%s, %s, %s)") for _ in rows)),
        [v for row in rows for v in row],
    )
    return kind


def get_namespace(conn: psycopg.Connection, name: str) -> dict | None:
    row = conn.execute(
        "SELECT name, kind, primary_of, created_at FROM vault_namespaces WHERE name = %s",
        (name,),
    ).fetchone()
    return dict(zip(("name", "kind", "primary_of", "created_at"), row, strict=True)) \
        if row else None


def list_namespaces(conn: psycopg.Connection) -> list[dict]:
    """Every namespace with its kind and its count of active memories, by name."""
    rows = conn.execute(
        """SELECT n.name, n.kind, n.primary_of, n.created_at,
                  (SELECT count(*) FROM memories m
                   WHERE m.namespace = n.name AND m.status = 'active')
           FROM vault_namespaces n ORDER BY n.name"""
    ).fetchall()
    keys = ("name", "kind", "primary_of", "created_at", "active")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def backlog(conn: psycopg.Connection) -> list[dict]:
    """Per shadow namespace: entries pending review and when the oldest was staged (None
    when nothing is pending). Every shadow namespace is listed, empty ones too."""
    rows = conn.execute(
        """SELECT n.name, count(m.id), min(m.created_at)
           FROM vault_namespaces n
           LEFT JOIN memories m ON m.namespace = n.name AND m.review = 'pending'
           WHERE n.kind <> 'primary'
           GROUP BY n.name ORDER BY n.name"""
    ).fetchall()
    return [{"namespace": r[0], "pending": int(r[1]), "oldest_created_at": r[2]} for r in rows]
