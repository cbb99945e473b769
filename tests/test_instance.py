"""The production dagster.yaml.example works against a real PostgreSQL (dagster-postgres)."""

import shutil
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import dagster as dg
import psycopg
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def dagster_pg_url(pg_admin_url):
    if "://" not in pg_admin_url:
        pytest.fail("this test needs a URL-style admin connection string")
    name = f"dagster_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlparse(pg_admin_url)
    yield urlunparse(parts._replace(path=f"/{name}"))
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_example_instance_config_stores_runs_in_postgres(tmp_path, monkeypatch, dagster_pg_url):
    dagster_home = tmp_path / "dagster-home"
    dagster_home.mkdir()
    shutil.copy(REPO / "dagster.yaml.example", dagster_home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home))
    monkeypatch.setenv("DAGSTER_POSTGRES_URL", dagster_pg_url)

    @dg.asset
    def probe() -> int:
        return 1

    with dg.DagsterInstance.get() as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        result = dg.materialize([probe], instance=instance)
        assert result.success
        assert instance.get_latest_materialization_event(dg.AssetKey("probe")) is not None
    with psycopg.connect(dagster_pg_url) as conn:
        runs = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
    assert runs == 1
