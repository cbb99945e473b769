"""Day keys and day ranges: the calendar that the daily partitions, the schedules, the
sensors and the CLI share. One partition key is one UTC day, `YYYY-MM-DD`.

Pure functions with no Dagster import, so a CLI command can plan a range (what is not
dreamed yet) without paying for loading Dagster; `partitions.py` builds the Dagster
definitions on the same calendar.
"""

from datetime import date, datetime, timedelta, timezone

from memory_platform.settings import load_settings

# Before anything is imported, and with no MEMORY_PLATFORM_HISTORY_START.
DEFAULT_HISTORY_START = "2022-01-01"
START_FILE = "partitions_start"  # in HOME: the earliest day imported (YYYY-MM-DD)


def history_start() -> str:
    """The first partition key: MEMORY_PLATFORM_HISTORY_START when set, else the earliest
    day imported (HOME/partitions_start, written by `extend_history_start`), else
    DEFAULT_HISTORY_START. Read when the definitions load."""
    settings = load_settings()
    if settings.history_start is not None:
        return settings.history_start.isoformat()
    marker = settings.home / START_FILE
    if marker.exists():
        text = marker.read_text(encoding="utf-8").strip()
        try:
            return date.fromisoformat(text).isoformat()
        except ValueError:
            raise ValueError(f"{marker} should hold a day like 2026-11-30, not {text[:40]!r}; "
                             f"delete it and run `memory-platform up` again") from None
    return DEFAULT_HISTORY_START


def extend_history_start(first_day: str) -> str | None:
    """Make the daily partitions start at `first_day` (the earliest day of the history)
    when it is earlier than where they start now, or when nothing was recorded yet; the
    new start (None: unchanged, or set by MEMORY_PLATFORM_HISTORY_START). Takes effect
    when the definitions load next (`up`; the UI's "Reload definitions")."""
    settings = load_settings()
    day = date.fromisoformat(first_day).isoformat()
    marker = settings.home / START_FILE
    if settings.history_start is not None:
        return None
    if marker.exists() and history_start() <= day:
        return None
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(day + "\n", encoding="utf-8")
    return day


def clamp_to_partitions(first: str, last: str, now: datetime) -> tuple[str, str] | None:
    """[first, last] cut to the partitions that exist: from the history start to today
    (UTC); None when nothing of it is left."""
    today = now.astimezone(timezone.utc).strftime("%Y-%m-%d")
    first, last = max(first, history_start()), min(last, today)
    return (first, last) if first <= last else None


def merge_day_ranges(ranges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Merge overlapping or adjacent (first_day, last_day) ranges (YYYY-MM-DD)."""
    merged: list[list[str]] = []
    for first, last in sorted(ranges):
        if merged:
            prev_last = datetime.strptime(merged[-1][1], "%Y-%m-%d")
            if datetime.strptime(first, "%Y-%m-%d") <= prev_last + timedelta(days=1):
                merged[-1][1] = max(merged[-1][1], last)
                continue
        merged.append([first, last])
    return [(a, b) for a, b in merged]


def days_in(start: datetime, end: datetime) -> list[date]:
    """The UTC days of a partition time window [start, end)."""
    days, day = [], start.date()
    while datetime.combine(day, datetime.min.time(), tzinfo=start.tzinfo) < end:
        days.append(day)
        day += timedelta(days=1)
    return days


def days_of_keys(first: str, last: str) -> list[date]:
    """The days of the partition keys first..last (inclusive)."""
    start = datetime.fromisoformat(first).replace(tzinfo=timezone.utc)
    end = datetime.fromisoformat(last).replace(tzinfo=timezone.utc) + timedelta(days=1)
    return days_in(start, end)


# --- ISO weeks (the weekly report) ------------------------------------------------------
# A week runs Monday 00:00 to the next Monday 00:00 UTC. Its partition key is its Monday
# (`YYYY-MM-DD`, as Dagster's weekly partitions name them); people write it `2026-W48`.


def parse_week(text: str) -> date:
    """The Monday of an ISO week written `2026-W48` (or of the week holding a date
    `2026-11-25`). ValueError with the expected shape otherwise."""
    value = text.strip()
    try:
        if "-W" in value.upper():
            year, week = value.upper().split("-W")
            return date.fromisocalendar(int(year), int(week), 1)
        day = date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{text!r} is not a week like 2026-W48 (or a date in it)") from None
    return day - timedelta(days=day.weekday())


def week_label(monday: date) -> str:
    """`2026-W48` for the week starting on `monday`."""
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def week_bounds(monday: date) -> tuple[datetime, datetime]:
    """[start, end) of the week in UTC."""
    start = datetime(monday.year, monday.month, monday.day, tzinfo=timezone.utc)
    return start, start + timedelta(days=7)


def last_complete_week(now: datetime) -> date:
    """The Monday of the last week that has ended by `now` (UTC)."""
    today = now.astimezone(timezone.utc).date()
    return today - timedelta(days=today.weekday() + 7)
