"""Search's second stage (query/rerank.py, issue 23) over a real PostgreSQL and the real
offline model: short turns, near-duplicate copies, a pasted error line, the keyword share
of the fusion, time named in the query, neighbour turns."""

from datetime import datetime, timedelta, timezone

import pytest

from helpers.embeddings import add_events, local_embedder  # noqa: F401
from memory_platform.query import rerank, timeframe
from memory_platform.query import search as service
from memory_platform.query.embeddings import WithContext, embed_missing
from memory_platform.store.search_context import Placement

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
CHATTER = [
    "the files in the commit look fine, run the tests again please",
    "which module is imported first when the program starts",
    "please stage the files and commit them with a clear message",
    "the tests run in a separate process on the build server",
    "is the list of paths computed before the tool starts",
    "let's look at the coverage of the command line module",
]

# A long Claude Code answer: tool output, then its conclusion.
TOOL_OUTPUT = "\n".join(
    f"  ⎿  specs/apple_books/library_spec.py::describe_library::it_lists_book_{n} PASSED"
    for n in range(40))
ANSWER = ("The staging guard refuses a blanket add of the whole tree, so only files named "
          "one by one reach the index.")
WORDS = ("staging", "guard", "blanket", "tree", "index")


class ReadsTheStart:
    """An embedder that, like the real model on a long input, reads only the start of each
    input (here its first 300 characters), as a bag of the answer's words: the long answer
    reads as tool output, while the short reply after it, whose input is "yes" followed by
    the end of the answer (WithContext), reads as the answer's conclusion."""

    name, dims = "reads-the-start", len(WORDS) + 1

    def chunk(self, text):
        return [(0, len(text))] if text else []

    def embed(self, texts):
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            head = text[:300].lower()
            out[row, :-1] = [head.count(w) for w in WORDS]
            out[row, -1] = 0.2
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_a_short_turn_never_outranks_the_turn_it_follows_on_its_own_words(db, monkeypatch):
    items = [
        {"native_id": "q", "text": "why did the big file not end up in the commit this time?",
         "conversation": "s", "occurred_at": T0},
        {"native_id": "answer", "text": f"⏺ Bash(pytest -q)\n{TOOL_OUTPUT}\n\n⏺ {ANSWER}",
         "conversation": "s", "role": "assistant", "occurred_at": T0 + timedelta(minutes=1)},
        {"native_id": "short", "text": "yes", "conversation": "s",
         "occurred_at": T0 + timedelta(minutes=2)},
    ]
    # Turns holding the query's words after other talk: shorter than the long answer (a
    # better keyword rank), read by the embedder as that other talk.
    filler = "we talked about the weekend, the weather and the trip to the coast " * 5
    items += [{"native_id": f"echo{n}",
               "text": f"{filler}{' '.join(WORDS[n:] + WORDS[:n])} {n}",
               "conversation": f"e{n}", "occurred_at": T0 + timedelta(days=1, minutes=n)}
              for n in range(4)]
    ids = dict(zip([i["native_id"] for i in items], add_events(db, "claude-code", items),
                   strict=True))
    embedder = WithContext(ReadsTheStart(), turns=2)
    embed_missing(db, embedder)
    # Small pools stand for a big store: the long answer is in neither the dense nor the
    # keyword pool, its short reply is.
    monkeypatch.setattr(service, "POOL_MIN", 3)
    hits = service.search(db, "staging guard blanket tree index", k=3, embedder=embedder)
    order = [h.event_id for h in hits]
    assert ids["answer"] in order, [h.text[:40] for h in hits]
    if ids["short"] in order:
        assert order.index(ids["answer"]) < order.index(ids["short"])


def test_near_duplicate_hits_are_collapsed_and_k_still_filled(db, local_embedder):  # noqa: F811
    answer = ("The fixture for the never opened user was created by hand on day ten and "
              "lost when the empty directory was cleaned; git never tracked it.")
    items = [{"native_id": f"copy{n}", "text": answer + (" " if n == 2 else ""),
              "conversation": f"paste{n}", "occurred_at": T0 + timedelta(hours=n)}
             for n in range(3)]
    items += [{"native_id": f"other{n}", "text": f"{text} (note {n})", "conversation": "o",
               "occurred_at": T0 + timedelta(days=1, minutes=n)}
              for n, text in enumerate(CHATTER)]
    ids = dict(zip([i["native_id"] for i in items], add_events(db, "claude-code", items),
                   strict=True))
    embed_missing(db, local_embedder)
    hits = service.search(db, "who created the never opened user fixture and how was it lost",
                          k=4, embedder=local_embedder)
    copies = {ids[f"copy{n}"] for n in range(3)}
    shown = [h for h in hits if h.event_id in copies]
    assert len(shown) == 1, [h.text for h in hits]
    assert set(shown[0].duplicates) == copies - {shown[0].event_id}
    assert len(hits) == 4


def test_a_pasted_error_line_is_found_as_a_phrase(db, local_embedder):  # noqa: F811
    error = "Error: File content exceeds maximum allowed tokens. Please use offset and limit"
    items = [{"native_id": "target", "text": f"⏺ Read(day-020.md)\n  ⎿  {error}",
              "occurred_at": T0}]
    # The same common words, in other orders and places.
    words = error.replace(".", "").replace(":", "").split()
    for n in range(40):
        cut = n % (len(words) - 1) + 1  # never the error's own order
        shuffled = words[cut:] + words[:cut]
        items.append({"native_id": f"noise{n}", "text": " ".join(shuffled) + f" ({n})",
                      "occurred_at": T0 + timedelta(minutes=n + 1)})
    ids = add_events(db, "claude-code", items)
    embed_missing(db, local_embedder)
    hits = service.search(db, error, k=5, embedder=local_embedder)
    assert hits[0].event_id == ids[0]
    assert "identifier" in hits[0].pools


def test_a_keyword_match_of_common_words_does_not_overtake_a_close_semantic_hit(monkeypatch):
    # The option measured for issue 23 (not the default: it cost LoCoMo recall).
    monkeypatch.setattr(service, "KEYWORD_QUERY_SCALE", 1.0)
    # b matches only a low-IDF lexeme of a query whose IDF mass is 6: before, the best
    # keyword match took the whole keyword share (0.3) and overtook a's cosine of 0.62.
    dense = {1: (0.38, 0, 10), 2: (0.50, 0, 10)}
    keyword = {2: 0.3}
    scores = service._fuse("hybrid", "weighted", [1, 2], dense, keyword, {1: 1, 2: 2},
                           {2: 1}, query_weight=6.0)
    assert scores[1] > scores[2]


def test_time_named_in_the_query_lifts_what_falls_in_it(db, local_embedder):  # noqa: F811
    text = "we went camping by the lake with the kids"
    items = [{"native_id": f"d{m}", "text": text, "conversation": f"m{m}",
              "occurred_at": datetime(2023, m, 12, 12, tzinfo=timezone.utc)}
             for m in (3, 5, 8)]
    ids = add_events(db, "claude-code", items)
    embed_missing(db, local_embedder)
    for month, want in (("May", ids[1]), ("August", ids[2]), ("March 2023", ids[0])):
        hits = service.search(db, f"when did we go camping in {month}?", k=3,
                              embedder=local_embedder)
        assert hits[0].event_id == want


@pytest.mark.parametrize("query, expected", [
    ("what did I do on 13 October 2023?", [("2023-10-13", "2023-10-14", False)]),
    ("What painting did Melanie show on October 13, 2023?",
     [("2023-10-13", "2023-10-14", False)]),
    ("the setback in October 2023", [("2023-10-01", "2023-11-01", False)]),
    ("camping in June", [("2000-06-01", "2000-07-01", True)]),
    ("the beach in 2023", [("2023-01-01", "2024-01-01", False)]),
    ("what broke last week", [("2026-02-23", "2026-03-02", False)]),
    ("what broke yesterday", [("2026-03-03", "2026-03-04", False)]),
    ("may I ask about the 2023 report", []),  # "may" as a verb, a bare year as a number
    ("on 31 February 2023", [("2023-02-01", "2023-03-01", False)]),  # no such day: its month
])
def test_time_windows_of_a_query(query, expected):
    found = timeframe.windows(query, today=datetime(2026, 3, 4).date())
    assert [(w.start.date().isoformat(), w.end.date().isoformat(), w.any_year)
            for w in found] == expected


def test_neighbours_of_the_first_hits_come_in_below_them():
    placed = {1: Placement(1, 10, 11, 80, T0), 2: Placement(2, None, None, 80, T0)}
    scores = {1: 0.8, 2: 0.7, 11: 0.1}
    added = rerank.add_neighbours(scores, [1, 2, 11], placed, top=1, share=0.9)
    assert added == [10]
    assert scores[10] == pytest.approx(0.72) and scores[11] == pytest.approx(0.72)
    assert scores[2] == 0.7


def test_a_short_turn_passes_its_score_to_the_turn_it_follows():
    placed = {5: Placement(5, 4, None, 3, T0), 6: Placement(6, 5, None, 200, T0)}
    scores = {5: 0.9, 6: 0.5}
    assert rerank.pass_short_turns(scores, placed) == [4]
    assert scores[4] == 0.9 and scores[5] < scores[4]
    assert scores[6] == 0.5  # a long turn keeps its own score
