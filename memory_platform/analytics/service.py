"""What the faces and the assets call: build and write a week's report, list and read the
reports written, and read-only SQL.

`build_week` is the whole report as a plain function (marts -> numbers, summaries, charts,
files); the `weekly_report` asset and `memory-platform report` (through a Dagster run)
both end here.
"""

import json
import re
from collections.abc import Callable
from datetime import date
from pathlib import Path

from memory_platform.analytics import report as reports
from memory_platform.analytics.summaries import week_summaries
from memory_platform.days import parse_week, week_label
from memory_platform.llm import LLM
from memory_platform.settings import Settings
from memory_platform.store import Database

WEEK_PATTERN = re.compile(r"^\d{4}-W\d{2}$")
IMAGE_NAMES = frozenset(f"{name}.png" for name in reports.CHARTS)


def build_week(db: Database, settings: Settings, monday: date,
               llm: LLM | Callable[[], LLM] | None) -> tuple[reports.Report, Path]:
    """Build the report of the week starting `monday` from the marts and write it.
    `llm` (or a factory for one) writes the summaries; None, or a factory raising
    LLMNotConfigured, gives a report that says they need one."""
    if monday.weekday() != 0:
        raise ValueError(f"{monday} is not a Monday: weeks start on Monday")
    built = reports.build_report(
        settings, monday, lambda projects: week_summaries(db, llm, monday, projects))
    return built, reports.write_report(settings, built)


def list_reports(settings: Settings) -> list[dict]:
    """Every report written, newest week first: week, path, first_day, status of its
    summaries."""
    folder = settings.reports_folder
    found = []
    if folder.exists():
        for path in sorted(folder.iterdir(), reverse=True):
            if path.is_dir() and WEEK_PATTERN.match(path.name) and (path / "report.md").exists():
                meta = json.loads((path / "report.json").read_text(encoding="utf-8"))
                found.append({"week": path.name, "path": str(path),
                              "first_day": meta["numbers"]["first_day"],
                              "turns": meta["numbers"]["totals"]["turns"],
                              "summaries": meta["summaries"]["status"]})
    return found


def report_path(settings: Settings, week: str) -> Path:
    """The folder of a written report; `week` is `2026-W48`. FileNotFoundError when none."""
    if not WEEK_PATTERN.match(week):
        raise ValueError(f"{week!r} is not a week like 2026-W48")
    path = settings.reports_folder / week_label(parse_week(week))
    if not (path / "report.md").exists():
        raise FileNotFoundError(f"no report for {week} in {settings.reports_folder}")
    return path


def read_report(settings: Settings, week: str) -> dict:
    """A written report: week, markdown, numbers, summaries, image names."""
    path = report_path(settings, week)
    meta = json.loads((path / "report.json").read_text(encoding="utf-8"))
    return {"week": week, "markdown": (path / "report.md").read_text(encoding="utf-8"),
            "numbers": meta["numbers"], "summaries": meta["summaries"],
            "images": sorted(p.name for p in path.glob("*.png"))}


def image_file(settings: Settings, week: str, name: str) -> Path:
    """One of a report's charts (only the four known names: no path from a request ever
    reaches the file system unchecked)."""
    if name not in IMAGE_NAMES:
        raise FileNotFoundError(f"no image {name!r} (one of {', '.join(sorted(IMAGE_NAMES))})")
    path = report_path(settings, week) / name
    if not path.exists():
        raise FileNotFoundError(f"no image {name} in the report of {week}")
    return path


def run_sql(settings: Settings, statement: str, *,
            timeout_s: float | None = None) -> tuple[list[str], list[tuple]]:
    """One read-only statement over the lake and the marts (analytics/sql.py: SQLRefused
    for anything else, a file outside, a query past its timeout)."""
    from memory_platform.analytics import sql

    return sql.query(settings, statement,
                     timeout_s=sql.TIMEOUT_S if timeout_s is None else timeout_s)
