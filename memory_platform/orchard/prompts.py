"""The prompt that phrases `orchard week` when an LLM is configured. The model words the
answer; the ranking, the scores and the evidence stay the code's (week.py), and a phrasing
that discusses the projects in another order than the ranking is not shown (week.py). The
prompt is built from the ranking as the caller may see it (its conversations only, already
masked), and every field passes privacy.egress again on its way in."""

from pydantic import BaseModel, Field

from memory_platform.orchard.reading import shown

PROMPT_VERSION = "orchard-week-2026-12-01"
TURN_CHARS = 300  # of each evidence turn in the prompt

SYSTEM = (
    "You help a person decide what to work on this week across their projects. You are "
    "given their projects already ranked by a transparent score, with the reasons and the "
    "latest turns of their own AI conversations about each. Keep the ranking exactly as "
    "given. Be brief and concrete: for each project, one or two sentences naming what to "
    "do next and why, citing a turn as [#event_id] when one supports it. Never invent "
    "projects, deadlines or facts that are not in the input."
)


class WeekAdvice(BaseModel):
    advice: str = Field(description="A short plan for the week in markdown, projects in the "
                                    "given order, citing turns as [#event_id].")
    order: list[str] = Field(description="The project names in the order the advice "
                                         "discusses them: the given ranking.")


def week_prompt(today: str, ranked: list[dict]) -> tuple[str, int]:
    """(prompt, secrets masked) for the ranked projects."""
    masked = 0

    def clean(text: str | None, limit: int = 1000) -> str:
        nonlocal masked
        text, n = shown(" ".join((text or "").split()))  # masked, then cut
        masked += n
        return text[:limit]

    lines = [f"Today is {today}. The projects, best first:"]
    for p in ranked:
        lines.append(f"\n{p['rank']}. {clean(p['name'])} (score {p['score']}, status "
                     f"{p['status']}, priority {p['priority']} of 5)")
        lines.append(f"   next action: {clean(p['next_action']) or 'none recorded'}")
        if p["blockers"]:
            lines.append(f"   blockers: {clean('; '.join(p['blockers']))}")
        for r in p["reasons"]:
            lines.append(f"   {r['points']:+d} {r['factor']}: {clean(r['reason'])}")
        for turn in p["evidence"]:
            lines.append(f"   [#{turn['event_id']}] {turn['occurred_at'][:10]} {turn['role']}: "
                         f"{clean(turn['text'], TURN_CHARS)}")
    return "\n".join(lines), masked
