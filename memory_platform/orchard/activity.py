"""Which cairn turns belong to a project, and its activity: sessions (conversations) and
turns (user and assistant messages) per ISO week, first and last active day.

A project links to cairn by `cairn_projects` (events.project values: a Claude Code cwd,
whose subfolders count too, or a claude.ai project name) and `cairn_titles` (conversation
titles, whatever the case). The rows come from one scan of events
(store.orchard_activity.activity_rows); `ActivityIndex` answers for any number of projects
from them.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime


def is_path(value: str) -> bool:
    """A Claude Code / Codex cwd, as opposed to a named project (claude.ai)."""
    return value.startswith("/") or (len(value) > 2 and value[1] == ":" and value[2] in "\\/")


def under(value: str, root: str) -> bool:
    """`value` is the path `root` or one of its subfolders."""
    root = root.rstrip("/")
    return value == root or value.startswith(root + "/")


def title_key(title: str) -> str:
    return " ".join(title.split()).lower()


@dataclass
class Activity:
    sessions: int = 0
    turns: int = 0
    events: int = 0
    first_active: date | None = None
    last_active: date | None = None
    last_at: datetime | None = None
    weeks: list[dict] = field(default_factory=list)  # [{week, sessions, turns}], oldest first

    def in_week(self, monday: date) -> dict:
        """{sessions, turns} of the week starting on `monday` (zeros when idle)."""
        for w in self.weeks:
            if w["week"] == monday:
                return {"sessions": w["sessions"], "turns": w["turns"]}
        return {"sessions": 0, "turns": 0}

    def as_dict(self) -> dict:
        return {"sessions": self.sessions, "turns": self.turns,
                "first_active": self.first_active, "last_active": self.last_active,
                "weeks": [{**w, "week": w["week"].isoformat()} for w in self.weeks]}


def summarize(rows: Iterable[dict]) -> Activity:
    """The activity of these activity rows (each counted once)."""
    sessions: set[int] = set()
    per_week: dict[date, dict] = defaultdict(lambda: {"sessions": set(), "turns": 0})
    found = Activity()
    for row in rows:
        found.turns += row["turns"]
        found.events += row["events"]
        week = per_week[row["week"]]
        week["turns"] += row["turns"]
        if row["conversation_id"] is not None and row["turns"]:
            sessions.add(row["conversation_id"])
            week["sessions"].add(row["conversation_id"])
        first, last = row["first_at"], row["last_at"]
        if found.last_at is None or last > found.last_at:
            found.last_at = last
        if found.first_active is None or first.date() < found.first_active:
            found.first_active = first.date()
    found.sessions = len(sessions)
    found.last_active = found.last_at.date() if found.last_at else None
    found.weeks = [{"week": w, "sessions": len(v["sessions"]), "turns": v["turns"]}
                   for w, v in sorted(per_week.items())]
    return found


class ActivityIndex:
    """Activity rows indexed by project value and by title, to answer for many projects
    from one scan."""

    def __init__(self, rows: Sequence[dict]):
        self.rows = rows
        self.by_value: dict[str, list[int]] = defaultdict(list)
        self.by_title: dict[str, list[int]] = defaultdict(list)
        for i, row in enumerate(rows):
            if row["project"] is not None:
                self.by_value[row["project"]].append(i)
            if row["title"] is not None:
                self.by_title[title_key(row["title"])].append(i)

    def values_of(self, cairn_projects: Sequence[str], *, exact: bool = False) -> list[str]:
        """The events.project values a project's links cover (paths with their subfolders,
        unless `exact`)."""
        if exact:
            return [v for v in cairn_projects if v in self.by_value]
        found = []
        for value in self.by_value:
            if any(value == v or (v.startswith("/") and under(value, v))
                   for v in cairn_projects):
                found.append(value)
        return found

    def rows_of(self, cairn_projects: Sequence[str], cairn_titles: Sequence[str], *,
                exact: bool = False) -> list[dict]:
        picked: set[int] = set()
        for value in self.values_of(cairn_projects, exact=exact):
            picked.update(self.by_value[value])
        for title in cairn_titles:
            picked.update(self.by_title.get(title_key(title), ()))
        return [self.rows[i] for i in sorted(picked)]

    def activity(self, cairn_projects: Sequence[str], cairn_titles: Sequence[str], *,
                 exact: bool = False) -> Activity:
        return summarize(self.rows_of(cairn_projects, cairn_titles, exact=exact))
