"""`memory-platform`: the command line face. Contract (kept stable for scripts):

    memory-platform import {claude-code,claude-ai,chatgpt,gemini,notes,codex} PATH [--json]
    memory-platform status [--json]
    memory-platform up [--no-demo] [--no-serve] [--port 3000]
    memory-platform search QUERY [--k 10] [--source S] [--project P] [--since D] [--until D] [--json]
    memory-platform embed | summarize --since D --until D | mcp [--http] [--namespaces N] | serve
    memory-platform token create --namespaces N,.. [--name NAME] | list | revoke ID
    memory-platform vault add NAMESPACE TEXT [--category C] | list NAMESPACE [--json] | search QUERY
    memory-platform vault export NAMESPACE [--out DIR] [--json]
    memory-platform review [--namespace N]   (approve / edit / skip / supersede; answers on stdin)
    memory-platform dream [--date D | --since D --until D] [--json]
    memory-platform hook session-end      (Claude Code's SessionEnd hook; JSON on stdin)
    memory-platform bench ingest|search|dedup

Exit code 0 on success, 1 on failure or when any record could not be imported (the errors
are listed; with --json they are in `errors`). Errors are one line; --debug shows tracebacks.
"""

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memory_platform.config import load_settings

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="memory-platform: every AI conversation you have had, in one searchable place.",
)
err = Console(stderr=True)
out = Console()

STATE = {"debug": False}
SOURCE_KINDS = ["claude-code", "claude-ai", "chatgpt", "gemini", "notes", "codex"]
WATCH_STALE_DAYS = 7


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    STATE["debug"] = debug


def _fail(message: str, code: int = 1) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _run(fn):
    """Run a command body: known failures become one clear line."""
    from memory_platform.ingest import ImportFailed
    from memory_platform.llm.base import LLMError
    from memory_platform.store import DatabaseError

    try:
        return fn()
    except typer.Exit:
        raise
    except (ImportFailed, DatabaseError, LLMError, FileNotFoundError, PermissionError,
            ValueError) as exc:
        if STATE["debug"]:
            raise
        _fail(str(exc))
    except Exception as exc:  # anything else is a bug: still one line unless --debug
        if STATE["debug"]:
            raise
        _fail(f"{type(exc).__name__}: {exc} (run with --debug for the traceback)")


def _database():
    from memory_platform.store import Database

    return Database.from_settings(load_settings())


@app.command("import")
def import_command(
    kind: Annotated[str, typer.Argument(help=f"Source format: {', '.join(SOURCE_KINDS)}.")],
    path: Annotated[Path, typer.Argument(help="An export file, zip, or folder.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Import an export file or folder. Re-running adds nothing twice."""

    def body():
        from memory_platform import ingest

        if kind not in SOURCE_KINDS:
            raise ingest.ImportFailed(
                f"unknown source {kind!r}; choose one of {', '.join(SOURCE_KINDS)}"
            )
        report = ingest.ImportReport()
        targets = ingest.discover(kind, path.expanduser(), report)
        if not targets:
            raise ingest.ImportFailed(f"{path}: no {kind} files found there")
        db = _database()
        if as_json or not sys.stderr.isatty():
            result = ingest.import_path(db, kind, path, files=targets)
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

                result = ingest.import_path(db, kind, path, files=targets, progress=progress)
        if as_json:
            print(json.dumps(result.to_dict(), default=str))
        else:
            for error in result.errors:
                err.print(f"[yellow]warning:[/] {error}", highlight=False, soft_wrap=True)
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

    _run(body)


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Totals by source and month, the vault and its review backlog, what is not dreamed yet,
    database size, stale watched folders."""

    def body():
        from datetime import datetime, timedelta, timezone

        from memory_platform import review, runner
        from memory_platform.store import raw as store
        from memory_platform.store import vault as vault_store

        settings = load_settings()
        database = _database()
        backlog = {e["namespace"]: e for e in review.overview(database)}
        undreamed = runner.undreamed_span(settings)
        with database.connect() as conn:
            summary = store.database_summary(conn)
            sources = store.totals_by_source(conn)
            months = store.totals_by_month(conn)
            namespaces = [n for n in vault_store.list_namespaces(conn) if n["kind"] == "primary"]
            warnings = []
            if settings.claude_projects.exists():
                last = store.last_import_under(conn, str(settings.claude_projects.resolve()))
                stale = datetime.now(timezone.utc) - timedelta(days=WATCH_STALE_DAYS)
                if last is None or last < stale:
                    when = "never" if last is None else f"last on {last:%Y-%m-%d}"
                    warnings.append(
                        f"{settings.claude_projects} has not been imported for a week ({when}); "
                        "Claude Code deletes transcripts after cleanupPeriodDays (default 30): "
                        "run `memory-platform import claude-code "
                        f"{settings.claude_projects}` or keep `memory-platform up` running"
                    )
        data = {
            **summary,
            "by_source": {
                s: {"events": n, "conversations": c, "first": f.isoformat(), "last": l.isoformat()}
                for s, n, c, f, l in sources
            },
            "by_month": [{"month": m, "source": s, "events": n} for m, s, n in months],
            "database": settings.database_url and "external" or f"embedded ({settings.pgdata})",
            "vault": [{"namespace": n["name"], "memories": n["active"],
                       "pending_review": backlog.get(n["name"], {}).get("pending", 0),
                       "oldest_pending_days": round(backlog[n["name"]]["age_seconds"] / 86400, 1)
                       if n["name"] in backlog else None} for n in namespaces],
            "undreamed": {"first": undreamed[0], "last": undreamed[1]} if undreamed else None,
            "warnings": warnings,
        }
        if as_json:
            print(json.dumps(data, default=str))
            return
        table = Table(title="cairn: events by source")
        for col in ("source", "events", "conversations", "first", "last"):
            table.add_column(col, justify="right" if col in ("events", "conversations") else "left")
        for s, n, c, f, l in sources:
            table.add_row(s, f"{n:,}", f"{c:,}", f"{f:%Y-%m-%d}", f"{l:%Y-%m-%d}")
        out.print(table)
        if months:
            by_month = Table(title="events by month")
            by_month.add_column("month")
            kinds = sorted({s for _, s, _ in months})
            for k in kinds:
                by_month.add_column(k, justify="right")
            grid: dict[str, dict[str, int]] = {}
            for m, s, n in months:
                grid.setdefault(m, {})[s] = n
            for m in sorted(grid):
                by_month.add_row(m, *[f"{grid[m].get(k, 0):,}" for k in kinds])
            out.print(by_month)
        if data["vault"]:
            vault_table = Table(title="vault: memories and review backlog")
            for col in ("namespace", "memories", "pending review", "oldest pending"):
                vault_table.add_column(col, justify="left" if col == "namespace" else "right")
            for v in data["vault"]:
                age = "" if v["oldest_pending_days"] is None else f"{v['oldest_pending_days']} d"
                vault_table.add_row(v["namespace"], f"{v['memories']:,}",
                                    f"{v['pending_review']:,}", age)
            out.print(vault_table)
        if undreamed:
            out.print(f"not dreamed yet: {undreamed[0]} .. {undreamed[1]} "
                      f"(`memory-platform dream`, or the nightly schedule)", highlight=False)
        out.print(
            f"{summary['events']:,} events in {summary['conversations']:,} conversations from "
            f"{summary['source_files']:,} files; database {summary['database_bytes'] / 1e6:,.1f} MB "
            f"({data['database']})",
            highlight=False,
        )
        for warning in warnings:
            err.print(f"[yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)

    _run(body)


@app.command()
def up(
    demo: Annotated[
        Optional[bool],
        typer.Option("--demo/--no-demo", help="Import the demo history (default: only when "
                     "there is no history of your own)."),
    ] = None,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Start the Dagster UI.")] = True,
    port: Annotated[int, typer.Option(help="Port for the Dagster UI.")] = 3000,
    host: Annotated[str, typer.Option(help="Address for the Dagster UI.")] = "127.0.0.1",
) -> None:
    """Start the database, import the watched folders and serve the Dagster UI.

    Imports everything in the watched folders (a demo history on a machine with none) and
    materializes it in Dagster before serving the UI."""

    def body():
        from memory_platform import runner

        settings = load_settings()
        summary = runner.bring_up(settings, demo=demo, log=lambda m: err.print(m, highlight=False))
        err.print(
            f"[green]ready:[/] {summary['events']:,} events across "
            f"{summary['partitions']} day partitions",
            highlight=False,
        )
        if serve:
            err.print(f"Dagster UI: http://{host}:{port}  (Ctrl-C to stop)", highlight=False)
            code = runner.serve(settings, host=host, port=port)
            raise typer.Exit(code)

    _run(body)


def _parse_day(value: str | None, option: str):
    from datetime import datetime, time, timezone

    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date like 2026-03-01", param_hint=option)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words, an error code, a path or a question.")],
    k: Annotated[int, typer.Option("--k", min=1, max=100, help="How many hits.")] = 10,
    source: Annotated[Optional[str], typer.Option(help="Only this source.")] = None,
    project: Annotated[Optional[str], typer.Option(help="Only this project (cwd).")] = None,
    since: Annotated[Optional[str], typer.Option(help="From this date (UTC).")] = None,
    until: Annotated[Optional[str], typer.Option(help="Before this date (UTC).")] = None,
    mode: Annotated[str, typer.Option(help="hybrid, dense or keyword.")] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list of hits.")] = False,
) -> None:
    """Search everything imported, by meaning and by exact words."""

    def body():
        from memory_platform import search as service

        if mode not in ("hybrid", "dense", "keyword"):
            raise ValueError(f"unknown mode {mode!r}; use hybrid, dense or keyword")
        filters = service.SearchFilters(source=source, project=project,
                                        since=_parse_day(since, "--since"),
                                        until=_parse_day(until, "--until"))
        hits = service.search(_database(), query, k=k, filters=filters, mode=mode)
        if as_json:
            print(json.dumps([h.to_dict() for h in hits], default=str))
            return
        if not hits:
            err.print("no hits", highlight=False)
        for h in hits:
            data = h.to_dict()
            text = " ".join(str(data["text"]).split())
            out.print(
                f"[bold]{data['score']:.3f}[/] {str(data['occurred_at'])[:16]} "
                f"[cyan]{data['source']}[/] {data['role']} #{data['event_id']}\n    "
                f"{escape(text[:300])}{'…' if len(text) > 300 else ''}",
                highlight=False,
            )

    _run(body)


@app.command()
def embed(
    since: Annotated[Optional[str], typer.Option(help="Only events from this date.")] = None,
    until: Annotated[Optional[str], typer.Option(help="Only events before this date.")] = None,
) -> None:
    """Embed every event that has no vector yet for the configured model."""

    def body():
        from memory_platform import embeddings

        embedder = embeddings.get_embedder()
        with Progress(TextColumn("[bold]embedding"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True,
                      disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("embed", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            stats = embeddings.embed_missing(
                _database(), embedder, start=_parse_day(since, "--since"),
                end=_parse_day(until, "--until"), progress=progress)
        out.print(json.dumps(stats, default=str), highlight=False)

    _run(body)


@app.command()
def summarize(
    since: Annotated[str, typer.Option(help="Start date (UTC), e.g. 2026-03-01.")],
    until: Annotated[str, typer.Option(help="End date (UTC, exclusive).")],
    source: Annotated[Optional[str], typer.Option(help="Only this source.")] = None,
    project: Annotated[Optional[str], typer.Option(help="Only this project.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A cited summary of a time range, made now by the configured LLM."""

    def body():
        from memory_platform.llm import CallRecorder, provider_from_env
        from memory_platform.search import SearchFilters
        from memory_platform.summarize import summarize_range

        db = _database()
        llm = CallRecorder(provider_from_env(), db=db)
        result = summarize_range(db, llm, _parse_day(since, "--since"),
                                 _parse_day(until, "--until"),
                                 SearchFilters(source=source, project=project))
        if as_json:
            print(json.dumps(result.to_dict(), default=str))
            return
        out.print(escape(result.summary), highlight=False)
        for item in result.highlights:
            cites = ", ".join(f"#{i}" for i in item["event_ids"])
            out.print(f"- {escape(item['text'])} ({cites})", highlight=False)
        err.print(f"{result.events_read} events read in {result.chunks} chunk(s); "
                  f"{result.llm_calls} LLM calls", highlight=False)

    _run(body)


@app.command()
def dream(
    day: Annotated[Optional[str], typer.Option("--date", help="Dream this UTC day.")] = None,
    since: Annotated[Optional[str], typer.Option(help="First day of a range.")] = None,
    until: Annotated[Optional[str], typer.Option(help="Last day of a range (inclusive).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Run the dream cycle: propose, dedup and stage memories for review.

    Without dates it covers every undreamed day of the last MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS
    (30), like the nightly schedule. Output goes to shadow namespaces only, pending review."""

    def body():
        from memory_platform import runner

        settings = load_settings()
        if day and (since or until):
            _fail("give --date or --since/--until, not both")
        if day:
            first = last = _parse_day(day, "--date").date().isoformat()
        elif since or until:
            if not (since and until):
                _fail("--since and --until go together")
            first = _parse_day(since, "--since").date().isoformat()
            last = _parse_day(until, "--until").date().isoformat()
            if last < first:
                _fail(f"--until {last} is before --since {first}")
        else:
            span = runner.undreamed_span(settings)
            if span is None:
                message = "nothing to dream: every recent turn has been dreamed already"
                print(json.dumps({"run_id": None, "message": message}) if as_json else message)
                return
            first, last = span
        outcome = runner.run_dream(settings, first, last,
                                   log=(lambda m: None) if as_json else err.print)
        if as_json:
            print(json.dumps(outcome))
            return
        counts = outcome["candidates"]
        out.print(f"run {outcome['run_id']}: {sum(counts.values())} candidates "
                  f"({counts.get('proposed', 0)} proposed, "
                  f"{counts.get('below_threshold', 0)} below threshold, "
                  f"{counts.get('rejected_secret', 0)} rejected for secrets); "
                  f"{outcome['staged']} staged for review", highlight=False)
        if outcome["digest"]:
            out.print(f"digest: {outcome['digest']}", highlight=False)

    _run(body)


@app.command("mcp")
def mcp_command(
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] =
        False,
    host: Annotated[str, typer.Option(help="Address for --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --http.")] = 8765,
    namespaces: Annotated[Optional[str], typer.Option(
        help="Limit the vault tools to these primary namespaces (comma-separated) and their "
             "shadows; cairn's unscoped tools are then not offered.")] = None,
) -> None:
    """Serve the MCP tools over stdio (or streamable HTTP).

    Tools: cairn_search, cairn_get, cairn_timeline, cairn_summarize_range, vault_search,
    vault_list, vault_add, vault_context."""

    def body():
        from memory_platform.api.app import is_loopback
        from memory_platform.mcp.server import serve as serve_mcp
        from memory_platform.tokens import parse_namespaces

        if http and not is_loopback(host):
            raise ValueError(f"refusing to serve MCP over HTTP on {host}: bind to 127.0.0.1")
        serve_mcp("streamable-http" if http else "stdio", host=host, port=port,
                  namespaces=parse_namespaces(namespaces) if namespaces is not None else None)

    _run(body)


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
) -> None:
    """Serve the REST API (OpenAPI at /docs) and the review dashboard (/review).

    Bound to anything but loopback, every request needs a token: MEMORY_PLATFORM_API_TOKEN
    (admin) or one from `memory-platform token create`."""

    def body():
        from memory_platform.api.app import serve as serve_api

        serve_api(host=host, port=port, token=os.environ.get("MEMORY_PLATFORM_API_TOKEN"))

    _run(body)


from memory_platform.cli.vault import vault_app  # noqa: E402  (imports main's helpers lazily)

bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print figures and write JSON.")
app.add_typer(bench_app, name="bench")
app.add_typer(vault_app, name="vault")
from memory_platform.cli.review import review_command, vault_export  # noqa: E402

app.command("review")(review_command)
vault_app.command("export")(vault_export)
from memory_platform.cli.tokens import token_app  # noqa: E402

app.add_typer(token_app, name="token")

hook_app = typer.Typer(no_args_is_help=True, help="Entry points for Claude Code hooks.")
app.add_typer(hook_app, name="hook")


@hook_app.command("session-end")
def hook_session_end() -> None:
    """Queue a finished Claude Code session for ingestion and a dream. Reads the SessionEnd
    hook's JSON on stdin and writes one file under $MEMORY_PLATFORM_HOME/queue/session-end;
    never touches the database, so the user's exit is not held up."""
    from memory_platform import hooks

    try:
        hooks.session_end(hooks.read_hook_input(sys.stdin.buffer), load_settings().home)
    except (hooks.HookInputError, OSError) as exc:
        if STATE["debug"]:
            raise
        _fail(f"hook session-end: {exc}")


@bench_app.command("ingest")
def bench_ingest(
    sizes: Annotated[str, typer.Option(help="Comma-separated history sizes in events.")] =
        "10000,100000,1000000",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/ingest.json"),
) -> None:
    """Ingest on synthetic histories in the real formats: parse rate, import rate,
    database bytes per event, re-import time."""

    def body():
        from memory_platform import bench as ingest_bench

        wanted = [int(s.replace("_", "")) for s in sizes.split(",") if s.strip()]
        ingest_bench.run(wanted, out, log=out_console)

    _run(body)


@bench_app.command("search")
def bench_search(
    parts: Annotated[str, typer.Option(help="Any of locomo,latency,throughput.")] =
        "locomo,latency,throughput",
    sizes: Annotated[str, typer.Option(help="Event counts for the latency part.")] = "100000",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/search.json"),
) -> None:
    """Retrieval quality on LoCoMo (dense, keyword, hybrid), search latency percentiles at
    scale, and local embedding throughput."""

    def body():
        from memory_platform import bench_search

        bench_search.run(out, parts=[p.strip() for p in parts.split(",") if p.strip()],
                         sizes=[int(s.replace("_", "")) for s in sizes.split(",") if s.strip()],
                         log=out_console)

    _run(body)


@bench_app.command("dedup")
def bench_dedup(
    parts: Annotated[str, typer.Option(help="Any of labelled,latency.")] = "labelled,latency",
    sizes: Annotated[str, typer.Option(help="Vault sizes in memories for the latency part.")] =
        "10000,100000",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/dedup.json"),
) -> None:
    """The dedup gate: precision/recall of its vector stage on the labelled pairs, and its
    per-candidate latency and throughput against vaults of the given sizes."""

    def body():
        from memory_platform import bench_dedup as dedup_bench

        dedup_bench.run(out, parts=[p.strip() for p in parts.split(",") if p.strip()],
                        sizes=[int(s.replace("_", "")) for s in sizes.split(",") if s.strip()],
                        log=out_console)

    _run(body)


@bench_app.command("review")
def bench_review(
    approvals: Annotated[int, typer.Option(help="Approvals to time in the dashboard.")] = 200,
    list_size: Annotated[int, typer.Option(help="Memories for the vault_list timing.")] =
        10_000,
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/review.json"),
) -> None:
    """The review dashboard in headless Chromium: click to promoted-and-visible (p95 over the
    approvals) and the Dagster runs' catch-up; vault_list of a large namespace."""

    def body():
        from memory_platform import bench_review

        bench_review.run(out, approvals=approvals, list_size=list_size, log=out_console)

    _run(body)


def out_console(message: str) -> None:
    out.print(message, highlight=False, soft_wrap=True)


def main() -> None:
    import warnings

    # Beta/preview notices from Dagster decorators are for developers, not for users.
    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")
    app()
