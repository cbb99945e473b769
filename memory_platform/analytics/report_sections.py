"""The weekly report's curator and portfolio sections: their numbers, read from the marts
`curator_history` and `portfolio_weeks` for the report's ISO week, and their markdown.

Both marts keep the report's calendar (ISO weeks, Monday to Sunday UTC): the curator's
records count in the week they happened (a verdict asked, a run executed or refused, a cut,
a restore, a purge); the portfolio is the orchard's snapshot of the week (taken by its
Monday schedule, so a report built before it says there is none). Rows are ordered by
namespace, by project, by status in a fixed order: the same marts give the same text.
"""

import duckdb

from memory_platform.analytics.report_tables import markdown_table, number, query_rows

CUT_REASONS = ("stale", "duplicate", "contradicted", "wrong", "secret")
REFUSALS = (("breaker", "the circuit breaker"), ("fingerprint", "a changed namespace"),
            ("invalid_verdict", "an invalid verdict"))
# The order statuses are shown in: what needs attention first.
STATUSES = ("active", "blocked", "paused", "idea", "done")
CURATOR_TOTALS = ("runs", "dry_runs", "executed_runs", "refused_runs", "memories_listed",
                  "cuts", "restores", "purges", "archived_at_week_end", "staged_for_review",
                  *(f"refused_{r}" for r, _ in REFUSALS), *(f"cuts_{r}" for r in CUT_REASONS))


def curator_numbers(con: duckdb.DuckDBPyConnection, monday) -> dict:
    """The week's curator rows per namespace, and their totals."""
    by_namespace = query_rows(con, f"""
        SELECT namespace, {', '.join(CURATOR_TOTALS)}, round(cut_share, 3) AS cut_share
        FROM marts.curator_history WHERE week = ? ORDER BY namespace""", [monday])
    totals = {key: sum(int(r[key]) for r in by_namespace) for key in CURATOR_TOTALS}
    totals["cut_share"] = (round(totals["cuts"] / totals["memories_listed"], 3)
                           if totals["memories_listed"] else 0.0)
    return {"totals": totals, "by_namespace": by_namespace}


def portfolio_numbers(con: duckdb.DuckDBPyConnection, monday) -> dict:
    """The week's snapshot of the projects not archived: each project, the count per
    status, and the projects that reached milestones."""
    projects = query_rows(con, """
        SELECT project, namespace, status, priority, blockers, milestones, sessions, turns,
               days_since_active, deadline
        FROM marts.portfolio_weeks WHERE week = ? AND NOT archived
        ORDER BY priority, lower(project), project_id""", [monday])
    counts: dict[str, int] = {}
    for project in projects:
        counts[project["status"]] = counts.get(project["status"], 0) + 1
    known = [s for s in STATUSES if s in counts]
    return {
        "projects": projects,
        "by_status": [{"status": s, "projects": counts[s]}
                      for s in known + sorted(set(counts) - set(known))],
        "milestones": [{"project": p["project"], "milestones": p["milestones"]}
                       for p in projects if p["milestones"]],
    }


def _share(value: float) -> str:
    return f"{value:.1%}"


def render_curator(curator: dict) -> list[str]:
    totals = curator["totals"]
    lines = ["## Curator", ""]
    if not curator["by_namespace"]:
        return lines + ["The curator has no record this week (no verdict, cut, restore or "
                        "purge).", ""]
    refused = ", ".join(f"{totals[f'refused_{key}']} by {label}" for key, label in REFUSALS
                        if totals[f"refused_{key}"])
    reasons = ", ".join(f"{reason} {totals[f'cuts_{reason}']}" for reason in CUT_REASONS
                        if totals[f"cuts_{reason}"])
    lines += [
        f"{number(totals['runs'])} verdicts asked"
        + (f" (and {number(totals['dry_runs'])} as dry runs)" if totals["dry_runs"] else "")
        + f"; {number(totals['executed_runs'])} executed, "
        f"{number(totals['refused_runs'])} refused" + (f" ({refused})" if refused else "")
        + f". {number(totals['cuts'])} memories cut of {number(totals['memories_listed'])} "
        f"listed ({_share(totals['cut_share'])})" + (f": {reasons}" if reasons else "")
        + f"; {number(totals['restores'])} restored, {number(totals['purges'])} purged, "
        f"{number(totals['archived_at_week_end'])} still restorable at the week's end.", ""]
    lines += markdown_table(curator["by_namespace"], [
        ("namespace", "namespace"), ("verdicts", "runs"), ("executed", "executed_runs"),
        ("refused", "refused_runs"), ("listed", "memories_listed"), ("cuts", "cuts"),
        ("cut share", "cut_share"), ("restored", "restores"), ("purged", "purges"),
        ("restorable at week end", "archived_at_week_end")])
    return lines + [""]


def render_portfolio(portfolio: dict) -> list[str]:
    lines = ["## Portfolio", ""]
    if not portfolio["projects"]:
        return lines + ["No orchard snapshot of this week with a project in it (the orchard "
                        "takes it on Monday for the week that ended).", ""]
    lines += [f"{number(len(portfolio['projects']))} projects: "
              + ", ".join(f"{number(s['projects'])} {s['status']}"
                          for s in portfolio["by_status"]) + ".", ""]
    milestones = portfolio["milestones"]
    lines += ["Milestones this week: "
              + (", ".join(f"{m['project']} ({number(m['milestones'])})" for m in milestones)
                 if milestones else "none") + ".", ""]
    lines += markdown_table(portfolio["projects"], [
        ("project", "project"), ("status", "status"), ("priority", "priority"),
        ("blockers", "blockers"), ("milestones", "milestones"), ("turns", "turns"),
        ("days since active", "days_since_active"), ("deadline", "deadline")])
    return lines + [""]
