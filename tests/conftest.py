"""Shared fixtures: a real PostgreSQL (embedded pgserver, or MEMORY_PLATFORM_TEST_DATABASE_URL)
with a fresh database per test, and an isolated MEMORY_PLATFORM_HOME / DAGSTER_HOME."""

import os
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from memory_platform.store import Database

REPO = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("MEMORY_PLATFORM_SAMPLES", REPO.parent / "shared/formats/samples"))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not SAMPLES.is_dir():
        raise RuntimeError(f"sample exports not found at {SAMPLES}; set MEMORY_PLATFORM_SAMPLES")
    return SAMPLES


@pytest.fixture(scope="session")
def pg_admin_url(tmp_path_factory) -> str:
    """A server to create test databases on. Each xdist worker starts its own embedded one."""
    external = os.environ.get("MEMORY_PLATFORM_TEST_DATABASE_URL")
    if external:
        return external
    import pgserver

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    pgdata = Path(f"/tmp/memory-platform-tests-{os.getpid()}-{worker}")
    server = pgserver.get_server(str(pgdata), cleanup_mode="delete")
    return server.get_uri()


@pytest.fixture
def database_url(pg_admin_url):
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_conninfo(pg_admin_url, dbname=name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db(database_url) -> Database:
    return Database(url=database_url)


@pytest.fixture
def home(tmp_path, monkeypatch, database_url) -> Path:
    """An isolated MEMORY_PLATFORM_HOME whose settings point at the test database; tests
    never inherit a developer's DAGSTER_HOME or ~/.claude."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MEMORY_PLATFORM_HOME", str(home))
    monkeypatch.setenv("MEMORY_PLATFORM_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMORY_PLATFORM_CLAUDE_PROJECTS", str(tmp_path / "claude-projects"))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    monkeypatch.delenv("MEMORY_PLATFORM_NOTES", raising=False)
    (home / "dagster").mkdir()
    return home


@pytest.fixture(scope="session")
def int8_home(tmp_path_factory) -> Path:
    """A MEMORY_PLATFORM_HOME whose models/ holds the int8 model of the interim vectors
    (query/quantized.py), built once per test session: ~10 s of torch export."""
    from memory_platform.query import quantized
    from memory_platform.query.embeddings import get_embedder

    home = tmp_path_factory.mktemp("int8-home")
    before = quantized.builds
    quantized.QuantizedEmbedder(get_embedder("local"), home / "models")
    assert quantized.builds == before + 1, "a fresh cache builds the file"
    return home


def pytest_configure(config):
    """The dbt manifest the definitions load is built here, once, before any test module
    imports them (a `dbt parse` only when it is missing or stale): never downloaded, and
    never parsed by a test worker at import time."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller prepared it before starting the workers
    from memory_platform.analytics.dbt import ensure_manifest

    ensure_manifest()
