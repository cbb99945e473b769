"""The arguments of a tool call, as a model sends them: untrusted input, parsed and checked
before any tool runs.

A model's arguments are a JSON object of plain values named in the tool's spec
(repo_tools.TOOL_SPECS): strings of at most MAX_STRING_CHARS, integers within MAX_INT
(a float that is a whole number is taken as one), nothing nested, no name the spec does not
have, every required name present. Anything else (Infinity, NaN, 1e400, a 5,000-digit
number, true for a number, nesting 100k deep, a megabyte of text) is `BadArguments`, whose
message the model reads as the tool's answer: a refused call, never a crashed run.
"""

import json
import math
from collections.abc import Mapping
from typing import Any

MAX_ARGUMENTS_CHARS = 20_000  # a tool call's JSON: paths, a pattern, two numbers
MAX_STRING_CHARS = 2_000
MAX_INT = 1_000_000_000
SHOWN_CHARS = 80  # of an offending value, in the message back


class BadArguments(ValueError):
    """Arguments a tool will not run with; the message says why, for the model."""


def _no_constant(name: str) -> Any:
    raise BadArguments(f"{name} is not a number JSON allows; give a finite integer")


def parse(raw: str | Mapping | None) -> dict:
    """The arguments as a dict: `raw` is the JSON text an OpenAI-style API sends, or the
    object an Anthropic-style API already decoded."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        raise BadArguments("arguments must be a JSON object")
    if len(raw) > MAX_ARGUMENTS_CHARS:
        raise BadArguments(f"the arguments are {len(raw)} characters; at most "
                           f"{MAX_ARGUMENTS_CHARS}")
    try:
        found = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise BadArguments("the arguments are nested too deeply; give a flat JSON "
                           "object") from None
    except ValueError as exc:  # JSONDecodeError, and int() of too many digits
        if isinstance(exc, BadArguments):
            raise
        raise BadArguments(f"the arguments are not JSON: {str(exc)[:200]}") from None
    if not isinstance(found, dict):
        raise BadArguments("arguments must be a JSON object")
    return found


def check(arguments: Mapping, spec: Mapping) -> dict:
    """`arguments` checked against one tool's spec (name, parameters: properties with a
    type, required): the plain values to call it with."""
    params = spec.get("parameters", {})
    properties: Mapping = params.get("properties", {})
    unknown = sorted(str(k)[:SHOWN_CHARS] for k in arguments if k not in properties)
    if unknown:
        raise BadArguments(f"{spec['name']} takes no {', '.join(map(repr, unknown))}; its "
                           f"arguments are {', '.join(properties) or 'none'}")
    missing = [k for k in params.get("required", []) if k not in arguments]
    if missing:
        raise BadArguments(f"{spec['name']} needs {', '.join(missing)}")
    return {name: _value(name, value, properties[name].get("type"))
            for name, value in arguments.items()}


def _value(name: str, value: Any, kind: str | None) -> Any:
    if value is None:
        return None  # the tool's default
    if kind == "string":
        if not isinstance(value, str):
            raise BadArguments(f"{name} must be a string, not {type(value).__name__}")
        if len(value) > MAX_STRING_CHARS:
            raise BadArguments(f"{name} is {len(value)} characters; at most "
                               f"{MAX_STRING_CHARS}")
        return value
    if kind == "integer":
        if isinstance(value, bool):
            raise BadArguments(f"{name} must be an integer, not a boolean")
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise BadArguments(f"{name} must be a finite integer, not {value!r}")
            value = int(value)
        if not isinstance(value, int):
            raise BadArguments(f"{name} must be an integer, not {type(value).__name__}")
        if abs(value) > MAX_INT:
            raise BadArguments(f"{name} must be between -{MAX_INT} and {MAX_INT}")
        return value
    raise BadArguments(f"{name}: this tool takes no {type(value).__name__} here")


def loggable(arguments: Any) -> dict:
    """What the run's log keeps of a call's arguments: short strings, no structure."""
    if not isinstance(arguments, Mapping):
        return {"raw": str(arguments)[:SHOWN_CHARS]}
    return {str(k)[:SHOWN_CHARS]: (v[:SHOWN_CHARS * 4] if isinstance(v, str) else
                                  v if isinstance(v, (int, float, bool)) or v is None
                                  else f"<{type(v).__name__}>")
            for k, v in list(arguments.items())[:20]}
