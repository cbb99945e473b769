"""Credentials written as sentences: "the staging database password is Q7x!v29pLm-k",
"My bank PIN is 4821", "Passphrase for the backup disk: Blue!Otter#77". masking.py's keyed
patterns only see `password=...` and `password: ...` right after the key; this finds a
secret word, a link within a few words and a secret-shaped value, and masks the value only
(the words stay, so a prompt still reads: "the password is [secret masked]").

    mask_prose("the wifi password at the cabin is trout-lake-2291", MASK)
        -> ("the wifi password at the cabin is [secret masked]", 1)

The rule, per secret word (password, passphrase, passcode, PIN, token, secret, credentials,
an API/deploy/... key, a bare key, a door/alarm/safe code, a CVV):
- The word stands in prose: not glued into an identifier or a flag (`max_tokens`,
  `--map-tokens`, `self.tokens`, `Keys.Enter`, `{key}`, `[key]`).
- Up to five words on the same line, then a link: `is`, `was`, `are`, `=`, `:`, a dash,
  `'s`, "set/changed to", `to` (the last only when a secret-shaped value follows); "is now
  X" and "was changed to X" read as "is X"; "admin / X" after a link is a user and its
  secret. A word naming a property of the secret or what holds it (policy, length, limit,
  count, budget, expiry, lifetime, rotation, reset, hint, field, manager, file, header,
  endpoint, env, version, algorithm, ...) stops the search: "the token limit is 4096",
  "password reset link", "PIN code length is 6"; so does another secret word (its own
  search takes over) and the end of a sentence.
- A value right after the word counts without a link ("password hunter22", "PIN 4821"),
  except after a bare "key" ("key F5").
- The value is secret-shaped: 6 to 128 characters with a letter and a digit or one of
  `!@#$%^&*+=~?|` (or a quoted phrase with a digit or such a symbol); a PIN, a passcode or a
  door code is 4 to 8 digits (a combination 12-34-56), a CVV 3 or 4; all digits (6+) only
  after a password word.
  Not: code (brackets, braces, a backslash), a path, a URL, `$VAR`, an env var's name, a
  dotted name (`settings.api_token`), a version, a date or time, a number with a unit
  (`4096-bit`, `90days`), an algorithm (`ed25519`, `sha256`), a key chord (`Ctrl+Shift+P`),
  or the mask itself (masking masked text changes nothing). `user:secret` masks the secret.
- A bare "key" after "primary", "foreign", "cache", "sort", "partition", ... is a data key;
  a "code" is a secret word only after door, alarm, safe, access, PIN, ... ("status code").
Missed on purpose or by shape: an all-letters password ("abcd efgh ijkl mnop"), a value
named a sentence later ("the token was rotated; the new one is X").

Linear time: the text lowered to ASCII bytes is searched for ten anchors (pass, pin, key,
token, secret, cred, code, combination, cvv, cvc) with bytes.find; each secret word then
reads at most eight following tokens of at most 200 characters, with possessive
whitespace between them. Measured on
benchmarks/data/sensitive_cases.jsonl with the other patterns (`memory-platform bench
recall --parts labelled`) and per MB of ordinary text (BENCHMARKS.md).
"""

import re

_ANCHORS = (b"pass", b"pin", b"key", b"token", b"secret", b"cred", b"code", b"combination",
            b"cvv", b"cvc")
_ANCHOR_WORD = re.compile(
    r"(?i)(pass(?:word|phrase|code)s?|passwd|pin|keys?|tokens?|secrets?|credentials?|creds|"
    r"codes?|combination|cvv2?|cvc)\b")
# What qualifies a key or a code, and makes it a secret word.
_SECRET_KEYS = frozenset("""api access secret private auth signing encryption license licence
product master recovery root admin deploy app client webhook bot ssh gpg pgp""".split())
_SECRET_CODES = frozenset("""door alarm disarm gate safe entry garage lock locker building
access unlock keypad 2fa mfa otp verification one-time backup recovery pin pass""".split())
# A bare "key" after these is a data key (a column, a cache entry, a chord), not a secret.
_DATA_KEYS = frozenset("""primary foreign cache sort partition composite unique idempotency
lookup dict map hash row index shortcut hot music jwt registry object bucket s3 redis json
dictionary compound surrogate natural sharding shard routing""".split())
# Words that name a property of a secret, or what holds it, not the secret itself.
_PROPERTIES = frozenset("""
policy policies length lengths limit limits count counts budget budgets size sizes expiry
expires expire expiration lifetime lifetimes ttl timeout rotation rotated rotate reset
resets strength requirement requirements rule rules format formats hint hints manager
managers field fields prompt prompts character characters chars minimum maximum min max
age history complexity hash hashes hashed hashing algorithm algorithms type types name names
file files path paths location locations env environment variable variables var vars
header headers endpoint endpoints url urls page pages link links scope scopes permission
permissions prefix prefixes suffix id ids usage cost costs price window interval version
versions digits letters pattern patterns regex schema column columns table tables entry
entries pad placeholder placeholders example examples sample template mask masked storage
store stored vault generator generation validation validator strategy
""".split())
_LINKS = frozenset({"is", "was", "are", "were", "=", ":", "-", "–", "—", "->", "=>", "→",
                    "is:", "was:", "are:", "were:"})
_TO_VERBS = frozenset({"set", "changed", "reset", "updated", "switched", "moved"})
_FILLERS = frozenset({"now", "still", "currently", "just", "simply", "actually"})

# A character before a secret word that makes it part of code or a name, not prose.
_GLUED_BEFORE = set("-_./\\$@{[#:=<>")
# The next token: possessive whitespace (no backtracking), at most one line break when
# `line` allows it, at most 200 characters (a longer run is no value and is not read on).
_TOKEN = re.compile(r"[^\S\n]*+(\S{1,201})")
_TOKEN_NEXT_LINE = re.compile(r"[^\S\n]*+(?:\n[^\S\n]*+)?(\S{1,201})")
_MAX_TOKEN = 200
_MAX_BETWEEN = 5  # words between the secret word and its link
_QUOTES = "\"'`“‘"
_CLOSING = {"“": "”", "‘": "’"}
_TRAILING = ".,;:"  # sentence punctuation after a value stays visible
_DIGIT = re.compile(r"\d")
_LETTER = re.compile(r"[^\W\d_]")
_STRONG_SYMBOL = re.compile(r"[!@#$%^&*+=~?|]")
_MAYBE_VALUE = re.compile(r"[\d!@#$%^&*+=~?|/\"'`“‘]")  # a token that may be a value at all
_CODE = re.compile(r"[()\[\]{}<>\\]|://")
_NOT_SECRET_START = re.compile(
    r"(?i)(?:/|~|\.\.?/|\$|%|(?:ctrl|cmd|command|alt|shift|meta|super|option|opt|win|fn)\+)")
# As a whole: versions, dates, times, a number with a unit (4096-bit, 90days), an algorithm
# (ed25519, sha256), an env var's name, a dotted name (settings.api_token).
_NOT_SECRET_WHOLE = (
    re.compile(r"v?\d+(?:[.:/-]\d+)+[a-z]?", re.I),
    re.compile(r"\d+-?[a-z]+", re.I),
    re.compile(r"(?:sha|md|rsa|dsa|ecdsa|ed|aes|hs|rs|es|ps|utf|base|crc|blake|argon|pbkdf|"
               r"x|p|ipv|tls|ssl|http|oauth|py|python|node|curve)[-_]?\d+[a-z]*", re.I),
    re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"),
    re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"),
)
_COMBINATION = re.compile(r"\d{1,3}(?:-\d{1,3}){2,3}")  # a lock's: 12-34-56
_USER_AND_SECRET = re.compile(r"([A-Za-z0-9._-]{1,64}):(\S+)")
_PLAIN_WORD_LINK = re.compile(r"[^\W\d_][\w'-]*[:=]")


def _shaped(core: str, kind: str) -> bool:
    """Whether `core` (a value without its quotes and trailing punctuation) looks like a
    secret after a secret word of `kind`."""
    if kind in ("pin", "cvv") and core.isdigit():
        return 4 <= len(core) <= 8 if kind == "pin" else 3 <= len(core) <= 4
    if kind == "pin" and _COMBINATION.fullmatch(core):
        return True
    if kind == "cvv" or not 6 <= len(core) <= 128 or _CODE.search(core):
        return False
    if core.isdigit():
        return kind == "password"
    digit, symbol = _DIGIT.search(core), _STRONG_SYMBOL.search(core)
    if " " in core:  # a quoted passphrase
        return len(core) >= 8 and bool(digit or symbol)
    if not (digit or symbol):
        return False  # letters only: a word, not a secret (an all-letters one is missed)
    if not _LETTER.search(core):
        return bool(digit and symbol) and kind == "password"
    return not (_NOT_SECRET_START.match(core)
                or any(p.fullmatch(core) for p in _NOT_SECRET_WHOLE))


def _token(text: str, pos: int, *, next_line: bool = False) -> re.Match | None:
    found = (_TOKEN_NEXT_LINE if next_line else _TOKEN).match(text, pos)
    return found if found and len(found.group(1)) <= _MAX_TOKEN else None


def _value(text: str, found: re.Match | None, kind: str, mask: str) -> tuple[int, int] | None:
    """The span of the secret-shaped value in the token `found`, else None."""
    if not found:
        return None
    start, token = found.start(1), found.group(1)
    if token[0] in _QUOTES:
        closing = _CLOSING.get(token[0], token[0])
        stop = text.find(closing, start + 1, start + 130)
        if stop > start + 1 and "\n" not in text[start + 1:stop]:
            if text.startswith(mask, start + 1):
                return None
            return (start + 1, stop) if _shaped(text[start + 1:stop], kind) else None
        start, token = start + 1, token[1:]
    if text.startswith(mask, start):
        return None
    core = token.rstrip(_TRAILING)
    end = start + len(core)
    core = core.rstrip("!?" + _QUOTES + "”’")
    if not core:
        return None
    pair = _USER_AND_SECRET.fullmatch(core)
    if pair and not _NOT_SECRET_START.match(core) and _shaped(pair.group(2), kind):
        return start + pair.start(2), end
    return (start, end) if _shaped(core, kind) else None


def _after_link(text: str, pos: int, kind: str, mask: str) -> tuple[int, int] | None:
    """The value after a link: "is X", "is now X", "was changed to X", or a user and its
    secret ("credentials: admin / J3nk1ns!Pass"); the value may start the next line."""
    nxt = _token(text, pos, next_line=True)
    if nxt and nxt.group(1).lower() in _FILLERS:
        pos, nxt = nxt.end(), _token(text, nxt.end())
    if nxt and nxt.group(1).lower() in _TO_VERBS and _is(text, nxt.end(), "to"):
        pos = _token(text, nxt.end()).end()
    value = _value(text, _token(text, pos, next_line=True), kind, mask)
    if value is None and nxt:
        slash = _token(text, nxt.end())
        if slash and slash.group(1) == "/":
            value = _value(text, _token(text, slash.end()), kind, mask)
    return value


def _is(text: str, pos: int, word: str) -> bool:
    found = _token(text, pos)
    return bool(found) and found.group(1).lower() == word


def _bare(token: str) -> str:
    return token.strip(_QUOTES + "”’").rstrip(".,;:!?)").lower()


_WORD_BEFORE = re.compile(r"[\w-]+$")


def _previous_word(text: str, start: int) -> tuple[str, str]:
    """(the word before `start`, the character joining it: ' ', '-', '_' or '')."""
    window = text[max(0, start - 24):start]
    joint = window[-1:] if window[-1:] in (" ", "-", "_") else ""
    found = _WORD_BEFORE.search((window[:-1] if joint else window).rstrip(" "))
    return (found.group(0).lower().split("_")[-1] if found else ""), joint


def _kind(text: str, word: re.Match) -> str | None:
    """The kind of the secret word `word` (see _shaped), or None when it is no secret
    word here (glued into code, a data key, a status code)."""
    start, end = word.start(), word.end()
    after = text[end:end + 2]
    if after[:1] and not (after[:1].isspace() or after[:1] in ":=,;!?)\"'’”*" or
                          (after[:1] == "." and after[1:2].strip() == "")):
        return None  # Keys.Enter, max-tokens-3-5
    name = word.group(1).lower()
    glued = start > 0 and text[start - 1] in _GLUED_BEFORE
    if name[0] in "kc" and not name.startswith(("cvv", "cvc", "cred")):
        before, joint = _previous_word(text, start)
        if name.startswith("key"):
            if before in _SECRET_KEYS and joint:
                return "word"  # api key, API-key, deploy_key
            return None if glued or before in _DATA_KEYS else "key"
        if name.startswith("code"):
            if before == "security" and joint:
                return "cvv"
            return "pin" if before in _SECRET_CODES and joint and not glued else None
        return None if glued or before == "key" else "pin"  # combination; not a key chord
    if glued:
        return None
    if name.startswith(("cvv", "cvc")):
        return "cvv"
    if name == "pin" or name.startswith("passcode"):
        return "pin"
    return "password" if name.startswith("pass") else "word"


def _find(text: str, word: re.Match, kind: str, mask: str) -> tuple[int, int] | None:
    """The value the secret word names, per the module's rule."""
    pos = word.end()
    if text.startswith("'s", pos) and not text[pos + 2:pos + 3].isalnum():
        return _after_link(text, pos + 2, kind, mask)
    if text[pos:pos + 1] in (":", "=") and text[pos + 1:pos + 2].strip():
        return _value(text, _token(text, pos + 1), kind, mask)  # "PIN:4821"
    found = _token(text, pos)
    if found and kind != "key" and _MAYBE_VALUE.search(found.group(1)) and (
            kind != "pin" or found.group(1).rstrip(_TRAILING).isdigit()):
        immediate = _value(text, found, kind, mask)  # "password hunter22", "PIN 4821"
        if immediate:
            return immediate
    for _ in range(_MAX_BETWEEN + 1):
        if not found or _ANCHOR_WORD.match(text, found.start(1)):
            return None  # another secret word: its own search takes over from here
        token, pos = found.group(1), found.end()
        low = token.lower()
        if low in _LINKS or (_PLAIN_WORD_LINK.fullmatch(token)
                             and _bare(token) not in _PROPERTIES):
            return _after_link(text, pos, kind, mask)
        if low == "to" or (low in _TO_VERBS and _is(text, pos, "to")):
            if low != "to":
                pos = _token(text, pos).end()
            value = _value(text, _token(text, pos), kind, mask)
            if value:
                return value
        elif _bare(token) in _PROPERTIES or token[-1] in ".!?;":
            return None
        found = _token(text, pos)
    return None


def _anchors(lowered: bytes) -> list[int]:
    """Where an anchor starts a word, in order (bytes.find: faster than one regex)."""
    found = []
    for anchor in _ANCHORS:
        at = lowered.find(anchor)
        while at != -1:
            if not (at and lowered[at - 1:at].isalnum()):
                found.append(at)
            at = lowered.find(anchor, at + 1)
    return sorted(found)


def _words(text: str):
    """Each secret word of `text` and its kind, in order."""
    lowered = text.encode("ascii", "replace").lower()  # one byte per character
    for start in _anchors(lowered):
        word = _ANCHOR_WORD.match(text, start)
        if word:
            kind = _kind(text, word)
            if kind:
                yield word, kind


def mask_prose(text: str, mask: str) -> tuple[str, int]:
    """(text with each secret value named in prose replaced by `mask`, how many)."""
    spans: list[tuple[int, int]] = []
    for word, kind in _words(text):
        if spans and word.start() < spans[-1][1]:
            continue
        span = _find(text, word, kind, mask)
        if span and (not spans or span[0] >= spans[-1][1]):
            spans.append(span)
    if not spans:
        return text, 0
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], mask]
        last = end
    out.append(text[last:])
    return "".join(out), len(spans)
