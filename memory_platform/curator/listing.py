"""What the model is shown: a namespace's current memories numbered 1..N (small integer
handles, never database ids), each with its text, category, age, validity and provenance;
the fingerprint that pins that listing; and how a listing too large for one prompt is split.

Handles are positions in the listing ordered by id, so the same rows always get the same
handles, and the fingerprint (sha256 over id, content hash, validity and update time of
every listed row) changes when anything the model judged changes: a memory added,
edited, archived, superseded or promoted into the namespace.
"""

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone

from memory_platform.privacy.egress import outgoing
from memory_platform.store import Database
from memory_platform.store import curator as store

# A rough 4 characters per token, as the scripted provider counts: the split is a budget,
# not an exact fit, and the setting leaves room for the instructions around it.
CHARS_PER_TOKEN = 4
MAX_TEXT_CHARS = 2000  # a very long memory is shown cut, and says so


@dataclass(frozen=True)
class Listing:
    namespace: str
    rows: list[dict]  # handle h is rows[h - 1]
    fingerprint: str
    now: datetime

    @property
    def memory_ids(self) -> list[int]:
        return [int(r["id"]) for r in self.rows]

    @property
    def row_digests(self) -> list[str]:
        """row_digest of each row, in handle order (kept with the run, so a refusal can name
        the memory that changed)."""
        return [row_digest(r) for r in self.rows]

    def memory_id(self, handle: int) -> int:
        return int(self.rows[handle - 1]["id"])

    def row(self, handle: int) -> dict:
        return self.rows[handle - 1]

    def __len__(self) -> int:
        return len(self.rows)


@dataclass(frozen=True)
class Chunk:
    """A run of consecutive handles shown in one prompt."""

    first: int
    last: int
    text: str

    @property
    def tokens(self) -> int:
        return -(-len(self.text) // CHARS_PER_TOKEN)

    def holds(self, handle: int) -> bool:
        return self.first <= handle <= self.last


def _pinned(row: dict) -> str:
    return "|".join([str(int(row["id"])), row["content_hash"], _iso(row["valid_from"]),
                     _iso(row["valid_to"]), str(row["superseded_by"]), _iso(row["updated_at"])])


def fingerprint(rows: list[dict]) -> str:
    """sha256 over (id, content hash, valid_from, valid_to, superseded_by, updated_at) of
    every row, in id order. The same function pins the listing and re-verifies it."""
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: int(r["id"])):
        digest.update(_pinned(row).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def row_digest(row: dict) -> str:
    """What the fingerprint pins of one row, as 16 hex digits (64 bits: enough to tell that
    this row changed, small enough to keep one per listed memory with the run)."""
    return hashlib.sha256(_pinned(row).encode()).hexdigest()[:16]


def _iso(value) -> str:
    return value.astimezone(timezone.utc).isoformat() if value is not None else "-"


def build(db: Database, namespace: str, now: datetime | None = None) -> Listing:
    """The namespace's current memories, their handles and fingerprint."""
    now = now or datetime.now(timezone.utc)
    with db.connect() as conn:
        rows = store.current_memories(conn, namespace)
    return Listing(namespace, rows, fingerprint(rows), now)


def render_line(handle: int, row: dict, now: datetime) -> str:
    """One memory as the model reads it. The text is JSON-quoted (unambiguous, one line)
    and passes privacy.egress before it reaches any prompt: credentials masked, and the
    personal data of a sensitive memory (the model judges facts, not addresses)."""
    text = outgoing(" ".join(str(row["text"]).split()), personal=bool(row.get("sensitive")))
    if len(text) > MAX_TEXT_CHARS:
        text = text[:MAX_TEXT_CHARS] + " [... cut for the listing]"
    age = max(0, (now - row["created_at"]).days)
    validity = f"valid since {row['valid_from']:%Y-%m-%d}"
    if row["valid_to"] is not None:
        validity += f" until {row['valid_to']:%Y-%m-%d}"
    provenance = row["source"]
    if row["promoted_from"] is not None:
        provenance += ", approved in review"
    if row["score"] is not None:
        provenance += f", score {row['score']}"
    changed = "" if row["updated_at"] == row["created_at"] else (
        f", edited {row['updated_at']:%Y-%m-%d}")
    return (f"[{handle}] {row['category']} | {age} days old{changed} | {validity} | "
            f"{provenance} | {json.dumps(text, ensure_ascii=False)}")


def chunks(listing: Listing, max_tokens: int) -> list[Chunk]:
    """The listing split into prompts of at most `max_tokens` (estimated) each, on handle
    boundaries; a single line larger than the budget gets a chunk of its own."""
    budget = max_tokens * CHARS_PER_TOKEN
    found: list[Chunk] = []
    lines: list[str] = []
    size, first = 0, 1
    for handle, row in enumerate(listing.rows, 1):
        line = render_line(handle, row, listing.now)
        if lines and size + len(line) + 1 > budget:
            found.append(Chunk(first, handle - 1, "\n".join(lines)))
            lines, size, first = [], 0, handle
        lines.append(line)
        size += len(line) + 1
    if lines:
        found.append(Chunk(first, len(listing.rows), "\n".join(lines)))
    return found


def namespaces(db: Database) -> list[str]:
    """Every primary namespace: what the weekly curator weeds (shadows are the review's)."""
    with db.connect() as conn:
        return store.primary_namespaces(conn)
