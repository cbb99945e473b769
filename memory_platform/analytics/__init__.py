"""analytics: looking at the history, not only searching it.

Owns: the lake's snapshot tables (lake.py: Parquet copies of the tables the marts need,
beside ingest's raw-event partitions), running the dbt project in `dbt_project/` (dbt.py:
where it lives, its manifest, the environment its profile reads), the weekly report
(report.py: numbers from the marts, report_sections.py: the curator's and the portfolio's,
report_tables.py: rows and markdown tables both share, charts.py: PNG charts rendered
offline, summaries.py: one `summarize_range` per active project) and read-only SQL over
lake and marts (sql.py).

May import every domain below it (dream, vault, query, ingest) and the base (llm, store,
privacy, days, settings). Never Dagster or a face: the assets in assets/analytics.py wrap
these functions.
"""
