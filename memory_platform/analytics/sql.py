"""Read-only SQL over the lake and the marts, in DuckDB: `memory-platform sql`, and the
connection the weekly report reads its numbers through.

An in-memory DuckDB attaches the marts' file READ_ONLY as catalog `marts` and exposes each
lake table as a view in schema `lake` (`lake.raw_events`, `lake.memories`, ...). Only
SELECT statements (and EXPLAIN of them) are accepted, one per call, so a question can never
write into the warehouse, the lake or anywhere else; extensions are never downloaded.
"""

from pathlib import Path

import duckdb

from memory_platform.analytics.lake import TABLES, snapshot_path
from memory_platform.settings import Settings

READ_STATEMENTS = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}


class SQLRefused(ValueError):
    """A statement that is not a single read, or that names something that is not there."""


def _literal(path: Path | str) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def lake_globs(lake: Path) -> dict[str, str]:
    """Lake table -> the Parquet glob it reads, for the tables that have files."""
    globs = {}
    if any(lake.glob("raw_events/*/*.parquet")):
        globs["raw_events"] = str(lake / "raw_events" / "*" / "*.parquet")
    for table in TABLES:
        if snapshot_path(lake, table).exists():
            globs[table] = str(snapshot_path(lake, table))
    return globs


def connect(settings: Settings, *, need_marts: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with `marts` (when built) and `lake.*` attached read-only."""
    con = duckdb.connect(":memory:", config={"autoinstall_known_extensions": False})
    con.execute("SET TimeZone = 'UTC'")
    warehouse = settings.warehouse_file
    if warehouse.exists():
        con.execute(f"ATTACH {_literal(warehouse)} AS marts (READ_ONLY)")
    elif need_marts:
        raise FileNotFoundError(
            f"no marts at {warehouse} yet: build them with `memory-platform report` or by "
            "materializing the analytics assets in the Dagster UI")
    con.execute("CREATE SCHEMA lake")
    for table, glob in lake_globs(settings.lake).items():
        extra = ", hive_partitioning = false" if table == "raw_events" else ""
        con.execute(f"CREATE VIEW lake.{table} AS "
                    f"SELECT * FROM read_parquet({_literal(glob)}{extra})")
    return con


def check_read_only(statement: str) -> None:
    try:
        parsed = duckdb.extract_statements(statement)
    except duckdb.Error as exc:
        raise SQLRefused(f"not valid SQL: {exc}") from None
    if len(parsed) != 1:
        raise SQLRefused(f"one statement at a time ({len(parsed)} given)")
    if parsed[0].type not in READ_STATEMENTS:
        raise SQLRefused(f"read-only: SELECT (or EXPLAIN) only, not {parsed[0].type.name}")


def query(settings: Settings, statement: str) -> tuple[list[str], list[tuple]]:
    """(column names, every row) of one SELECT over lake and marts."""
    check_read_only(statement)
    con = connect(settings)
    try:
        cursor = con.execute(statement)
        columns = [d[0] for d in cursor.description or []]
        return columns, cursor.fetchall()
    except duckdb.CatalogException as exc:
        raise SQLRefused(f"{exc}\n{tables_hint(con)}") from None
    except duckdb.Error as exc:
        raise SQLRefused(str(exc)) from None
    finally:
        con.close()


def available_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
        "UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views() "
        "WHERE NOT internal ORDER BY 1, 2, 3").fetchall()
    names = []
    for database, schema, name in rows:
        if database == "marts" and schema == "main":
            names.append(f"marts.{name}")
        elif schema == "lake":
            names.append(f"lake.{name}")
    return names


def tables_hint(con: duckdb.DuckDBPyConnection) -> str:
    names = available_tables(con)
    return ("tables: " + ", ".join(names)) if names else (
        "nothing to query yet: run `memory-platform up` (the lake) and "
        "`memory-platform report` (the marts)")
