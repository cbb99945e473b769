"""still, step one: read what has not been dreamed yet and ask the model what is worth keeping.

Per conversation of a day: the turns above the watermark, secrets masked and self-injected
context cut out, go to the model in chunks that fit its context. Each proposed memory comes
back with a durability score against the rubric below, a category, a one-line why and the
ids of the turns it rests on. Code then keeps the books: citations must name turns that were
shown, relative dates become absolute from those turns' timestamps, the namespace comes from
the routing rules (never from the model), a candidate that still looks like a credential is
rejected, and only scores at or above the threshold go on to the dedup gate. The others are
recorded with their status, not dropped. Candidates and the watermark commit together per
chunk, so a crash loses at most the chunk in flight and a re-run reads nothing twice.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Literal

from pydantic import BaseModel, Field

from memory_platform.llm import LLM
from memory_platform.privacy.masking import MASK, mask_secrets, masked
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database
from memory_platform.store import dream as store
from memory_platform.store.dream import CandidateRow, DreamEvent
from memory_platform.vault.context import CONTEXT_MARKER
from memory_platform.vault.routing import Routing
from memory_platform.vault.topics import slugify

PROMPT_VERSION = "dream-2026-12-14"
DEFAULT_MIN_SCORE = 6
CHUNK_CHARS = 12_000  # conversation text per call: ~3k tokens plus the rubric
TURN_CHARS = 2_000  # one turn's share; longer turns are cut and marked

# What this system injects into a session (context packs, hook context) is wrapped in
# CONTEXT_MARKER, and cut out before a dream reads the turn: recalled memories must not come
# back as new ones.
_INJECTED = re.compile(rf"<{CONTEXT_MARKER}\b[^>]*>.*?</{CONTEXT_MARKER}>", re.S)

RUBRIC = """\
You read a conversation between a person and an AI assistant and propose memories worth
keeping for future sessions. Score each for durability, 1-10:

9-10  A decision and its reason, or a lesson learned the hard way ("we tried X, it broke
      because Y, use Z"); a stable preference or fact about the person stated plainly.
7-8   A project fact a future session would otherwise have to rediscover: where something
      lives, how it is built or deployed, which version or port or path it uses, a
      convention the person wants followed.
5-6   Useful but narrower: a workaround for one tool, context likely to matter for weeks.
3-4   Transient state: what is being worked on right now, today's to-do, a passing mood.
1-2   Chit-chat, pleasantries, anything only true for this session.

Rules:
- One fact per memory, written so it stands alone without the conversation (name the
  project, tool or person; no "this", "the above").
- Never use relative dates ("yesterday", "last week"): write the date, using the timestamp
  of the turn it comes from.
- Categories: user (about the person: preferences, background, habits), feedback (how the
  person wants the assistant to work), project (facts about a project or codebase),
  reference (where to find things: URLs, paths, docs, people to ask), decision (what was
  chosen and why), episode (something that happened on a day). When unsure, episode.
- topic: a short lowercase slug naming what the memory is about (e.g. database, testing,
  deployment, acme-api), the same slug for memories about the same thing.
- source_event_ids: the [ids] of the turns that support the memory; only ids shown.
- Never copy a credential, token or password into a memory; text shown as
  "[secret masked]" stays out.
- Propose nothing rather than filler; an empty list is a good answer for small talk.
"""


class ProposedMemory(BaseModel):
    text: str = Field(min_length=1, description="The memory, one self-contained fact.")
    score: int = Field(ge=1, le=10, description="Durability, 1-10, per the rubric.")
    category: Literal["user", "feedback", "project", "reference", "decision", "episode"]
    topic: str | None = Field(None, description="A short lowercase slug: what it is about.")
    why: str = Field(min_length=1, description="One line: why a future session needs this.")
    source_event_ids: list[int] = Field(min_length=1)


class DreamAnswer(BaseModel):
    memories: list[ProposedMemory]


@dataclass(frozen=True)
class DreamSettings:
    min_score: int = DEFAULT_MIN_SCORE
    chunk_chars: int = CHUNK_CHARS
    turn_chars: int = TURN_CHARS

    @classmethod
    def from_settings(cls, settings: Settings) -> "DreamSettings":
        return cls(min_score=settings.dream_min_score)

    def as_metadata(self) -> dict:
        return {"min_score": self.min_score, "chunk_chars": self.chunk_chars,
                "turn_chars": self.turn_chars, "prompt_version": PROMPT_VERSION}


@dataclass
class DreamReport:
    day: date
    conversations: int = 0
    events: int = 0
    chunks: int = 0
    calls: int = 0
    proposed: int = 0
    below_threshold: int = 0
    rejected_secret: int = 0
    uncited: int = 0  # proposals citing no turn that was shown: dropped, counted
    masked_secrets: int = 0
    injected_blocks_cut: int = 0
    candidate_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {k: (v.isoformat() if isinstance(v, date) else v)
                for k, v in self.__dict__.items() if k != "candidate_ids"}


# --- text preparation ---------------------------------------------------------------------

def strip_injected(text: str) -> tuple[str, int]:
    """Cut the context packs this system injected; returns (text, blocks cut)."""
    cut, n = _INJECTED.subn("", text)
    return cut.strip(), n


def contains_secret(text: str) -> bool:
    """True when a proposed memory carries a credential (or the mask standing in for one)."""
    return MASK in text or mask_secrets(text)[1] > 0


_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "a couple of": 2, "a few": 3}


def absolutize_dates(text: str, anchor: date) -> str:
    """Rewrite relative dates against `anchor` (the day of the turn the memory came from):
    'yesterday' -> 'on 2026-11-27'. Covers the common phrasings; the prompt asks the model
    to do this too, and this catches what it leaves."""

    def iso(d: date) -> str:
        return d.isoformat()

    def week_of(d: date) -> str:
        return f"in the week of {iso(d - timedelta(days=d.weekday()))}"

    def weekday_ref(match: re.Match) -> str:
        direction, name = match.group(1).lower(), match.group(2).lower()
        target = _WEEKDAYS.index(name)
        if direction == "last":
            delta = (anchor.weekday() - target) % 7 or 7
            return f"on {iso(anchor - timedelta(days=delta))}"
        delta = (target - anchor.weekday()) % 7 or 7
        return f"on {iso(anchor + timedelta(days=delta))}"

    def days_ago(match: re.Match) -> str:
        raw = match.group(1).lower()
        n = int(raw) if raw.isdigit() else _WORD_NUMBERS[raw]
        return f"on {iso(anchor - timedelta(days=n))}"

    numbers = "|".join(sorted(map(re.escape, _WORD_NUMBERS), key=len, reverse=True))
    rules: list[tuple[str, str | Callable[[re.Match], str]]] = [
        (r"\b(?:earlier |later )?today's\b", f"{iso(anchor)}'s"),
        (r"\byesterday's\b", f"{iso(anchor - timedelta(days=1))}'s"),
        (r"\b(?:earlier )?today\b", f"on {iso(anchor)}"),
        (r"\bthis (morning|afternoon|evening)\b", rf"on the \1 of {iso(anchor)}"),
        (r"\btonight\b", f"on the evening of {iso(anchor)}"),
        (r"\blast night\b", f"on the night of {iso(anchor - timedelta(days=1))}"),
        (r"\bthe day before yesterday\b", f"on {iso(anchor - timedelta(days=2))}"),
        (r"\byesterday\b", f"on {iso(anchor - timedelta(days=1))}"),
        (r"\bthe day after tomorrow\b", f"on {iso(anchor + timedelta(days=2))}"),
        (r"\btomorrow\b", f"on {iso(anchor + timedelta(days=1))}"),
        (rf"\b(\d+|{numbers}) days ago\b", days_ago),
        (r"\b(last|next) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b",
         weekday_ref),
        (r"\blast week\b", week_of(anchor - timedelta(days=7))),
        (r"\bthis week\b", week_of(anchor)),
        (r"\bnext week\b", week_of(anchor + timedelta(days=7))),
        (r"\blast month\b",
         f"in {(anchor.replace(day=1) - timedelta(days=1)).strftime('%B %Y')}"),
        (r"\bthis month\b", f"in {anchor.strftime('%B %Y')}"),
    ]
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text, flags=re.I)
    # "on on 2026-11-27" when the model wrote "on yesterday"; "was on 2026..." reads fine
    return re.sub(r"\b(on|in) (on|in) ", r"\2 ", text)


@dataclass(frozen=True)
class PreparedTurn:
    event: DreamEvent
    line: str


def prepare_turns(events: list[DreamEvent], settings: DreamSettings,
                  report: DreamReport) -> list[PreparedTurn]:
    turns = []
    for e in events:
        text, cut = strip_injected(e.text)
        report.injected_blocks_cut += cut
        if not text:
            continue
        text, masked = mask_secrets(text)
        report.masked_secrets += masked
        if len(text) > settings.turn_chars:
            text = text[: settings.turn_chars] + f" […{len(text) - settings.turn_chars} chars cut]"
        when = e.occurred_at.strftime("%Y-%m-%d %H:%M UTC, %A")
        turns.append(PreparedTurn(e, f"[{e.id}] {when} — {e.role}: {text}"))
    return turns


def chunk_turns(turns: list[PreparedTurn], chunk_chars: int) -> list[list[PreparedTurn]]:
    chunks: list[list[PreparedTurn]] = []
    current: list[PreparedTurn] = []
    size = 0
    for turn in turns:
        if current and size + len(turn.line) > chunk_chars:
            chunks.append(current)
            current, size = [], 0
        current.append(turn)
        size += len(turn.line) + 1
    if current:
        chunks.append(current)
    return chunks


def build_prompt(chunk: list[PreparedTurn], info: dict, part: int, parts: int) -> str:
    """The model's prompt for one chunk. Every string in it is masked (rule 10): the turns
    were masked by prepare_turns, the header's metadata (source, title, project path) is
    masked here, and the whole prompt once more, so a field added later cannot leak."""
    header = [f"Conversation from {masked(info.get('source') or 'unknown source')}"]
    if info.get("title"):
        header.append(f"titled {masked(info['title'])!r}")
    if info.get("project"):
        header.append(f"in project {masked(info['project'])}")
    where = f" (part {part} of {parts})" if parts > 1 else ""
    body = "\n".join(t.line for t in chunk)
    return masked(f"{' '.join(header)}{where}. Each turn: [id] timestamp — role: text.\n\n"
                  f"{body}\n\nPropose the memories worth keeping, per the rubric.")


# --- the day ------------------------------------------------------------------------------

def dream_day(
    db: Database,
    llm: LLM,
    day: date,
    *,
    run_id: str,
    routing: Routing | None = None,
    settings: DreamSettings | None = None,
    log: Callable[[str], None] | None = None,
) -> DreamReport:
    """Propose candidates from the day's undreamed turns. LLM failures raise (after the
    provider's own retries and re-asks): the chunks already done stay committed, and the
    re-run resumes from the watermark."""
    routing = routing or Routing.load()
    settings = settings or DreamSettings.from_settings(load_settings())
    report = DreamReport(day=day)
    with db.connect() as conn:
        groups = store.undreamed_events(conn, day)
        for conversation_id, events in groups.items():
            report.conversations += 1
            report.events += len(events)
            info = store.conversation_info(conn, conversation_id)
            info["source"] = info["source"] or events[0].source
            project = info["project"] or next((e.project for e in events if e.project), None)
            info["project"] = project
            namespace = routing.route(project=project, source=info["source"])
            turns = prepare_turns(events, settings, report)
            chunks = chunk_turns(turns, settings.chunk_chars)
            if not chunks:  # nothing readable left (all injected context): still dreamed
                with conn.transaction():
                    store.advance_watermark(conn, conversation_id, day, events[-1].id, run_id)
                continue
            for part, chunk in enumerate(chunks, 1):
                report.chunks += 1
                result = llm.complete(
                    build_prompt(chunk, info, part, len(chunks)), system=RUBRIC,
                    schema=DreamAnswer, max_tokens=2048, purpose="dream",
                )
                report.calls += 1
                rows = _candidates(result.parsed, chunk, namespace, settings, report)
                # The last chunk also covers turns cut out before chunking.
                last_id = events[-1].id if part == len(chunks) else chunk[-1].event.id
                with conn.transaction():
                    ids = store.insert_candidates(conn, run_id=run_id, day=day,
                                                  conversation_id=conversation_id,
                                                  candidates=rows)
                    store.advance_watermark(conn, conversation_id, day, last_id, run_id)
                report.candidate_ids.extend(ids)
            if log:
                log(f"{day}: conversation {conversation_id} ({len(events)} turns, "
                    f"{len(chunks)} chunk(s)) -> namespace {namespace}")
    return report


def _topic_slug(topic: str | None) -> str | None:
    """The model's topic as a slug; None (the rules choose at staging) when it gave none
    or nothing usable."""
    try:
        return slugify(topic) if topic and topic.strip() else None
    except ValueError:
        return None


def _candidates(answer: DreamAnswer, chunk: list[PreparedTurn], namespace: str,
                settings: DreamSettings, report: DreamReport) -> list[CandidateRow]:
    shown = {t.event.id: t.event for t in chunk}
    rows = []
    for memory in answer.memories:
        cited = [i for i in dict.fromkeys(memory.source_event_ids) if i in shown]
        if not cited:
            report.uncited += 1
            continue
        anchor = min(shown[i].occurred_at for i in cited).date()
        text = absolutize_dates(" ".join(memory.text.split()), anchor)
        if contains_secret(text) or contains_secret(memory.why):
            status = "rejected_secret"
            text = mask_secrets(text)[0]  # recorded for the reviewer, never in clear
            report.rejected_secret += 1
        elif memory.score < settings.min_score:
            status = "below_threshold"
            report.below_threshold += 1
        else:
            status = "proposed"
            report.proposed += 1
        rows.append(CandidateRow(text=text, score=memory.score, category=memory.category,
                                 namespace=namespace, why=mask_secrets(memory.why)[0],
                                 source_event_ids=cited, status=status,
                                 topic=_topic_slug(memory.topic)))
    return rows
