"""API tokens scoped to vault namespaces, and the `Scope` every vault face checks.

    memory-platform token create --namespaces work,personal [--name laptop]
    memory-platform token list
    memory-platform token revoke ID

A token is `mp_` plus 43 URL-safe characters (256 random bits). It is printed once at
creation; the database keeps only its sha256, so a leaked database leaks no usable token.
Verifying hashes the presented secret, looks the hash up among unrevoked tokens and compares
the hashes with `hmac.compare_digest`.

A token for `work` may read and write `work`, `work__dream` and `work__ideas`, nothing else.
"""

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from memory_platform.store import Database
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import tokens as store

PREFIX = "mp_"
RESERVED_NAMES = ("admin", "local")


@dataclass(frozen=True)
class Scope:
    """The vault namespaces a caller may touch: `primaries` and their shadows, or every
    namespace when `primaries` is None (the admin token, an unauthenticated loopback call,
    an MCP server started without --namespaces)."""

    primaries: frozenset[str] | None = None

    @classmethod
    def everything(cls) -> "Scope":
        return cls(None)

    @classmethod
    def of(cls, namespaces: Iterable[str]) -> "Scope":
        return cls(frozenset(parse_namespaces(namespaces)))

    @property
    def unrestricted(self) -> bool:
        return self.primaries is None

    def permits(self, namespace: str) -> bool:
        """Whether `namespace` (primary or shadow) is inside the scope. A malformed name is
        never permitted."""
        if self.primaries is None:
            return True
        try:
            kind, primary = namespace_store.parse_namespace(namespace)
        except ValueError:
            return False
        return (namespace if kind == "primary" else primary) in self.primaries

    def describe(self) -> str:
        return "every namespace" if self.primaries is None else ", ".join(sorted(self.primaries))


def parse_namespaces(namespaces: Iterable[str] | str) -> list[str]:
    """Primary namespace names from a list or a comma-separated string, validated, in order,
    without duplicates. A shadow name is refused: a scope names primaries, and their shadows
    come with them."""
    if isinstance(namespaces, str):
        namespaces = namespaces.split(",")
    found: list[str] = []
    for raw in namespaces:
        name = raw.strip()
        if not name:
            continue
        kind, primary = namespace_store.parse_namespace(name)
        if kind != "primary":
            raise ValueError(f"{name!r} is a shadow namespace; name its primary {primary!r} "
                             f"(its shadows come with it)")
        if name not in found:
            found.append(name)
    if not found:
        raise ValueError("name at least one namespace, e.g. --namespaces work,personal")
    return found


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Token:
    id: int
    name: str
    scope: Scope

    @property
    def actor(self) -> str:
        return f"api:{self.name}"


def create(db: Database, namespaces: Iterable[str] | str, name: str | None = None
           ) -> tuple[dict, str]:
    """Create a token; return (its row, the secret). The secret is returned here once and
    exists nowhere else afterwards."""
    allowed = parse_namespaces(namespaces)
    if name is not None and name.strip().lower() in RESERVED_NAMES:
        raise ValueError(f"the token name {name!r} is reserved (the audit trail records the "
                         f"admin token as api:admin and open loopback calls as api:local)")
    secret = PREFIX + secrets.token_urlsafe(32)
    with db.connect() as conn:
        row = store.insert_token(conn, name=name, token_hash=hash_secret(secret),
                                 namespaces=allowed)
    return row, secret


def verify(db: Database, secret: str | None) -> Token | None:
    """The live token whose secret this is (its last_used_at updated), else None. Revoked
    tokens and anything not shaped like a token fail."""
    if not secret or not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    presented = hash_secret(secret)
    with db.connect() as conn:
        found = store.live_by_hash(conn, presented)
    if found is None:
        return None
    row, stored = found
    if not hmac.compare_digest(stored.encode(), presented.encode()):
        return None
    return Token(id=int(row["id"]), name=row["name"], scope=Scope.of(row["namespaces"]))


def any_live(db: Database) -> bool:
    with db.connect() as conn:
        return store.any_live(conn)


def list_tokens(db: Database) -> list[dict]:
    """Every token, revoked ones too (never a hash or a secret), oldest first."""
    with db.connect() as conn:
        return store.list_tokens(conn)


def revoke(db: Database, token_id: int) -> dict:
    with db.connect() as conn:
        row = store.revoke(conn, token_id)
    if row is None:
        raise ValueError(f"no token with id {token_id}")
    return row
