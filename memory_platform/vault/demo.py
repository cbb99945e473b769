"""Seeding the demo vault (synthetic/demo_vault.py) on a machine with no history, so a first
weekly curator run has memories to weigh and a repository to weigh them against.

`seed_demo_vault` runs from `memory-platform up` whenever it uses the demo history, and
writes only into a vault that holds nothing yet (no namespace at all): never over a real
vault, and nothing twice. It writes the demo repository (synthetic/demo_repo.py) under
HOME/demo-repos/, ties the project namespace to it in routing.toml when there is no routing
file yet (an existing file is the user's: the log says what to add), then adds every demo
memory with its vector in ONE transaction, each audited as `demo` (source 'import'). An
interrupted seed leaves no memory behind, so the next `up` seeds it whole.
"""

import os
from collections.abc import Callable
from datetime import date
from pathlib import Path

from memory_platform.query.embeddings import Embedder
from memory_platform.settings import Settings
from memory_platform.store import Database, memory_embeddings
from memory_platform.store import memories as memory_store
from memory_platform.store import namespaces as namespace_store
from memory_platform.synthetic import demo_vault
from memory_platform.synthetic.demo_repo import DemoRepoError, write_demo_repo
from memory_platform.vault.memories import vault_embedder
from memory_platform.vault.routing import Routing, RoutingError

SOURCE = "import"


def demo_repo_path(settings: Settings) -> Path:
    return settings.home / "demo-repos" / demo_vault.PROJECT


def _existing(db: Database) -> list[str]:
    with db.connect() as conn:
        return [n["name"] for n in namespace_store.list_namespaces(conn)]


def seed_demo_vault(db: Database, settings: Settings, *, embedder: Embedder | None = None,
                    today: date | None = None, log: Callable[[str], None] = print) -> dict:
    """Seed the demo vault into an empty vault. Returns {seeded, namespaces, repo, tie};
    seeded is 0 (and nothing is written) when the vault already holds a namespace."""
    existing = _existing(db)
    if existing:
        log(f"demo vault: not seeded, the vault already holds {', '.join(existing)}")
        return {"seeded": 0, "namespaces": existing, "repo": None, "tie": None}
    repo: Path | None = demo_repo_path(settings)
    try:
        write_demo_repo(repo, today=today)
    except DemoRepoError as exc:
        log(f"demo vault: no demo repository ({exc}); {demo_vault.PROJECT} is curated on "
            f"its memories alone")
        repo = None
    tie = _tie(settings, repo, log) if repo is not None else None
    seeded = _write(db, embedder or vault_embedder())
    if seeded:
        log(f"seeded a demo vault: {seeded} memories in {', '.join(demo_vault.NAMESPACES)}"
            + (f"; {demo_vault.PROJECT} is tied to {repo}" if tie else "")
            + " (try `memory-platform curate --dry-run`)")
    return {"seeded": seeded, "namespaces": list(demo_vault.NAMESPACES), "repo": repo,
            "tie": tie}


def _tie(settings: Settings, repo: Path, log: Callable[[str], None]) -> str | None:
    """Tie the project namespace to `repo` in a new routing file: 'written', 'present' (the
    file already ties it there), or None (the user's file is left as it is; the log says
    what to add)."""
    path = settings.routing_file
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shown = os.path.relpath(repo, path.parent) if path.parent in repo.parents else str(repo)
        path.write_text(demo_vault.routing_tie(shown), encoding="utf-8")
        return "written"
    try:
        tied = Routing.load(path).repos.get(demo_vault.PROJECT)
    except RoutingError as exc:
        log(f"demo vault: the demo repository is not tied ({exc})")
        return None
    if tied is not None and tied.resolve() == repo.resolve():
        return "present"
    log(f"demo vault: {path} is yours, so it is left as it is; to situate the curator in the "
        f"demo repository add under [repos]: {demo_vault.PROJECT} = \"{repo}\"")
    return None


def _write(db: Database, embedder: Embedder) -> int:
    """Every demo memory and its vector, in one transaction; 0 when another writer got to
    the vault first."""
    texts = [memory_store.normalize_text(m.text) for m in demo_vault.MEMORIES]
    vectors = embedder.embed(texts)  # before writing: a model that fails leaves nothing
    with db.connect() as conn:
        memory_embeddings.ensure_memory_model(conn, embedder.name, embedder.dims)
        with conn.transaction():
            if namespace_store.list_namespaces(conn):
                return 0
            rows = []
            for memory, vector in zip(demo_vault.MEMORIES, vectors, strict=True):
                memory_id, _ = memory_store.add_memory(
                    conn, namespace=memory.namespace, text=memory.text,
                    category=memory.category, source=SOURCE, actor=demo_vault.ACTOR)
                rows.append((memory_id, vector))
            memory_embeddings.write_memory_embeddings(conn, embedder.name, embedder.dims, rows)
    return len(rows)
