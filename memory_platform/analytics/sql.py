"""Read-only SQL over the lake and the marts, in DuckDB: `memory-platform sql`, and the
connection the weekly report (and `bench analytics`) reads its numbers through.

An in-memory DuckDB attaches the marts' file READ_ONLY as catalog `marts` and exposes each
lake table as a view in schema `lake` (`lake.raw_events`, `lake.memories`, ...). Two locks,
each enough alone for what it covers:
- The statement: exactly one SELECT, or an EXPLAIN [ANALYZE] of one SELECT (EXPLAIN ANALYZE
  runs its statement, so `EXPLAIN ANALYZE COPY ... TO` would write), checked with DuckDB's
  own parser.
- The sandbox, set before anything is attached: external access off
  (`enable_external_access=false`: no file, URL or extension outside what is allowed, and
  no INSTALL or LOAD), only the lake folder (`allowed_directories`) and the warehouse file
  and its WAL (`allowed_paths`) readable, extension autoload, autoinstall, community
  extensions and persistent secrets off, and the configuration locked
  (`lock_configuration=true`), so no statement can loosen any of it. A SELECT naming a
  file elsewhere (`read_text('/etc/passwd')`, `glob('/root/*')`) is refused by DuckDB.
A query is stopped after `timeout_s` and refused past `max_rows`; every refusal is
SQLRefused with its reason (the CLI prints it as an `error:` line).
"""

import re
import threading
from pathlib import Path

import duckdb

from memory_platform.analytics.lake import TABLES, snapshot_path
from memory_platform.settings import Settings

READ_STATEMENTS = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
TIMEOUT_S = 300.0
MAX_ROWS = 100_000
# EXPLAIN, ANALYZE and the options; what follows must parse as one SELECT. Anything else
# before the statement (a comment, say) fails to match and is refused: fail closed.
_EXPLAIN = re.compile(r"\s*explain\s+(?:analy[sz]e\s+)?(?:\([^()]*\)\s*)?", re.I)


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


def _sandbox(con: duckdb.DuckDBPyConnection, settings: Settings) -> None:
    """Confine `con` to the lake and the warehouse and lock its configuration (the module
    docstring). The paths are given as written and resolved: DuckDB compares the strings,
    and the views use the former."""
    folders, files = set(), set()
    for lake in (settings.lake, settings.lake.resolve()):
        folders.add(str(lake).rstrip("/") + "/")  # the slash: not `lake-other/`
    for warehouse in (settings.warehouse_file, settings.warehouse_file.resolve()):
        files |= {str(warehouse), f"{warehouse}.wal"}
    con.execute("SET allowed_directories = ?", [sorted(folders)])
    con.execute("SET allowed_paths = ?", [sorted(files)])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def connect(settings: Settings, *, need_marts: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with `marts` (when built) and `lake.*` attached read-only, in
    the sandbox (set before anything is attached or viewed)."""
    con = duckdb.connect(":memory:", config={
        "autoinstall_known_extensions": False, "autoload_known_extensions": False,
        "allow_community_extensions": False, "allow_persistent_secrets": False})
    con.execute("SET TimeZone = 'UTC'")
    _sandbox(con, settings)
    warehouse = settings.warehouse_file
    if warehouse.exists():
        con.execute(f"ATTACH {_literal(warehouse)} AS marts (READ_ONLY)")
    elif need_marts:
        raise FileNotFoundError(
            f"no marts at {warehouse} yet: build them with `memory-platform report` or by "
            "materializing the analytics assets in the Dagster UI")
    con.execute("CREATE SCHEMA lake")
    for table, glob in lake_globs(settings.lake).items():
        # raw_events: one file per day, older ones without the machine column
        extra = (", hive_partitioning = false, union_by_name = true"
                 if table == "raw_events" else "")
        con.execute(f"CREATE VIEW lake.{table} AS "
                    f"SELECT * FROM read_parquet({_literal(glob)}{extra})")
    return con


def check_read_only(statement: str) -> None:
    """Refuse anything but one SELECT, or an EXPLAIN [ANALYZE] of one SELECT."""
    parsed = _one_statement(statement)
    if parsed.type == duckdb.StatementType.EXPLAIN:
        explained = _EXPLAIN.match(parsed.query)
        inner = _one_statement(parsed.query[explained.end():], refused="EXPLAIN") \
            if explained else None
        if inner is None or inner.type != duckdb.StatementType.SELECT:
            raise SQLRefused("read-only: EXPLAIN [ANALYZE] of one SELECT only (EXPLAIN "
                             "ANALYZE runs its statement)")
    elif parsed.type not in READ_STATEMENTS:
        raise SQLRefused(f"read-only: SELECT (or EXPLAIN) only, not {parsed.type.name}")


def _one_statement(text: str, refused: str | None = None):
    try:
        parsed = duckdb.extract_statements(text)
    except duckdb.Error as exc:
        if refused:
            raise SQLRefused(f"read-only: {refused} of one SELECT only") from None
        raise SQLRefused(f"not valid SQL: {exc}") from None
    if len(parsed) != 1:
        raise SQLRefused(f"one statement at a time ({len(parsed)} given)")
    return parsed[0]


def query(settings: Settings, statement: str, *, timeout_s: float = TIMEOUT_S,
          max_rows: int = MAX_ROWS) -> tuple[list[str], list[tuple]]:
    """(column names, every row) of one SELECT over lake and marts; stopped after
    `timeout_s`, refused past `max_rows` rows."""
    check_read_only(statement)
    con = connect(settings)
    timer = threading.Timer(timeout_s, con.interrupt)
    timer.start()
    try:
        cursor = con.execute(statement)
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchmany(max_rows + 1)
    except duckdb.InterruptException:
        raise SQLRefused(f"the query ran longer than {timeout_s:g} s and was stopped") \
            from None
    except duckdb.PermissionException as exc:
        raise SQLRefused(f"refused: `sql` reads only the lake and the warehouse "
                         f"({settings.lake}, {settings.warehouse_file}); {exc}") from None
    except duckdb.CatalogException as exc:
        raise SQLRefused(f"{exc}\n{tables_hint(con)}") from None
    except duckdb.Error as exc:
        raise SQLRefused(str(exc)) from None
    finally:
        timer.cancel()
        con.close()
    if len(rows) > max_rows:
        raise SQLRefused(f"more than {max_rows:,} rows: add a LIMIT, or aggregate")
    return columns, rows


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
