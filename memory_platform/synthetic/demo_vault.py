"""The demo vault: the memories `memory-platform up` seeds beside the demo history, so the
weekly curator has something to weigh on a first run.

Three namespaces, from the demo story (synthetic/demo.py):
- `bookminder`, tied to the demo repository (demo_repo.py) in routing.toml's [repos]: true
  memories, two made stale by the code (the API moved to port 8081; the Kindle importer
  moved to `bookminder.ingest.kindle`), two duplicates, and two decision records that
  Chesterton's fence keeps ("we tried SQLite FTS5 ..."; "we decided against mocking ...")
  although the code no longer mentions what they rejected;
- `tidepool`, tied to no repository: a memory contradicted by a later one (the positional
  station argument gave way to `--station`), and a decision record;
- `personal`, Dana's preferences: one duplicate.

`kind` and `of` say what each memory is for, so tests and the README can name what a
careful curator cuts (stale, duplicate, contradicted) and what it keeps (true, decision).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

PROJECT = "bookminder"  # the namespace tied to the demo repository
ACTOR = "demo"  # the audit actor of every demo memory

PORT_MEMORY = "The bookminder API listens on port 8080."
IMPORTER_MEMORY = "The Kindle importer lives in src/bookminder/importer.py."
LIMIT = "bookminder's GET /search takes a `limit` parameter: default 20, at most 100."
STACK = "bookminder is a Python FastAPI app on SQLAlchemy, with Alembic migrations."
FTS5_DECISION = ("We tried SQLite FTS5 for highlight search and it failed with concurrent "
                 "writers (\"database is locked\"); search uses PostgreSQL tsvector + GIN "
                 "instead (ADR-004).")
MOCK_DECISION = ("We decided against mocking the database in bookminder's tests: they run "
                 "against the real PostgreSQL on port 5433.")
STATION_NOW = ("Since v0.4.0 `tidepool sync` takes `--station <id>` (or TIDEPOOL_STATION); "
               "the positional station argument is gone.")
RETAIN_DECISION = ("We tried removing cache entries while iterating in Cache::evict_stale and "
                   "it failed to compile (E0502); use HashMap::retain instead.")
VEGETARIAN = "Dana is vegetarian."


@dataclass(frozen=True)
class DemoMemory:
    namespace: str
    text: str
    category: str
    kind: str  # true | stale | duplicate | contradicted | decision
    of: str | None = None  # the memory it duplicates or is contradicted by


def _project(namespace: str, text: str, kind: str = "true", of: str | None = None
             ) -> DemoMemory:
    return DemoMemory(namespace, text, "project", kind, of)


def _user(text: str, kind: str = "true", of: str | None = None) -> DemoMemory:
    return DemoMemory("personal", text, "user", kind, of)


MEMORIES: tuple[DemoMemory, ...] = (
    _project(PROJECT, PORT_MEMORY, "stale"),  # config/settings.toml says 8081
    _project(PROJECT, IMPORTER_MEMORY, "stale"),  # moved to src/bookminder/ingest/kindle.py
    _project(PROJECT, LIMIT),
    _project(PROJECT, "The bookminder search endpoint accepts ?limit= (default 20, max 100).",
             "duplicate", LIMIT),
    _project(PROJECT, FTS5_DECISION, "decision"),
    _project(PROJECT, MOCK_DECISION, "decision"),
    _project(PROJECT, "Search ranks book titles (weight A) above highlight text (weight B) "
                      "with ts_rank_cd."),
    _project(PROJECT, STACK),
    _project(PROJECT, "bookminder is written in Python with FastAPI and SQLAlchemy.",
             "duplicate", STACK),
    _project(PROJECT, "Search p95 is 95 ms on 250k highlights with 4 concurrent writers."),
    _project(PROJECT, "Migration 0008 drops the FTS5 table that migration 0007 created."),
    _project(PROJECT, "bookminder's local PostgreSQL starts with `docker compose up -d "
                      "postgres`."),
    _project("tidepool", "tidepool is a Rust CLI that syncs tide predictions from NOAA."),
    _project("tidepool", "`tidepool sync` takes the station id as a positional argument.",
             "contradicted", STATION_NOW),
    _project("tidepool", STATION_NOW),
    _project("tidepool", RETAIN_DECISION, "decision"),
    _project("tidepool", "NOAA requests are retried with exponential backoff, at most 5 "
                         "attempts."),
    _project("tidepool", "tidepool's cache errors are a thiserror enum, CacheError."),
    _user(VEGETARIAN),
    _user("Dana doesn't eat cilantro."),
    _user("Dana prefers small pull requests."),
    _user("Dana eats no meat: vegetarian.", "duplicate", VEGETARIAN),
    _user("Dana wants breaking changes called out in the changelog."),
    _user("Dana uses anyhow in Rust binaries and thiserror in libraries."),
)

NAMESPACES = tuple(dict.fromkeys(m.namespace for m in MEMORIES))


def routing_tie(repo_path: str) -> str:
    """The routing.toml written for the demo when there is none: the project namespace
    tied to the demo repository (the curator works inside it)."""
    return ("# Written by `memory-platform up` for the demo (see vault/routing.py).\n"
            "# [repos] ties a namespace to the repository its memories describe: the weekly\n"
            "# curator reads that code and its git history.\n"
            "[repos]\n"
            f"{PROJECT} = {json.dumps(repo_path)}\n")  # a TOML basic string
