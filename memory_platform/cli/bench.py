"""`memory-platform bench ...`: benchmarks that print figures and write JSON."""

from pathlib import Path
from typing import Annotated

import typer

from memory_platform.cli.common import run, say

bench_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True, help="Benchmarks that print figures and write JSON.")


def _ints(values: str) -> list[int]:
    return [int(s.replace("_", "")) for s in values.split(",") if s.strip()]


def _names(values: str) -> list[str]:
    return [p.strip() for p in values.split(",") if p.strip()]


@bench_app.command("ingest")
def bench_ingest(
    sizes: Annotated[str, typer.Option(help="Comma-separated history sizes in events.")] =
        "10000,100000,1000000",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/ingest.json"),
    confinement: Annotated[bool, typer.Option(
        "--confinement", help="Also import each history with the confined reader and with "
        "plain open()/rglob, alternated, and report the cost.")] = False,
) -> None:
    """Ingest on synthetic histories in the real formats: parse rate, import rate,
    database bytes per event, re-import time."""

    def body():
        from memory_platform.bench import ingest

        ingest.run(_ints(sizes), out, log=say, confinement=confinement)

    run(body)


@bench_app.command("search")
def bench_search(
    parts: Annotated[str, typer.Option(help="Any of locomo,devsearch,latency,throughput.")] =
        "locomo,latency,throughput",
    sizes: Annotated[str, typer.Option(help="Event counts for the latency part.")] = "100000",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/search.json"),
) -> None:
    """Retrieval quality on LoCoMo (dense, keyword, hybrid), search latency percentiles at
    scale, and local embedding throughput."""

    def body():
        from memory_platform.bench import search

        search.run(out, parts=_names(parts), sizes=_ints(sizes), log=say)

    run(body)


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
        from memory_platform.bench import dedup

        dedup.run(out, parts=_names(parts), sizes=_ints(sizes), log=say)

    run(body)


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
        from memory_platform.bench import review

        review.run(out, approvals=approvals, list_size=list_size, log=say)

    run(body)


@bench_app.command("curator")
def bench_curator(
    size: Annotated[int, typer.Option(help="Memories in the namespace.")] = 10_000,
    share: Annotated[float, typer.Option(help="Share of each prompt's handles cut.")] = 0.10,
    budgets: Annotated[str, typer.Option(help="Prompt budgets (tokens) to split at.")] =
        "8000,24000,100000",
    restores: Annotated[int, typer.Option(help="Cuts restored one by one (latency).")] = 200,
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/curator.json"),
) -> None:
    """The curator on a large namespace with a scripted model: listing and its token size
    and split, propose and validation, executing cuts, restore latency, purge time."""

    def body():
        from memory_platform.bench import curator

        curator.run(out, size=size, share=share, budgets=tuple(_ints(budgets)),
                    restores=restores, log=say)

    run(body)


@bench_app.command("serve")
def bench_serve(
    code: Annotated[list[str], typer.Option(
        help="label=path of a code tree whose `serve` to measure (repeatable), e.g. "
             "before=/work/main after=.")] = ["after=."],
    home: Annotated[Path, typer.Option(help="Scratch home (built once, then reused).")] =
        Path("/tmp/memory-platform-serve-load"),
    events: Annotated[int, typer.Option(help="Events in the synthetic history.")] = 2000,
    clients: Annotated[int, typer.Option(help="Concurrent clients.")] = 8,
    seconds: Annotated[float, typer.Option(help="Seconds of load per code tree.")] = 60,
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/serve-load.json"),
) -> None:
    """`serve` under concurrent clients: /search and /vault/search requests/s, p50/p95 and
    errors, for each code tree given (the same data)."""

    def body():
        from memory_platform.bench import serve_load

        codes = {}
        for item in code:
            label, sep, path = item.partition("=")
            if not sep or not label or not path:
                raise ValueError(f"--code takes label=path, not {item!r}")
            codes[label] = Path(path)
        serve_load.run(out, codes=codes, home=home, events=events, clients=clients,
                       seconds=seconds, log=say)

    run(body)


@bench_app.command("collect")
def bench_collect(
    events: Annotated[int, typer.Option(help="Events in the pushed history.")] = 20_000,
    files: Annotated[int, typer.Option(help="Transcripts they are spread over.")] = 40,
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/collect.json"),
) -> None:
    """The collector over loopback: start time, spool disk per 10k events, compressed bytes
    per event, push events/s, peak RSS, and a grown history re-sent from its new part."""

    def body():
        from memory_platform.bench import collect

        collect.run(out, events=events, files=files, log=say)

    run(body)


@bench_app.command("analytics")
def bench_analytics(
    sizes: Annotated[str, typer.Option(help="Comma-separated history sizes in events.")] =
        "100000,1000000",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/analytics.json"),
) -> None:
    """The analytics side on synthetic histories: lake export (raw-event partitions and
    snapshot tables), `dbt build` of the marts, and one weekly report."""

    def body():
        from memory_platform.bench import analytics

        analytics.run(_ints(sizes), out, log=say)

    run(body)


@bench_app.command("hostile")
def bench_hostile(
    parts: Annotated[str, typer.Option(help="Any of deep,long,zip,overhead.")] =
        "deep,long,zip,overhead",
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/hostile-files.json"),
) -> None:
    """Hostile export files: peak RSS and seconds per MB for deep nesting and long strings
    (bounded, linear), and the guard's cost on ordinary exports."""

    def body():
        from memory_platform.bench import hostile

        hostile.run(out, parts=_names(parts), log=say)

    run(body)


@bench_app.command("recall")
def bench_recall(
    parts: Annotated[str, typer.Option(help="Any of labelled,scale,hooks (hooks measures "
                                   "scale too); the figures of the others are kept from "
                                   "--out.")] = "labelled,scale,hooks",
    size: Annotated[int, typer.Option(help="Memories in the benchmark namespace.")] = 10_000,
    calls: Annotated[int, typer.Option(help="Timed calls per hook and per pack.")] = 40,
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/recall.json"),
) -> None:
    """Hook latency (resident process and not), pack / wiki / lint at scale, and the
    labelled personal-data and credential set (hand patterns vs detect-secrets)."""

    def body():
        from memory_platform.bench import recall

        recall.run(out, size=size, calls=calls, parts=tuple(_names(parts)), log=say)

    run(body)


@bench_app.command("first-contact")
def bench_first_contact(
    events: Annotated[int, typer.Option(help="Events in the generated Claude Code history.")]
        = 6000,
    out: Annotated[Path, typer.Option(help="Where to write the figures (JSON).")] =
        Path("benchmarks/results/first-contact.json"),
) -> None:
    """A newcomer's `up` on a fresh HOME: seconds to the UI, to the newest turn found by
    meaning, to every turn with a vector, and the longest silence in the terminal."""

    def body():
        from memory_platform.bench import first_contact

        first_contact.run(out, events=events, log=say)

    run(body)
