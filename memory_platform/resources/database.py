"""The database resource: the database and settings, connected lazily."""

from pathlib import Path

import dagster as dg

from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database

# One Database per (url, data folder) and process, so every asset in a run reuses one
# embedded-server handle and migrates once.
_databases: dict[tuple[str | None, str], Database] = {}


class DatabaseResource(dg.ConfigurableResource):
    """PostgreSQL holding the events, vectors and memories. Empty fields fall back to the environment
    (MEMORY_PLATFORM_HOME, MEMORY_PLATFORM_DATABASE_URL, ...), read when first used."""

    home: str | None = None
    database_url: str | None = None

    def settings(self) -> Settings:
        """The project's settings (settings.py), with this resource's fields over them."""
        overrides = {}
        if self.home is not None:
            overrides["home"] = Path(self.home)
        if self.database_url is not None:
            overrides["database_url"] = self.database_url
        return load_settings(**overrides)

    def database(self) -> Database:
        settings = self.settings()
        key = (settings.database_url, str(settings.pgdata))
        if key not in _databases:
            _databases[key] = Database.from_settings(settings)
        return _databases[key]
