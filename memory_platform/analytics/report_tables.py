"""What the report's modules share: query rows as dicts, numbers as people read them, and
markdown tables of rows (report.py for the week's activity, dream, vault and spend;
report_sections.py for the curator and the portfolio)."""

import duckdb


def query_rows(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[dict]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def number(value) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def markdown_table(rows: list[dict], columns: list[tuple[str, str]]) -> list[str]:
    """`rows` as markdown table lines, one column per (title, key); "(none)" when empty."""
    if not rows:
        return ["(none)"]
    lines = ["| " + " | ".join(title for title, _ in columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]
    for row in rows:
        cells = [number(row[key]) if row[key] is not None else "" for _, key in columns]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return lines
