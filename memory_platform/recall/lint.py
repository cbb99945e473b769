"""Lint of a primary namespace's current facts: what a person should look at, as findings
for the review gate (table `lint_findings`). Lint never changes a memory; a person resolves
a finding (findings.py: supersede, archive, keep).

Kinds:
- contradiction: two facts about the same subject (cosine >= SUBJECT) whose significant
  tokens differ (a port, a version, a weekday: vault/significant.py), or, with an LLM, a
  pair the dedup judge calls a contradiction (cosine in [JUDGE_FROM, SUBJECT));
- near_duplicate: the same normalized text twice, or cosine >= SUBJECT with the same
  significant tokens (the dedup gate's duplicate rule);
- stale: a fact whose words or dates point to the past: "currently", "for now", "latest"
  recorded more than STALE_DAYS ago; a deadline or an "until" date that has passed; a
  version recorded more than VERSION_DAYS ago;
- orphan: a fact whose source turns no longer exist, whose source project folders are all
  gone from disk, or that has no topic.

A finding's fingerprint is its kind, its memories and their content hashes: a re-run adds
nothing twice, a finding a person kept is not raised again while the texts stay the same,
and an open finding whose memories changed or ended since is closed as `obsolete`.
"""

import hashlib
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from memory_platform.llm import LLM, LLMCallError
from memory_platform.store import Database
from memory_platform.store import recall as store
from memory_platform.vault.gate import Neighbour, judge
from memory_platform.vault.memories import embed_missing_memories, vault_embedder
from memory_platform.vault.significant import significant_tokens

SUBJECT = 0.85  # the dedup gate's duplicate threshold (vault/gate.py Thresholds)
JUDGE_FROM = 0.70
MAX_JUDGE_CALLS = 50  # per namespace and run: a cost bound; the rest wait for the next run
STALE_DAYS = 30
VERSION_DAYS = 180
BLOCK = 1024  # rows of the similarity matrix computed at once

_NOW_WORDS = re.compile(
    r"(?i)\b(currently|right now|at the moment|for now|for the time being|these days|"
    r"nowadays|as of now|temporarily|this (?:week|month|sprint|quarter)|latest|newest|"
    r"upcoming|in progress|is being)\b")
_DEADLINE = re.compile(r"(?i)\b(until|by|before|due|deadline|expires?|ends?|next)\b[^.]{0,40}?"
                       r"\b(\d{4})-(\d{2})-(\d{2})\b")
_VERSION = re.compile(r"(?i)\b(?:v|version |release )?\d+\.\d+(?:\.\d+)?\b")
# A value: a number, version, time, date, weekday or month. Two facts whose differing
# significant tokens are all values state different values of one subject; a differing
# name ("billing-3" / "billing-7", a path) means two subjects, not a contradiction.
_VALUE = re.compile(r"(?i)^(?:v?[\d.,:/-]+[a-z%]{0,3}|(?:mon|tues|wednes|thurs|fri|satur|sun)"
                    r"days?|jan\w*|feb\w*|mar\w*|apr\w*|may|june?|july?|aug\w*|sep\w*|"
                    r"oct\w*|nov\w*|dec\w*)$")


@dataclass
class LintReport:
    namespace: str
    facts: int = 0
    found: dict[str, int] = field(default_factory=dict)  # new findings by kind
    already_known: int = 0
    obsolete: int = 0
    judge_calls: int = 0
    judge_skipped: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def fingerprint(kind: str, memories: list[dict]) -> str:
    parts = sorted(f"{m['id']}:{m['content_hash']}" for m in memories)
    return hashlib.sha256(f"{kind}|{'|'.join(parts)}".encode()).hexdigest()


def _pair_evidence(a: dict, b: dict, sim: float, reason: str, **extra) -> dict:
    return {"reason": reason, "similarity": round(float(sim), 4),
            "memories": [{"id": m["id"], "text": m["text"], "content_hash": m["content_hash"],
                          "valid_from": m["valid_from"].isoformat()} for m in (a, b)],
            **extra}


def _single_evidence(m: dict, reason: str, **extra) -> dict:
    return {"reason": reason, "memories": [{"id": m["id"], "text": m["text"],
                                            "content_hash": m["content_hash"],
                                            "valid_from": m["valid_from"].isoformat()}],
            **extra}


def stale_reason(m: dict, now: datetime) -> str | None:
    """Why a fact's words or dates point to the past, or None."""
    age = (now - m["valid_from"]).days
    word = _NOW_WORDS.search(m["text"])
    if word and age > STALE_DAYS:
        return f"says {word.group(1)!r} and was recorded {age} days ago"
    for match in _DEADLINE.finditer(m["text"]):
        try:
            day = datetime(int(match.group(2)), int(match.group(3)), int(match.group(4)),
                           tzinfo=timezone.utc)
        except ValueError:
            continue
        if day < now:
            return f"{match.group(1)!r} {day.date().isoformat()} has passed"
    if age > VERSION_DAYS and _VERSION.search(m["text"]) and any(
            "." in t for t in significant_tokens(m["text"])):
        return f"names a version and was recorded {age} days ago"
    return None


def _pairs(vectors: np.ndarray, floor: float):
    """(i, j, similarity) for i < j with similarity >= floor, computed in blocks."""
    n = len(vectors)
    for start in range(0, n, BLOCK):
        sims = vectors[start:start + BLOCK] @ vectors.T
        rows, cols = np.nonzero(sims >= floor)
        upper = cols > rows + start  # each pair once, never a fact with itself
        rows, cols = rows[upper], cols[upper]
        for r, c, sim in zip(rows.tolist(), cols.tolist(), sims[rows, cols].tolist(),
                             strict=True):
            yield start + r, c, sim


class _Run:
    def __init__(self, db: Database, namespace: str, run_id: str | None, report: LintReport):
        self.db, self.namespace, self.run_id, self.report = db, namespace, run_id, report

    def add(self, kind: str, memories: list[dict], evidence: dict) -> None:
        with self.db.connect() as conn:
            found = store.insert_finding(
                conn, namespace=self.namespace, kind=kind, memory_ids=[m["id"] for m in memories],
                evidence=evidence, fingerprint=fingerprint(kind, memories), run_id=self.run_id)
        if found is None:
            self.report.already_known += 1
        else:
            self.report.found[kind] = self.report.found.get(kind, 0) + 1


def lint_namespace(db: Database, namespace: str, *, llm: LLM | None = None,
                   embedder=None, run_id: str | None = None,
                   now: datetime | None = None) -> LintReport:
    """Find contradictions, near-duplicates, stale claims and orphans among the current
    facts of a primary namespace; record them as findings. Changes no memory."""
    began = time.perf_counter()
    now = now or datetime.now(timezone.utc)
    report = LintReport(namespace)
    run = _Run(db, namespace, run_id, report)
    with db.connect() as conn:
        facts = store.current_facts(conn, namespace)
    report.facts = len(facts)
    report.obsolete = close_obsolete(db, namespace, facts, actor=f"lint:{run_id or 'cli'}")
    by_id = {m["id"]: m for m in facts}
    # Same text twice.
    by_hash: dict[str, list[dict]] = {}
    for m in facts:
        by_hash.setdefault(m["content_hash"], []).append(m)
    for twins in by_hash.values():
        for other in twins[1:]:
            run.add("near_duplicate", [twins[0], other],
                    _pair_evidence(twins[0], other, 1.0, "the same text twice"))
    # Pairs by meaning.
    embedder = embedder or vault_embedder()
    embed_missing_memories(db, embedder)
    with db.connect() as conn:
        ids, vectors = store.fact_vectors(conn, embedder.name, list(by_id))
    floor = JUDGE_FROM if llm is not None else SUBJECT
    # Each fact's significant tokens once (vault/significant.py's differing_tokens is their
    # symmetric difference): templated facts can make millions of close pairs.
    tokens_of = [frozenset(significant_tokens(by_id[i]["text"])) for i in ids]
    values: dict[str, bool] = {}
    for i, j, sim in _pairs(vectors, floor) if len(ids) > 1 else ():
        a, b = by_id[ids[i]], by_id[ids[j]]
        if a["content_hash"] == b["content_hash"]:
            continue
        tokens = tuple(sorted(tokens_of[i] ^ tokens_of[j]))
        for t in tokens:
            if t not in values:
                values[t] = bool(_VALUE.match(t))
        if not all(values[t] for t in tokens):
            continue  # they name different things (see _VALUE)
        if sim >= SUBJECT:
            if tokens:
                run.add("contradiction", [a, b], _pair_evidence(
                    a, b, sim, "same subject, different significant tokens",
                    differing_tokens=list(tokens)))
            else:
                run.add("near_duplicate", [a, b], _pair_evidence(
                    a, b, sim, "same subject and the same significant tokens"))
            continue
        if report.judge_calls >= MAX_JUDGE_CALLS:
            report.judge_skipped += 1
            continue
        shown = [(Neighbour(text=b["text"], similarity=sim, namespace=namespace,
                            memory_id=b["id"]), tokens)]
        try:
            verdict = judge(llm, a["text"], shown)
        except LLMCallError as exc:
            raise RuntimeError(f"lint of {namespace}: the dedup judge failed on memories "
                               f"{a['id']} and {b['id']} ({exc}); findings so far are "
                               f"recorded, a re-run continues") from exc
        report.judge_calls += 1
        if verdict.verdict == "contradiction":
            run.add("contradiction", [a, b], _pair_evidence(
                a, b, sim, "the dedup judge calls it a contradiction", judge=verdict.reason))
    # Stale claims and orphans.
    for m in facts:
        why = stale_reason(m, now)
        if why:
            run.add("stale", [m], _single_evidence(m, why))
    _orphans(db, namespace, facts, run)
    report.seconds = round(time.perf_counter() - began, 3)
    return report


def _orphans(db: Database, namespace: str, facts: list[dict], run: _Run) -> None:
    by_id = {m["id"]: m for m in facts}
    with db.connect() as conn:
        missing = store.missing_sources(conn, namespace)
        cited = [m["id"] for m in facts if m["source_event_ids"] and m["id"] not in missing]
        projects = store.source_projects(conn, cited)
    for memory_id, events in missing.items():
        run.add("orphan", [by_id[memory_id]], _single_evidence(
            by_id[memory_id], "none of its source turns exists any more",
            source_event_ids=events))
    for memory_id, paths in sorted(projects.items()):
        local = [p for p in paths if p.startswith("/")]
        if local and len(local) == len(paths) and not any(Path(p).exists() for p in local):
            run.add("orphan", [by_id[memory_id]], _single_evidence(
                by_id[memory_id], "the project folders it came from no longer exist",
                projects=sorted(local)))
    for m in facts:
        if m["topic"] is None:
            run.add("orphan", [m], _single_evidence(m, "it has no topic (not classified)"))


def close_obsolete(db: Database, namespace: str, facts: list[dict], *, actor: str) -> int:
    """Close open findings whose memories are no longer current facts or whose texts
    changed since (the finding no longer describes the vault). Wiki findings are about
    files, not facts: they stay."""
    current = {m["id"]: m["content_hash"] for m in facts}
    closed = 0
    with db.connect() as conn:
        for f in store.findings(conn, namespaces=[namespace], status="open",
                                kinds=["contradiction", "stale", "orphan", "near_duplicate"]):
            shown = {m["id"]: m["content_hash"] for m in f["evidence"].get("memories", [])}
            if any(current.get(i) != h for i, h in shown.items()):
                store.close_finding(conn, f["id"], "obsolete", actor)
                closed += 1
    return closed


def lint(db: Database, namespaces: list[str], *, llm: LLM | None = None, embedder=None,
         run_id: str | None = None, now: datetime | None = None) -> list[LintReport]:
    """lint_namespace for each namespace, in order."""
    embedder = embedder or vault_embedder()
    return [lint_namespace(db, ns, llm=llm, embedder=embedder, run_id=run_id, now=now)
            for ns in namespaces]


__all__ = ["LintReport", "close_obsolete", "fingerprint", "lint", "lint_namespace",
           "stale_reason"]
