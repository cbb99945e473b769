"""What one Dagster run of the curator did to one namespace, read back from the books (the
`curator_runs` rows it wrote), for the CLI and anything else that launches a run."""

from datetime import date

from memory_platform.curator import service
from memory_platform.store import Database, llm_calls
from memory_platform.store import curator as store
from memory_platform.store import curator_archive as archive_store
from memory_platform.vault.tokens import Scope

MAX_CALLS = 1000  # a run asks once per part of the listing, plus re-asks


def _by_credential(calls: list) -> list[dict]:
    """The run's calls grouped by the credential that paid: [{credential, calls, cost_usd
    (None when a call's price is unknown)}]."""
    found: dict[str, dict] = {}
    for call in calls:
        row = found.setdefault(call.credential_source, {
            "credential": call.credential_source, "calls": 0, "cost_usd": 0.0})
        row["calls"] += 1
        if call.cost_usd is None or row["cost_usd"] is None:
            row["cost_usd"] = None
        else:
            row["cost_usd"] = round(row["cost_usd"] + float(call.cost_usd), 6)
    return sorted(found.values(), key=lambda r: r["credential"])


def of_run(db: Database, dagster_run_id: str, namespace: str, week: str, *,
           success: bool, errors: list[str] | None = None) -> dict:
    """{namespace, week, run_id, status, refusal, detail, listed, max_cuts, proposed (the
    verdict with texts, reasons, evidence), cut (memory ids), staged, restore_until,
    llm (the run's model calls by credential: which one paid), errors}. status: executed,
    dry_run, refused, already_executed, or failed (a step failed for another reason than a
    refusal: see errors)."""
    errors = errors or []
    with db.connect() as conn:
        mine = [r for r in store.runs_of(conn, [dagster_run_id]) if r["namespace"] == namespace]
        done = [r for r in store.partition_runs(conn, namespace, date.fromisoformat(week))
                if r["status"] == "executed"]
        calls = llm_calls.recent_calls(conn, MAX_CALLS, run_id=dagster_run_id)
    found = {"namespace": namespace, "week": week, "run_id": dagster_run_id,
             "status": "failed", "refusal": None, "detail": None, "listed": None,
             "max_cuts": None, "proposed": None, "cut": [], "staged": 0,
             "restore_until": None, "llm": _by_credential(calls), "errors": errors}
    if not mine:
        if done and success:
            found.update(status="already_executed", detail=(
                f"week {week} was executed by curator run {done[-1]['id']} (Dagster run "
                f"{done[-1]['executed_by']}); nothing is cut twice"))
        return found
    run = mine[-1]
    found.update(refusal=run["refusal"], detail=run["refusal_detail"], listed=run["listed"],
                 max_cuts=run["max_cuts"],
                 proposed=service.proposed_cuts(db, Scope.everything(), run["id"]))
    if run["status"] == "refused":
        found["status"] = "refused"
    elif run["status"] == "executed":
        with db.connect() as conn:
            cut = archive_store.list_archives(conn, curator_run_id=run["id"])
        found.update(status="executed", cut=sorted(c["memory_id"] for c in cut),
                     staged=run["staged"],
                     restore_until=min((c["restore_until"] for c in cut), default=None))
    elif run["dry_run"] and success:
        found["status"] = "dry_run"
    elif success:
        found["status"] = "proposed"  # verdicts only (a run that did not select the cuts)
    return found
