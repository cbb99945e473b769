"""`memory-platform dream`: the dream cycle over a day or a range, as a Dagster run."""

import json
from typing import Annotated, Optional

import typer

from memory_platform.cli.common import err, fail, needs_llm, out, parse_day, run
from memory_platform.settings import load_settings


def dream(
    day: Annotated[Optional[str], typer.Option("--date", help="Dream this UTC day.")] = None,
    since: Annotated[Optional[str], typer.Option(help="First day of a range.")] = None,
    until: Annotated[Optional[str], typer.Option(help="Last day of a range (inclusive).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome as JSON.")] = False,
) -> None:
    """Propose, dedup and stage memories for review.

    Run the dream cycle: propose, dedup and stage memories for review.

    Without dates it covers every undreamed day of the last MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS
    (30), like the nightly schedule. Output goes to shadow namespaces only, pending review."""

    def body():
        settings = load_settings()
        if day and (since or until):
            fail("give --date or --since/--until, not both")
        if day:
            first = last = parse_day(day, "--date").date().isoformat()
        elif since or until:
            if not (since and until):
                fail("--since and --until go together")
            first = parse_day(since, "--since").date().isoformat()
            last = parse_day(until, "--until").date().isoformat()
            if last < first:
                fail(f"--until {last} is before --since {first}")
        needs_llm("the dream")
        from memory_platform import launch  # Dagster: seconds to import

        if not (day or since or until):
            span = launch.dream_span(settings)
            if span is None:
                message = "nothing to dream: every recent turn has been dreamed already"
                print(json.dumps({"run_id": None, "message": message}) if as_json else message)
                return
            first, last = span
        outcome = launch.run_dream(settings, first, last,
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

    run(body)
