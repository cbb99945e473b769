"""What `memory-platform up` does before the Dagster UI starts, without loading Dagster:
start the database, write the demo history (and demo vault) on a machine with none,
catalogue the watched folders, and make the daily partitions start at the earliest day they
hold. Then `counts`, what the progress line says while the first import runs.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memory_platform import progress, synthetic
from memory_platform.days import clamp_to_partitions, extend_history_start
from memory_platform.ingest import catalog
from memory_platform.ingest.report import ImportReport
from memory_platform.query.backfill import FIRST_KINDS
from memory_platform.settings import Settings
from memory_platform.store import Database
from memory_platform.store import catalog as catalog_store
from memory_platform.store import embeddings as embedding_store

# No "new user experience" dialog (a sign-up form for Dagster's newsletter) on the first
# visit: Dagster's instance setting `nux: enabled`.
NUX_OFF = "nux:\n  enabled: false\n"


def write_instance_config(settings: Settings) -> None:
    """DAGSTER_HOME and its dagster.yaml, before the UI or a run starts."""
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    config = settings.dagster_home / "dagster.yaml"
    if not config.exists():
        # A personal memory store does not phone home; edit this file to change it. The
        # LLM-calling assets share the `llm` pool: one at a time, so spend stays bounded.
        config.write_text("telemetry:\n  enabled: false\n" + NUX_OFF +
                          "concurrency:\n  pools:\n    default_limit: 1\n")
    elif "\nnux:" not in "\n" + config.read_text():  # written before the setting came
        with config.open("a") as f:
            f.write(NUX_OFF)


def has_own_history(settings: Settings) -> bool:
    for folder in (settings.claude_projects, settings.inbox, settings.notes):
        if folder is not None and folder.exists() and any(p.is_file() for p in folder.rglob("*")):
            return True
    return False


def prepare(settings: Settings, demo: bool | None = None,
            log: Callable[[str], None] = print) -> dict:
    """Database up, demo history if asked (default: only without a history of one's own),
    the watched folders catalogued (their files' event-time ranges, no events written) and
    the partitions' start moved to the earliest day when that is earlier. Returns
    {"span": (first, last) partition keys to import, or None; "start": the partitions'
    first day when it moved, else None; "scan_errors": entries not read}."""
    from datetime import datetime, timezone

    database = Database.from_settings(settings)
    log(f"database: {'external' if settings.database_url else f'embedded in {settings.pgdata}'}")
    database.url()  # start the embedded server now, so later failures are not about it
    if demo is None:
        demo = not has_own_history(settings)
    if demo and not settings.demo.exists():
        manifest = synthetic.generate_demo(settings.demo)
        log(f"no AI history found: generated a demo history ({manifest['events']} events) "
            f"in {settings.demo}")
    if demo:  # and a demo vault for the curator, into an empty vault only (vault/demo.py)
        from memory_platform.vault.demo import seed_demo_vault

        seed_demo_vault(database, settings, log=log)
    write_instance_config(settings)
    report = ImportReport()
    scanned = catalog.scan_files(database, catalog.watched_targets(settings, report), report)
    log(f"catalogued {len(scanned):,} source files")
    span = catalog.event_day_span(database)
    moved = extend_history_start(span[0]) if span else None
    if moved:
        log(f"daily partitions start on {moved}, the earliest day of the history")
    if span:
        span = clamp_to_partitions(*span, datetime.now(timezone.utc))
    return {"span": span, "start": moved, "scan_errors": report.errors}


def counts(database: Database, model: str) -> dict[str, int]:
    """Files, events and vectors so far (progress.Heartbeat's snapshot): the import's
    counts (store.catalog.import_counts), turns and turns with a vector of `model`
    (interim or real), events with text and events with text and a vector."""
    turns = embedding_store.Backlog(kinds=FIRST_KINDS)
    everything = embedding_store.Backlog()
    with database.connect() as conn:
        found = catalog_store.import_counts(conn)
        with_turns = embedding_store.count_embedded(conn, model, turns)
        with_vectors = embedding_store.count_embedded(conn, model, everything)
        found.update(
            turns=with_turns + embedding_store.count_to_embed(conn, model, turns),
            turns_with_vectors=with_turns, with_vectors=with_vectors,
            with_text=with_vectors + embedding_store.count_to_embed(conn, model, everything))
    return found


@contextmanager
def beating(settings: Settings, log: Callable[[str], None],
            every: float = 5.0) -> Iterator[progress.Heartbeat]:
    """The first import's progress line every `every` seconds (progress.beating on
    `counts`) while the block runs."""
    from memory_platform.query.embeddings import get_embedder

    database, model = Database.from_settings(settings), get_embedder().name
    with progress.beating(lambda: counts(database, model), log, every=every) as heart:
        yield heart
