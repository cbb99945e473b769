"""The one masking rule for text that leaves the store.

Every text that goes out (to an LLM prompt, a hook's context, a REST or MCP answer, a page,
the wiki, a report, a lint finding, orchard evidence, a curator tool's result) passes
through `outgoing`: credentials are masked always, personal data too when the text is
`personal` (a memory marked sensitive, or a caller that must not see it). Raw text stays
verbatim in cairn; this runs on the way out, so a pattern added to masking.py or
personal.py applies to every face at once.

What a caller may see at all (namespaces, cairn conversations) is the scope check of the
service that reads it (vault/tokens.Scope, vault/sources.py); this module only decides how
the text that passes that check is shown.
"""

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memory_platform.privacy.masking import mask_secrets
from memory_platform.privacy.personal import detect, mask_personal

# What outgoing puts in place of what it masks: "[secret masked]", "[email masked]", ...
_MASKED = re.compile(r"\[[a-z][a-z ]{0,30} masked\]")


def holds_mask(text: str | None) -> bool:
    """True when `text` carries a mask outgoing writes: a text written from a masked one (a
    model's merge of memories it saw masked) that must not replace the original."""
    return bool(text) and _MASKED.search(text) is not None


def outgoing(text: str | None, *, personal: bool = False) -> str:
    """`text` as it may leave the store: credentials masked, and personal data masked as
    well when `personal`. None becomes ''. Idempotent (masking masked text changes
    nothing)."""
    if not text:
        return ""
    shown, _ = mask_secrets(text)
    return mask_personal(shown) if personal else shown


def outgoing_counted(text: str | None, *, personal: bool = False) -> tuple[str, int]:
    """(outgoing(text), how many masks it applied): for the faces that say "3 credentials
    masked"."""
    if not text:
        return "", 0
    shown, hits = mask_secrets(text)
    if personal:
        found = len(detect(shown))
        shown = mask_personal(shown) if found else shown
        hits += found
    return shown, hits


def outgoing_value(value: Any, *, personal: bool = False) -> Any:
    """`value` (JSON-shaped: an event's attrs, a finding's evidence) with every string in it
    passed through `outgoing`; keys, numbers and the shape unchanged."""
    if isinstance(value, str):
        return outgoing(value, personal=personal)
    if isinstance(value, list | tuple):
        return [outgoing_value(v, personal=personal) for v in value]
    if isinstance(value, dict):
        return {k: outgoing_value(v, personal=personal) for k, v in value.items()}
    return value


def outgoing_fields(record: Mapping[str, Any], fields: Iterable[str], *,
                    personal: bool = False) -> dict[str, Any]:
    """A copy of `record` with each named string field passed through `outgoing` (other
    values, and fields that are absent or None, unchanged)."""
    out = dict(record)
    for name in fields:
        value = out.get(name)
        if isinstance(value, str):
            out[name] = outgoing(value, personal=personal)
    return out
