"""`memory-platform report` and `memory-platform sql`: the analytics side on the command
line."""

from typing import Annotated

import typer

from memory_platform.cli.common import out, output_to, run, say, to_json
from memory_platform.settings import load_settings


def report(
    week: Annotated[str | None, typer.Option(
        help="ISO week like 2026-W48 (or a date in it); default: the last complete week.")]
        = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] =
        False,
) -> None:
    """Build a week's report now (numbers, charts, summaries).

    Lake, marts (dbt build, tests as checks), report.

    Runs `weekly_report_job` in this process, so the run shows in the Dagster UI. Writes
    $MEMORY_PLATFORM_HOME/reports/<week>/ (report.md, report.json, four PNG charts); without
    an LLM the report has the numbers and charts and says the summaries need one."""

    def body():
        from datetime import datetime, timezone

        from memory_platform.days import last_complete_week, parse_week

        monday = parse_week(week) if week else last_complete_week(datetime.now(timezone.utc))
        from memory_platform import launch

        settings = load_settings()
        # dbt's and Dagster's output go to a log file: the terminal shows only the report
        log = settings.home / "logs" / "report.log"
        if not json_out:
            say(f"building the report of {monday:%G-W%V} (dbt and Dagster log to {log})")
        with output_to(log):
            outcome = launch.run_weekly_report(settings, monday, log=lambda _m: None)
        if json_out:
            print(to_json(outcome))
            return
        say(f"report of {outcome['week']}: {outcome['path']}/report.md "
            f"({outcome['turns']} turns, {outcome['sessions']} sessions; summaries: "
            f"{outcome['summaries']}; run {outcome['run_id']})")

    run(body)


def sql(
    statement: Annotated[str, typer.Argument(help='One SELECT, e.g. "select * from '
                                                  'marts.daily_activity limit 5".')],
    json_out: Annotated[bool, typer.Option("--json", help="Rows as a JSON list of objects.")]
        = False,
    timeout: Annotated[float, typer.Option(
        min=0.1, help="Stop the query after this many seconds.")] = 300.0,
) -> None:
    """Read-only SQL over the lake and the marts (DuckDB).

    Ask the lake and the marts your own question.

    Tables: marts.<model> (daily_activity, conversation_days, dream_funnel, dream_nights,
    vault_health, llm_spend, stg_*) and lake.<table> (raw_events, conversations, memories,
    vault_audit, dream_candidates, dedup_verdicts, dream_watermarks, llm_calls). Only one
    SELECT (or EXPLAIN of one) per call; DuckDB reads no file outside the lake and the
    warehouse. Every row is printed, up to 100,000 (more is refused: add a LIMIT)."""

    def body():
        from memory_platform.analytics import service

        columns, rows = service.run_sql(load_settings(), statement, timeout_s=timeout)
        if json_out:
            print(to_json([dict(zip(columns, row, strict=True)) for row in rows]))
            return
        from rich.table import Table

        table = Table(*columns, show_lines=False)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        out.print(table)
        say(f"{len(rows)} row{'s' if len(rows) != 1 else ''}")

    run(body)
