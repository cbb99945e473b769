"""SQL and migrations: the only package that writes SQL."""

from memory_platform.store.db import Database, DatabaseError

__all__ = ["Database", "DatabaseError"]
