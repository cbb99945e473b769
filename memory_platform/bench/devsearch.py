"""Search over real developer transcripts (issue 23): one developer's Claude Code console
sessions (bench/console_sessions.py) imported as Claude Code JSONL, and the questions in
`benchmarks/data/devsearch_questions.jsonl`, searched with no filter (one person's store, as
MCP's `cairn_search` runs).

Questions (ids h*, hand-written from the transcripts; e* and s* generated from them):
- `paraphrase`: what an answer said, in other words than it used;
- `lexical`: sharing the answer's distinctive words;
- `user`: finding what the developer wrote;
- `error`: a line of error output quoted verbatim (the words of most are all common);
- `short-follow`: the first words of an assistant turn that a short prompt (`yes`, `/cost`,
  `go on`) followed: the short turn, embedded with that answer as its context, must not take
  its place.

Gold: each item is a text (or alternatives) that the answering turn holds; every turn holding
it counts (a session pasted twice holds it twice), so an item is found when any of them is
in the top k. Metric: the fraction of a question's items found in the top k, averaged.
BM25 reference: Okapi (k1 1.2, b 0.75) over each turn's lower-cased words, in Python.
"""

import json
import math
import re
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from memory_platform.bench.common import REPO
from memory_platform.bench.console_sessions import all_sessions, write_jsonl

QUESTIONS = REPO / "benchmarks" / "data" / "devsearch_questions.jsonl"
KINDS = ("paraphrase", "lexical", "user", "error", "short-follow")
KS = (1, 5, 10, 25)
_WORD = re.compile(r"\w+")


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def gold_ids(questions: list[dict], texts: dict[int, str]) -> dict[str, list[set[int]]]:
    """question id -> for each gold item, the events holding it."""
    out = {}
    for q in questions:
        items = []
        for item in q["gold"]:
            alts = [item] if isinstance(item, str) else item
            items.append({i for i, t in texts.items() if any(a in t for a in alts)})
        out[q["id"]] = items
    return out


def recall_table(ranked: dict[str, list[int]], questions: list[dict],
                 gold: dict[str, list[set[int]]]) -> dict:
    """recall@k (%) overall and @10 per kind."""
    def one(q: dict, k: int) -> float:
        top = set(ranked[q["id"]][:k])
        items = gold[q["id"]]
        return sum(bool(top & g) for g in items) / len(items)

    out = {f"@{k}": round(100 * statistics.fmean(one(q, k) for q in questions), 1)
           for k in KS}
    for kind in KINDS:
        sub = [q for q in questions if q["kind"] == kind]
        if sub:
            out[f"{kind}@10"] = round(100 * statistics.fmean(one(q, 10) for q in sub), 1)
    return out


class BM25:
    """Okapi BM25 over lower-cased word tokens, one document per event."""

    def __init__(self, texts: dict[int, str], k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs = {i: Counter(_WORD.findall(t.lower())) for i, t in texts.items()}
        self.lengths = {i: sum(c.values()) for i, c in self.docs.items()}
        self.avg = statistics.fmean(self.lengths.values()) if self.lengths else 1.0
        df: Counter = Counter()
        for c in self.docs.values():
            df.update(c.keys())
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - d + 0.5) / (d + 0.5)) for w, d in df.items()}
        self.postings: dict[str, list[int]] = {}
        for i, c in self.docs.items():
            for w in c:
                self.postings.setdefault(w, []).append(i)

    def search(self, query: str, k: int) -> list[int]:
        scores: Counter = Counter()
        for w in set(_WORD.findall(query.lower())):
            idf = self.idf.get(w)
            if idf is None:
                continue
            for i in self.postings[w]:
                tf = self.docs[i][w]
                norm = self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg)
                scores[i] += idf * tf * (self.k1 + 1) / (tf + norm)
        return [i for i, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]]


def build_store(folder: Path, db) -> dict[int, str]:
    """Import the sessions as Claude Code JSONL into `db` (once); event id -> turn key."""
    from memory_platform.ingest.importer import import_path

    with db.connect() as conn:
        have = conn.execute("SELECT count(*) FROM events").fetchone()[0]
    if not have:
        write_jsonl(folder, all_sessions())
        report = import_path(db, "claude-code", folder)
        if report.errors:
            raise RuntimeError(f"import errors: {report.errors[:3]}")
        with db.connect() as conn:
            conn.execute("ANALYZE events")
    with db.connect() as conn:
        return dict(conn.execute("SELECT id, text FROM events").fetchall())


Searcher = Callable[[dict], list[int]]


def evaluate(searcher: Searcher, questions: list[dict], gold: dict) -> dict:
    return recall_table({q["id"]: searcher(q) for q in questions}, questions, gold)


def run_devsearch(admin_url: str, log) -> dict:
    """`bench search --parts devsearch`: the transcripts imported into a scratch database,
    embedded with the default `local-ctx2` (minutes of CPU: ~10k model inputs), then BM25,
    keyword-only and hybrid search over the questions, k = 25."""
    import tempfile

    from memory_platform.bench.common import scratch_db
    from memory_platform.query import search as service
    from memory_platform.query.embeddings import embed_missing, get_embedder

    questions = load_questions()
    with scratch_db(admin_url, "devsearch") as db, \
            tempfile.TemporaryDirectory(prefix="mp-devsearch-") as tmp:
        texts = build_store(Path(tmp), db)
        gold = gold_ids(questions, texts)
        embedder = get_embedder("local-ctx2")
        counts = embed_missing(db, embedder)
        log(f"  {len(texts)} turns, {counts['embedded']} model inputs in "
            f"{counts['seconds']:.0f} s")
        bm25 = BM25(texts)
        rows = {"BM25 (k1 1.2, b 0.75)": evaluate(
            lambda q: bm25.search(q["question"], 25), questions, gold)}
        for mode in ("keyword", "hybrid"):
            rows[mode] = evaluate(lambda q, m=mode: [h.event_id for h in service.search(
                db, q["question"], k=25, mode=m, embedder=embedder)], questions, gold)
        for name, row in rows.items():
            log(f"  {name}: {row}")
    return {"data": "claude-code-console-bookminder (21 days, one developer), "
                    f"{len(texts)} turns, {len(questions)} questions",
            "questions": str(QUESTIONS.relative_to(REPO)), "results": rows}
