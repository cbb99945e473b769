"""Shared fixtures: a real PostgreSQL (embedded pgserver, or MEMORY_PLATFORM_TEST_DATABASE_URL)
with a fresh database per test (cloned from one migrated template), and an isolated
MEMORY_PLATFORM_HOME / DAGSTER_HOME."""

import os
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from memory_platform.store import Database

REPO = Path(__file__).resolve().parents[1]
# The real export samples the adapters are tested on live in the repository (provenance and
# licences: tests/data/samples/SOURCES.md), so a fresh clone tests alone. Resolved: adapters
# open files by their real path (memory_platform/confined). MEMORY_PLATFORM_SAMPLES only
# for benchmarks/mutation.py, whose copied tests/ sit elsewhere.
SAMPLES = Path(os.environ.get("MEMORY_PLATFORM_SAMPLES", REPO / "tests/data/samples")).resolve()
# ../shared (benchmark data, design docs) is for benchmarks only: a test that opens or lists
# anything there fails (the audit hook below), so a clone without it cannot break.
SHARED = {str(REPO.parent / "shared"), str((REPO.parent / "shared").resolve())}
shared_reads: list[str] = []


class SharedReadError(RuntimeError):
    pass


def _under_shared(path) -> bool:
    if isinstance(path, int):
        return False
    try:
        text = os.path.abspath(os.fsdecode(path))
    except (TypeError, ValueError):
        return False
    return any(text == root or text.startswith(root + os.sep) for root in SHARED)


def _no_shared(event: str, args: tuple) -> None:
    # Checked in-process only: a test's subprocesses are given paths by the test itself.
    if event in ("open", "os.listdir", "os.scandir") and args and _under_shared(args[0]):
        shared_reads.append(os.fsdecode(args[0]))
        raise SharedReadError(f"tests must not read ../shared (benchmarks only): {args[0]}")


sys.addaudithook(_no_shared)


def _path_without_claude(path: str) -> str:
    """PATH without the folders holding a `claude` executable: with no provider set the CLI
    would use a real Claude Code (issue 22), and tests must never call it. A test of the
    detection puts a fake `claude` on its own PATH."""
    kept = [d for d in path.split(os.pathsep)
            if not (d and os.access(os.path.join(d, "claude"), os.X_OK))]
    return os.pathsep.join(kept)


os.environ["PATH"] = _path_without_claude(os.environ.get("PATH", os.defpath))


@pytest.fixture(autouse=True)
def _never_read_shared():
    """Fails the test that read ../shared even when it caught the SharedReadError."""
    del shared_reads[:]
    yield
    if shared_reads:
        read, shared_reads[:] = list(shared_reads), []
        pytest.fail(f"this test read ../shared (benchmarks only): {read}")


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    if not SAMPLES.is_dir():
        raise RuntimeError(f"sample exports not found at {SAMPLES}")
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


@pytest.fixture(scope="session")
def migrated_template(pg_admin_url):
    """A database migrated once per worker that every test database is cloned from
    (CREATE DATABASE ... TEMPLATE): 0.1-0.2 s a test instead of 0.5-0.6 s for an empty
    database and the migrations. Nothing connects to it after it is built (a template
    must have no connections while it is cloned)."""
    name = f"tpl_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    template = Database(url=make_conninfo(pg_admin_url, dbname=name))
    with template.connect():
        pass  # connecting migrates
    template.close()
    yield name
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def database_url(pg_admin_url, migrated_template):
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"')
    yield make_conninfo(pg_admin_url, dbname=name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db(database_url) -> Database:
    return Database(url=database_url)


@pytest.fixture
def home(tmp_path, tmp_path_factory, monkeypatch, database_url) -> Path:
    """An isolated MEMORY_PLATFORM_HOME whose settings point at the test database; tests
    never inherit a developer's DAGSTER_HOME or ~/.claude. Its models/ is one folder per
    test session: the int8 model of the interim vectors (any backlog of 32 turns or more)
    is built once, not once per test (5-10 s each)."""
    home = tmp_path / "home"
    home.mkdir()
    shared_models = tmp_path_factory.getbasetemp() / "shared-models"
    shared_models.mkdir(exist_ok=True)
    (home / "models").symlink_to(shared_models, target_is_directory=True)
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
    (query/quantized.py), built once per test session: ~5-10 s of quantization."""
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


# --- scheduling on two workers (CI: `pytest -n 2`, pyproject's `--dist loadgroup`) ----------
# Longest first (longest-processing-time scheduling): a module named here starts at once on
# a worker instead of after every test collected before it. Seconds: the slowest test of
# each (a module-scoped fixture's module counts whole: one worker runs it) in a full
# `-n 2 --durations=80` run, 2026-12-03, load 5 on 2 cores (944 s in all).
FIRST = (
    "test_dashboard.py",    # 168 s on one worker (module fixture): 61 s, 41 s, 29 s, ...
    "test_up.py",           # 157 s, 70 s, 68 s, 24 s
    "test_deployment.py",   # 117 s
    "test_dream_cli.py",    # 112 s, 18 s
    "test_analytics.py",    # 96 s (module fixture)
    "test_curator_demo.py",  # 52 s
)
# `-m "not slow"`, the everyday subset, leaves out these modules and tests (file::test) on
# top of those marked in place: the end-to-end runs (Dagster, subprocesses, the browser,
# the model against sentence-transformers), 14 s to 259 s each in that run.
SLOW = {
    "test_deployment.py", "test_dashboard.py", "test_curator_page.py", "test_findings_page.py",
    "test_orchard_faces.py", "test_analytics.py", "test_dream_cli.py", "test_dream_dagster.py",
    "test_up.py", "test_curator_demo.py", "test_curator_dagster.py", "test_db_recovery.py",
    "test_minilm.py", "test_onnx_model.py", "test_quantized.py", "test_interim_vectors.py",
    "test_index_exactness.py", "test_api_schema.py", "test_hostile_regressions.py",
    "test_dagster.py", "test_identifiers.py",
    "test_cli.py::test_small_things_read_right",
    "test_cli.py::test_vault_add_keeps_the_vault_rules_on_the_cli",
    "test_cli.py::test_record_errors_are_listed_with_file_and_line_and_exit_nonzero",
    "test_ingest.py::test_sigkill_mid_import_then_rerun_equals_clean_import",
    "test_review.py::test_review_cli_with_piped_stdin",
    "test_memory_imports.py::test_the_import_commands",
    "test_sql_sandbox.py::test_the_cli_refuses_with_an_error_line",
    "test_curator_refusals.py::test_curate_goes_on_after_a_refused_namespace",
    "test_curator_tools.py::test_claude_cli_reads_only_through_the_curators_tools",
    "test_db_timeouts.py::test_a_server_that_never_answers_the_startup_is_given_up_on_in_time",
    "test_curator_agents.py::test_anthropic_tool_loop_refuses_escapes",
    "test_progress.py::test_an_in_process_ingest_run_reports_to_the_terminal",
    "test_curator_faces.py::test_a_cut_secret_is_shown_masked_on_every_face",
}


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: modules stay whole
    for item in items:
        if {item.path.name, f"{item.path.name}::{item.originalname}"} & SLOW:
            item.add_marker(pytest.mark.slow)
        # A module (or class) fixture is built once per worker that runs one of its tests:
        # its tests stay on one worker, so it is built once.
        defs = getattr(item, "_fixtureinfo", None)
        scopes = {d[-1].scope for d in defs.name2fixturedefs.values() if d} if defs else set()
        if scopes & {"module", "class"}:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
