"""`memory-platform curate` and `memory-platform curator ...`: the weekly weeding by hand.

    memory-platform curate [--namespace N] [--dry-run] [--json]
    memory-platform curator cuts [--namespace N] [--json]      restorable cuts, countdown
    memory-platform curator restore ID [--json]                 within the retention window
    memory-platform curator runs [--namespace N] [--refused] [--json]
    memory-platform curator purges [--namespace N] [--json]
    memory-platform curator purge [--json]                      what the daily job does

`curate` runs the curator as Dagster runs in this process, on the instance the UI shows
(one per namespace, the current week); the breaker refuses here as in the schedule.
--dry-run records and shows the verdict (reasons, evidence) and cuts nothing. Each
namespace's outcome names the credential its model calls used (an ANTHROPIC_API_KEY in the
environment bills the API, not the subscription). Exit code 1 when any namespace's run was
refused or failed, dry run or not; a refusal never stops the namespaces after it.
"""

from typing import Annotated, Optional

import typer

from memory_platform.cli.common import (
    actor,
    database,
    err,
    fail,
    needs_llm,
    one_line,
    out,
    run,
    to_json,
)
from memory_platform.settings import load_settings

curator_app = typer.Typer(
    no_args_is_help=True,
    help="The curator's cuts: list, restore within the window, purge, runs.",
)


def _say(text: str) -> None:
    out.print(text, highlight=False, soft_wrap=True, markup=False)


def curate(
    namespace: Annotated[Optional[str], typer.Option(
        "--namespace", help="Only this namespace (default: every primary one).")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show the proposed cuts with reasons and evidence; cut nothing.")]
        = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcomes as JSON.")] = False,
) -> None:
    """Weed the vault: the curator proposes cuts with evidence, code executes valid ones.

    Each cut is archived and restorable for MEMORY_PLATFORM_CURATOR_RETENTION_DAYS (14)
    with `memory-platform curator restore ID`. A run over its namespace's ceiling cuts
    nothing."""
    def body():
        needs_llm("the curator")
        from memory_platform import launch  # Dagster: seconds to import

        outcomes = launch.run_curate(load_settings(), namespace=namespace, dry_run=dry_run,
                                     log=(lambda m: None) if as_json else err.print)
        if as_json:
            print(to_json(outcomes))
        else:
            for outcome in outcomes:
                _show(outcome)
        if any(o["status"] in ("refused", "failed") for o in outcomes):
            raise typer.Exit(1)

    run(body)


def _show(outcome: dict) -> None:
    head = f"{outcome['namespace']} (week {outcome['week']}): {outcome['status']}"
    proposed = outcome["proposed"]
    if proposed is not None:
        head += (f"; {len(proposed['cuts'])} cuts proposed of {outcome['listed']} memories "
                 f"(ceiling: at most {outcome['max_cuts']})")
    _say(head)
    for used in outcome["llm"]:
        cost = "" if used["cost_usd"] is None else f", ${used['cost_usd']:.4f}"
        _say(f"  credential: {used['credential']} ({used['calls']} "
             f"call{'s' if used['calls'] != 1 else ''}{cost})")
    if outcome["detail"]:
        _say(f"  {outcome['status'].upper()}: {outcome['detail']}")
    for error in outcome["errors"] if outcome["status"] == "failed" else []:
        _say(f"  error: {one_line(error)}")
    if proposed is None:
        return
    for cut in proposed["cuts"]:
        of = f" (of {_memory(cut['of'])})" if cut["of"] else ""
        _say(f"  cut {_memory(cut)} [{cut['reason']}{of}] {one_line(cut['text'] or '')}")
        for evidence in cut["evidence"]:
            where = (f"{evidence['file']}:{evidence['line']}" if "file" in evidence else
                     f"commit {evidence['commit']}" if "commit" in evidence else
                     f"handle {evidence['handle']}" if "handle" in evidence else
                     f"date {evidence.get('date')}")
            _say(f"      evidence {where}: {one_line(evidence['note'], 200)}")
    for kind in ("merges", "contradictions"):
        for item in proposed[kind]:
            sources = ", ".join(_memory(s) for s in item["sources"])
            _say(f"  {kind[:-1]} of {sources} -> {one_line(item['text'])} (for review)")
    if outcome["cut"]:
        _say(f"  cut {len(outcome['cut'])}: restorable until "
             f"{outcome['restore_until']:%Y-%m-%d %H:%M} UTC with "
             f"`memory-platform curator restore ID`; {outcome['staged']} staged for review")


def _memory(shown: dict) -> str:
    """`#id`, or the handle a refused verdict named that the listing did not have."""
    if shown["memory_id"] is None:
        return f"handle {shown['handle']} ({shown['status']})"
    return f"#{shown['memory_id']}"


@curator_app.command("restore")
def restore(
    memory_id: Annotated[int, typer.Argument(help="The id of the cut memory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the restored memory.")] = False,
) -> None:
    """Restore a memory the curator cut, within its retention window."""
    def body():
        from memory_platform.curator import archive, service
        from memory_platform.vault.tokens import Scope

        try:
            row = service.restore(database(), Scope.everything(), memory_id, actor=actor())
        except (service.NotFound, archive.RestoreRefused) as exc:
            fail(str(exc))
        if as_json:
            print(to_json(row))
            return
        _say(f"restored #{row['id']} in {row['namespace']}: {one_line(row['text'])}")

    run(body)


@curator_app.command("cuts")
def cuts(
    namespace: Annotated[Optional[str], typer.Option("--namespace")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Restorable cuts, newest first, with the days left before the purge."""
    def body():
        from memory_platform.curator import service
        from memory_platform.vault.tokens import Scope

        rows = service.cuts(database(), Scope.everything(), namespace=namespace)
        if as_json:
            print(to_json(rows))
            return
        for r in rows:
            left = r["seconds_left"] / 86400
            _say(f"#{r['memory_id']} {r['namespace']} [{r['reason']}] cut "
                 f"{r['cut_at']:%Y-%m-%d}, {left:.1f} days left: {one_line(r['text'])}")
        _say(f"{len(rows)} restorable cut{'s' if len(rows) != 1 else ''}")

    run(body)


@curator_app.command("runs")
def runs(
    namespace: Annotated[Optional[str], typer.Option("--namespace")] = None,
    refused: Annotated[bool, typer.Option("--refused", help="Refused runs only.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Curator runs, newest first: proposed, executed or refused (and why)."""
    def body():
        from memory_platform.curator import service
        from memory_platform.vault.tokens import Scope

        rows = service.runs(database(), Scope.everything(), namespace=namespace,
                            refused_only=refused)
        if as_json:
            print(to_json(rows))
            return
        for r in rows:
            status = r["status"] + (" (dry run)" if r["dry_run"] else "")
            why = f": {r['refusal_detail']}" if r["refusal_detail"] else ""
            _say(f"run {r['id']} {r['namespace']} week {r['week']} {status}, "
                 f"{r['proposed_cuts']} proposed, {r['cuts']} cut of {r['listed']}{why}")
        _say(f"{len(rows)} run{'s' if len(rows) != 1 else ''}")

    run(body)


@curator_app.command("purges")
def purges(
    namespace: Annotated[Optional[str], typer.Option("--namespace")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """What the purge deleted: memory, namespace, content hash, reason, when."""
    def body():
        from memory_platform.curator import service
        from memory_platform.vault.tokens import Scope

        rows = service.purges(database(), Scope.everything(), namespace=namespace)
        if as_json:
            print(to_json(rows))
            return
        for r in rows:
            _say(f"#{r['memory_id']} {r['namespace']} [{r['reason']}] cut {r['cut_at']:%Y-%m-%d}"
                 f", purged {r['purged_at']:%Y-%m-%d} sha256 {r['content_hash'][:16]}…")
        _say(f"{len(rows)} purged")

    run(body)


@curator_app.command("purge")
def purge(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Purge the archives whose window has ended now (as the daily job does), as a run."""
    def body():
        from memory_platform import launch

        done = launch.run_curator_purge(load_settings())
        if as_json:
            print(to_json(done))
            return
        _say(f"run {done['run_id']}: purged {done['purged']}; {done['archives_left']} "
             f"archives left (next due {done['next_due_at']})")

    run(body)
