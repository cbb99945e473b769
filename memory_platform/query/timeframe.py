"""Time expressions in a search query ("in May", "on 13 October 2023", "last week", "in
2023") as UTC windows, for time-aware ranking (query/search.py): the words stay in the
query, the window only says which events the question is about.

Absolute forms: a month name with an optional day and year ("May", "May 2023", "13 October
2023", "October 13, 2023"), a year (1990-2099). Relative forms, against `today`: yesterday,
last week/month/year, this week/month/year. A month without a year means that month in any
year. Nothing else is guessed (no "spring", no "recently").
"""

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

MONTHS = {m: n for n, m in enumerate(
    ("january february march april may june july august september october november "
     "december").split(), 1)}
_ABBREV = {m[:3]: n for m, n in MONTHS.items()} | {"sept": 9}
_MONTH = r"(january|february|march|april|may|june|july|august|september|october|november|" \
         r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_PATTERNS = (
    ("dmy", re.compile(rf"\b{_DAY}\s+{_MONTH}\.?,?\s+{_YEAR}\b", re.I)),
    ("mdy", re.compile(rf"\b{_MONTH}\.?\s+{_DAY},?\s+{_YEAR}\b", re.I)),
    ("my", re.compile(rf"\b{_MONTH}\.?,?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    ("m", re.compile(rf"\b(?:in|during|since|from|of|early|late|mid)\s+(?:-\s*)?{_MONTH}\b",
                     re.I)),
    ("y", re.compile(rf"\b(?:in|during|since|of|from)\s+{_YEAR}\b", re.I)),
    ("rel", re.compile(r"\b(yesterday|(?:last|this|past)\s+(?:week|month|year))\b", re.I)),
)


@dataclass(frozen=True)
class Window:
    """[start, end) in UTC; `any_year`: the month and day range holds in every year."""

    start: datetime
    end: datetime
    any_year: bool = False

    def holds(self, moment: datetime) -> bool:
        if not self.any_year:
            return self.start <= moment < self.end
        shifted = self.start.replace(year=moment.year)
        return shifted <= moment < shifted + (self.end - self.start)


def _month(word: str) -> int:
    word = word.lower().rstrip(".")
    return MONTHS.get(word) or _ABBREV[word[:4] if word[:4] == "sept" else word[:3]]


def _utc(d: date) -> datetime:
    return datetime.combine(d, time.min, timezone.utc)


def _month_window(year: int, month: int) -> tuple[datetime, datetime]:
    start = date(year, month, 1)
    end = date(year + (month == 12), month % 12 + 1, 1)
    return _utc(start), _utc(end)


def windows(query: str, today: date | None = None) -> list[Window]:
    """The time windows `query` names, in order, without repeats (see the module doc)."""
    today = today or datetime.now(timezone.utc).date()
    found: list[Window] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue  # part of a longer expression already read
            try:
                window = _window(kind, m.groups(), today)
            except (ValueError, KeyError):
                continue  # 31 February, an unknown month
            taken.append(m.span())
            if window not in found:
                found.append(window)
    return found


def _window(kind: str, groups: tuple, today: date) -> Window:
    if kind == "dmy":
        day = date(int(groups[2]), _month(groups[1]), int(groups[0]))
        return Window(_utc(day), _utc(day + timedelta(days=1)))
    if kind == "mdy":
        day = date(int(groups[2]), _month(groups[0]), int(groups[1]))
        return Window(_utc(day), _utc(day + timedelta(days=1)))
    if kind == "my":
        return Window(*_month_window(int(groups[1]), _month(groups[0])))
    if kind == "m":
        month = _month(groups[0])
        # any year: anchored on a leap year so 29 February fits
        return Window(*_month_window(2000, month), any_year=True)
    if kind == "y":
        year = int(groups[0])
        return Window(_utc(date(year, 1, 1)), _utc(date(year + 1, 1, 1)))
    word = " ".join(groups[0].lower().split())
    if word == "yesterday":
        day = today - timedelta(days=1)
        return Window(_utc(day), _utc(today))
    unit = word.split()[1]
    this = word.split()[0] == "this"
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        start = monday if this else monday - timedelta(days=7)
        return Window(_utc(start), _utc(start + timedelta(days=7)))
    if unit == "month":
        year, month = today.year, today.month
        if not this:
            year, month = (year - 1, 12) if month == 1 else (year, month - 1)
        return Window(*_month_window(year, month))
    year = today.year - (not this)
    return Window(_utc(date(year, 1, 1)), _utc(date(year + 1, 1, 1)))
