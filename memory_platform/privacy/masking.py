"""Mask text that looks like a credential before it goes into any LLM prompt (rule 10).

Raw stays verbatim in cairn; this runs on the way out. Patterns favour recall: masking a
harmless hex string costs a little context, leaking a key costs the key. Credentials
written as sentences ("the staging password is Q7x!v29pLm-k", "my PIN is 4821") are
prose.py's, applied after the patterns, so every rule built on `mask_secrets` and
`looks_like_secret` (the vault's refusal, the dream's rejected_secret, `sensitivity`, the
pack's re-check) holds for them too.
"""

import re

from memory_platform.privacy.prose import mask_prose

MASK = "[secret masked]"
# The names of a key=value pair whose value is a secret.
_SECRET_KEY = (r"(?:api[_-]?key|secret|password|passwd|pwd|token|access[_-]?key|"
               r"private[_-]?key|client[_-]?secret)")

_PATTERNS = [
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),  # Anthropic
    re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),  # GitHub
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),  # Google API key
    re.compile(r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),  # JWT
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{20,}"),
    # Stripe secret and restricted keys (live and test: a test key still reads the test
    # account) and webhook signing secrets. Not pk_: a publishable key is in every page
    # that takes a payment. The closing \b leaves identifiers such as sk_test_<24>_fixture.
    re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,}\b"),
    re.compile(r"\bwhsec_[A-Za-z0-9]{32,}\b"),
    # npm access tokens: npm_ and exactly 36 characters (npm_config_cache and the other
    # npm_ environment variables have underscores, so they are never 36 in a row)
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
    # key=value / key: value where the key names a secret. Not when the value is already
    # the mask: masking masked text must change nothing (prompts are masked field by field,
    # then whole).
    re.compile(
        r"(?i)\b(" + _SECRET_KEY + r"[\"']?\s*[:=]\s*[\"']?)"
        r"(?!" + re.escape(MASK) + r")([^\s\"',;]{6,})"
    ),
    # The same key as the last word of a snake_case name (aws_secret_access_key,
    # AWS_SESSION_TOKEN, DB_PASSWORD), which `\b` above never matches after an underscore.
    # Names like these are all over code (auth_token=auth_token, api_token: SecretStr,
    # access_token=settings.token), so the value must hold a digit or a symbol: a bare
    # identifier is code, not a credential (an all-letters password here is missed).
    re.compile(
        r"(?i)\b((?:[a-z0-9]+_)+" + _SECRET_KEY + r"[\"']?\s*[:=]\s*[\"']?)"
        r"(?!" + re.escape(MASK) + r")(?=[^\s\"',;]*[0-9/+=!@#$%^&*~-])([^\s\"',;]{6,})"
    ),
    # credentials inside URLs: scheme://user:password@host, and scheme://:password@host
    # (Redis has a password and no user)
    re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@]*:)([^\s@/]{3,})(@)"),
]


_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----")
_PEM_END = re.compile(r"-----END [A-Z ]{0,40}PRIVATE KEY-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s]*")
PEM_MAX_CHARS = 16384  # a 4096-bit RSA key is ~3.3k characters; an encrypted one a little more
_NO_END = _PEM_END.match("-----END PRIVATE KEY-----")  # a sentinel: no END line follows


def _mask_pem(text: str) -> tuple[str, int]:
    """Mask each PEM private-key block whole. Without its END line within PEM_MAX_CHARS (a
    text cut short, as a turn the store returns in its first few thousand characters) the
    key material after BEGIN is masked up to the first character no key body has. Found
    with bounded searches, so a text of many BEGIN lines and no END stays linear."""
    out, count, pos = [], 0, 0
    end = None  # the first END line at or after the current BEGIN, searched once per END
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        if end is not None and end is not _NO_END and end.start() < begin.end():
            end = None
        if end is None:
            end = _PEM_END.search(text, begin.end())
            if end is None:  # no END anywhere after: none after any later BEGIN either
                end = _NO_END
        near = end is not _NO_END and end.start() - begin.end() <= PEM_MAX_CHARS
        stop = end.end() if near else _PEM_BODY.match(text, begin.end()).end()
        out += [text[pos:begin.start()], MASK]
        count += 1
        pos = stop
    if not count:
        return text, 0
    out.append(text[pos:])
    return "".join(out), count


def mask_secrets(text: str) -> tuple[str, int]:
    """Return (masked text, number of masks applied)."""
    text, count = _mask_pem(text)

    def keyed(match: re.Match) -> str:
        nonlocal count
        count += 1
        groups = match.groups()
        if len(groups) == 3:  # URL credentials: keep scheme, user and host
            return f"{groups[0]}{MASK}{groups[2]}"
        if len(groups) == 2:  # key=value: keep the key
            return f"{groups[0]}{MASK}"
        return MASK

    for pattern in _PATTERNS:
        text = pattern.sub(keyed, text)
    text, in_prose = mask_prose(text, MASK)
    return text, count + in_prose


def masked(text: str) -> str:
    """`text` with every credential masked: for metadata put into a prompt (a title, a
    project path, a file name) where the count does not matter."""
    return mask_secrets(text)[0]


def looks_like_secret(text: str) -> bool:
    return mask_secrets(text)[1] > 0
