"""`memory-platform`: the command line face. Contract (kept stable for scripts):

    memory-platform import {claude-code,claude-ai,chatgpt,gemini,notes,codex} PATH [--json]
    memory-platform status [--json]
    memory-platform up [--no-demo] [--no-serve] [--port 3000]
    memory-platform search QUERY [--k 10] [--source S] [--project P] [--since D] [--until D] [--json]
    memory-platform embed | summarize --since D --until D | mcp [--http] [--namespaces N] | serve
    memory-platform token create --kind agent|person --namespaces N,.. [--name NAME] | list | revoke ID
    memory-platform token create --kind collector --machine NAME   (a machine's collector)
    memory-platform machine list | name NEW [--of OLD]
    memory-platform collect --to URL [--once] [--machine NAME] | collect --status
    memory-platform vault add NAMESPACE TEXT [--category C] | list NAMESPACE [--json] | search QUERY
    memory-platform vault export NAMESPACE [--out DIR] [--json]
    memory-platform review [--namespace N]   (approve / edit / skip / supersede; answers on stdin)
    memory-platform dream [--date D | --since D --until D] [--json]
    memory-platform curate [--namespace N] [--dry-run] [--json]
    memory-platform curator cuts|restore ID|runs|purges|purge   (the curator's books)
    memory-platform orchard list|show|add|edit|milestone|week|proposals|accept|dismiss
    memory-platform hook session-end      (Claude Code's SessionEnd hook; JSON on stdin)
    memory-platform hook session-start | hook prompt   (SessionStart / UserPromptSubmit hooks)
    memory-platform wiki build [NAMESPACE] | lint run|list|resolve | recall serve|stop|classify
    memory-platform report [--week 2026-W48] [--json]
    memory-platform sql "select ..." [--json]
    memory-platform bench ingest|search|dedup|review|analytics|curator|recall

Exit code 0 on success, 1 on failure or when any record could not be imported (the errors
are listed; with --json they are in `errors`). Errors are one line; --debug shows tracebacks.

This module only assembles the commands; each lives in the module of its area.
"""

from typing import Annotated

import typer

from memory_platform.cli import (
    analytics,
    bench,
    curator,
    dream,
    hooks,
    ingest,
    machines,
    orchard,
    recall,
    review,
    search,
    serve,
    tokens,
    vault,
)
from memory_platform.cli.common import STATE

app = typer.Typer(rich_markup_mode=None, 
    add_completion=False,
    no_args_is_help=True,
    help="memory-platform: every AI conversation you have had, in one searchable place.",
)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    STATE["debug"] = debug


app.command("import")(ingest.import_command)
app.command("status")(ingest.status)
app.command("up")(ingest.up)
app.command("search")(search.search)
app.command("embed")(search.embed)
app.command("summarize")(search.summarize)
app.command("dream")(dream.dream)
app.command("curate")(curator.curate)
app.command("review")(review.review_command)
app.command("report")(analytics.report)
app.command("sql")(analytics.sql)
app.command("mcp")(serve.mcp_command)
app.command("serve")(serve.serve)
app.add_typer(vault.vault_app, name="vault")
app.add_typer(orchard.orchard_app, name="orchard")
app.add_typer(tokens.token_app, name="token")
app.add_typer(machines.machine_app, name="machine")
app.add_typer(hooks.hook_app, name="hook")
app.add_typer(curator.curator_app, name="curator")
app.add_typer(bench.bench_app, name="bench")
app.add_typer(recall.wiki_app, name="wiki")
app.add_typer(recall.lint_app, name="lint")
app.add_typer(recall.recall_app, name="recall")


def main() -> None:
    import warnings

    # Beta/preview notices from Dagster decorators are for developers, not for users.
    warnings.filterwarnings("ignore", module="dagster")
    warnings.filterwarnings("ignore", message=".*is currently in (beta|preview).*")
    app()
