"""LoCoMo for the search benchmark: the conversations as events, the questions' evidence,
and turn-level evidence recall of a retriever.

LoCoMo (CC BY-NC 4.0, evaluation only: read in place, never copied into the repo). Each of
the ten conversations is imported as its own history (source "locomo", one conversation per
sample, text "speaker: text", image turns "[shared image: caption]", occurred_at from the
session date) and every question is searched with a conversation filter. Metric: LoCoMo's
turn-level evidence recall (fraction of a question's evidence turns in the top k; questions
without evidence count 1), plus recall_any@k and recall_all@k, at k = 5, 10, 25, 50, for
categories 1-5 and 1-4. No LLM at index or query time.
"""

import json
import re
import statistics
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from memory_platform.adapters.base import Event
from memory_platform.bench.common import Log, benchdata, scratch_db
from memory_platform.ingest.rows import event_row
from memory_platform.query import embeddings as emb
from memory_platform.query import search as service
from memory_platform.store import Database
from memory_platform.store import events as event_store

KS = (5, 10, 25, 50)


def locomo_dir() -> Path:
    return benchdata() / "locomo"


def _session_time(text: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def locomo_events(sample: dict) -> list[Event]:
    conv = sample["conversation"]
    speakers = {conv["speaker_a"]: "user", conv["speaker_b"]: "assistant"}
    events = []
    n = 1
    while f"session_{n}" in conv:
        start = _session_time(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = turn.get("text") or ""
            if turn.get("blip_caption"):
                text = f"{text} [shared image: {turn['blip_caption']}]".strip()
            events.append(Event(
                native_id=f"{sample['sample_id']}:{turn['dia_id']}",
                conversation_id=sample["sample_id"], role=speakers.get(turn["speaker"], "other"),
                text=f"{turn['speaker']}: {text}", raw=turn,
                occurred_at=start + timedelta(seconds=30 * i),
            ))
        n += 1
    return events


def normalise_evidence(evidence: Sequence[str], valid: set[str]) -> list[str]:
    """BENCHMARKS.md: split on ';', ',' and whitespace, strip a trailing '.', drop ids that
    are not in the conversation."""
    found: list[str] = []
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            part = part.strip().rstrip(".")
            if part in valid and part not in found:
                found.append(part)
    return found


def load_locomo(audited: bool = False) -> list[dict]:
    data = json.loads((locomo_dir() / "locomo10.json").read_text())
    fixes = {}
    if audited:
        for item in json.loads((locomo_dir() / "audit" / "errors.json").read_text()):
            if item.get("correct_evidence") is not None:
                fixes[item["question_id"]] = item["correct_evidence"]
    for s_index, sample in enumerate(data):
        conv = sample["conversation"]
        valid = {t["dia_id"] for key, turns in conv.items()
                 if re.fullmatch(r"session_\d+", key) for t in turns}
        for q_index, qa in enumerate(sample["qa"]):
            evidence = fixes.get(f"locomo_{s_index}_qa{q_index}", qa.get("evidence", []))
            qa["gold"] = normalise_evidence(evidence, valid)
    return data


def import_locomo(db: Database, data: list[dict]) -> dict[str, tuple[int, dict[int, str]]]:
    """sample_id -> (conversation id, {event id: dia_id})."""
    out = {}
    with db.connect() as conn:
        for sample in data:
            rows = [event_row("locomo", e) for e in locomo_events(sample)]
            with conn.transaction():
                event_store.write_events(conn, rows)
            stored = conn.execute(
                "SELECT id, native_id, conversation_id FROM events WHERE source = 'locomo' "
                "AND native_id LIKE %s", (sample["sample_id"] + ":%",)).fetchall()
            out[sample["sample_id"]] = (stored[0][2],
                                        {i: native.split(":", 1)[1] for i, native, _ in stored})
        conn.execute("ANALYZE events")
    return out


class PrecomputedEmbedder:
    """Query vectors embedded in one batch up front, served by text."""

    def __init__(self, name: str, dims: int, vectors: dict[str, np.ndarray]):
        self.name, self.dims, self._vectors = name, dims, vectors

    def chunk(self, text: str) -> list[tuple[int, int]]:
        return [(0, len(text))]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._vectors[t] for t in texts])


def _score(ranked_dia: list[str], gold: list[str], k: int) -> tuple[float, float, float]:
    if not gold:
        return 1.0, 1.0, 1.0
    top = set(ranked_dia[:k])
    found = sum(1 for g in gold if g in top)
    return found / len(gold), float(found > 0), float(found == len(gold))


def evaluate(db: Database, data: list[dict], ids: dict, mode: str, embedder,
             fusion: str | None = None, golds: dict[str, list[dict]] | None = None) -> dict:
    """Recall table for one retriever: {gold: {categories: {metric@k: value}}}."""
    per_question = []  # (sample, qa index, ranked dia ids)
    for sample in data:
        conv_id, dia_of = ids[sample["sample_id"]]
        filters = service.SearchFilters(conversation_id=conv_id)
        for q_index, qa in enumerate(sample["qa"]):
            hits = service.search(db, qa["question"], k=max(KS), filters=filters, mode=mode,
                                  embedder=embedder, fusion=fusion)
            per_question.append((sample["sample_id"], q_index, [dia_of[h.event_id] for h in hits]))
    result = {}
    for gold_name, gold_data in (golds or {"original": data}).items():
        by_sample = {s["sample_id"]: s for s in gold_data}
        table = {}
        for label, cats in (("1-5", {1, 2, 3, 4, 5}), ("1-4", {1, 2, 3, 4})):
            rows = [(ranked, by_sample[sid]["qa"][qi]) for sid, qi, ranked in per_question]
            rows = [(ranked, qa) for ranked, qa in rows if qa["category"] in cats]
            metrics = {}
            for k in KS:
                scores = [_score(ranked, qa["gold"], k) for ranked, qa in rows]
                metrics[f"recall@{k}"] = round(100 * statistics.fmean(s[0] for s in scores), 1)
                metrics[f"any@{k}"] = round(100 * statistics.fmean(s[1] for s in scores), 1)
                metrics[f"all@{k}"] = round(100 * statistics.fmean(s[2] for s in scores), 1)
            metrics["questions"] = len(rows)
            table[label] = metrics
        result[gold_name] = table
    return result


# LoCoMo variants: how each turn is embedded (the query is always embedded by the plain
# model). "ctx2" is what the default embedder (`local-ctx2`) stores.
VARIANTS = {"plain": 0, "ctx1": 1, "ctx2": 2, "ctx3": 3}


def run_locomo(admin_url: str, log: Log, variants: Sequence[str] = ("plain", "ctx2"),
               weights: Sequence[float] | None = None, rrf: bool = True) -> list[dict]:
    """Keyword-only, then per variant: dense-only, hybrid RRF (when `rrf`) and hybrid
    weighted at each of `weights` (default: the shipped DENSE_WEIGHT)."""
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown LoCoMo variants {unknown}; choose from {sorted(VARIANTS)}")
    weights = tuple(weights or (service.DENSE_WEIGHT,))
    data = load_locomo()
    golds = {"original": data, "audited": load_locomo(audited=True)}
    base = emb.get_embedder("local")
    results = []
    with scratch_db(admin_url, "search") as db:
        ids = import_locomo(db, data)
        questions = sorted({qa["question"] for s in data for qa in s["qa"]})
        began = time.perf_counter()
        qvecs = dict(zip(questions, base.embed(questions), strict=True))
        log(f"  {len(questions)} questions embedded in {time.perf_counter() - began:.1f} s")
        row = evaluate(db, data, ids, "keyword", None, golds=golds)
        results.append({"retriever": "keyword (FTS, IDF-weighted OR query)", **row})
        log(f"  keyword: {_recalls(row)}")
        for variant in variants:
            turns = VARIANTS[variant]
            embedder = base if turns == 0 else emb.WithContext(base, turns)
            counts = emb.embed_missing(db, embedder)
            log(f"  {embedder.name}: embedded {counts['events']} events "
                f"in {counts['seconds']:.0f} s")
            query = PrecomputedEmbedder(embedder.name, embedder.dims, qvecs)
            row = evaluate(db, data, ids, "dense", query, golds=golds)
            results.append({"retriever": f"dense {embedder.name}", **row})
            log(f"  dense {embedder.name}: {_recalls(row)}")
            if rrf:
                row = evaluate(db, data, ids, "hybrid", query, fusion="rrf", golds=golds)
                results.append({"retriever": f"hybrid RRF(k={service.RRF_K}) {embedder.name}",
                                **row})
                log(f"  hybrid rrf {embedder.name}: {_recalls(row)}")
            default_weight = service.DENSE_WEIGHT
            try:
                for w in weights:
                    service.DENSE_WEIGHT = w
                    row = evaluate(db, data, ids, "hybrid", query, fusion="weighted",
                                   golds=golds)
                    results.append({"retriever": f"hybrid weighted w={w} {embedder.name}",
                                    **row})
                    log(f"  hybrid w={w} {embedder.name}: {_recalls(row)}")
            finally:
                service.DENSE_WEIGHT = default_weight
    return results


def _recalls(row: dict) -> str:
    m = row["original"]["1-5"]
    return " ".join(f"@{k} {m[f'recall@{k}']}" for k in KS)


def format_locomo(results: list[dict], gold: str = "original", cats: str = "1-5") -> str:
    lines = [f"LoCoMo turn-level evidence recall (%), gold={gold}, categories {cats}",
             "| retriever | @5 | @10 | @25 | @50 | any@10 | all@10 |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        m = r[gold][cats]
        lines.append(f"| {r['retriever']} | " + " | ".join(
            str(m[f"recall@{k}"]) for k in KS) + f" | {m['any@10']} | {m['all@10']} |")
    return "\n".join(lines)
