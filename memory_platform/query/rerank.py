"""Search's second stage after fusion (query/search.py): rules that use where a candidate
sits in its conversation and what the query says about time, then the near-duplicate
collapse of the ranked list. Pure functions over scores; the facts come from
store/search_context.py. Each rule was measured alone (BENCHMARKS.md, issue 23).

- **A short turn passes its score to the turn it follows.** A reply of a few characters
  ("yes", "/cost", "go on") is embedded with the turns before it (local-ctx2), so its vector
  is mostly theirs: what it matched is in the turn it follows. That turn ranks at least as
  high as the short one, which stays right below it.
- **Neighbour turns.** The first NEIGHBOUR_TOP hits bring the turns just before and after
  them in their conversation at NEIGHBOUR_SHARE of their score (a question and its answer,
  a statement and the reply that dates it), unless those score more already.
- **Time named in the query.** Candidates inside a window the query names ("in May", "on
  13 October 2023", "last week"; query/timeframe.py) get +TIME_LIFT.
- **Near duplicates collapse.** A hit whose text is near-identical to a better one (a session
  pasted twice, a summary repeated) is folded into it (`Hit.duplicates`), so copies do not
  take several of the k places: the same words (lower-cased, whitespace collapsed) or
  word-trigram Jaccard >= DUPLICATE_JACCARD over the first DUPLICATE_CHARS characters, for
  texts of at least DUPLICATE_MIN_CHARS.
"""

import re
from collections.abc import Sequence
from datetime import datetime

from memory_platform.query.timeframe import Window
from memory_platform.store.search_context import Placement

SHORT_TURN_CHARS = 24
NEIGHBOUR_TOP = 5
NEIGHBOUR_SHARE = 0.9
TIME_LIFT = 0.2
DUPLICATE_JACCARD = 0.8
DUPLICATE_CHARS = 4_000
DUPLICATE_MIN_CHARS = 40
# Below the score it takes from: the short turn sorts right after the turn it follows.
_BELOW = 1e-6


def pass_short_turns(scores: dict[int, float], placed: dict[int, Placement],
                     short_chars: int | None = None) -> list[int]:
    """For each short candidate (own text at most `short_chars`, default SHORT_TURN_CHARS)
    with a previous turn: that turn gets at least its score, and the short turn sorts just
    below it. Returns the turns brought in that were not candidates. In place."""
    limit = SHORT_TURN_CHARS if short_chars is None else short_chars
    added = []
    for i in sorted(scores, key=lambda i: -scores[i]):
        p = placed.get(i)
        if p is None or p.previous is None or p.chars > limit:
            continue
        if p.previous not in scores:
            added.append(p.previous)
            scores[p.previous] = scores[i]
        elif scores[p.previous] < scores[i]:
            scores[p.previous] = scores[i]
        scores[i] = min(scores[i], scores[p.previous] - _BELOW)
    return added


def add_neighbours(scores: dict[int, float], order: Sequence[int],
                   placed: dict[int, Placement], top: int | None = None,
                   share: float | None = None) -> list[int]:
    """The turns before and after each of the first `top` of `order` (best first) score at
    least `share` x its score. Returns the turns that were not candidates. In place."""
    top = NEIGHBOUR_TOP if top is None else top
    share = NEIGHBOUR_SHARE if share is None else share
    added = []
    for i in order[:top]:
        p = placed.get(i)
        if p is None:
            continue
        for n in (p.previous, p.following):
            if n is None:
                continue
            if n not in scores:
                added.append(n)
                scores[n] = share * scores[i]
            else:
                scores[n] = max(scores[n], share * scores[i])
    return added


def lift_in_windows(scores: dict[int, float], occurred: dict[int, datetime],
                    windows: Sequence[Window], lift: float | None = None) -> int:
    """+lift for candidates inside any window; returns how many. In place."""
    if not windows:
        return 0
    lift = TIME_LIFT if lift is None else lift
    n = 0
    for i, at in occurred.items():
        if i in scores and any(w.holds(at) for w in windows):
            scores[i] += lift
            n += 1
    return n


_SPACE = re.compile(r"\s+")
_WORDS = re.compile(r"\w+")


def _signature(text: str) -> tuple[str, frozenset]:
    head = text[:DUPLICATE_CHARS].lower()
    words = _WORDS.findall(head)
    grams = frozenset(zip(words, words[1:], words[2:], strict=False)) if len(words) >= 3 \
        else frozenset((w,) for w in words)
    return _SPACE.sub(" ", head).strip(), grams


def near_duplicate(a: str, b: str) -> bool:
    """Whether two texts are copies for search (see the module docstring)."""
    if min(len(a.strip()), len(b.strip())) < DUPLICATE_MIN_CHARS:
        return False
    (sa, ga), (sb, gb) = _signature(a), _signature(b)
    if sa == sb:
        return True
    if not ga or not gb:
        return False
    return len(ga & gb) / len(ga | gb) >= DUPLICATE_JACCARD


def collapse(order: Sequence[int], texts: dict[int, str], k: int
             ) -> tuple[list[int], dict[int, list[int]]]:
    """The first k of `order` with near duplicates folded into the better hit: (kept ids,
    {kept id: ids of its copies}). Ids without text are kept as they are."""
    kept: list[int] = []
    copies: dict[int, list[int]] = {}
    sigs: dict[int, tuple[str, frozenset]] = {}
    for i in order:
        text = texts.get(i)
        twin = None
        if text is not None and len(text.strip()) >= DUPLICATE_MIN_CHARS:
            sig = _signature(text)
            for j in kept:
                other = sigs.get(j)
                if other is not None and (other[0] == sig[0] or (
                        sig[1] and other[1] and len(sig[1] & other[1])
                        / len(sig[1] | other[1]) >= DUPLICATE_JACCARD)):
                    twin = j
                    break
            sigs[i] = sig
        if twin is not None:
            copies.setdefault(twin, []).append(i)
            continue
        kept.append(i)
        if len(kept) == k:
            break
    return kept, copies
