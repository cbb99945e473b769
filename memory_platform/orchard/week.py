"""`orchard week`: what to work on this week, as a transparent score.

Every project in scope that is neither done nor archived gets a score, the sum of these
parts, each listed with its reason (and the turns it rests on):

    priority     1 → +40, 2 → +30, 3 → +20, 4 → +10, 5 → 0
    status       active +10, blocked -10, paused -20, idea -25
    blockers     -5 each, at most -15 (a blocked project moves only once unblocked);
                 cites the latest turn mentioning each blocker
    deadline     passed +40; due within 7 days +30, 14 days +20, 30 days +10; later 0
    activity     last active within 7 days +10 (momentum); 8-30 days idle +1 a day past
                 the 7th, at most +15 (going cold); older or never 0; cites the last turn
    next action  known +5; none recorded -5 (decide one first)

Ties go to the higher priority, then the name. Each project carries its last
MEMORY_PLATFORM_ORCHARD_EVIDENCE_TURNS turns from cairn as evidence. Activity, evidence and
the blockers' mentions come only from the linked conversations the caller may read, and
every text leaves masked (orchard/reading.py): a blocker is never a search of all of cairn.
The same database and the same `today` give the same answer: no model is involved in the
ranking. With an LLM, the answer is also phrased (prompts.py); the ranking is still this
one.
"""

import logging
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from memory_platform.orchard import projects as project_service
from memory_platform.orchard.activity import ActivityIndex
from memory_platform.orchard.prompts import PROMPT_VERSION, SYSTEM, WeekAdvice, week_prompt
from memory_platform.orchard.reading import shown, shown_project
from memory_platform.privacy.egress import outgoing
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database, orchard_activity
from memory_platform.vault.tokens import Scope

log = logging.getLogger(__name__)

PRIORITY_POINTS = {1: 40, 2: 30, 3: 20, 4: 10, 5: 0}
STATUS_POINTS = {"active": 10, "blocked": -10, "paused": -20, "idea": -25}
BLOCKER_POINTS, BLOCKER_FLOOR = -5, -15
MOMENTUM_DAYS, MOMENTUM_POINTS = 7, 10
COLD_DAYS, COLD_CAP = 30, 15
NEXT_ACTION_POINTS = 5
DEADLINE_POINTS = ((0, 40), (7, 30), (14, 20), (30, 10))  # (due within days, points)
EVIDENCE_CHARS = 280
# Evidence is first looked for this many days before the project's last active day.
EVIDENCE_LOOKBACK_DAYS = 30


def _reason(factor: str, points: int, reason: str, event_ids: list[int] | None = None) -> dict:
    return {"factor": factor, "points": points, "reason": reason, "event_ids": event_ids or []}


def _turn(row: dict) -> dict:
    """A turn as evidence: masked first, then cut (a cut could split a key the masking
    would no longer recognize). `masked` counts the credentials hidden."""
    text, masked = shown(" ".join(row["text"].split()))
    return {"event_id": row["event_id"], "occurred_at": row["occurred_at"].isoformat(),
            "source": row["source"], "role": row["role"],
            "text": text[:EVIDENCE_CHARS] + ("…" if len(text) > EVIDENCE_CHARS else ""),
            "conversation_id": row["conversation_id"], "masked": masked}


def _deadline(deadline: date, today: date) -> dict:
    days = (deadline - today).days
    if days < 0:
        return _reason("deadline", DEADLINE_POINTS[0][1],
                       f"deadline {deadline} passed {-days} day(s) ago")
    points = next((p for within, p in DEADLINE_POINTS[1:] if days <= within), 0)
    return _reason("deadline", points, f"due {deadline}, in {days} day(s)")


def _activity(activity: dict, today: date, last_turn: dict | None) -> dict:
    last = activity["last_active"]
    if last is None:
        return _reason("activity", 0, "no turns in cairn are linked to it yet")
    idle = (today - last).days
    week = activity["this_week"]
    cite = [last_turn["event_id"]] if last_turn else []
    seen = f"last active {last} ({idle} day(s) ago)"
    if idle <= MOMENTUM_DAYS:
        return _reason("activity", MOMENTUM_POINTS, f"momentum: {seen}; this week "
                       f"{week['turns']} turn(s) in {week['sessions']} session(s)", cite)
    if idle <= COLD_DAYS:
        return _reason("activity", min(idle - MOMENTUM_DAYS, COLD_CAP),
                       f"going cold: {seen}", cite)
    return _reason("activity", 0, f"dormant: {seen}", cite)


def score(project: dict, today: date, *, last_turn: dict | None = None,
          mentions: dict[str, dict] | None = None) -> list[dict]:
    """The parts of a project's score, each with its reason (see the module docstring).
    `last_turn` is its latest turn; `mentions` the latest turn mentioning each blocker."""
    mentions = mentions or {}
    parts = [_reason("priority", PRIORITY_POINTS[project["priority"]],
                     f"priority {project['priority']} of 5 (1 comes first)"),
             _reason("status", STATUS_POINTS[project["status"]], f"status {project['status']}")]
    if project["blockers"]:
        said = []
        for blocker in project["blockers"]:
            seen = mentions.get(blocker)
            said.append(blocker + (f" (mentioned {seen['occurred_at'][:10]}, "
                                   f"#{seen['event_id']})" if seen else ""))
        parts.append(_reason(
            "blockers", max(BLOCKER_POINTS * len(project["blockers"]), BLOCKER_FLOOR),
            "blocked by: " + "; ".join(said),
            [m["event_id"] for m in mentions.values()]))
    if project["deadline"] is not None:
        parts.append(_deadline(project["deadline"], today))
    parts.append(_activity(project["activity"], today, last_turn))
    if project["next_action"]:
        parts.append(_reason("next action", NEXT_ACTION_POINTS,
                             f"next action known: {project['next_action']}"))
    else:
        parts.append(_reason("next action", -NEXT_ACTION_POINTS,
                             "no next action recorded: decide one first"))
    return parts


def _evidence(db: Database, project: dict, limit: int, conversations: list[int] | None
              ) -> tuple[list[dict], dict[str, dict]]:
    """(latest turns, {blocker: the turn that best matches it}), from `conversations` only
    (None: every linked one)."""
    links = (project["cairn_projects"], project["cairn_titles"])
    last = project["activity"]["last_active"]
    only = {"conversations": conversations}
    with db.connect() as conn:
        found = []
        if last is not None:  # the usual case: the last turns are near the last active day
            since = datetime.combine(last - timedelta(days=EVIDENCE_LOOKBACK_DAYS), time.min,
                                     tzinfo=timezone.utc)
            found = orchard_activity.recent_turns(conn, *links, limit=limit, since=since,
                                                  **only)
        if len(found) < limit:
            found = orchard_activity.recent_turns(conn, *links, limit=limit, **only)
        turns = [_turn(r) for r in found]
        mentions = {}
        for blocker in project["blockers"]:
            found = orchard_activity.turns_mentioning(conn, *links, blocker.split(), limit=1,
                                                      **only)
            if found:
                mentions[blocker] = _turn(found[0])
    return turns, mentions


def _readable(index: ActivityIndex, project: dict, scope: Scope) -> list[int] | None:
    """The project's conversations the scope may read (None: unscoped, every one)."""
    if scope.unrestricted:
        return None
    rows = index.rows_of(project["cairn_projects"], project["cairn_titles"])
    return sorted({r["conversation_id"] for r in rows})


def rank(db: Database, scope: Scope, *, today: date | None = None,
         settings: Settings | None = None) -> dict[str, Any]:
    """The deterministic answer: {today, week, ranked, not_ranked, answer, secrets_masked}
    (the credentials masked in the evidence shown)."""
    settings = settings or load_settings()
    today = today or project_service.utc_today()
    projects = project_service.in_scope(db, scope)  # as stored: cairn is read by their links
    ranked, masked = [], 0
    not_ranked = [{"name": outgoing(p["name"]), "why": "done"} for p in projects
                  if p["status"] == "done"]
    open_ones = [p for p in projects if p["status"] != "done"]
    index = project_service.activity_index(db, scope, open_ones)
    for project in project_service.with_activity(db, scope, open_ones, today=today,
                                                 index=index):
        evidence, mentions = _evidence(db, project, settings.orchard_evidence_turns,
                                       _readable(index, project, scope))
        parts = score(project, today, last_turn=evidence[0] if evidence else None,
                      mentions=mentions)
        for turn in mentions.values():
            if turn["event_id"] not in {t["event_id"] for t in evidence}:
                evidence.append(turn)
        masked += sum(t["masked"] for t in evidence)
        ranked.append({
            **shown_project({k: project[k] for k in (
                "id", "name", "namespace", "repo", "status", "priority", "next_action",
                "blockers", "deadline", "last_milestone", "last_milestone_at", "activity")}),
            "score": sum(p["points"] for p in parts),
            "reasons": [{**r, "reason": outgoing(r["reason"])} for r in parts],
            "evidence": [{k: v for k, v in t.items() if k != "masked"} for t in evidence]})
    ranked.sort(key=lambda p: (-p["score"], p["priority"], p["name"].lower()))
    for i, project in enumerate(ranked, 1):
        project["rank"] = i
    return {"today": today, "week": project_service.week_start(today), "ranked": ranked,
            "not_ranked": not_ranked, "answer": plain_answer(today, ranked, not_ranked),
            "secrets_masked": masked}


def plain_answer(today: date, ranked: list[dict], not_ranked: list[dict]) -> str:
    """The ranking as text: each project, its score and every reason, and its evidence."""
    if not ranked:
        return "No project to rank: add one (memory-platform orchard add) or accept a " \
               "proposal (memory-platform orchard proposals)."
    lines = [f"What to work on this week (week of {project_service.week_start(today)}):"]
    for p in ranked:
        lines.append(f"\n{p['rank']}. {p['name']} [{p['namespace']}] score {p['score']}"
                     f" · {p['status']}" + (f" · next: {p['next_action']}"
                                            if p["next_action"] else ""))
        for r in p["reasons"]:
            cites = "".join(f" #{i}" for i in r["event_ids"])
            lines.append(f"   {r['points']:+d} {r['factor']}: {r['reason']}{cites}")
        for t in p["evidence"]:
            lines.append(f"   > #{t['event_id']} {t['occurred_at'][:10]} {t['source']} "
                         f"{t['role']}: {t['text']}")
    if not_ranked:
        lines.append("\nNot ranked: " + ", ".join(f"{n['name']} ({n['why']})"
                                                  for n in not_ranked))
    return "\n".join(lines)


def configured_llm(db: Database):
    """The configured LLM with its calls logged, or None when no provider is set. A provider
    that is set but cannot be built (a bad name, a missing key) is an error, not a silent
    plain answer."""
    from memory_platform.llm import CallRecorder, provider_from_env

    if load_settings().llm_provider is None:
        return None
    return CallRecorder(provider_from_env(), db=db)


def week(db: Database, scope: Scope, *, today: date | None = None, llm=None,
         settings: Settings | None = None) -> dict[str, Any]:
    """The ranking (rank), phrased by `llm` when given. The answer always has the code's
    ranking; `phrased_by` names the model that worded `answer` (None: the plain text).
    A failed or out-of-order phrasing leaves the plain answer and says why in
    `phrasing_error`: the ranking does not depend on the model."""
    from memory_platform.llm import LLMError

    found = rank(db, scope, today=today, settings=settings)
    found.update(phrased_by=None, phrasing_error=None, prompt_version=None)
    if llm is None or not found["ranked"]:
        return found
    prompt, masked = week_prompt(found["today"].isoformat(), found["ranked"])
    found.update(prompt_version=PROMPT_VERSION,
                 secrets_masked=found["secrets_masked"] + masked)
    try:
        result = llm.complete(prompt, system=SYSTEM, schema=WeekAdvice, max_tokens=1500,
                              purpose="orchard_week")
    except LLMError as exc:
        log.warning("orchard week: the phrasing failed, the plain answer stands: %s", exc)
        found["phrasing_error"] = str(exc)
        return found
    advice: WeekAdvice = result.parsed
    expected = [p["name"] for p in found["ranked"]]
    if [n.strip().lower() for n in advice.order] != [n.lower() for n in expected]:
        found["phrasing_error"] = (f"the model discussed {advice.order}, not the ranking "
                                   f"{expected}; the plain answer stands")
        return found
    found["answer"] = advice.advice
    found["phrased_by"] = f"{result.provider}/{result.model}"
    return found

