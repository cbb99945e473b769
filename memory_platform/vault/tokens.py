"""API tokens scoped to vault namespaces, and the `Scope` every vault face checks.

    memory-platform token create --kind agent|person --namespaces work,personal [--name laptop]
    memory-platform token list
    memory-platform token revoke ID

A token is `mp_` plus 43 URL-safe characters (256 random bits). It is printed once at
creation; the database keeps only its sha256, so a leaked database leaks no usable token.
Verifying hashes the presented secret, looks the hash up among unrevoked tokens and compares
the hashes with `hmac.compare_digest`.

A token for `work` may read `work`, `work__dream` and `work__ideas`, nothing else. What it
may write depends on its kind (migration 0009):

- `person`: a person's own client or script. Writes go to the namespace named, audited as
  `api:<name>`; it may edit, archive and restore, and decide review entries.
- `agent`: an AI agent or automation holding a token. It suggests: a write to `work` is
  staged in `work__ideas` (source 'agent', review 'pending'), exactly like MCP `vault_add`,
  so the review gate holds whatever face the agent uses; it may edit, archive or restore
  only entries of `__ideas`, and never decides a review. New tokens are `agent` unless made
  `person` on purpose (least privilege); tokens from before kinds existed are `person`
  (that is how they behaved).
- `collector`: a machine's collector (memory-platform collect, issue 24), bound to that
  machine: it may only append raw records for it (POST /ingest/{machine}/records); it names
  no namespace, and every other route refuses it (api/access.py).
"""

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from memory_platform.ingest import machines
from memory_platform.store import Database
from memory_platform.store import namespaces as namespace_store
from memory_platform.store import tokens as store

PREFIX = "mp_"
RESERVED_NAMES = ("admin", "local")
KINDS = ("person", "agent", "collector")


@dataclass(frozen=True)
class Scope:
    """The vault namespaces a caller may touch: `primaries` and their shadows, or every
    namespace when `primaries` is None (the admin token, an unauthenticated loopback call,
    an MCP server started without --namespaces). `agent` is True for an agent token: its
    writes are suggestions (see the module docstring)."""

    primaries: frozenset[str] | None = None
    agent: bool = False

    @classmethod
    def everything(cls) -> "Scope":
        return cls(None)

    @classmethod
    def of(cls, namespaces: Iterable[str], *, agent: bool = False) -> "Scope":
        return cls(frozenset(parse_namespaces(namespaces)), agent)

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
        where = "every namespace" if self.primaries is None else ", ".join(
            sorted(self.primaries))
        return f"{where} (agent: suggestions only)" if self.agent else where


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
    kind: str = "person"
    machine: str | None = None  # a collector token's machine

    @property
    def actor(self) -> str:
        return f"api:{self.name}"


def create(db: Database, namespaces: Iterable[str] | str | None, name: str | None = None,
           kind: str = "agent", machine: str | None = None) -> tuple[dict, str]:
    """Create a token of `kind` ('agent', the default: least privilege, 'person', or
    'collector' for `machine`, made if new); return (its row, the secret). The secret is
    returned here once and exists nowhere else afterwards."""
    if kind not in KINDS:
        raise ValueError(f"unknown token kind {kind!r}; use one of {', '.join(KINDS)}")
    machine_id = None
    if kind == "collector":
        if not machine or namespaces:
            raise ValueError("a collector token names its machine (--machine NAME) and no "
                             "namespace: it only appends that machine's raw records")
        allowed: list[str] = []
        machine_id = machines.ensure(db, machine).id
    elif machine:
        raise ValueError("only a collector token is bound to a machine (--kind collector)")
    else:
        allowed = parse_namespaces(namespaces or "")
    if name is not None and name.strip().lower() in RESERVED_NAMES:
        raise ValueError(f"the token name {name!r} is reserved (the audit trail records the "
                         f"admin token as api:admin and open loopback calls as api:local)")
    secret = PREFIX + secrets.token_urlsafe(32)
    with db.connect() as conn:
        row = store.insert_token(conn, name=name, token_hash=hash_secret(secret),
                                 namespaces=allowed, kind=kind, machine_id=machine_id)
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
    if row["kind"] == "collector":  # no namespace at all; api/access.py admits it once
        return Token(id=int(row["id"]), name=row["name"], kind="collector",
                     scope=Scope(frozenset(), agent=True), machine=row["machine"])
    return Token(id=int(row["id"]), name=row["name"], kind=row["kind"],
                 scope=Scope.of(row["namespaces"], agent=row["kind"] == "agent"))


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
