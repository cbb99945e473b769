"""The word tables behind the generated chatter: Dana's projects, features, preferences,
follow-ups, concepts, everyday requests, and the model and client versions written.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Project:
    name: str
    pkg: str
    lang: str
    cwd: str
    modules: tuple[str, ...]
    weight: float
    branches: tuple[str, ...]


PROJECTS = (
    Project(
        "bookminder",
        "bookminder",
        "python",
        "/Users/dana/code/bookminder",
        ("shelves", "highlights", "isbn_lookup", "search", "importer", "reminders", "accounts"),
        3.0,
        ("main", "feat/search-ranking", "fix/importer-dupes"),
    ),
    Project(
        "tidepool",
        "tidepool",
        "rust",
        "/Users/dana/code/tidepool",
        ("cache", "stations", "harmonics", "sync", "parser", "forecast"),
        2.5,
        ("main", "feat/offline-cache", "fix/station-timeouts"),
    ),
    Project(
        "lumen-ui",
        "lumen",
        "ts",
        "/Users/dana/work/lumen-ui",
        ("Timeline", "SearchBar", "InfiniteList", "ThemeToggle", "AvatarMenu", "Toast"),
        2.0,
        ("main", "feat/timeline-virtualization", "chore/vite-5"),
    ),
    Project(
        "ledgerly",
        "ledgerly",
        "python",
        "/Users/dana/work/ledgerly",
        ("invoices", "payouts", "webhooks", "reconciliation", "tax_rates", "ledger"),
        1.5,
        ("main", "fix/webhook-retries", "feat/payout-batching"),
    ),
    Project(
        "orbit_cli.v2",
        "orbit",
        "go",
        "/Users/dana/code/orbit_cli.v2",
        ("upload", "retry", "config", "auth", "manifest"),
        1.0,
        ("main", "feat/chunked-upload"),
    ),
    Project(
        "harbor-infra",
        "harbor",
        "infra",
        "/Users/dana/work/harbor-infra",
        ("api", "postgres", "redis", "ingress", "monitoring", "vpc"),
        1.0,
        ("main", "staging-rollout"),
    ),
    Project(
        "pixel-forge",
        "pixelforge",
        "ts",
        "/Users/dana/Side Projects/pixel-forge",
        ("Canvas", "Palette", "Layers", "ExportDialog", "Brush"),
        0.6,
        ("main",),
    ),
    Project(
        "wavelet",
        "wavelet",
        "python",
        "/Users/dana/research/wavelet",
        ("dataloader", "trainer", "tokenizer", "eval_suite", "checkpoints"),
        0.8,
        ("main", "exp/cosine-schedule"),
    ),
)

ARGS = ("key", "isbn", "station_id", "user_id", "cursor", "slug", "entries", "token", "path")
TYPE_SUFFIXES = ("Config", "Client", "Row", "Entry", "State", "Record", "Service", "Cache")
PORTS = (5432, 5433, 6379, 8000, 8080, 3000, 5173, 9090, 4317, 27017)
FEATURES = (
    "cursor-based pagination",
    "a --dry-run flag",
    "retries with exponential backoff (max {n} attempts)",
    "rate limiting at {n} requests per minute per user",
    "a /healthz endpoint",
    "structured JSON logging",
    "a CSV export",
    "optimistic updates",
    "a TTL cache ({n} s)",
    "webhook signature verification",
    "batch import of {n} rows at a time",
    "a progress bar for long syncs",
)
REFACTORS = (
    "split it into a pure function and a thin I/O wrapper",
    "remove the global state so tests can run in parallel",
    "replace the nested ifs with early returns",
    "move the SQL into the repository layer",
    "make the config an explicit parameter instead of a module global",
)
PREFERENCES = (
    "small PRs I can review in one sitting",
    "no mocks for the database in tests; use the real one on port {port}",
    "type hints on every public function",
    "line length 100 everywhere",
    "explicit error types over stringly errors",
    "commit messages in the imperative mood",
    "tabs never, 4 spaces in Python and 2 in TypeScript",
)
ACKS = ("", "ok. ", "nice. ", "hmm. ", "good, ", "thanks. ", "right, ", "perfect. ", "wait — ")
FOLLOWUPS = (
    "go ahead, but keep `{fn}` backwards compatible",
    "commit it with a message that mentions {fn} and the {error_code} fix",
    "keep the public signature of `{fn}` — callers in {mod2} depend on it",
    "run the full suite before you stop, not just `{test_cmd}`",
    "also update the README section about {mod} (the part about port {port})",
    "that fixed it locally, but CI still fails on {branch} after {n} minutes",
    "why did you pick {Y} here? last time {X} was fine for {mod}",
    "add a regression test for the {error_code} case with {n} items",
    "revert the change to {file}, it was not needed",
    "now do the same for {mod2}, it has the same `{arg}` handling",
    "don't touch the migrations, only {file}",
    "how confident are you that this doesn't break {mod2}? it ran {n} times today",
    "line {line} of {file} still looks wrong to me",
    "can we get {fn} under {n} ms? it's at {ms} ms now",
    "use {lib} {ver} for that, it's what we pin everywhere else",
    "split that into two commits: {file} first, then the tests",
    "explain the change to `{fn}` in two sentences for the PR description",
)
CONCEPTS = (
    "Rust two-phase borrows",
    "PostgreSQL MVCC and why VACUUM matters",
    "React reconciliation and keys",
    "Go context cancellation",
    "idempotency keys for webhooks",
    "exponential backoff with jitter",
    "HNSW vs IVFFlat indexes in pgvector",
    "connection pooling with PgBouncer",
    "CRDTs for offline-first sync",
    "the OAuth PKCE flow",
    "structured concurrency",
    "Bloom filters",
    "B-tree vs GIN indexes",
    "the CAP theorem in practice",
    "write-ahead logging",
    "consistent hashing",
)
LIFE = (
    "Plan a {n}-day trip to {city} in {month}. I'm vegetarian and hate early mornings.",
    "Draft a short, polite email to {person} asking to move our 1:1 to {day}.",
    "Suggest a {n}-week plan to go from 5k to 10k running three times a week.",
    "What's a high-protein vegetarian lunch I can meal-prep on Sunday for {n} days?",
    "Help me write a birthday message for {person}, something warm but not cheesy.",
    "Summarise the pros and cons of a standing desk after {n} months of back pain.",
    "Give me a packing list for {n} days in {city} with only a carry-on.",
    "Which houseplants survive a north-facing window and a forgetful owner?",
)
CITIES = ("Lisbon", "Kyoto", "Vienna", "Montreal", "Copenhagen", "Porto", "Seoul", "Oaxaca")
MONTHS = ("March", "April", "May", "June", "September", "October", "November")
PEOPLE = ("Priya", "Marco", "Jun", "Alex", "Sam", "Noor", "Elena", "Tomasz")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
CLAUDE_MODELS = (
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-5-20251101",
    "claude-sonnet-4-20250514",
    "claude-opus-4-1-20250805",
)
SUBAGENT_MODEL = "claude-haiku-4-5-20251001"
CC_VERSIONS = ("2.0.13", "2.0.14", "2.0.28", "2.0.37", "2.0.55", "2.1.3", "2.1.14", "2.1.32")
GPT_MODELS = ("gpt-4o", "gpt-4o", "o3", "gpt-5", "gpt-4o-mini")
SLUG_WORDS = (
    "quiet", "brisk", "amber", "lucid", "nimble", "velvet", "humble", "rapid", "gentle",
    "otter", "falcon", "willow", "ember", "harbor", "comet", "maple", "pebble", "lantern",
)  # fmt: skip


def pascal_case(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))
