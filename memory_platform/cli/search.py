"""Search from the command line: search, embed, summarize."""

import sys
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memory_platform.cli.common import (
    database,
    err,
    out,
    parse_day,
    run,
    to_json,
)


def search(
    query: Annotated[str, typer.Argument(help="Words, an error code, a path or a question.")],
    k: Annotated[int, typer.Option("--k", min=1, max=100, help="How many hits.")] = 10,
    source: Annotated[Optional[str], typer.Option(help="Only this source.")] = None,
    project: Annotated[Optional[str], typer.Option(help="Only this project (cwd).")] = None,
    since: Annotated[Optional[str], typer.Option(help="From this date (UTC).")] = None,
    until: Annotated[Optional[str], typer.Option(help="Before this date (UTC).")] = None,
    mode: Annotated[str, typer.Option(help="hybrid, dense or keyword.")] = "hybrid",
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object: query, mode, searched, hits.")] = False,
) -> None:
    """Search everything imported, by meaning and by exact words."""

    def body():
        from memory_platform.query import search as service
        from memory_platform.query.coverage import describe, search_with_coverage

        if mode not in ("hybrid", "dense", "keyword"):
            raise ValueError(f"unknown mode {mode!r}; use hybrid, dense or keyword")
        filters = service.SearchFilters(source=source, project=project,
                                        since=parse_day(since, "--since"),
                                        until=parse_day(until, "--until"))
        hits, searched = search_with_coverage(database(), query, k=k, filters=filters,
                                              mode=mode)
        if as_json:
            print(to_json({"query": query, "mode": mode, "searched": searched.to_dict(),
                           "hits": [h.to_dict() for h in hits]}))
            return
        note = describe(searched)
        if note:
            err.print(note, highlight=False, markup=False, soft_wrap=True)
        if not hits:
            err.print("no hits", highlight=False)
        for h in hits:
            data = h.to_dict()
            text = " ".join(str(data["text"]).split())
            out.print(
                f"[bold]{data['score']:.3f}[/] {str(data['occurred_at'])[:16]} "
                f"[cyan]{data['source']}[/] {data['role']} #{data['event_id']} "
                f"[dim]{escape(str(data['machine']))}[/]\n    "
                f"{escape(text[:300])}{'…' if len(text) > 300 else ''}",
                highlight=False, markup=True,
            )

    run(body)


def embed(
    since: Annotated[Optional[str], typer.Option(help="Only events from this date.")] = None,
    until: Annotated[Optional[str], typer.Option(help="Only events before this date.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Embed every event that has no vector yet.

    Embed every event that has no vector yet for the configured model."""

    def body():
        from memory_platform.query import embeddings

        embedder = embeddings.get_embedder()
        with Progress(TextColumn("[bold]embedding"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True,
                      disable=not sys.stderr.isatty()) as bar:
            task = bar.add_task("embed", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            stats = embeddings.embed_missing(
                database(), embedder, start=parse_day(since, "--since"),
                end=parse_day(until, "--until"), progress=progress)
        if as_json:
            print(to_json(stats))
            return
        out.print(embeddings.embedding_summary(stats, embedder.name), highlight=False,
                  markup=False)

    run(body)


def summarize(
    since: Annotated[str, typer.Option(help="Start date (UTC), e.g. 2026-03-01.")],
    until: Annotated[str, typer.Option(help="End date (UTC, exclusive).")],
    source: Annotated[Optional[str], typer.Option(help="Only this source.")] = None,
    project: Annotated[Optional[str], typer.Option(help="Only this project.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A cited summary of a time range (needs an LLM).

    A cited summary of a time range, made now by the configured LLM."""

    def body():
        from memory_platform.llm import CallRecorder, provider_from_env
        from memory_platform.query.search import SearchFilters
        from memory_platform.query.summarize import summarize_range

        db = database()
        llm = CallRecorder(provider_from_env(), db=db)
        result = summarize_range(db, llm, parse_day(since, "--since"),
                                 parse_day(until, "--until"),
                                 SearchFilters(source=source, project=project))
        if as_json:
            print(to_json(result.to_dict()))
            return
        out.print(escape(result.summary), highlight=False, markup=True)
        for item in result.highlights:
            cites = ", ".join(f"#{i}" for i in item["event_ids"])
            out.print(f"- {escape(item['text'])} ({cites})", highlight=False, markup=True)
        err.print(f"{result.events_read} events read in {result.chunks} chunk(s); "
                  f"{result.llm_calls} LLM calls", highlight=False)

    run(body)


