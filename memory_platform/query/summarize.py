"""`summarize_range`: a map-reduce summary of a time range, made at query time only.

Map: pages of events (text only, secrets masked) go to the LLM in chunks that fit its
context; each chunk returns cited points. Reduce: the points become one summary with
highlights. Models judge, code keeps the books: every citation is checked against the
events actually shown, and invalid ones are dropped and counted.
"""

from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from memory_platform.llm import LLM
from memory_platform.privacy.masking import mask_secrets, masked
from memory_platform.query.inputs import as_utc
from memory_platform.store import Database
from memory_platform.store.ranges import events_for_summary

PROMPT_VERSION = "summarize-2026-11-29"
CHUNK_CHARS = 12_000  # per map call: ~3k tokens of history plus instructions
TURN_CHARS = 1_500  # one turn's share of a chunk; longer turns are cut and marked


class Point(BaseModel):
    text: str = Field(description="One thing that happened, was decided or learned.")
    event_ids: list[int] = Field(description="ids of the events that support it")


class ChunkPoints(BaseModel):
    points: list[Point]


class Highlight(BaseModel):
    text: str
    event_ids: list[int]


class RangeSummary(BaseModel):
    summary: str = Field(description="A few paragraphs: what was worked on, decided, learned.")
    highlights: list[Highlight]


@dataclass
class SummaryResult:
    summary: str
    highlights: list[dict]
    events_read: int
    chunks: int
    invalid_citations: int
    secrets_masked: int
    prompt_version: str = PROMPT_VERSION
    llm_calls: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return self.__dict__.copy()


MAP_SYSTEM = (
    "You summarise a person's own AI conversations for them. Be concrete: projects, "
    "decisions and their reasons, problems and fixes, preferences. Cite the [id] of every "
    "event a point rests on. Never invent ids."
)
REDUCE_SYSTEM = (
    "You merge cited notes about a period into one report for the person who lived it. "
    "Keep every citation that supports what you keep; never invent ids."
)


def _render(row: tuple) -> tuple[str, int]:
    """One event as a prompt line, every string in it masked (rule 10): the text (counted),
    and the metadata beside it (source, project path, role)."""
    event_id, source, _conv, occurred_at, role, _kind, project, text = row
    body, hits = mask_secrets(text)
    if len(body) > TURN_CHARS:
        body = body[:TURN_CHARS] + " …[cut]"
    where = f" {masked(project)}" if project else ""
    return (f"[{event_id}] {occurred_at:%Y-%m-%d %H:%M} {masked(source)}{where} "
            f"{masked(role)}: {body}"), hits


def summarize_range(
    db: Database, llm: LLM, since: datetime, until: datetime, filters=None
) -> SummaryResult:
    # aware UTC (a naive time is UTC), InvalidInput when out of range (query/inputs.py)
    since, until = as_utc(since, "since"), as_utc(until, "until")
    if until <= since:
        raise ValueError(f"empty range: until ({until}) must be after since ({since})")
    chunks: list[str] = []
    shown: set[int] = set()
    current: list[str] = []
    size = 0
    masked_total = 0
    with db.connect() as conn:
        for page in events_for_summary(conn, since, until, filters):
            for row in page:
                line, hits = _render(row)
                masked_total += hits
                shown.add(row[0])
                if size + len(line) > CHUNK_CHARS and current:
                    chunks.append("\n".join(current))
                    current, size = [], 0
                current.append(line)
                size += len(line) + 1
    if current:
        chunks.append("\n".join(current))
    if not chunks:
        return SummaryResult("No conversations in this range.", [], 0, 0, 0, 0)

    calls = 0
    points: list[Point] = []
    for chunk in chunks:
        # chunk lines are masked already; the whole prompt is masked once more (see
        # propose.build_prompt), so nothing added to it later can leak
        result = llm.complete(
            masked(f"Events from {since:%Y-%m-%d} to {until:%Y-%m-%d}:\n\n{chunk}"),
            system=MAP_SYSTEM, schema=ChunkPoints, max_tokens=2048, purpose="summarize_map",
        )
        calls += 1
        points.extend(result.parsed.points)

    notes = "\n".join(f"- {p.text} {p.event_ids}" for p in points)
    final = llm.complete(
        masked(f"Notes about {since:%Y-%m-%d} to {until:%Y-%m-%d}:\n\n{notes}"),
        system=REDUCE_SYSTEM, schema=RangeSummary, max_tokens=2048, purpose="summarize_reduce",
    )
    calls += 1
    invalid = 0
    highlights = []
    for item in final.parsed.highlights:
        valid = [i for i in item.event_ids if i in shown]
        invalid += len(item.event_ids) - len(valid)
        highlights.append({"text": item.text, "event_ids": valid})
    return SummaryResult(
        summary=final.parsed.summary, highlights=highlights, events_read=len(shown),
        chunks=len(chunks), invalid_citations=invalid, secrets_masked=masked_total,
        llm_calls=calls,
    )
