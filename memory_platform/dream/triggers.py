"""A Claude Code session that ended triggers the ingestion of its transcript and an incremental
dream of its days, throttled.

A session has ended when its transcript (a `*.jsonl` under the Claude Code projects folder,
subagent files included) has been quiet for MEMORY_PLATFORM_SESSION_QUIET_MINUTES and changed
since it was last handed to a dream, or at once when Claude Code's SessionEnd hook reported it
(`memory-platform hook session-end` leaves a file in the queue folder). Ended sessions wait in
the cursor while the throttle window (MEMORY_PLATFORM_DREAM_THROTTLE_MINUTES) is closed and
are requested together when it opens: batched, never dropped. The logic is plain functions
over a `State`; `sensors/session_end.py` only does the Dagster I/O around them.
"""

import contextlib
import glob
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from memory_platform.adapters import get_adapter
from memory_platform.adapters.base import is_future, parse_iso
from memory_platform.adapters.jsonl import scan_back
from memory_platform.confined import Root, kind_of, open_file
from memory_platform.days import clamp_to_partitions, merge_day_ranges
from memory_platform.settings import Settings

CURSOR_VERSION = 1
DEFAULT_QUIET_MINUTES = 15
DEFAULT_THROTTLE_MINUTES = 30
# Bounded work per tick: transcripts whose days are read, and hook events taken. The rest
# stay where they are (not in the cursor) and are handled by the next tick.
MAX_TRANSCRIPT_READS = 200
MAX_QUEUE_FILES = 200
# Where a transcript's first and last timestamps are looked for. A line longer than this (an
# inlined screenshot) falls back to the file's modification day.
HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 20
DONE_KEEP = timedelta(days=7)  # processed hook events kept in queue/.../done for inspection


@dataclass(frozen=True)
class Policy:
    quiet: timedelta = timedelta(minutes=DEFAULT_QUIET_MINUTES)
    throttle: timedelta = timedelta(minutes=DEFAULT_THROTTLE_MINUTES)
    lookback_days: int = 30
    max_reads: int = MAX_TRANSCRIPT_READS
    timezone: str = "UTC"  # only for the times shown in messages

    @classmethod
    def from_settings(cls, settings: Settings) -> "Policy":
        return cls(
            quiet=timedelta(minutes=settings.session_quiet_minutes),
            throttle=timedelta(minutes=settings.dream_throttle_minutes),
            lookback_days=settings.dream_lookback_days,
            timezone=settings.timezone,
        )


@dataclass
class State:
    """What the cursor remembers.

    dreamed: transcript path -> [size, mtime_ns, last_day] when last handed to a dream.
    pending: transcript path -> {size, mtime_ns, first, last, via, session} ended, waiting.
    last_dream_at: when the last session-end dream was requested (the throttle's anchor).
    queued: hook queue files recorded in this cursor; moved to done/ by the next tick, once
        this cursor is known to be stored.
    """

    dreamed: dict[str, list] = field(default_factory=dict)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_dream_at: datetime | None = None
    queued: list[str] = field(default_factory=list)


def parse_cursor(cursor: str | None) -> State:
    if not cursor:
        return State()
    data = json.loads(cursor)
    if data.get("version") != CURSOR_VERSION:
        return State()  # an older layout: start over (dreams are incremental, so safe)
    last = data.get("last_dream_at")
    return State(
        dreamed=data.get("dreamed", {}),
        pending=data.get("pending", {}),
        last_dream_at=datetime.fromisoformat(last) if last else None,
        queued=data.get("queued", []),
    )


def dump_cursor(state: State) -> str:
    return json.dumps({
        "version": CURSOR_VERSION,
        "dreamed": state.dreamed,
        "pending": state.pending,
        "last_dream_at": state.last_dream_at.isoformat() if state.last_dream_at else None,
        "queued": state.queued,
    }, sort_keys=True)


# --- reading transcripts ---------------------------------------------------------------------


def _moment(rec: Any) -> datetime | None:
    if not isinstance(rec, dict):
        return None
    value = rec.get("timestamp")
    if value is None and rec.get("type") == "file-history-snapshot":
        snapshot = rec.get("snapshot")
        value = snapshot.get("timestamp") if isinstance(snapshot, dict) else None
    moment = parse_iso(value)
    return None if moment is None or is_future(moment) else moment


def _first_moment(path: str) -> datetime | None:
    budget = HEAD_BYTES
    with open_file(path) as fh:  # confined: a FIFO swapped in is refused, never waited on
        while budget > 0:
            line = fh.readline(budget)
            if not line:
                return None
            budget -= len(line)
            try:
                moment = _moment(json.loads(line))
            except (ValueError, RecursionError):
                continue
            if moment is not None:
                return moment
    return None


def _utc_day(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, timezone.utc).date().isoformat()


def transcript_days(path: str, size: int, mtime_ns: int) -> tuple[str, str]:
    """(first_day, last_day), UTC, of a transcript's events: the timestamps of its first and
    last timestamped lines, read cheaply; the modification day where none is found."""
    try:
        first = _first_moment(path)
        last = scan_back(Path(path), size, _moment, window=TAIL_BYTES)
    except OSError:
        first = last = None
    last_day = last.date().isoformat() if last else _utc_day(mtime_ns)
    first_day = first.date().isoformat() if first else last_day
    return min(first_day, last_day), max(first_day, last_day)


def session_of(path: str) -> str:
    """The session a transcript belongs to: subagent files live in `<session>/subagents/`."""
    p = Path(path)
    return p.parent.parent.name if p.parent.name == "subagents" else p.stem


def list_transcripts(projects: Path) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of every Claude Code transcript under `projects`."""
    if not projects.is_dir():
        return []
    found = []
    for file in get_adapter("claude-code").discover(projects):
        try:
            st = os.stat(file)
        except FileNotFoundError:
            continue
        found.append((str(Path(file).resolve()), st.st_size, st.st_mtime_ns))
    return found


# --- the hook queue --------------------------------------------------------------------------


def read_queue(folder: Path, limit: int = MAX_QUEUE_FILES,
               skip: Iterable[str] = ()) -> tuple[list[tuple[str, dict]], list[str]]:
    """The oldest `limit` queued hook events as (file name, payload), and the names of files
    that could not be read (moved to failed/ so they are neither lost nor retried forever)."""
    if not folder.is_dir():
        return [], []
    skipped = set(skip)
    names = sorted(
        e.name for e in os.scandir(folder)
        if e.is_file() and e.name.endswith(".json") and not e.name.startswith(".")
        and e.name not in skipped
    )
    events, bad = [], []
    for name in names[:limit]:
        try:
            payload = json.loads((folder / name).read_text(encoding="utf-8"))
            if not isinstance(payload, dict) or not isinstance(payload.get("session_id"), str):
                raise ValueError("not a SessionEnd event")
        except FileNotFoundError:
            continue
        except (ValueError, UnicodeDecodeError) as exc:
            _move(folder, name, "failed")
            bad.append(f"{name}: {exc}")
            continue
        events.append((name, payload))
    return events, bad


def _move(folder: Path, name: str, to: str) -> None:
    target = folder / to
    target.mkdir(exist_ok=True)
    try:
        os.replace(folder / name, target / name)
    except FileNotFoundError:
        pass  # already moved by a tick whose cursor was not stored


def finish_queued(folder: Path, names: Iterable[str], now: datetime) -> None:
    """Move hook events recorded in the stored cursor to done/, and forget old done/ files."""
    for name in names:
        _move(folder, name, "done")
    done = folder / "done"
    if not done.is_dir():
        return
    cutoff = (now - DONE_KEEP).timestamp()
    for i, entry in enumerate(os.scandir(done)):
        if i >= MAX_QUEUE_FILES:
            break
        if entry.is_file() and entry.stat().st_mtime < cutoff:
            os.unlink(entry.path)


def hook_transcripts(event: dict, projects: Path, refused: list[str] | None = None
                     ) -> list[tuple[str, int, int]]:
    """(path, size, mtime_ns) of a reported session's transcript and its subagent files.
    Without a usable transcript_path the session id is looked up under the projects folder.
    The hook's input names the path, so it is read only inside the projects folder (the
    confined rules: no symlink out, regular files only); each path refused is appended to
    `refused` with the reason, for the caller to log."""
    refusals = refused if refused is not None else []
    if not projects.is_dir():
        return []
    root = Root(projects)
    named = event.get("transcript_path")
    main = _confined(root, named, refusals) if isinstance(named, str) and named else None
    if main is None:
        for match in sorted(root.path.glob(f"*/{glob.escape(str(event['session_id']))}.jsonl")):
            main = _confined(root, match, refusals)
            if main is not None:
                break
    if main is None:
        return []
    subagents = sorted((main.with_suffix("") / "subagents").glob("*.jsonl"))
    files = [main, *filter(None, (_confined(root, f, refusals) for f in subagents))]
    found = []
    for file in files:
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(file)
            found.append((str(file), st.st_size, st.st_mtime_ns))
    return found


def _confined(root: Root, named: object, refusals: list[str]) -> Path | None:
    """The real path of a transcript the hook named, if it is a regular file inside `root`;
    None when it does not exist (the session id is looked up instead) or is refused."""
    real = Path(os.path.realpath(Path(str(named)).expanduser()))
    try:
        relative = real.relative_to(root.path)
    except ValueError:
        refusals.append(f"{named}: outside the Claude Code projects folder ({root.path}); "
                        "not read")
        return None
    try:
        real = root.resolve(relative)
        st = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        refusals.append(f"{named}: {exc}")
        return None
    if not stat.S_ISREG(st.st_mode):
        refusals.append(f"{named}: {kind_of(st.st_mode)}, not a transcript; not read")
        return None
    return real


# --- the decision ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DreamRequest:
    first: str
    last: str
    run_key: str
    sessions: int



@dataclass
class Outcome:
    requests: list[DreamRequest]
    message: str


DaysOf = Callable[[str, int, int], tuple[str, str]]


def _note_ended(state: State, path: str, size: int, mtime_ns: int, via: str,
                days_of: DaysOf) -> bool:
    """Put an ended transcript into `pending`; False if nothing new is in it."""
    done = state.dreamed.get(path)
    if done and done[:2] == [size, mtime_ns]:
        return False
    prev = state.pending.get(path)
    if prev and [prev["size"], prev["mtime_ns"]] == [size, mtime_ns]:
        if via == "hook":
            prev["via"] = "hook"
        return False
    first, last = days_of(path, size, mtime_ns)
    if done and size >= done[0] and len(done) > 2 and done[2]:
        # It grew since its last dream: the new lines are on or after the last day dreamed.
        first = max(first, done[2])
        last = max(last, first)
    if prev:  # still waiting with older content: keep the days it already needed
        first, last = min(first, prev["first"]), max(last, prev["last"])
        via = "hook" if "hook" in (via, prev["via"]) else via
    state.pending[path] = {"size": size, "mtime_ns": mtime_ns, "first": first, "last": last,
                           "via": via, "session": session_of(path)}
    return True


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def evaluate(
    state: State,
    *,
    transcripts: Iterable[tuple[str, int, int]],
    hooked: Iterable[tuple[str, int, int]] = (),
    now: datetime,
    policy: Policy = Policy(),
    days_of: DaysOf = transcript_days,
) -> Outcome:
    """One sensor tick over plain data: note ended sessions in `state.pending` (hook reports
    at once, watched transcripts once quiet), then, if the throttle window is open, turn
    everything pending into one request per contiguous day range. Mutates `state`."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    reads = 0
    for path, size, mtime_ns in hooked:
        reads += _note_ended(state, path, size, mtime_ns, "hook", days_of)

    quiet_before = now - policy.quiet
    lookback = now - timedelta(days=policy.lookback_days)
    watched = active = deferred = 0
    for path, size, mtime_ns in transcripts:
        watched += 1
        changed_at = datetime.fromtimestamp(mtime_ns / 1e9, timezone.utc)
        if changed_at < lookback:
            continue  # old history is dreamed by a backfill, not by this sensor
        stamp = [size, mtime_ns]
        if state.dreamed.get(path, [None, None])[:2] == stamp:
            continue
        prev = state.pending.get(path)
        if prev and [prev["size"], prev["mtime_ns"]] == stamp:
            continue
        if changed_at > quiet_before:
            active += 1
            continue
        if reads >= policy.max_reads:
            deferred += 1
            continue
        reads += _note_ended(state, path, size, mtime_ns, "quiet", days_of)

    # Forget dream stamps of transcripts older than the look-back: they are never
    # considered again unless they change, which gives them a new stamp anyway.
    lookback_ns = int(lookback.timestamp() * 1e9)
    state.dreamed = {p: v for p, v in state.dreamed.items() if v[1] >= lookback_ns}

    sessions = {p["session"] for p in state.pending.values()}
    if not state.pending:
        extra = f", {active} still active" if active else ""
        return Outcome([], f"no ended session to dream: {_plural(watched, 'transcript')} "
                           f"watched{extra} (quiet period {_minutes(policy.quiet)})")
    if state.last_dream_at is not None and policy.throttle:
        opens = state.last_dream_at + policy.throttle
        if now < opens:
            local = opens.astimezone(ZoneInfo(policy.timezone))
            return Outcome([], f"{_plural(len(sessions), 'session')} waiting; next dream "
                               f"allowed at {local:%H:%M %Z}")

    since = (now.astimezone(timezone.utc).date() - timedelta(days=policy.lookback_days))
    spans = []
    for entry in state.pending.values():
        span = clamp_to_partitions(max(entry["first"], since.isoformat()), entry["last"], now)
        if span:
            spans.append(span)
    # The run key names the sessions (and their content) it covers: a replayed tick or a
    # re-evaluation requests nothing twice.
    fingerprint = hashlib.sha256(json.dumps(sorted(
        [path, p["size"], p["mtime_ns"]] for path, p in state.pending.items()
    )).encode()).hexdigest()[:16]
    requests = [
        DreamRequest(first, last, f"session-end:{first}..{last}:{fingerprint}", len(sessions))
        for first, last in merge_day_ranges(spans)
    ]
    for path, p in state.pending.items():
        state.dreamed[path] = [p["size"], p["mtime_ns"], p["last"]]
    state.pending = {}
    more = f"; {deferred} more next tick" if deferred else ""
    if not requests:
        return Outcome([], f"{_plural(len(sessions), 'session')} ended, all outside the "
                           f"dream window (last {policy.lookback_days} days){more}")
    state.last_dream_at = now
    ranges = ", ".join(f"{r.first}..{r.last}" for r in requests)
    return Outcome(requests, f"dreaming {_plural(len(sessions), 'session')} over {ranges}{more}")


def _minutes(delta: timedelta) -> str:
    return f"{int(delta.total_seconds() // 60)} min"
