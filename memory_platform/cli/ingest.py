"""Ingest from the command line: import, status, up."""

import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memory_platform.cli.common import (
    database,
    err,
    out,
    print_errors,
    run,
    to_json,
    warn,
)
from memory_platform.settings import load_settings

SOURCE_KINDS = ["claude-code", "claude-ai", "chatgpt", "gemini", "notes", "codex"]


def import_command(
    kind: Annotated[str, typer.Argument(help=f"Source format: {', '.join(SOURCE_KINDS)}.")],
    path: Annotated[Path, typer.Argument(help="An export file, zip, or folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Import an export file or folder. Re-running adds nothing twice."""

    def body():
        from memory_platform.ingest import importer
        from memory_platform.ingest.catalog import discover
        from memory_platform.ingest.report import ImportFailed, ImportReport

        if kind not in SOURCE_KINDS:
            raise ImportFailed(f"unknown source {kind!r}; choose one of {', '.join(SOURCE_KINDS)}")
        found = ImportReport()  # what the walk skipped (symlinks out, FIFOs): reported
        targets = discover(kind, path.expanduser(), found)
        if not targets:
            raise ImportFailed(f"{path}: no {kind} files found there"
                               + "".join(f"\n  {e}" for e in found.errors))
        db = database()
        if as_json or not sys.stderr.isatty():
            result = importer.import_path(db, kind, path, files=targets, report=found)
        else:
            with Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[events]:,} events"), TimeElapsedColumn(),
                console=err, transient=True,
            ) as bar:
                task = bar.add_task(f"importing {kind}", total=len(targets), events=0)

                def progress(what: str, amount: int) -> None:
                    if what == "file":
                        bar.advance(task, amount)
                    else:
                        bar.update(task, events=bar.tasks[task].fields["events"] + amount)

                result = importer.import_path(db, kind, path, files=targets, report=found,
                                              progress=progress)
        if as_json:
            print(to_json(result.to_dict()))
        else:
            print_errors(result.errors)
            out.print(
                f"{result.files} file(s): {result.events_new:,} new events, "
                f"{result.events_existing:,} already present"
                + (f", {result.events_revised:,} changed (kept as revisions)"
                   if result.events_revised else "")
                + (f", {result.files_unchanged} file(s) unchanged" if result.files_unchanged
                   else "")
                + (f"; {len(result.errors)} error(s)" if result.errors else ""),
                highlight=False,
            )
        if result.errors:
            raise typer.Exit(1)

    run(body)


def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Totals, the vault's backlog, findings and curator cuts, undreamed days, warnings.

    What is stored: events by source and month, the vault, its backlog, its open lint and
    wiki findings (`memory-platform lint list`) and the curator's cuts (tombstones ==
    archives per namespace), undreamed days.

    Also the database size and a warning for watched folders not imported for a week."""

    def body():
        from memory_platform import status as service

        data = service.report(database(), load_settings())
        if as_json:
            print(to_json(data))
            return
        _print_status(data)

    run(body)


def _print_status(data: dict) -> None:
    table = Table(title="cairn: events by source")
    for col in ("source", "events", "conversations", "first", "last"):
        table.add_column(col, justify="right" if col in ("events", "conversations") else "left")
    for source, t in data["by_source"].items():
        table.add_row(source, f"{t['events']:,}", f"{t['conversations']:,}",
                      f"{t['first']:%Y-%m-%d}", f"{t['last']:%Y-%m-%d}")
    out.print(table)
    machines = Table(title="machines: events and last collection")
    for col in ("machine", "events", "last collection"):
        machines.add_column(col, justify="right" if col == "events" else "left")
    for m in data["machines"]:
        when = f"{m['last_collection_at']:%Y-%m-%d %H:%M}" if m["last_collection_at"] else "-"
        machines.add_row(m["name"] + (" (this one)" if m["local"] else ""),
                         f"{m['events']:,}", when)
    out.print(machines)
    months = data["by_month"]
    if months:
        by_month = Table(title="events by month")
        by_month.add_column("month")
        kinds = sorted({m["source"] for m in months})
        for k in kinds:
            by_month.add_column(k, justify="right")
        grid: dict[str, dict[str, int]] = {}
        for m in months:
            grid.setdefault(m["month"], {})[m["source"]] = m["events"]
        for month in sorted(grid):
            by_month.add_row(month, *[f"{grid[month].get(k, 0):,}" for k in kinds])
        out.print(by_month)
    if data["vault"]:
        vault_table = Table(title="vault: memories, review backlog, findings, curator cuts")
        for col in ("namespace", "memories", "pending review", "oldest pending",
                    "open findings", "cut (restorable)", "tombstones = archives"):
            vault_table.add_column(col, justify="left" if col == "namespace" else "right")
        for v in data["vault"]:
            age = "" if v["oldest_pending_days"] is None else f"{v['oldest_pending_days']} d"
            pairing = (f"{v['curator_tombstones']} = {v['curator_archives']}"
                       if v["curator_invariant_ok"] else
                       f"BROKEN {v['curator_tombstones']} != {v['curator_archives']}")
            vault_table.add_row(v["namespace"], f"{v['memories']:,}",
                                f"{v['pending_review']:,}", age,
                                f"{v['lint_findings_open']:,}",
                                f"{v['curator_archives']:,}", pairing)
        out.print(vault_table)
    if data["undreamed"]:
        out.print(f"not dreamed yet: {data['undreamed']['first']} .. "
                  f"{data['undreamed']['last']} (`memory-platform dream`, or the nightly "
                  f"schedule)", highlight=False)
    out.print(
        f"{data['events']:,} events in {data['conversations']:,} conversations from "
        f"{data['source_files']:,} files; database {data['database_bytes'] / 1e6:,.1f} MB, "
        f"{data['database']}",
        highlight=False,
    )
    for bad in data["files_with_errors"]:
        warn(f"{bad['path']}: {bad['errors']} record(s) could not be imported "
             f"(`memory-platform import {bad['kind']} {bad['path']}` lists them)")
    for warning in data["warnings"]:
        warn(warning)


def up(
    demo: Annotated[
        Optional[bool],
        typer.Option("--demo/--no-demo", help="Import the demo history (default: only when "
                     "there is no history of your own)."),
    ] = None,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Start the Dagster UI.")] = True,
    port: Annotated[int, typer.Option(help="Port for the Dagster UI.")] = 3000,
    host: Annotated[str, typer.Option(help="Address for the Dagster UI.")] = "127.0.0.1",
    verbose: Annotated[bool, typer.Option(
        "--verbose", help="Print Dagster's webserver and daemon logs here (default: "
        "HOME/logs/dagster.log).")] = False,
) -> None:
    """Serve the Dagster UI and import the watched folders.

    Start the database, catalogue the watched folders, serve the Dagster UI, then import
    and embed as Dagster runs shown in the UI, with a progress line here every 5 s.

    On a machine with no history of its own a demo history is generated. Dagster's own logs
    go to HOME/logs/dagster.log (--verbose prints them here)."""

    def body():
        # Started in the background (`up &`, nohup) the shell leaves SIGINT ignored: take the
        # default back, so `kill -INT` stops an import as Ctrl-C does.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from memory_platform import first_contact, supervisor
        from memory_platform.llm.providers import llm_not_configured

        settings = load_settings()

        def log(message: str) -> None:
            err.print(message, highlight=False, markup=False)

        # Before Dagster loads: the definitions' daily partitions start at the earliest
        # day of the history, which this catalogues.
        prepared = first_contact.prepare(settings, demo=demo, log=log)

        def hints(summary: dict) -> None:
            for example in _examples(summary):
                err.print(f"  try: {example}", highlight=False, markup=False)
            problem = llm_not_configured()
            if problem:
                warn(f"dreams are off until an LLM is configured (the nightly schedule and "
                     f"the session-end sensor start stopped): {problem}")

        def work() -> None:
            with first_contact.beating(settings, log) as heart:  # before Dagster loads
                from memory_platform import launch

                summary = launch.first_import(settings, prepared["span"], log=log,
                                              heart=heart)
            err.print(f"[green]ready:[/] {summary['events']:,} events across "
                      f"{summary['partitions']} day partitions, searchable by meaning",
                      highlight=False, markup=True)

        if not serve:
            work()
            hints({"events": 1})
            return
        raise typer.Exit(supervisor.serve(
            settings, host=host, port=port, log=log, verbose=verbose,
            ready=lambda url: hints({"events": 1 if prepared["span"] else 0}), work=work))

    run(body)


def _examples(summary: dict) -> list[str]:
    """Two or three commands worth trying on what was just imported."""
    if not summary.get("events"):
        return ["memory-platform import claude-code ~/.claude/projects"]
    return ['memory-platform search "what did we decide about the database"',
            "memory-platform status",
            "memory-platform serve   # REST API and the review dashboard"]
