"""What was done: one `summarize_range` over the week per active project, with the
citations it checked. Without a configured LLM the report is still made, and says that
its summaries need one (never an empty section that looks like a quiet week)."""

from collections.abc import Callable
from datetime import date

from memory_platform.days import week_bounds
from memory_platform.llm import LLM, LLMNotConfigured
from memory_platform.query.search import SearchFilters
from memory_platform.query.summarize import PROMPT_VERSION, summarize_range
from memory_platform.store import Database

NO_PROJECT = "(none)"  # the marts' name for events without a project


def week_summaries(db: Database, llm: LLM | Callable[[], LLM] | None, monday: date,
                   projects: list[dict]) -> dict:
    """{"status": "done" | "no_llm" | "quiet", "message", "projects": [{project, turns,
    summary, highlights [{text, event_ids}], events_read, invalid_citations, llm_calls}],
    "unsummarized": [{project, turns, reason}], "prompt_version"}. `projects` are the
    marts' rows for the week (project, turns, ...), busiest first. `llm` may be a factory:
    it is called once, and LLMNotConfigured from it means "no LLM"."""
    active = [p for p in projects if p["turns"] > 0]
    unsummarized = [{"project": p["project"], "turns": p["turns"],
                     "reason": "events without a project are not summarized by project"}
                    for p in active if p["project"] == NO_PROJECT]
    named = [p for p in active if p["project"] != NO_PROJECT]
    result = {"status": "quiet", "message": "", "projects": [],
              "unsummarized": unsummarized, "prompt_version": PROMPT_VERSION}
    if not named:
        result["message"] = "No project had a turn this week."
        return result
    if llm is not None and not hasattr(llm, "complete"):
        try:
            llm = llm()
        except LLMNotConfigured as exc:
            llm, result["message"] = None, str(exc).rstrip(". ")
    if llm is None:
        result["status"] = "no_llm"
        result["message"] = ("Summaries of what was done need an LLM"
                             + (f": {result['message']}" if result["message"] else "")
                             + ". The numbers and charts below do not.")
        result["unsummarized"] += [{"project": p["project"], "turns": p["turns"],
                                    "reason": "no LLM configured"} for p in named]
        return result
    since, until = week_bounds(monday)
    for project in named:
        summary = summarize_range(db, llm, since, until,
                                  SearchFilters(project=project["project"]))
        result["projects"].append({
            "project": project["project"], "turns": project["turns"],
            "summary": summary.summary, "highlights": summary.highlights,
            "events_read": summary.events_read, "invalid_citations": summary.invalid_citations,
            "llm_calls": summary.llm_calls,
        })
    result["status"] = "done"
    return result
