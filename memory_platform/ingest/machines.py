"""The machines events come from (issue 24): this one (its identity in HOME/machine.json,
collect/identity.py) and the ones whose collectors push here."""

from pathlib import Path

from memory_platform.collect import identity
from memory_platform.store import Database
from memory_platform.store import machines as store
from memory_platform.store.machines import Machine


def local(db: Database, home: Path) -> Machine:
    """The local machine's row, holding this machine's stable id and name once it has run."""
    me = identity.identity(home)
    with db.connect() as conn:
        store.claim_local(conn, me["uid"], me["name"])
        found = store.by_id(conn, store.LOCAL_ID)
    assert found is not None
    return found


def rename(db: Database, home: Path, new: str, of: str | None = None) -> Machine:
    """Rename a machine: this one (`of` None; HOME/machine.json follows) or the one called
    `of`."""
    identity.check_name(new)
    with db.connect() as conn:
        if of is None:
            target = local(db, home)
        else:
            target = store.by_name(conn, of)
            if target is None:
                raise ValueError(f"no machine named {of!r} (see `memory-platform machine "
                                 f"list`)")
        renamed = store.rename(conn, target.id, new)
    if renamed.is_local:
        identity.rename(home, new)
    return renamed


def ensure(db: Database, name: str) -> Machine:
    """The machine called `name` (a collector token is made for one), made if new."""
    identity.check_name(name)
    with db.connect() as conn:
        return store.ensure(conn, name)


def find(db: Database, name: str) -> Machine | None:
    with db.connect() as conn:
        return store.by_name(conn, name)


def overview(db: Database, home: Path | None = None) -> list[dict]:
    """Each machine: id, name, uid, local, events, last_collection_at."""
    if home is not None:
        local(db, home)
    with db.connect() as conn:
        return store.overview(conn)


def names(db: Database) -> dict[int, str]:
    with db.connect() as conn:
        return store.names(conn)
