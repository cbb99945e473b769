"""Checks on what comes from outside (a query, a filter, a memory's text, a date) before it
reaches PostgreSQL or the embedder, so odd input is a clear refusal and never a 500.

PostgreSQL text cannot hold a NUL character; a lone UTF-16 surrogate (`\\ud800`, which JSON
and Python strings can carry) cannot be encoded as UTF-8; and a time zone offset can push a
date like `0001-01-01T00:00:00+14:00` out of the representable range once converted to UTC.
Each is raised as `InvalidInput` (a ValueError) naming the field, which every face turns
into its own "bad input" answer: REST 422, an MCP tool error, a CLI `error:` line.
"""

from datetime import date, datetime, timezone
from datetime import time as dtime


class InvalidInput(ValueError):
    """Input the system cannot store or search; the message names the field and why."""


def check_text(value: str, what: str) -> str:
    """`value` unchanged when PostgreSQL and UTF-8 can hold it, else InvalidInput."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}")
    position = value.find("\x00")
    if position >= 0:
        raise InvalidInput(f"{what} contains a NUL character (\\x00) at position "
                           f"{position}; text cannot hold one")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} contains a lone surrogate "
                           f"({value[exc.start]!r}) at position {exc.start}: not valid "
                           f"Unicode text") from None
    return value


def check_optional_text(value: str | None, what: str) -> str | None:
    return None if value is None else check_text(value, what)


def as_utc(value: datetime | date | str | None, what: str = "date") -> datetime | None:
    """An aware UTC datetime (a date is its UTC midnight, a naive time is UTC), or
    InvalidInput when the value is not a date or lies outside years 1-9999 once in UTC."""
    if value is None:
        return None
    if isinstance(value, str):
        check_text(value, what)
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(f"{what} {value!r} is not a date or ISO timestamp") from None
    if not isinstance(value, datetime):
        value = datetime.combine(value, dtime.min)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise InvalidInput(f"{what} {value.isoformat()} is outside the dates that can be "
                           f"stored (years 1-9999 in UTC)") from None
