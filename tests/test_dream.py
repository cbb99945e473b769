"""The dream's first step against a real PostgreSQL, with a scripted model: what it reads, what
the prompt contains (and never contains), how candidates are kept, and the watermark."""

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers.transcripts import cc_record
from memory_platform.dream.propose import (
    CONTEXT_MARKER,
    DEFAULT_MIN_SCORE,
    DreamAnswer,
    DreamReport,
    DreamSettings,
    PreparedTurn,
    ProposedMemory,
    _candidates,
    absolutize_dates,
    build_prompt,
    chunk_turns,
    contains_secret,
    dream_day,
    prepare_turns,
    strip_injected,
)
from memory_platform.ingest import importer as ingest
from memory_platform.llm import ScriptedProvider
from memory_platform.llm.base import LLMCallFailed
from memory_platform.settings import load_settings
from memory_platform.store import dream as store
from memory_platform.store.dream import DreamEvent
from memory_platform.vault.routing import Routing, RoutingError

DAY = date(2026, 3, 4)  # a Wednesday
T0 = datetime(2026, 3, 4, 9, 0, tzinfo=timezone.utc)
SECRET = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"


def write_session(path: Path, turns: list[tuple[str, str]], *, session="s-1",
                  start=T0, cwd="/home/me/src/acme-api", mode="w", first=0) -> None:
    parent = None
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode, encoding="utf-8") as fh:
        for i, (role, text) in enumerate(turns, first):
            rec = cc_record(i, session, start + timedelta(minutes=i), role, text=text,
                            parent=parent, cwd=cwd)
            parent = rec["uuid"]
            fh.write(json.dumps(rec) + "\n")


def mcp_tool_records(session: str, at: datetime, cwd: str) -> list[dict]:
    """An assistant calling this system's own cairn_search, and the result it got back."""
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session,
            "version": "2.1.3", "gitBranch": "main"}
    use = {**base, "type": "assistant", "uuid": "u-tool-1", "parentUuid": None,
           "timestamp": at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
           "message": {"model": "claude-sonnet-4-5-20250929", "id": "msg_t1", "type": "message",
                       "role": "assistant", "stop_reason": "tool_use",
                       "usage": {"input_tokens": 1, "output_tokens": 1},
                       "content": [{"type": "tool_use", "id": "toolu_1",
                                    "name": "mcp__memory-platform__cairn_search",
                                    "input": {"query": "database port"}}]}}
    result = {**base, "type": "user", "uuid": "u-tool-2", "parentUuid": "u-tool-1",
              "timestamp": (at + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
              "message": {"role": "user", "content": [{
                  "type": "tool_result", "tool_use_id": "toolu_1",
                  "content": "RECALLED: the staging database listens on port 6543"}]}}
    return [use, result]


def memory(text, score=8, ids=(), category="project", why="a future session needs it"):
    return ProposedMemory(text=text, score=score, category=category, why=why,
                          source_event_ids=list(ids))


def event_ids(db) -> list[int]:
    with db.connect() as conn:
        return [r[0] for r in conn.execute(
            "SELECT id FROM events WHERE role IN ('user','assistant') AND kind = 'message' "
            "ORDER BY id").fetchall()]


# --- pure helpers -------------------------------------------------------------------------

def test_relative_dates_become_absolute():
    anchor = DAY  # Wednesday 2026-03-04
    assert absolutize_dates("We moved the DB yesterday", anchor) == "We moved the DB on 2026-03-03"
    assert absolutize_dates("decided today to pin 1.13", anchor) == "decided on 2026-03-04 to pin 1.13"
    assert absolutize_dates("Released last Monday", anchor) == "Released on 2026-03-02"
    assert absolutize_dates("Demo next Friday", anchor) == "Demo on 2026-03-06"
    assert absolutize_dates("it broke 3 days ago", anchor) == "it broke on 2026-03-01"
    assert absolutize_dates("it broke two days ago", anchor) == "it broke on 2026-03-02"
    assert absolutize_dates("Deploy tomorrow", anchor) == "Deploy on 2026-03-05"
    assert absolutize_dates("started last week", anchor) == "started in the week of 2026-02-23"
    assert absolutize_dates("Last Wednesday it failed", anchor) == "on 2026-02-25 it failed"
    assert absolutize_dates("on yesterday's call", anchor) == "on 2026-03-03's call"
    # nothing relative: untouched
    assert absolutize_dates("Port 5432 since 2025-01-01", anchor) == "Port 5432 since 2025-01-01"


def test_injected_context_is_cut_and_secrets_detected():
    text = (f"before <{CONTEXT_MARKER} source=\"vault\">old fact: port 6543</{CONTEXT_MARKER}> "
            "after")
    cut, n = strip_injected(text)
    assert n == 1 and "6543" not in cut and cut.startswith("before") and cut.endswith("after")
    assert contains_secret(f"the key is {SECRET}")
    assert contains_secret("token: [secret masked]")
    assert not contains_secret("the API listens on port 8080")


def _shown(*ids: int) -> list[PreparedTurn]:
    return [PreparedTurn(DreamEvent(i, 1, T0, "user", f"turn {i}", "claude-code", None),
                         f"[{i}] turn {i}") for i in ids]


@pytest.mark.parametrize(("min_score", "kept", "below"), [
    (DEFAULT_MIN_SCORE, [6, 7, 10], [1, 5]),  # the README's "scoring 6+"
    (9, [9, 10], [1, 5, 6, 8]),
    (1, [1, 5, 6, 10], []),
    (10, [10], [1, 9]),
])
def test_a_score_equal_to_the_threshold_is_proposed_one_below_is_not(min_score, kept, below):
    assert DEFAULT_MIN_SCORE == 6 == DreamSettings().min_score
    scores = sorted(kept + below)
    answer = DreamAnswer(memories=[memory(f"fact scored {s}", s, [1]) for s in scores])
    report = DreamReport(day=DAY)
    rows = _candidates(answer, _shown(1), "acme", DreamSettings(min_score=min_score), report)
    by_status = {s: sorted(r.score for r in rows if r.status == s)
                 for s in ("proposed", "below_threshold")}
    assert by_status == {"proposed": kept, "below_threshold": below}
    assert (report.proposed, report.below_threshold) == (len(kept), len(below))
    assert all(r.namespace == "acme" and r.source_event_ids == [1] for r in rows)


def _event(i: int, text: str, role: str = "user") -> DreamEvent:
    return DreamEvent(i, 1, T0 + timedelta(minutes=i), role, text, "claude-code", None)


def test_prepare_turns_cuts_masks_counts_and_skips_emptied_turns():
    injected = f"<{CONTEXT_MARKER}>recalled: port 6543</{CONTEXT_MARKER}>"
    events = [
        _event(1, injected),  # nothing left once cut: skipped, and the rest still read
        _event(2, "x" * 20),  # exactly turn_chars: kept whole
        _event(3, "y" * 25, role="assistant"),  # 5 over: cut and marked
        _event(4, f"{injected} keys {SECRET} and token=abcdefgh9"),
    ]
    report = DreamReport(day=DAY)
    turns = prepare_turns(events, DreamSettings(turn_chars=20), report)
    assert [t.event.id for t in turns] == [2, 3, 4]
    assert [t.line for t in turns] == [
        "[2] 2026-03-04 09:02 UTC, Wednesday — user: " + "x" * 20,
        "[3] 2026-03-04 09:03 UTC, Wednesday — assistant: " + "y" * 20 + " […5 chars cut]",
        # masked before it is cut: no part of a key survives the cut
        "[4] 2026-03-04 09:04 UTC, Wednesday — user: keys [secret masked] […26 chars cut]",
    ]
    assert (report.injected_blocks_cut, report.masked_secrets) == (2, 2)
    more = prepare_turns([_event(5, injected + " ok"), _event(6, SECRET)],
                         DreamSettings(), report)
    assert len(more) == 2 and (report.injected_blocks_cut, report.masked_secrets) == (3, 3)


def test_strip_injected_leaves_the_text_around_as_it_was():
    block = f"<{CONTEXT_MARKER} source=\"vault\">old</{CONTEXT_MARKER}>"
    assert strip_injected(f"before {block} after {block}") == ("before  after", 2)
    assert strip_injected("nothing injected") == ("nothing injected", 0)


@pytest.mark.parametrize(("chunk_chars", "sizes"), [(19, [2, 2, 1]), (18, [1, 1, 1, 1, 1]),
                                                    (1000, [5])])
def test_chunk_turns_fills_each_chunk_up_to_its_size(chunk_chars, sizes):
    # each line is 9 characters and costs 10 with its newline: two fill 19, not 18
    turns = [PreparedTurn(_event(i, "t"), f"line {i:04d}") for i in range(5)]
    chunks = chunk_turns(turns, chunk_chars)
    assert [len(c) for c in chunks] == sizes
    assert [t for c in chunks for t in c] == turns


def test_build_prompt_header_parts_and_turns():
    turns = [PreparedTurn(_event(1, "a"), "[1] first"), PreparedTurn(_event(2, "b"), "[2] next")]
    info = {"source": "claude-ai", "title": "Deploy notes", "project": "/src/acme"}
    tail = "\n\nPropose the memories worth keeping, per the rubric."
    intro = ". Each turn: [id] timestamp — role: text.\n\n[1] first\n[2] next"
    assert build_prompt(turns, info, 1, 1) == (
        "Conversation from claude-ai titled 'Deploy notes' in project /src/acme" + intro + tail)
    assert build_prompt(turns, {"source": None}, 2, 3) == (
        "Conversation from unknown source (part 2 of 3)" + intro + tail)
    assert build_prompt(turns, {"source": "notes"}, 1, 2).startswith(
        "Conversation from notes (part 1 of 2). Each turn")


def test_candidates_keeps_counting_past_uncited_and_secret_proposals():
    answer = DreamAnswer(memories=[
        memory("cites nothing shown", 9, [99]),
        memory(f"the key is {SECRET} for acme", 9, [1]),
        memory("cites nothing shown either", 9, [98]),
        memory("password=hunter2222 is the acme admin login", 9, [1]),
        memory("acme pins psycopg 3.2", 9, [1, 1, 99]),
        memory("acme deploys from main", 9, [1], why=f"the deploy uses {SECRET}"),
    ])
    report = DreamReport(day=DAY)
    rows = _candidates(answer, _shown(1), "acme", DreamSettings(), report)
    assert (report.uncited, report.rejected_secret, report.proposed) == (2, 3, 1)
    assert [r.status for r in rows] == ["rejected_secret", "rejected_secret", "proposed",
                                        "rejected_secret"]
    # recorded masked, the rest of the text kept for the reviewer
    assert rows[0].text == "the key is [secret masked] for acme"
    assert rows[1].text == "password=[secret masked] is the acme admin login"
    assert rows[2].source_event_ids == [1]  # shown turns only, each once
    assert rows[2].why == "a future session needs it"
    assert (rows[3].text, rows[3].why) == ("acme deploys from main",
                                           "the deploy uses [secret masked]")


def test_routing_rules(tmp_path):
    path = tmp_path / "routing.toml"
    path.write_text('default = "me"\n[[rules]]\nproject = "/home/me/src/acme-*"\n'
                    'namespace = "acme"\n[[rules]]\nsource = "chatgpt"\nnamespace = "chats"\n')
    routing = Routing.load(path)
    assert routing.route(project="/home/me/src/acme-api", source="claude-code") == "acme"
    assert routing.route(project="/home/me/src/other", source="chatgpt") == "chats"
    assert routing.route(project=None, source="gemini") == "me"
    assert Routing().route(project="/x", source="claude-code") == "personal"
    path.write_text('[[rules]]\nproject = "/x/*"\nnamespace = "acme__dream"\n')
    with pytest.raises(RoutingError, match="rule 1.*not a primary namespace"):
        Routing.load(path)
    path.write_text('[[rules]]\nnamespace = "a"\n')
    with pytest.raises(RoutingError, match="needs `project` or `source`"):
        Routing.load(path)


# --- dream_day against the database ---------------------------------------------------------

@pytest.fixture
def session(tmp_path, db):
    path = tmp_path / "projects" / "acme" / "s-1.jsonl"
    write_session(path, [
        ("user", "Let's use port 5433 for the acme test database; 5432 clashes with "
                 "the system postgres."),
        ("assistant", "Done: docker-compose now maps 5433. I also pinned psycopg to 3.2."),
        ("user", f"Thanks. For the record the deploy key is {SECRET}, keep it handy."),
        ("user", f"<{CONTEXT_MARKER}>remembered: acme uses pytest-xdist</{CONTEXT_MARKER}>"
                 "What did we decide yesterday about the CI cache?"),
        ("assistant", "We decided yesterday to drop the CI cache; it hid stale wheels."),
    ])
    with path.open("a", encoding="utf-8") as fh:
        for rec in mcp_tool_records("s-1", T0 + timedelta(minutes=10), "/home/me/src/acme-api"):
            fh.write(json.dumps(rec) + "\n")
    report = ingest.import_path(db, "claude-code", path)
    assert report.errors == []
    return path


def test_dream_day_prompt_candidates_and_watermark(db, session, tmp_path):
    ids = event_ids(db)
    assert len(ids) == 5  # the tool call and its result are not conversation turns
    routing_file = tmp_path / "routing.toml"
    routing_file.write_text('[[rules]]\nproject = "/home/me/src/acme-*"\nnamespace = "acme"\n')
    answer = DreamAnswer(memories=[
        memory("The acme test database uses port 5433 because 5432 clashes with the "
               "system postgres.", 9, [ids[0], ids[1]]),
        memory("The CI cache was dropped yesterday because it hid stale wheels.", 8, [ids[4]]),
        memory("The user said thanks.", 2, [ids[2]], category="user"),
        memory(f"The acme deploy key is {SECRET}.", 9, [ids[2]], category="reference"),
        memory("A fact citing a turn never shown.", 9, [999_999]),
    ])
    llm = ScriptedProvider(answers=[answer])
    report = dream_day(db, llm, DAY, run_id="run-1", routing=Routing.load(routing_file),
                       settings=DreamSettings())

    assert len(llm.calls) == 1
    prompt = llm.calls[0].prompt
    assert SECRET not in prompt and "[secret masked]" in prompt
    assert "remembered: acme uses pytest-xdist" not in prompt  # injected context cut
    assert "RECALLED" not in prompt and "6543" not in prompt  # own MCP results excluded
    assert f"[{ids[0]}] 2026-03-04 09:00 UTC, Wednesday — user:" in prompt
    assert llm.calls[0].system and "Score each for durability" in llm.calls[0].system

    assert (report.proposed, report.below_threshold, report.rejected_secret, report.uncited) \
        == (2, 1, 1, 1)
    with db.connect() as conn:
        rows = conn.execute(
            "SELECT text, score, status, namespace, source_event_ids, run_id "
            "FROM dream_candidates ORDER BY id").fetchall()
    by_status = {}
    for row in rows:
        by_status.setdefault(row[2], []).append(row)
    assert len(by_status["proposed"]) == 2
    assert all(r[3] == "acme" for r in rows)  # routing, not the model, chose the namespace
    cache = [r for r in by_status["proposed"] if "CI cache" in r[0]][0]
    assert "on 2026-03-03" in cache[0] and "yesterday" not in cache[0]
    assert cache[4] == [ids[4]]
    secret_row = by_status["rejected_secret"][0]
    assert SECRET not in secret_row[0]  # recorded masked, never in clear
    assert by_status["below_threshold"][0][1] == 2

    # the watermark: a second run reads nothing and calls nothing
    again = ScriptedProvider(answers=[])
    report2 = dream_day(db, again, DAY, run_id="run-2", routing=Routing(),
                        settings=DreamSettings())
    assert again.calls == [] and report2.events == 0
    with db.connect() as conn:
        assert store.first_undreamed_day(conn, DAY - timedelta(days=3)) is None


def test_grown_transcript_dreams_only_the_new_turns(db, session):
    dream_day(db, ScriptedProvider(answers=[DreamAnswer(memories=[])]), DAY, run_id="r1",
              routing=Routing(), settings=DreamSettings())
    write_session(session, [("user", "New: the staging host is staging.acme.internal."),
                            ("assistant", "Noted.")], mode="a", first=20)
    ingest.import_path(db, "claude-code", session)
    with db.connect() as conn:
        assert store.first_undreamed_day(conn, DAY - timedelta(days=3)) == DAY
    llm = ScriptedProvider(answers=[DreamAnswer(memories=[])])
    report = dream_day(db, llm, DAY, run_id="r2", routing=Routing(), settings=DreamSettings())
    assert report.events == 2
    assert "staging.acme.internal" in llm.calls[0].prompt
    assert "5433" not in llm.calls[0].prompt


def test_min_score_setting_and_malformed_answers(db, session, monkeypatch):
    ids = event_ids(db)
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_MIN_SCORE", "9")
    settings = DreamSettings.from_settings(load_settings())
    good = DreamAnswer(memories=[memory("acme pins psycopg 3.2.", 8, [ids[1]])])
    # a malformed answer is re-asked, then the good one is used
    llm = ScriptedProvider(answers=['{"memories": [{"text": "x"}]}', good])
    report = dream_day(db, llm, DAY, run_id="r1", routing=Routing(), settings=settings)
    assert len(llm.calls) == 2 and report.below_threshold == 1 and report.proposed == 0
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_MIN_SCORE", "11")
    with pytest.raises(ValueError, match="MEMORY_PLATFORM_DREAM_MIN_SCORE='11': must be at most 10"):
        DreamSettings.from_settings(load_settings())


def test_a_failed_call_keeps_finished_chunks_and_the_rerun_resumes(db, tmp_path):
    path = tmp_path / "p" / "long.jsonl"
    turns = [("user" if i % 2 == 0 else "assistant", f"turn {i}: " + "detail " * 60)
             for i in range(12)]
    write_session(path, turns, session="long")
    ingest.import_path(db, "claude-code", path)
    settings = DreamSettings(chunk_chars=1_500)
    ids = event_ids(db)
    first_answer = DreamAnswer(memories=[memory("fact from the first chunk", 7, [ids[0]])])
    llm = ScriptedProvider(answers=[first_answer, LLMCallFailed("503 overloaded")])
    with pytest.raises(LLMCallFailed):
        dream_day(db, llm, DAY, run_id="r1", routing=Routing(), settings=settings)
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM dream_candidates").fetchone()[0] == 1
        done = conn.execute("SELECT last_event_id FROM dream_watermarks").fetchone()[0]
    assert ids[0] <= done < ids[-1]
    rerun = ScriptedProvider(answers=lambda call: DreamAnswer(memories=[]).model_dump_json())
    report = dream_day(db, rerun, DAY, run_id="r2", routing=Routing(), settings=settings)
    assert report.events == len([i for i in ids if i > done])
    assert all(f"[{ids[0]}]" not in c.prompt for c in rerun.calls)
    with db.connect() as conn:
        assert conn.execute("SELECT count(*) FROM dream_candidates").fetchone()[0] == 1
        assert conn.execute("SELECT last_event_id FROM dream_watermarks").fetchone()[0] == ids[-1]
