"""The weekly report: what was done (summaries), the week's numbers from the marts (the
curator's and the portfolio's from report_sections.py), and four charts, written to
`$MEMORY_PLATFORM_HOME/reports/<2026-W48>/`.

A report is a function of the marts, the week and the model's answers: it carries no build
time, and its charts are rendered from the same numbers, so building it twice over the same
data gives the same bytes. Files: `report.md` (images referenced by relative name),
`report.json` (every number and summary), `activity.png`, `funnel.png`, `vault.png`,
`spend.png`; written to a temporary folder and swapped in, so a reader never sees half.
"""

import json
import shutil
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

from memory_platform.analytics import charts, report_sections
from memory_platform.analytics.report_tables import markdown_table, number, query_rows
from memory_platform.analytics.sql import connect
from memory_platform.days import week_label
from memory_platform.settings import Settings

CHARTS = ("activity", "funnel", "vault", "spend")
FUNNEL_STAGES = (("turns read", "turns_read"), ("candidates", "candidates"),
                 ("above threshold", "above_threshold"),
                 ("duplicates rejected", "duplicates_rejected"), ("staged", "staged"),
                 ("approved", "approved"), ("edited", "edited"), ("skipped", "skipped"),
                 ("pending", "pending"))
# How much vault history the growth chart shows, up to the end of the week.
VAULT_CHART_DAYS = 56


@dataclass
class Report:
    week: str
    monday: date
    numbers: dict
    summaries: dict  # {"status": ..., "projects": [...], ...}, see summaries.py
    markdown: str = ""
    images: dict[str, bytes] = field(default_factory=dict)


def week_numbers(settings: Settings, monday: date) -> dict:
    """Every number the report shows, from the marts (read-only)."""
    first, last = monday, monday + timedelta(days=6)
    con = connect(settings, need_marts=True)
    try:
        span = [first, last]
        by_day_source = query_rows(con, """
            SELECT day, source, sum(turns)::BIGINT AS turns, sum(words)::BIGINT AS words,
                   sum(events)::BIGINT AS events
            FROM marts.daily_activity WHERE day BETWEEN ? AND ?
            GROUP BY day, source ORDER BY day, source""", span)
        projects = query_rows(con, """
            SELECT project, count(DISTINCT conversation_id) AS sessions,
                   sum(turns)::BIGINT AS turns, sum(words)::BIGINT AS words,
                   count(DISTINCT day) AS active_days
            FROM marts.conversation_days WHERE day BETWEEN ? AND ?
            GROUP BY project ORDER BY turns DESC, project""", span)
        sessions = con.execute("""
            SELECT count(DISTINCT (conversation_id, source)) FROM marts.conversation_days
            WHERE day BETWEEN ? AND ? AND turns > 0""", span).fetchone()[0]
        hours = query_rows(con, """
            SELECT hour_of_day, sum(turns)::BIGINT AS turns FROM marts.daily_activity
            WHERE day BETWEEN ? AND ? GROUP BY hour_of_day ORDER BY turns DESC, hour_of_day
            LIMIT 1""", span)
        funnel = query_rows(con, f"""
            SELECT {', '.join(f'coalesce(sum({c}), 0)::BIGINT AS {c}'
                              for _, c in FUNNEL_STAGES)},
                   count(*) AS nights
            FROM marts.dream_nights WHERE dream_day BETWEEN ? AND ?""", span)[0]
        funnel_by_namespace = query_rows(con, """
            SELECT namespace, sum(candidates)::BIGINT AS candidates,
                   sum(duplicates_rejected)::BIGINT AS duplicates_rejected,
                   sum(staged)::BIGINT AS staged, sum(approved)::BIGINT AS approved,
                   sum(edited)::BIGINT AS edited, sum(skipped)::BIGINT AS skipped
            FROM marts.dream_funnel WHERE dream_day BETWEEN ? AND ?
            GROUP BY namespace ORDER BY namespace""", span)
        vault_series = query_rows(con, """
            SELECT day, namespace, memories FROM marts.vault_health
            WHERE day BETWEEN ? AND ? ORDER BY day, namespace""",
                             [last - timedelta(days=VAULT_CHART_DAYS - 1), last])
        vault = query_rows(con, """
            SELECT h.namespace, h.memories,
                   (SELECT coalesce(sum(added), 0) FROM marts.vault_health a
                    WHERE a.namespace = h.namespace AND a.day BETWEEN ? AND ?)::BIGINT
                       AS added,
                   round(h.superseded_share, 3) AS superseded_share,
                   round(h.mean_age_days, 1) AS mean_age_days, h.pending_review,
                   round(h.oldest_pending_days, 1) AS oldest_pending_days
            FROM marts.vault_health h
            WHERE h.day = (SELECT max(day) FROM marts.vault_health
                           WHERE namespace = h.namespace AND day <= ?)
            ORDER BY h.namespace""", [first, last, last])
        spend = query_rows(con, """
            SELECT provider, model, asset, sum(calls)::BIGINT AS calls,
                   sum(input_tokens)::BIGINT AS input_tokens,
                   sum(output_tokens)::BIGINT AS output_tokens,
                   round(sum(cost_usd), 4) AS cost_usd,
                   sum(calls_cost_unknown)::BIGINT AS calls_cost_unknown
            FROM marts.llm_spend WHERE day BETWEEN ? AND ?
            GROUP BY provider, model, asset ORDER BY cost_usd DESC, provider, model, asset""",
                      span)
        spend_by_day = query_rows(con, """
            SELECT day, model, coalesce(round(sum(cost_usd), 6), 0) AS cost_usd,
                   sum(calls)::BIGINT AS calls,
                   sum(calls_cost_unknown)::BIGINT AS calls_cost_unknown
            FROM marts.llm_spend WHERE day BETWEEN ? AND ?
            GROUP BY day, model ORDER BY day, model""", span)
        curator = report_sections.curator_numbers(con, first)
        portfolio = report_sections.portfolio_numbers(con, first)
    finally:
        con.close()
    turns = sum(r["turns"] for r in by_day_source)
    return {
        "week": week_label(monday), "first_day": first.isoformat(),
        "last_day": last.isoformat(),
        "totals": {
            "turns": turns, "words": sum(r["words"] for r in by_day_source),
            "events": sum(r["events"] for r in by_day_source), "sessions": int(sessions),
            "active_days": len({r["day"] for r in by_day_source if r["turns"]}),
            "busiest_hour_utc": hours[0]["hour_of_day"] if hours and turns else None,
        },
        "by_day_source": by_day_source, "projects": projects,
        "funnel": funnel, "funnel_by_namespace": funnel_by_namespace,
        "vault": vault, "vault_series": vault_series,
        "spend": spend, "spend_by_day": spend_by_day,
        "curator": curator, "portfolio": portfolio,
    }


def render_charts(numbers: dict, monday: date) -> dict[str, bytes]:
    days = [monday + timedelta(days=i) for i in range(7)]
    index = {d: i for i, d in enumerate(days)}

    def per_day(rows, key, value) -> dict[str, list[float]]:
        series: dict[str, list[float]] = {}
        for row in rows:
            series.setdefault(row[key], [0.0] * 7)[index[row["day"]]] += float(row[value])
        return series

    vault_days = sorted({r["day"] for r in numbers["vault_series"]})
    vault_series: dict[str, list[float]] = {}
    at = {d: i for i, d in enumerate(vault_days)}
    for row in numbers["vault_series"]:
        vault_series.setdefault(row["namespace"], [0.0] * len(vault_days))[at[row["day"]]] = \
            row["memories"]
    funnel = numbers["funnel"]
    return {
        "activity": charts.stacked_bars("Turns per day by source", days,
                                        per_day(numbers["by_day_source"], "source", "turns"),
                                        "turns"),
        "funnel": charts.funnel("Dream funnel (days dreamed this week)",
                                [(label, int(funnel[c])) for label, c in FUNNEL_STAGES]),
        "vault": charts.lines("Vault size (current facts per namespace)", vault_days,
                              vault_series, "memories", "the vault is empty"),
        "spend": _spend_chart(numbers["spend_by_day"], per_day, days),
    }


def _spend_chart(rows: list[dict], per_day, days) -> bytes:
    """Spend per day by model; when some calls have no known price (a model missing from
    llm/pricing.py, the claude CLI's default), the calls per day instead, so they are
    counted rather than drawn as nothing (issue 22)."""
    if any(row.get("calls_cost_unknown") for row in rows):
        return charts.stacked_bars("LLM calls per day by model (some of unknown price)", days,
                                   per_day(rows, "model", "calls"), "calls",
                                   empty="no LLM calls this week")
    return charts.stacked_bars("LLM spend per day by model (USD, estimated)", days,
                               per_day(rows, "model", "cost_usd"), "USD",
                               empty="no LLM calls this week")


def render_markdown(numbers: dict, summaries: dict) -> str:
    totals, funnel = numbers["totals"], numbers["funnel"]
    lines = [f"# Week {numbers['week']} ({numbers['first_day']} .. {numbers['last_day']})",
             "", "## What was done", ""]
    if summaries["status"] != "done":
        lines += [f"> {summaries['message']}", ""]
    for item in summaries["projects"]:
        lines += [f"### {item['project']} ({number(item['turns'])} turns)", "", item["summary"], ""]
        for highlight in item["highlights"]:
            cites = ", ".join(f"#{i}" for i in highlight["event_ids"])
            lines.append(f"- {highlight['text']}" + (f" (events {cites})" if cites else ""))
        if item["invalid_citations"]:
            lines.append(f"- ({item['invalid_citations']} citations to events outside the "
                         "week were dropped)")
        lines.append("")
    for item in summaries["unsummarized"]:
        lines.append(f"- not summarized: {item['project']} ({number(item['turns'])} turns): "
                     f"{item['reason']}")
    busiest = totals["busiest_hour_utc"]
    lines += ["", "## The week in numbers", "",
              f"{number(totals['turns'])} turns ({number(totals['words'])} words) in "
              f"{number(totals['sessions'])} sessions over {totals['active_days']} active days; "
              f"{number(totals['events'])} records in all (tool calls and results included)."
              + (f" Busiest hour: {busiest:02d}:00 UTC." if busiest is not None else ""), "",
              "![Turns per day by source](activity.png)", "", "### Projects", ""]
    lines += markdown_table(numbers["projects"], [("project", "project"), ("sessions", "sessions"),
                                          ("turns", "turns"), ("words", "words"),
                                          ("active days", "active_days")])
    lines += ["", "## Dream", "",
              f"{funnel['nights']} days dreamed this week: {number(funnel['turns_read'])} turns "
              f"read, {number(funnel['candidates'])} candidates, "
              f"{number(funnel['above_threshold'])} above the threshold, "
              f"{number(funnel['duplicates_rejected'])} rejected as already known, "
              f"{number(funnel['staged'])} staged; of those {number(funnel['approved'])} approved, "
              f"{number(funnel['edited'])} edited, {number(funnel['skipped'])} skipped, "
              f"{number(funnel['pending'])} pending.", "", "![Dream funnel](funnel.png)", ""]
    lines += markdown_table(numbers["funnel_by_namespace"], [
        ("namespace", "namespace"), ("candidates", "candidates"),
        ("rejected as known", "duplicates_rejected"), ("staged", "staged"),
        ("approved", "approved"), ("edited", "edited"), ("skipped", "skipped")])
    lines += ["", "## Vault", "", "At the end of the week:", ""]
    lines += markdown_table(numbers["vault"], [
        ("namespace", "namespace"), ("memories", "memories"), ("added", "added"),
        ("superseded share", "superseded_share"), ("mean age (days)", "mean_age_days"),
        ("pending review", "pending_review"), ("oldest pending (days)", "oldest_pending_days")])
    lines += ["", "![Vault size](vault.png)", ""]
    lines += report_sections.render_curator(numbers["curator"])
    lines += report_sections.render_portfolio(numbers["portfolio"])
    lines += ["## LLM spend", ""]
    lines += markdown_table(numbers["spend"], [
        ("provider", "provider"), ("model", "model"), ("asset", "asset"), ("calls", "calls"),
        ("input tokens", "input_tokens"), ("output tokens", "output_tokens"),
        ("cost (USD)", "cost_usd"), ("calls of unknown price", "calls_cost_unknown")])
    lines += ["", "![LLM spend per day](spend.png)", "",
              "Numbers come from the marts as built before this report's own summaries; "
              "their calls count in the week they were made.", ""]
    return "\n".join(lines)


def build_report(settings: Settings, monday: date, summaries_for) -> Report:
    """Numbers, summaries (`summaries_for(projects)` -> summaries.week_summaries' dict),
    markdown and charts for the week starting `monday`."""
    numbers = week_numbers(settings, monday)
    summaries = summaries_for(numbers["projects"])
    report = Report(week=numbers["week"], monday=monday, numbers=numbers, summaries=summaries)
    report.markdown = render_markdown(numbers, summaries)
    report.images = render_charts(numbers, monday)
    return report


def report_folder(settings: Settings, monday: date) -> Path:
    return settings.reports_folder / week_label(monday)


def write_report(settings: Settings, report: Report) -> Path:
    """Write the report's files into reports/<week>/ (replacing an older build whole)."""
    target = report_folder(settings, report.monday)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # a build that died half-way
    tmp.mkdir()
    (tmp / "report.md").write_text(report.markdown, encoding="utf-8")
    (tmp / "report.json").write_text(json.dumps(
        {"week": report.week, "numbers": report.numbers, "summaries": report.summaries},
        default=str, indent=1, sort_keys=True), encoding="utf-8")
    for name, data in report.images.items():
        (tmp / f"{name}.png").write_bytes(data)
    old = target.with_name(target.name + ".old")
    if target.exists():
        target.replace(old)
    tmp.replace(target)
    shutil.rmtree(old, ignore_errors=True)
    return target

