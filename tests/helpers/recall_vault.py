"""A small vault for recall's tests: namespace `acme` (routed from /src/acme*) with
standing facts, project facts, a superseded fact, a sensitive one and an episode; and
`personal`, the routing default."""

from pathlib import Path

from helpers.words import WORDS
from memory_platform.store import Database
from memory_platform.store import review as review_store
from memory_platform.vault import memories as vault

ROUTING = ('default = "personal"\n[[rules]]\nproject = "/src/acme*"\nnamespace = "acme"\n')

FACTS = {
    "short": ("acme", "Keep answers short and skip the preamble", "feedback"),
    "pytest": ("acme", "I prefer pytest over unittest for the acme services", "user"),
    "postgres": ("acme", "We decided to use PostgreSQL instead of SQLite for the acme API",
                 "decision"),
    "old_port": ("acme", "The acme API runs on port 8000", "project"),
    "port": ("acme", "The acme API runs on port 8080", "project"),
    "staging": ("acme", "The acme staging database listens on port 5433", "project"),
    "phone": ("acme", "Ana from the acme ops team has the phone number +33 6 12 34 56 78",
              "reference"),
    "migration": ("acme", "On 2026-03-04 we migrated the acme database to PostgreSQL 16",
                  "episode"),
    "peanuts": ("personal", "Allergic to peanuts", "user"),
}


def seed(db: Database, home: Path) -> dict[str, int]:
    """Write the vault (vectors from WORDS); `old_port` is superseded by `port`."""
    (home / "routing.toml").write_text(ROUTING)
    ids = {}
    for key, (namespace, text, category) in FACTS.items():
        ids[key] = vault.add(db, namespace, text, category, "test", embedder=WORDS)["id"]
    with db.connect() as conn, conn.transaction():
        review_store.supersede(conn, ids["old_port"], ids["port"], actor="test")
    return ids
