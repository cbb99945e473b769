"""The database resource: where cairn lives, connected lazily."""

from pathlib import Path

import dagster as dg

from memory_platform.config import Settings, load_settings
from memory_platform.store import Database

# One Database per (url, data folder) and process, so every asset in a run reuses one
# embedded-server handle and migrates once.
_databases: dict[tuple[str | None, str], Database] = {}


class CairnResource(dg.ConfigurableResource):
    """PostgreSQL holding cairn. Empty fields fall back to the environment
    (MEMORY_PLATFORM_HOME, MEMORY_PLATFORM_DATABASE_URL, ...), read when first used."""

    home: str | None = None
    database_url: str | None = None

    def settings(self) -> Settings:
        base = load_settings()
        if self.home is None and self.database_url is None:
            return base
        home = Path(self.home).expanduser() if self.home else base.home
        inbox = base.inbox if self.home is None else home / "inbox"
        return Settings(
            home=home,
            database_url=self.database_url or base.database_url,
            claude_projects=base.claude_projects,
            inbox=inbox,
            notes=base.notes,
        )

    def database(self) -> Database:
        settings = self.settings()
        key = (settings.database_url, str(settings.pgdata))
        if key not in _databases:
            _databases[key] = Database.from_settings(settings)
        return _databases[key]
