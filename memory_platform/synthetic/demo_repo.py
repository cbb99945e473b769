"""The demo's bookminder repository: a small git repository whose history tells the demo
story (FTS5 tried and dropped for PostgreSQL tsvector, ADR-004; the Kindle importer moved
into `bookminder.ingest`; the API moved from port 8080 to 8081), so the weekly curator,
situated in it, can check the demo vault's memories against the code and its history.

Written with the `git` executable (what the curator reads it with too), isolated from the
user's git configuration (no hooks, no signing, no templates), with fixed authors and
dates anchored on `today` like the demo history: the same day gives the same commit ids.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from memory_platform.synthetic.demo_files import (
    DEMO_FTS_MIGRATION,
    DEMO_IMPORTER,
    DEMO_SEARCH_FTS,
    DEMO_TSV_MIGRATION,
)

AUTHOR = ("Dana", "dana@example.com")


class DemoRepoError(RuntimeError):
    """The demo repository cannot be written (no git, or git failed: the message says)."""


SETTINGS_TOML = """\
# bookminder settings, read by src/bookminder/settings.py
[server]
host = "127.0.0.1"
port = {port}

[database]
url = "postgresql://dana@localhost:5433/bookminder"

[search]
default_limit = 20
max_limit = 100
"""

README = """\
# bookminder

Search and revisit your reading highlights (Kindle clippings). Python, FastAPI,
SQLAlchemy, Alembic; PostgreSQL for storage and search (see docs/decisions).

    docker compose up -d postgres      # PostgreSQL on localhost:5433
    uv run alembic upgrade head
    uv run uvicorn bookminder.app:app  # the port is config/settings.toml's
"""

PYPROJECT = """\
[project]
name = "bookminder"
version = "0.6.0"
requires-python = ">=3.12"
dependencies = ["fastapi", "sqlalchemy>=2", "alembic", "psycopg[binary]"]
"""

COMPOSE = """\
services:
  postgres:
    image: postgres:17
    environment:
      POSTGRES_USER: dana
      POSTGRES_DB: bookminder
      POSTGRES_HOST_AUTH_METHOD: trust
    ports:
      - "5433:5432"
"""

CONFTEST = """\
import os

import pytest

# The real database, never a mock (ADR-004): `docker compose up -d postgres` first.
DATABASE_URL = os.environ.get("DATABASE_URL", "postgresql://dana@localhost:5433/bookminder")


@pytest.fixture
def db():
    from bookminder.db import connect

    with connect(DATABASE_URL) as session:
        yield session
"""

APP = """\
from fastapi import FastAPI

from bookminder.api import search
from bookminder.{importer} import import_kindle_clippings  # noqa: F401 (the CLI's)

app = FastAPI(title="bookminder")
app.include_router(search.router)
"""

ADR = """\
# ADR-004: Search on PostgreSQL tsvector, not SQLite FTS5

Status: accepted

## Context
We tried SQLite FTS5 for highlight search. It broke as soon as the Kindle importer and
the API wrote at the same time ("database is locked"); p95 was 840 ms under write load.

## Decision
Search moves to PostgreSQL: a generated `tsvector` column with a GIN index, queried with
`websearch_to_tsquery` and ranked with `ts_rank_cd`. Tests run against the real
PostgreSQL (`docker compose up -d postgres`, port 5433), no mocks.

## Consequences
- migration 0008 drops the FTS5 table from 0007
- p95 95 ms on 250k highlights with 4 concurrent writers
"""

TITLE_WEIGHT = '''"""weight book titles (A) above highlight text (B)"""

revision = "0009"
down_revision = "0008"
'''

SEARCH_RANKED = '''from fastapi import APIRouter, Depends, Query
from sqlalchemy import func, select

router = APIRouter()


@router.get("/search")
def search(
    q: str, limit: int = Query(20, ge=1, le=100), db: Session = Depends(get_db)
) -> list[HighlightOut]:
    query = func.websearch_to_tsquery("english", q)
    # titles weigh A, highlight text B (migration 0009)
    stmt = (
        select(Highlight)
        .where(Highlight.search.op("@@")(query))
        .order_by(func.ts_rank_cd(Highlight.search, query).desc())
        .limit(limit)
    )
    return [HighlightOut.model_validate(h) for h in db.scalars(stmt)]
'''

IMPORTER_MODULE = "src/bookminder/importer.py"
IMPORTER_MOVED = "src/bookminder/ingest/kindle.py"

# (days before today, subject, files written, files moved {old: new}); applied in order.
COMMITS: list[tuple[int, str, dict[str, str], dict[str, str]]] = [
    (12, "bookminder: a FastAPI app over reading highlights", {
        "README.md": README, "pyproject.toml": PYPROJECT, "docker-compose.yml": COMPOSE,
        "config/settings.toml": SETTINGS_TOML.format(port=8080),
        "src/bookminder/__init__.py": "",
        "src/bookminder/app.py": APP.format(importer="importer"),
        IMPORTER_MODULE: DEMO_IMPORTER + "\n",
        "tests/conftest.py": CONFTEST,
    }, {}),
    (9, "Add FTS5 search over highlights", {
        "alembic/versions/0007_highlights_fts.py": DEMO_FTS_MIGRATION + "\n",
        "src/bookminder/api/__init__.py": "",
        "src/bookminder/api/search.py": DEMO_SEARCH_FTS + "\n",
    }, {}),
    (8, "ADR-004: search on PostgreSQL tsvector, not SQLite FTS5", {
        "docs/decisions/004-search-backend.md": ADR,
    }, {}),
    (7, "Move search to PostgreSQL tsvector + GIN (ADR-004)", {
        "alembic/versions/0008_highlights_tsvector.py": DEMO_TSV_MIGRATION + "\n",
    }, {}),
    (3, "Move the Kindle importer to bookminder.ingest.kindle", {
        "src/bookminder/ingest/__init__.py": "",
        "src/bookminder/app.py": APP.format(importer="ingest.kindle"),
    }, {IMPORTER_MODULE: IMPORTER_MOVED}),
    (2, "Weighted search ranking and a limit parameter", {
        "alembic/versions/0009_search_title_weight.py": TITLE_WEIGHT,
        "src/bookminder/api/search.py": SEARCH_RANKED,
    }, {}),
    (1, "Serve the API on port 8081: 8080 is taken by the e-reader sync proxy", {
        "config/settings.toml": SETTINGS_TOML.format(port=8081),
    }, {}),
]


def _git(repo: Path, *args: str, when: datetime | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C",
           "GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
           "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1]}
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              env=env, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DemoRepoError(f"git {args[0]} in {repo}: {exc}") from exc
    if done.returncode != 0:
        raise DemoRepoError(f"git {' '.join(args[:2])} in {repo} failed: "
                            f"{done.stderr.strip()[:500]}")
    return done.stdout.strip()


def write_demo_repo(folder: Path, *, today: date | None = None) -> dict:
    """Write the repository at `folder` (once: an existing repository there is kept as it
    is). Returns {path, created, commits: {subject: commit id}}. Built beside `folder` and
    renamed into place, so an interrupted write leaves no half repository behind."""
    folder = Path(folder)
    if (folder / ".git").is_dir():
        return {"path": folder, "created": False, "commits": _commits(folder)}
    if folder.exists():
        raise DemoRepoError(f"{folder} exists and is not a git repository; move it away to "
                            f"get the demo repository")
    if shutil.which("git") is None:
        raise DemoRepoError("git is not installed: the curator reads repositories with it")
    anchor = today or datetime.now(timezone.utc).date()
    noon = datetime(anchor.year, anchor.month, anchor.day, 11, 0, tzinfo=timezone.utc)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    _git(partial, "init", "-q", "-b", "main")
    for days_ago, subject, files, moves in COMMITS:
        for old, new in moves.items():
            (partial / new).parent.mkdir(parents=True, exist_ok=True)
            _git(partial, "mv", old, new)
        for name, text in files.items():
            path = partial / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        _git(partial, "add", "-A")
        _git(partial, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m",
             subject, when=noon - timedelta(days=days_ago))
    partial.rename(folder)
    return {"path": folder, "created": True, "commits": _commits(folder)}


def _commits(repo: Path) -> dict[str, str]:
    lines = _git(repo, "log", "--format=%h %s").splitlines()
    return {subject: sha for sha, _, subject in (line.partition(" ") for line in lines)}
