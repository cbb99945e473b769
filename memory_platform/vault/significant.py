"""Significant tokens: the values an embedding barely sees but that make two facts different
facts (numbers, versions, ports, times, dates including month names and weekdays, paths,
files, URLs, e-mail addresses, identifiers). "uses port 5432" and "uses port 5433" embed at
~0.98 cosine; the dedup gate never merges two texts whose significant tokens differ. One
value written two ways ("1,000" / "1000", "Feb 3 2025" / "2025-02-03") is one token."""

import re

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
         r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
# "February 3, 2025", "Feb 3rd 2025", "3 February 2025", "June 30" (year optional)
_DATE_MDY = re.compile(rf"\b{_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b", re.I)
_DATE_DMY = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}(?:,?\s+(\d{{4}}))?\b", re.I)
# Weekdays are values too: "reports go out on Mondays" / "... on Fridays" embed at 0.91.
# Full names only: "sat", "sun", "wed" are words too.
_WEEKDAY = re.compile(r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b",
                      re.I)
_ISO_DATE = re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")
_URL = re.compile(r"\b[a-z][a-z0-9+.\-]*://(\S+)", re.I)
_EMAIL = re.compile(r"\b[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+\b")
# a path: starts with /, ~/, ./ or ../, or has a slash between two name characters
_PATH = re.compile(r"(?:(?<![\w/])(?:~|\.{1,2})?/[\w.\-~/]*[\w~]|\b[\w.\-]+(?:/[\w.\-]*\w)+)")
_FILE = re.compile(r"\b[\w\-]+\.(?:json|jsonl|ya?ml|toml|ini|cfg|conf|env|py|ipynb|sql|md|"
                   r"txt|csv|parquet|html?|xml|sh|lock|log|db|sqlite|zip|gz|tar|js|ts|tsx|"
                   r"jsx|rs|go|java|rb|css)\b", re.I)
# SCREAMING_SNAKE identifiers: environment variables, constants
_CONST = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_NUMBER = re.compile(r"^v?(\d{1,3}(?:,\d{3})+|\d+(?:[.:]\d+)*)([a-z%]*)$", re.I)
_TIME = re.compile(r"^(\d{1,2}):(\d{2})$")
_STRIP = "()[]{}<>\"'`,;:!?.#*"
# Words that carry digits but no value: they name a thing, like any other word.
_DIGIT_WORDS = frozenset({"k8s", "i18n", "l10n", "a11y", "o11y", "p2p", "b2b", "e2e", "2fa"})
# "Node.js" and friends look like file names but name a runtime or a library.
_NOT_FILES = frozenset({"node.js", "next.js", "vue.js", "nuxt.js", "express.js", "three.js",
                        "react.js", "deno.js", "angular.js", "ember.js"})


def _month_date(month: str, day: str, year: str | None) -> str:
    mm = _MONTHS[month[:3].lower()]
    if not 1 <= int(day) <= 31:
        return f"{month} {day}"
    return f"{year}-{mm:02d}-{int(day):02d}" if year else f"{mm:02d}-{int(day):02d}"


def _normalise_number(token: str) -> str | None:
    match = _NUMBER.match(token)
    if not match:
        return None
    number, unit = match.groups()
    time_match = _TIME.match(number)
    if time_match:  # 9:30 and 09:30 are one time
        return f"{int(time_match.group(1)):02d}:{time_match.group(2)}"
    if "," in number:  # 3,000 and 3000
        number = number.replace(",", "")
    if unit.lower() == "k" and number.isdigit():  # 10k and 10,000
        return str(int(number) * 1000)
    # Other units (GB, ms, %, x) are dropped: "32GB" and "32 GB" state one number, and the
    # words around it are for the embedding to compare.
    return number


def significant_tokens(text: str) -> set[str]:
    """The tokens whose value makes a fact this fact: numbers, versions, ports, times,
    dates, weekdays, paths, file names, URLs, e-mail addresses, hex ids and other
    identifiers that carry a digit, and SCREAMING_SNAKE constants. Normalised so that one
    value written two ways is one token ("v3.12"/"3.12", "3,000"/"3000", "10k"/"10000",
    "9:30"/"09:30", "February 3, 2025"/"2025-02-03",
    "http://localhost:3001"/"localhost:3001")."""
    found: set[str] = set()
    rest = text

    def take(pattern: re.Pattern, value) -> None:
        nonlocal rest

        def keep(match: re.Match) -> str:
            token = value(match)
            if token:
                found.add(token)
            return " "

        rest = pattern.sub(keep, rest)

    take(_URL, lambda m: m.group(1).rstrip(_STRIP).rstrip("/").lower())
    take(_EMAIL, lambda m: m.group(0).lower())
    take(_ISO_DATE, lambda m: f"{m.group(1)}-{int(m.group(2)):02d}-{int(m.group(3)):02d}")
    take(_DATE_MDY, lambda m: _month_date(m.group(1), m.group(2), m.group(3)))
    take(_DATE_DMY, lambda m: _month_date(m.group(2), m.group(1), m.group(3)))
    take(_WEEKDAY, lambda m: m.group(1).lower())
    take(_PATH, lambda m: m.group(0).rstrip(_STRIP).rstrip("/").lower() or "/")

    def file_name(m: re.Match) -> str | None:
        name = m.group(0).lower()
        return None if name in _NOT_FILES else name

    take(_FILE, file_name)
    take(_CONST, lambda m: m.group(0))
    for raw in re.split(r"[\s=]+", rest):
        token = raw.strip(_STRIP)
        if not token or not any(ch.isdigit() for ch in token):
            continue
        lowered = token.lower()
        if lowered in _DIGIT_WORDS:
            continue
        number = _normalise_number(lowered)
        found.add(number if number is not None else lowered)
    return found


def differing_tokens(a: str, b: str) -> tuple[str, ...]:
    """Significant tokens in one text and not the other, sorted."""
    return tuple(sorted(significant_tokens(a) ^ significant_tokens(b)))
