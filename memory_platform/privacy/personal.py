"""Personal data in a memory's text: e-mail addresses, phone numbers, payment card numbers
(Luhn-checked, with a known issuer prefix), IBANs (mod-97 checked), government ids (US SSN,
UK National Insurance number, and a passport / id / licence number named as such) and
street addresses where a number, a name and a street word make them cheap to spot.

A memory holding any of these, or a credential (masking.py's patterns, and prose.py's
credentials written as sentences), is *sensitive*: never injected into a session, never
written to the wiki without an explicit setting, shown masked in the dashboard until
revealed. Detection is deliberately stricter than masking's:
masking runs on prompts and favours recall; this marks stored facts, where flagging
"uses port 5432" or a build number would hide facts that are not personal at all. Each
pattern is measured on benchmarks/data/sensitive_cases.jsonl (look-alikes included:
versions, dates, IPs, ports, hashes, timestamps, order numbers, SSH remotes, decorators):
`memory-platform bench recall`.

    detect("mail me at ana@example.org")  -> [Finding("email", 11, 26)]
    sensitivity("...")                    -> ("email", ...) kinds found, credential included
    mask_personal("call +33 6 12 34 56 78") -> "call [phone masked]"
"""

import re
from dataclasses import dataclass

from memory_platform.privacy.masking import MASK, looks_like_secret

KINDS = ("email", "phone", "card", "iban", "government_id", "address", "credential")


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


# --- e-mail ------------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.@+:/-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@"
    r"((?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,24}))(?![\w@-])")
# A TLD that is a file extension is a retina asset or a package file ("logo@2x.png").
_FILE_SUFFIXES = {"png", "jpg", "jpeg", "gif", "svg", "webp", "js", "ts", "py", "css", "json",
                  "md", "txt", "html", "tgz", "zip", "lock", "yaml", "yml", "toml", "sh"}
# SSH remotes and service accounts name a host, not a person ("git@github.com:org/repo").
_SERVICE_USERS = {"git", "hg", "noreply", "no-reply", "donotreply", "do-not-reply"}


def _emails(text: str) -> list[Finding]:
    found = []
    for m in _EMAIL.finditer(text):
        user, tld = m.group(1).lower(), m.group(3).lower()
        if tld in _FILE_SUFFIXES or user in _SERVICE_USERS:
            continue
        found.append(Finding("email", m.start(), m.end()))
    return found


# --- phone numbers -----------------------------------------------------------------------

# International: +CC then 7-14 more digits in groups (spaces, dots, dashes, one pair of
# parentheses). North American: (555) 123-4567, 555-123-4567, 555.123.4567.
_PHONE_INTL = re.compile(r"(?<![\w+])\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,4}\)?){2,6}(?![\w.-]\d)")
_PHONE_NANP = re.compile(r"(?<![\w.-])(?:\(\d{3}\)\s?|\d{3}[-.])\d{3}[-.]\d{4}(?![\w.-]\d|\d)")
# A national number named as one ("phone 06 12 34 56 78", "tel: 020 7946 0958").
_PHONE_NAMED = re.compile(
    r"(?i)\b(?:phone|mobile|cell|tel|telephone|call me at|whatsapp|fax)\b[^\d\n]{0,12}"
    r"(\(?0\d[\d .()-]{6,16}\d)")


def _digits(s: str) -> int:
    return sum(c.isdigit() for c in s)


def _phones(text: str) -> list[Finding]:
    found = []
    for m in _PHONE_INTL.finditer(text):
        if 8 <= _digits(m.group(0)) <= 15:
            found.append(Finding("phone", m.start(), m.end()))
    for m in _PHONE_NANP.finditer(text):
        found.append(Finding("phone", m.start(), m.end()))
    for m in _PHONE_NAMED.finditer(text):
        if 9 <= _digits(m.group(1)) <= 13:
            found.append(Finding("phone", m.start(1), m.end(1)))
    return found


# --- payment cards -----------------------------------------------------------------------

_CARD = re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w.-]?\d)")


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card_issuer(digits: str) -> bool:
    """A known issuer prefix and length: Visa, Mastercard, Amex, Discover, JCB, Diners,
    UnionPay, Maestro. A 13-digit millisecond timestamp or an order number passing Luhn by
    chance (one in ten does) rarely has both."""
    n = len(digits)
    two, four = int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if digits.startswith(("6011", "65")) or 644 <= int(digits[:3]) <= 649:
        return n in (16, 19)
    if 3528 <= four <= 3589:
        return 16 <= n <= 19
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return n in (14, 16)
    if two == 62:
        return 16 <= n <= 19
    if digits.startswith(("50", "56", "57", "58", "67")):
        return 12 <= n <= 19
    return False


def _cards(text: str) -> list[Finding]:
    found = []
    for m in _CARD.finditer(text):
        raw = m.group(0)
        digits = re.sub(r"\D", "", raw)
        # Grouped digits must be grouped like a card (4-4-4-4, 4-6-5), not a phone's pairs.
        groups = re.split(r"[ -]", raw)
        if len(groups) > 1 and any(len(g) < 4 for g in groups[:-1]):
            continue
        if luhn_ok(digits) and _card_issuer(digits):
            found.append(Finding("card", m.start(), m.end()))
    return found


# --- IBAN --------------------------------------------------------------------------------

_IBAN_LENGTHS = {
    "AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22,
    "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18,
    "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TR": 26,
    "AE": 23, "SA": 24, "IL": 23, "BR": 29, "MU": 30, "TN": 24, "MA": 28,
}
_IBAN = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30})(?![A-Za-z0-9])")


def iban_ok(candidate: str) -> bool:
    iban = candidate.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    moved = iban[4:] + iban[:4]
    number = "".join(str(int(c, 36)) for c in moved)
    return int(number) % 97 == 1


def _ibans(text: str) -> list[Finding]:
    found = []
    for m in _IBAN.finditer(text):
        value = m.group(1)
        # The regex is greedy over spaced groups: try the longest prefix that validates.
        for end in range(len(value), 13, -1):
            if value[end - 1] != " " and iban_ok(value[:end]):
                found.append(Finding("iban", m.start(1), m.start(1) + end))
                break
    return found


# --- government ids ----------------------------------------------------------------------

_SSN = re.compile(r"(?<![\w-])(\d{3})-(\d{2})-(\d{4})(?![\w-])")
_NINO = re.compile(r"(?<![A-Za-z0-9])[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?"
                   r"[A-D](?![A-Za-z0-9])")
_NAMED_ID = re.compile(
    r"(?i)\b(?:passport|social security|ssn|national (?:id|insurance)|id card|identity card|"
    r"driver'?s licen[cs]e|tax id|steuer-?id|numéro de sécurité sociale|nir)"
    r"(?:\s+(?:number|no\.?|#))?\s*(?:is|:|=)?\s*([A-Z0-9][A-Z0-9 -]{5,18}[A-Z0-9])\b")


def _government_ids(text: str) -> list[Finding]:
    found = []
    for m in _SSN.finditer(text):
        area, group, serial = m.groups()
        if area in ("000", "666") or area[0] == "9" or group == "00" or serial == "0000":
            continue
        found.append(Finding("government_id", m.start(), m.end()))
    found += [Finding("government_id", m.start(), m.end()) for m in _NINO.finditer(text)]
    for m in _NAMED_ID.finditer(text):
        if _digits(m.group(1)) >= 4:
            found.append(Finding("government_id", m.start(1), m.end(1)))
    return found


# --- street addresses --------------------------------------------------------------------

_STREET_WORDS = (r"Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|"
                 r"Place|Pl|Terrace|Square|Sq|Way|Close|Crescent|Parkway|Highway")
_ADDRESS_EN = re.compile(
    rf"\b\d{{1,5}}[A-Za-z]?,? (?:[A-Z][a-z]+ ){{1,3}}(?:{_STREET_WORDS})\b\.?")
_ADDRESS_FR = re.compile(
    r"(?i)\b\d{1,4}(?: ?(?:bis|ter))?,? (?:rue|avenue|boulevard|bd|place|allée|impasse|"
    r"chemin|quai|cours) (?:de la |de l'|du |des |de |d')?[A-ZÀ-Ý][\w'-]+")
_ADDRESS_DE = re.compile(r"\b[A-ZÄÖÜ][a-zäöüß]+(?:straße|strasse|weg|platz|allee|gasse) "
                         r"\d{1,4}[a-z]?\b")


def _addresses(text: str) -> list[Finding]:
    found = []
    for pattern in (_ADDRESS_EN, _ADDRESS_FR, _ADDRESS_DE):
        found += [Finding("address", m.start(), m.end()) for m in pattern.finditer(text)]
    return found


# --- the surface -------------------------------------------------------------------------

_DETECTORS = (_emails, _phones, _cards, _ibans, _government_ids, _addresses)


def detect(text: str) -> list[Finding]:
    """Every piece of personal data found, by position; overlapping findings keep the first
    (a card number is not also reported as a phone)."""
    found = sorted((f for detector in _DETECTORS for f in detector(text)),
                   key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Finding] = []
    for f in found:
        if kept and f.start < kept[-1].end:
            continue
        kept.append(f)
    return kept


def sensitivity(text: str) -> tuple[str, ...]:
    """The kinds of sensitive data in `text` (sorted, each once): personal data, and
    'credential' when masking's patterns find a credential or its mask. Empty: not
    sensitive."""
    kinds = {f.kind for f in detect(text)}
    if MASK in text or looks_like_secret(text):
        kinds.add("credential")
    return tuple(sorted(kinds))


def is_sensitive(text: str) -> bool:
    return bool(sensitivity(text))


def mask_personal(text: str) -> str:
    """`text` with each piece of personal data replaced by `[<kind> masked]` (credentials
    are masking.py's to mask)."""
    out, last = [], 0
    for f in detect(text):
        out += [text[last:f.start], f"[{f.kind.replace('_', ' ')} masked]"]
        last = f.end
    out.append(text[last:])
    return "".join(out)
