"""Dream triggers: the session-end sensor (quiet period, hook queue, throttle, batching, day
ranges), the SessionEnd hook CLI, and the nightly dream schedule."""

import importlib
import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import dagster as dg
import pytest

from helpers.transcripts import write_transcript
from memory_platform.defs.dream import automation as schedules
from memory_platform.defs.dream.automation import (
    nightly_dream_schedule,
    request_tags,
    session_end_sensor,
)
from memory_platform.dream.plan import nightly_range
from memory_platform.dream.triggers import (
    Policy,
    State,
    dump_cursor,
    evaluate,
    list_transcripts,
    parse_cursor,
    transcript_days,
)
from memory_platform.ingest import hooks
from memory_platform.ingest import importer as ingest
from memory_platform.resources import DatabaseResource
from memory_platform.resources.common import RANGE_END, RANGE_START, THEN_TAG, TRIGGER_TAG
from memory_platform.settings import load_settings
from memory_platform.store import dream as dream_store

CLI = str(Path(sys.executable).parent / "memory-platform")
NOW = datetime(2026, 3, 12, 10, 0, tzinfo=timezone.utc)
POLICY = Policy(quiet=timedelta(minutes=15), throttle=timedelta(minutes=30), lookback_days=30)


def _age(path: Path, at: datetime) -> None:
    """Make `path` look last written at `at`."""
    os.utime(path, ns=(int(at.timestamp() * 1e9),) * 2)


def _session(folder: Path, name: str, start: datetime, *, n: int = 4,
             step: timedelta = timedelta(minutes=5), written: datetime | None = None) -> Path:
    path = folder / f"{name}.jsonl"
    write_transcript(path, n, session=name, start=start, step=step)
    _age(path, written or start + step * n)
    return path


@pytest.fixture(autouse=True)
def llm_configured(monkeypatch):
    """Triggers skip while no LLM is configured; a local OpenAI-compatible endpoint (never
    called here: building the provider makes no request) counts as configured."""
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_PROVIDER", "openai-compatible")
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_MODEL", "local-model")


@pytest.fixture
def env(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """Settings pointing at a temporary home and Claude Code projects folder (no database:
    the sensor never needs one)."""
    home, projects = tmp_path / "home", tmp_path / "claude-projects"
    home.mkdir()
    monkeypatch.setenv("MEMORY_PLATFORM_HOME", str(home))
    monkeypatch.setenv("MEMORY_PLATFORM_CLAUDE_PROJECTS", str(projects))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster"))
    for name in ("MEMORY_PLATFORM_SESSION_QUIET_MINUTES", "MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES",
                 "MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS", "MEMORY_PLATFORM_TIMEZONE"):
        monkeypatch.delenv(name, raising=False)
    return home, projects / "-home-me-proj"


def _tick(state: State, projects: Path, now: datetime, hooked=(), policy: Policy = POLICY):
    return evaluate(state, transcripts=list_transcripts(projects.parent), hooked=hooked,
                    now=now, policy=policy)


# --- reading a transcript's days ---------------------------------------------------------------


def test_transcript_days_from_real_samples(samples_dir):
    cc = samples_dir / "claude-code"

    def days(path: Path) -> tuple[str, str]:
        st = path.stat()
        return transcript_days(str(path), st.st_size, st.st_mtime_ns)

    # first line is a file-history-snapshot whose time is nested in `snapshot`
    assert days(cc / "agentlogs/compact.jsonl") == ("2025-10-10", "2025-10-10")
    # first line is a summary without any timestamp
    assert days(cc / "agentlogs/subagent.jsonl") == ("2025-10-10", "2025-10-10")
    assert days(cc / "claude-code-log/dag_compact_after_rewind.jsonl") == (
        "2025-07-01", "2025-07-01")


def test_transcript_days_span_and_fallback(tmp_path):
    path = tmp_path / "long.jsonl"
    write_transcript(path, 50, start=datetime(2026, 3, 1, 20, tzinfo=timezone.utc),
                     step=timedelta(hours=1))
    st = path.stat()
    assert transcript_days(str(path), st.st_size, st.st_mtime_ns) == ("2026-03-01", "2026-03-03")

    # no timestamp anywhere: the modification day
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"type": "summary", "summary": "x"}\nnot json\n')
    _age(bare, datetime(2026, 2, 2, 12, tzinfo=timezone.utc))
    st = bare.stat()
    assert transcript_days(str(bare), st.st_size, st.st_mtime_ns) == ("2026-02-02", "2026-02-02")


# --- quiet period and change detection -----------------------------------------------------


def test_quiet_period_and_changed_since_last_dream(env):
    _, projects = env
    day = datetime(2026, 3, 12, 8, tzinfo=timezone.utc)
    old = _session(projects, "old", day, written=NOW - timedelta(minutes=40))
    fresh = _session(projects, "fresh", day + timedelta(hours=1),
                     written=NOW - timedelta(minutes=3))
    # a subagent transcript of the old session, quiet too
    sub = projects / "old" / "subagents" / "agent-1.jsonl"
    write_transcript(sub, 2, session="old", start=day)
    _age(sub, NOW - timedelta(minutes=40))

    state = State()
    out = _tick(state, projects, NOW)
    [req] = out.requests
    assert (req.first, req.last) == ("2026-03-12", "2026-03-12")
    assert req.sessions == 1  # the subagent file belongs to session "old"
    assert request_tags(req)[TRIGGER_TAG] == "session-end"
    assert req.run_key.startswith("session-end:2026-03-12..2026-03-12:")
    assert set(state.dreamed) == {str(old.resolve()), str(sub.resolve())}
    assert str(fresh.resolve()) not in state.dreamed and not state.pending

    # nothing changed and the fresh one is still active: nothing to do
    again = _tick(state, projects, NOW + timedelta(minutes=5))
    assert again.requests == [] and again.message.startswith("no ended session to dream")
    assert "1 still active" in again.message
    later = NOW + timedelta(hours=2)

    # the fresh one went quiet meanwhile; the old one grew by a day and went quiet too
    write_transcript(old, 2, session="old", first=4, start=day + timedelta(days=1) - timedelta(
        minutes=20), mode="a")
    _age(old, later - timedelta(minutes=20))
    _age(fresh, later - timedelta(minutes=90))
    grown = _tick(state, projects, later + timedelta(days=1))
    [req2] = grown.requests
    # the grown file only needs the days from its last dreamed day on
    assert (req2.first, req2.last) == ("2026-03-12", "2026-03-13")
    assert req2.sessions == 2 and req2.run_key != req.run_key


def test_history_beyond_lookback_is_left_to_backfills(env):
    _, projects = env
    _session(projects, "ancient", datetime(2025, 1, 5, tzinfo=timezone.utc))
    out = _tick(State(), projects, NOW)
    assert out.requests == []


# --- throttle and batching -----------------------------------------------------------------


def test_throttle_batches_sessions_until_the_window_opens(env):
    _, projects = env
    t0 = NOW
    _session(projects, "a", t0 - timedelta(hours=1), written=t0 - timedelta(minutes=20))
    state = State()
    first = _tick(state, projects, t0)
    assert len(first.requests) == 1 and state.last_dream_at == t0

    # b ends 10 minutes later, inside the window: kept, not requested, not dropped
    _session(projects, "b", t0 - timedelta(minutes=30), written=t0 - timedelta(minutes=5))
    t1 = t0 + timedelta(minutes=10)
    held = _tick(state, projects, t1)
    assert held.requests == []
    assert held.message == "1 session waiting; next dream allowed at 10:30 UTC"
    # the cursor round-trips the waiting session
    state = parse_cursor(dump_cursor(state))
    assert [p["session"] for p in state.pending.values()] == ["b"]

    # c ends too; still inside the window
    _session(projects, "c", t0 - timedelta(minutes=25), written=t0 + timedelta(minutes=2))
    t2 = t0 + timedelta(minutes=20)
    held2 = _tick(state, projects, t2)
    assert held2.requests == [] and held2.message.startswith("2 sessions waiting")

    # the window opens: one request carrying both
    t3 = t0 + timedelta(minutes=31)
    released = _tick(state, projects, t3)
    [req] = released.requests
    assert req.sessions == 2 and (req.first, req.last) == ("2026-03-12", "2026-03-12")
    assert state.pending == {} and state.last_dream_at == t3
    assert _tick(state, projects, t3 + timedelta(hours=1)).requests == []


def test_waiting_message_in_configured_timezone(env):
    _, projects = env
    _session(projects, "a", NOW - timedelta(hours=1), written=NOW - timedelta(minutes=20))
    state = State(last_dream_at=NOW - timedelta(minutes=5))
    berlin = Policy(quiet=POLICY.quiet, throttle=POLICY.throttle, timezone="Europe/Berlin")
    out = _tick(state, projects, NOW, policy=berlin)
    assert out.message == "1 session waiting; next dream allowed at 11:25 CET"


# --- day ranges ----------------------------------------------------------------------------


def test_multiple_days_become_contiguous_ranges(env):
    _, projects = env
    written = NOW - timedelta(hours=1)
    _session(projects, "two-days", datetime(2026, 3, 1, 22, tzinfo=timezone.utc), n=6,
             step=timedelta(hours=1), written=written)
    _session(projects, "next-day", datetime(2026, 3, 3, 9, tzinfo=timezone.utc), written=written)
    _session(projects, "later", datetime(2026, 3, 10, 9, tzinfo=timezone.utc), written=written)
    out = _tick(State(), projects, NOW)
    assert [(r.first, r.last) for r in out.requests] == [
        ("2026-03-01", "2026-03-03"), ("2026-03-10", "2026-03-10")]
    # one batch: both runs carry its fingerprint, each its own range
    fingerprints = {r.run_key.rsplit(":", 1)[1] for r in out.requests}
    assert len(fingerprints) == 1 and all(r.sessions == 3 for r in out.requests)
    assert all(request_tags(r)[RANGE_START] == r.first and request_tags(r)[RANGE_END] == r.last
               for r in out.requests)


# --- the hook ------------------------------------------------------------------------------


def _hook(stdin: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMORY_PLATFORM_HOME": str(home)}
    return subprocess.run([CLI, "hook", "session-end"], input=stdin, capture_output=True,
                          text=True, env=env, timeout=60)


def test_hook_cli_queues_the_event(tmp_path):
    home = tmp_path / "home"
    payload = {"session_id": "abc-123", "transcript_path": "/tmp/x/abc-123.jsonl",
               "cwd": "/home/me/proj", "hook_event_name": "SessionEnd", "reason": "logout"}
    done = _hook(json.dumps(payload), home)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    queue = hooks.queue_dir(home)
    [file] = list(queue.iterdir())  # no temporary file left behind
    assert file.name.endswith("-abc-123.json")
    written = json.loads(file.read_text())
    assert {k: written[k] for k in payload} == payload and "received_at" in written


@pytest.mark.parametrize("stdin, message", [
    ("{not json", "not JSON"),
    ("", "no input on stdin"),
    ("[1, 2]", "must be a JSON object"),
    ('{"transcript_path": "/x.jsonl"}', "no session_id"),
    ('{"session_id": "s", "hook_event_name": "Stop"}', "handles SessionEnd"),
])
def test_hook_cli_rejects_bad_input(tmp_path, stdin, message):
    home = tmp_path / "home"
    done = _hook(stdin, home)
    assert done.returncode == 1
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not hooks.queue_dir(home).exists()


def _sensor(cursor: str | None, instance):
    return session_end_sensor(dg.build_sensor_context(
        cursor=cursor, instance=instance, resources={"database": DatabaseResource()}))


def test_hook_events_are_requested_without_waiting(env):
    home, projects = env
    now = datetime.now(timezone.utc)
    # a session still being written (fresh mtime) with a subagent file: not quiet yet
    main = projects / "live.jsonl"
    write_transcript(main, 4, session="live", start=now - timedelta(minutes=10),
                     step=timedelta(minutes=1))
    write_transcript(projects / "live" / "subagents" / "agent-7.jsonl", 2, session="live",
                     start=now - timedelta(minutes=8))
    instance = dg.DagsterInstance.ephemeral()

    quiet = _sensor(None, instance)
    assert quiet.run_requests == [] and "still active" in quiet.skip_reason.skip_message

    # the hook names the session only by id (no transcript_path): found in the projects folder
    queued = hooks.session_end(json.dumps({"session_id": "live", "hook_event_name": "SessionEnd",
                                           "reason": "prompt_input_exit"}), home)
    result = _sensor(quiet.cursor, instance)
    [request] = result.run_requests
    today = now.date().isoformat()
    assert (request.tags[RANGE_START], request.tags[RANGE_END]) == (today, today)
    assert request.tags["memory-platform/trigger"] == "session-end"
    assert request.tags[THEN_TAG] == "dream"
    cursor = json.loads(result.cursor)
    assert len(cursor["dreamed"]) == 2  # the transcript and its subagent file
    # the queue file stays until a tick sees it recorded in a stored cursor
    assert queued.exists() and cursor["queued"] == [queued.name]

    # a tick whose cursor was lost is replayed from the previous cursor: same request
    replay = _sensor(quiet.cursor, instance)
    assert [r.run_key for r in replay.run_requests] == [request.run_key]

    # the next tick (stored cursor) files the event under done/ and requests nothing new
    after = _sensor(result.cursor, instance)
    assert after.run_requests == []
    assert not queued.exists() and (queued.parent / "done" / queued.name).exists()
    assert json.loads(after.cursor)["queued"] == []


def test_a_clear_dreams_the_session_it_ended_through_the_same_throttle(env):
    """/clear in Claude Code ends the session (SessionEnd, reason "clear") and starts a new
    one: the ended session is dreamed at once, and a second /clear inside the throttle
    window waits for it, like any session end (the design's "dream on /clear")."""
    home, projects = env
    now = datetime.now(timezone.utc)
    instance = dg.DagsterInstance.ephemeral()
    for session in ("before-clear", "after-clear"):
        write_transcript(projects / f"{session}.jsonl", 4, session=session,
                         start=now - timedelta(minutes=10), step=timedelta(minutes=1))
    idle = _sensor(None, instance)
    assert idle.run_requests == []

    hooks.session_end(json.dumps({"session_id": "before-clear", "reason": "clear",
                                  "hook_event_name": "SessionEnd"}), home)
    first = _sensor(idle.cursor, instance)
    [request] = first.run_requests
    assert request.tags["memory-platform/trigger"] == "session-end"
    assert json.loads(first.cursor)["dreamed"] and len(json.loads(first.cursor)["dreamed"]) == 1

    hooks.session_end(json.dumps({"session_id": "after-clear", "reason": "clear",
                                  "hook_event_name": "SessionEnd"}), home)
    second = _sensor(first.cursor, instance)
    assert second.run_requests == []
    assert "1 session waiting" in second.skip_reason.skip_message


def test_unreadable_queue_file_is_set_aside(env):
    home, _ = env
    queue = hooks.queue_dir(home)
    queue.mkdir(parents=True)
    (queue / "0001-bad.json").write_text("{broken")
    result = _sensor(None, dg.DagsterInstance.ephemeral())
    assert result.run_requests == []
    assert (queue / "failed" / "0001-bad.json").exists()


def test_settings_are_validated(monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES", "soon")
    with pytest.raises(ValueError, match="MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES"):
        Policy.from_settings(load_settings())
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES", "0")
    monkeypatch.setenv("MEMORY_PLATFORM_SESSION_QUIET_MINUTES", "5")
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS", "0")
    with pytest.raises(ValueError, match="MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS='0'.*at least 1"):
        Policy.from_settings(load_settings())
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS", "7")
    assert Policy.from_settings(load_settings()) == Policy(quiet=timedelta(minutes=5), throttle=timedelta(0),
                                       lookback_days=7)


# --- the nightly schedule ------------------------------------------------------------------


def test_schedule_cron_and_timezone(monkeypatch):
    assert nightly_dream_schedule.cron_schedule == "0 3 * * *"
    assert nightly_dream_schedule.job_name == "ingest_raw_events_job"  # then the dream
    assert nightly_dream_schedule.execution_timezone == "UTC"
    monkeypatch.setenv("MEMORY_PLATFORM_TIMEZONE", "Europe/Berlin")
    try:
        reloaded = importlib.reload(schedules)
        assert reloaded.nightly_dream_schedule.execution_timezone == "Europe/Berlin"
    finally:
        monkeypatch.delenv("MEMORY_PLATFORM_TIMEZONE")
        importlib.reload(schedules)


def test_nightly_range_is_clamped_to_today():
    now = datetime(2026, 3, 12, 2, tzinfo=timezone.utc)
    assert nightly_range(None, now) is None
    assert nightly_range(date(2026, 3, 1), now) == ("2026-03-01", "2026-03-12")


def test_schedule_requests_undreamed_range(home, db, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_PLATFORM_DREAM_LOOKBACK_DAYS", "30")
    # 03:00 in Tokyo is 18:00 UTC the day before: "today" is the UTC partition day
    tick = datetime(2026, 3, 13, 3, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    projects = tmp_path / "claude-projects" / "-home-me-proj"
    write_transcript(projects / "ancient.jsonl", 4, session="ancient",
                     start=datetime(2026, 1, 20, 9, tzinfo=timezone.utc))
    write_transcript(projects / "recent.jsonl", 30, session="recent",
                     start=datetime(2026, 3, 9, 20, tzinfo=timezone.utc), step=timedelta(hours=1))
    ingest.import_path(db, "claude-code", projects)
    resources = {"database": DatabaseResource()}

    def evaluate_tick():
        return nightly_dream_schedule(dg.build_schedule_context(
            scheduled_execution_time=tick, resources=resources))

    request = evaluate_tick()
    assert isinstance(request, dg.RunRequest)
    # the January session lies beyond the 30-day look-back: a backfill's job
    assert (request.tags[RANGE_START], request.tags[RANGE_END]) == ("2026-03-09", "2026-03-12")
    assert request.tags["memory-platform/trigger"] == "nightly"
    assert request.tags[THEN_TAG] == "dream"  # the import first, then the dream
    assert request.run_key == "nightly-dream:2026-03-12:2026-03-09..2026-03-12"

    # dream everything in the window: the next night has nothing to do
    with db.connect() as conn:
        rows = conn.execute(
            """SELECT conversation_id, (occurred_at AT TIME ZONE 'UTC')::date, max(id)
               FROM events WHERE occurred_at >= '2026-03-01' GROUP BY 1, 2""").fetchall()
        for conversation_id, day, last_id in rows:
            dream_store.advance_watermark(conn, conversation_id, day, last_id, "test-run")
    skipped = evaluate_tick()
    assert isinstance(skipped, dg.SkipReason)
    assert "nothing undreamed since 2026-02-10" in skipped.skip_message


def test_triggers_skip_with_the_settings_to_set_when_no_llm_is_configured(env, monkeypatch):
    home, projects = env
    write_transcript(projects / "s-1.jsonl", 4, session="s-1")
    hooks_dir = hooks.queue_dir(home)
    hooks_dir.mkdir(parents=True)
    (hooks_dir / "e1.json").write_text(json.dumps({
        "session_id": "s-1", "transcript_path": str(projects / "s-1.jsonl"),
        "hook_event_name": "SessionEnd", "cwd": "/home/me/proj", "reason": "exit"}))
    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER")
    result = session_end_sensor(dg.build_sensor_context(
        cursor=None, instance=dg.DagsterInstance.ephemeral(),
        resources={"database": DatabaseResource()}))
    assert not result.run_requests
    assert "MEMORY_PLATFORM_LLM_PROVIDER" in result.skip_reason.skip_message
    assert (hooks_dir / "e1.json").exists()  # kept for when an LLM is configured
    skipped = nightly_dream_schedule(dg.build_schedule_context(
        scheduled_execution_time=NOW, resources={"database": DatabaseResource()}))
    assert isinstance(skipped, dg.SkipReason)
    assert "MEMORY_PLATFORM_LLM_PROVIDER" in skipped.skip_message


# --- the dream after the import ---------------------------------------------------------


def test_a_successful_ingest_run_asking_for_a_dream_gets_one_over_its_days(monkeypatch):
    from memory_platform.defs.dream.automation import dream_request

    def ingest_run(**tags):
        return dg.DagsterRun(job_name="ingest_raw_events_job", run_id="r-1", tags=tags)

    asked = ingest_run(**{RANGE_START: "2026-03-09", RANGE_END: "2026-03-12",
                          TRIGGER_TAG: "nightly", THEN_TAG: "dream"})
    request = dream_request(asked)
    assert isinstance(request, dg.RunRequest) and request.run_key == "dream-after:r-1"
    assert request.tags == {RANGE_START: "2026-03-09", RANGE_END: "2026-03-12",
                            TRIGGER_TAG: "nightly"}
    # an import the folder sensor started asks for no dream
    plain = dream_request(ingest_run(**{RANGE_START: "2026-03-09", RANGE_END: "2026-03-09"}))
    assert isinstance(plain, dg.SkipReason)
    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER")
    unconfigured = dream_request(asked)
    assert isinstance(unconfigured, dg.SkipReason)
    assert "MEMORY_PLATFORM_LLM_PROVIDER" in unconfigured.skip_message


def test_dream_triggers_start_stopped_without_an_llm(monkeypatch):
    from memory_platform.sensors import dream_switch as status

    monkeypatch.delenv("MEMORY_PLATFORM_LLM_PROVIDER", raising=False)
    assert status.dreams_default_status() == dg.DefaultSensorStatus.STOPPED
    assert status.dreams_schedule_status() == dg.DefaultScheduleStatus.STOPPED
    assert "MEMORY_PLATFORM_LLM_PROVIDER" in status.dreams_off_note()
    monkeypatch.setenv("MEMORY_PLATFORM_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert status.dreams_default_status() == dg.DefaultSensorStatus.RUNNING
    assert status.dreams_off_note() == ""


def test_jobs_do_not_mix_backfill_policies():
    """Dagster warns (and picks the smallest) when a job's assets have different backfill
    policies; the dream's LLM assets and the import's range runs live in separate jobs."""
    from memory_platform.definitions import defs

    graph = defs.resolve_asset_graph()
    for job in defs.get_repository_def().get_all_jobs():
        if job.name == "__ASSET_JOB":
            continue
        keys = defs.resolve_job_def(job.name).asset_layer.selected_asset_keys
        policies = {graph.get(key).backfill_policy for key in keys}
        assert len(policies) <= 1, f"{job.name} mixes {policies}"
