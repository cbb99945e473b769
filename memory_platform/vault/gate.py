"""The dedup gate: is a text aimed at a primary namespace already known there?

Every way a memory enters review goes through it: the dream's candidates (dream/dedup.py
run_dedup, which records a verdict row per candidate) and an agent's ideas
(vault/service.py add_idea, MCP `vault_add`). It lives in the vault because it reads only the
vault (memories, their vectors, namespaces) and an optional LLM judge, nothing of the
dream's tables, so the vault's own write paths can hold the rule without importing the
dream (the layers in pyproject's [tool.importlinter]).

Two stages. The vector stage compares the text's embedding with its nearest neighbours
in the target primary namespace, that namespace's shadows (`<ns>__dream`, `<ns>__ideas`,
pending or reviewer-skipped entries included) and the entries of the same batch already
let through. Above `Thresholds.duplicate`, and only when both texts carry the same
*significant tokens* (numbers, versions, ports, paths, dates, ids), the text is a
duplicate. In the grey band, or whenever those tokens differ, an LLM judge decides
same fact / contradiction / new, with the differing tokens named in its prompt. Below
`Thresholds.grey` the text is new.

Why the token rule: embeddings barely see digits. "uses port 5432" and "uses port 5433"
embed at ~0.98 cosine; one project's 0.88 gate discarded 334 of 3,000 writes of which 2
were true duplicates. Two facts that differ only in such a token are different facts, and
code holds that, not the judge: a `same_fact` answer about a neighbour whose significant
tokens differ becomes `new`, with that neighbour kept on the verdict for the reviewer.

Verdicts: `duplicate` (vector) and `same_fact` (judge) stop the text, with the neighbour
and the evidence recorded; `new` and `contradiction` go on to staging (a contradiction
names the memory it contradicts, for the reviewer).

    verdict = decide(conn, text, "memory-platform", embedder=e, llm=llm)
    found = screen(conn, text, "memory-platform", embedder=e)  # no judge: Verdict or
                                                                # the neighbours to judge
"""

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from memory_platform.llm import LLM
from memory_platform.store import dedup as store
from memory_platform.store import memory_search
from memory_platform.store import namespaces as namespace_store
from memory_platform.vault.judge import (
    JUDGE_PROMPT_VERSION,
    JUDGE_SYSTEM,
    judge_prompt,
    judge_schema,
)
from memory_platform.vault.significant import differing_tokens


@dataclass(frozen=True)
class Thresholds:
    """Every number the gate decides by, in one place; `as_metadata()` goes on each verdict
    row and on the run's metadata.

    Calibrated for all-MiniLM-L6-v2 on benchmarks/data/dedup_pairs.jsonl (157 hand-written
    pairs: 53 same, 66 different, 38 contradiction; `memory-platform bench dedup` measures
    it again and writes benchmarks/results/dedup.json):
    - duplicate = 0.85: among pairs with equal significant tokens, the most similar pairs
      that are not the same fact sit at 0.81 ("Mira is the designer on orchard" / "Mira left
      the orchard project"; "default namespace is personal" / "... is inbox"). At 0.85 the
      vector stage auto-rejects 16 of 53 same pairs with precision 1.0 and no different or
      contradicting pair; 0.82 would add 3 (a 0.01 margin), 0.80 already lets 5 wrong pairs
      through. A naive 0.88 gate without the token rule rejects 40 pairs of which 12
      different and 17 contradictions (precision 0.28).
    - grey = 0.55: same-fact pairs span 0.29-0.95 (a terse hand note such as "pg on 5432"
      against a dream's full sentence sits at 0.51). From 0.55 the judge sees 33 more same
      pairs (49 of 53 reach a decision that can reject them) and 37 of 38 contradictions;
      0.60 would lose 3 more same pairs, 0.45 gains 3 for a judge call on most related facts.
    Another embedding model has other cosines: calibrate it and pass Thresholds(model=...).
    """

    model: str = "all-MiniLM-L6-v2"
    duplicate: float = 0.85  # >= this with equal significant tokens: duplicate, no judge
    grey: float = 0.55  # [grey, duplicate), or >= duplicate with differing tokens: judge
    k: int = 5  # neighbours read from the vault per candidate
    judge_neighbours: int = 3  # at most this many neighbours shown to the judge, best first

    def __post_init__(self) -> None:
        if not 0.0 < self.grey <= self.duplicate <= 1.0:
            raise ValueError(f"need 0 < grey <= duplicate <= 1, got {self.grey}, "
                             f"{self.duplicate}")
        if self.k < 1 or self.judge_neighbours < 1:
            raise ValueError("k and judge_neighbours must be at least 1")

    def as_metadata(self) -> dict[str, Any]:
        return {**asdict(self), "judge_prompt_version": JUDGE_PROMPT_VERSION,
                "token_rule": "no auto-duplicate when significant tokens differ"}


THRESHOLDS = Thresholds()


class DedupError(RuntimeError):
    """The gate could not decide (no judge for a grey-band candidate, a failed judge call,
    thresholds calibrated for another model); the message says which candidate and why."""


# --- the vector stage --------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbour:
    """A known fact the candidate was compared with: a memory, or an earlier candidate of
    the same batch (memory_id None)."""

    text: str
    similarity: float
    namespace: str
    memory_id: int | None = None
    candidate_id: int | None = None
    review: str | None = None

    def describe(self) -> str:
        if self.memory_id is not None:
            where = f"memory {self.memory_id} in {self.namespace}"
            return where + (f" (review: {self.review})" if self.review else "")
        if self.candidate_id is not None:
            return f"candidate {self.candidate_id} of this batch"
        return "an earlier entry of this batch"


@dataclass(frozen=True)
class Accepted:
    """A candidate of the current batch already let through: later candidates of the batch
    are compared with it, so two candidates stating one fact do not both pass."""

    text: str
    namespace: str
    vector: np.ndarray
    candidate_id: int | None = None


@dataclass(frozen=True)
class VectorOutcome:
    """What the vector stage alone concludes. `to_judge` are the neighbours (best first) the
    judge must see when `kind` is 'judge', with their differing tokens."""

    kind: Literal["duplicate", "judge", "new"]
    best: Neighbour | None
    to_judge: tuple[tuple[Neighbour, tuple[str, ...]], ...] = ()


def vector_stage(
    text: str, neighbours: Sequence[Neighbour], thresholds: Thresholds = THRESHOLDS
) -> VectorOutcome:
    """Pure: the decision the similarities and the token rule allow without a judge.
    A duplicate needs similarity >= duplicate AND equal significant tokens; any neighbour at
    or above `grey` that is not such a duplicate sends the candidate to the judge."""
    ranked = sorted(neighbours, key=lambda n: -n.similarity)
    if not ranked:
        return VectorOutcome("new", None)
    for n in ranked:
        if n.similarity < thresholds.duplicate:
            break
        if not differing_tokens(text, n.text):
            return VectorOutcome("duplicate", n)
    grey = [(n, differing_tokens(text, n.text)) for n in ranked
            if n.similarity >= thresholds.grey][: thresholds.judge_neighbours]
    if grey:
        return VectorOutcome("judge", ranked[0], tuple(grey))
    return VectorOutcome("new", ranked[0])


def neighbours(
    conn,
    vector: np.ndarray,
    namespace: str,
    *,
    model: str,
    dims: int,
    batch: Sequence[Accepted] = (),
    k: int = THRESHOLDS.k,
    method: str | None = None,
) -> list[Neighbour]:
    """The k nearest known facts for a candidate aimed at primary `namespace`: active
    memories there, pending and skipped entries of its shadows, and the batch's accepted
    candidates for the same namespace. Most similar first. `method` ('exact' or 'hnsw')
    overrides memory_search.nearest_memories' choice by namespace size (the benchmark
    compares)."""
    scope = [namespace, namespace_store.shadow_of(namespace, "dream"),
             namespace_store.shadow_of(namespace, "ideas")]
    found = [
        Neighbour(text=row["text"], similarity=float(row["similarity"]),
                  namespace=row["namespace"], memory_id=int(row["id"]), review=row["review"])
        for row in memory_search.nearest_memories(conn, model, dims, vector, scope, k=k,
                                                  method=method)
    ]
    same_ns = [a for a in batch if a.namespace == namespace]
    if same_ns:
        sims = np.stack([a.vector for a in same_ns]) @ np.asarray(vector, dtype=np.float32)
        found += [Neighbour(text=a.text, similarity=float(s), namespace=a.namespace,
                            candidate_id=a.candidate_id) for a, s in zip(same_ns, sims)]
    found.sort(key=lambda n: -n.similarity)
    return found[:k]


# --- deciding ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    verdict: Literal["new", "duplicate", "same_fact", "contradiction"]
    decided_by: Literal["vector", "judge"]
    reason: str
    neighbour: Neighbour | None = None
    differing_tokens: tuple[str, ...] = ()
    judge_called: bool = False

    @property
    def accepted(self) -> bool:
        """True when the candidate goes on to staging (new, or a flagged contradiction)."""
        return self.verdict in store.ACCEPTED

    @property
    def similarity(self) -> float | None:
        return None if self.neighbour is None else self.neighbour.similarity


def judge(
    llm: LLM, text: str, shown: Sequence[tuple[Neighbour, tuple[str, ...]]]
) -> Verdict:
    """Ask the LLM about a grey-band text. LLMRefused / LLMCallFailed propagate.

    The judge's `same_fact` about a neighbour whose significant tokens differ from the
    text's is not followed: two facts that differ in a number, version, port, path or date
    are never merged, whatever the model says. Such a text is `new`, and the verdict keeps
    that neighbour and the differing tokens, so the reviewer sees both side by side."""
    result = llm.complete(judge_prompt(text, shown), system=JUDGE_SYSTEM,
                          schema=judge_schema(len(shown)), max_tokens=300,
                          purpose="dedup-judge")
    answer = result.parsed
    if answer is None:  # a provider that ignored the schema: a bug, not a verdict
        raise DedupError(f"judge returned no parsed answer for {text[:80]!r}")
    index = (answer.neighbour or 1) - 1
    neighbour, tokens = shown[index]
    detail = f" (differing tokens: {', '.join(tokens)})" if tokens else ""
    vs = f"vs {neighbour.describe()} at {neighbour.similarity:.3f}"
    if answer.relation == "same_fact" and tokens:
        return Verdict(
            verdict="new", decided_by="judge",
            reason=f"judge said same fact ({answer.reason}), but the significant tokens "
                   f"differ ({', '.join(tokens)}): never merged, kept for review beside "
                   f"its neighbour; {vs}",
            neighbour=neighbour, differing_tokens=tokens, judge_called=True,
        )
    return Verdict(
        verdict=answer.relation, decided_by="judge",
        reason=f"judge: {answer.reason}{detail}; {vs}",
        neighbour=neighbour, differing_tokens=tokens, judge_called=True,
    )


def screen(
    conn,
    text: str,
    namespace: str,
    *,
    embedder,
    thresholds: Thresholds = THRESHOLDS,
    vector: np.ndarray | None = None,
    batch: Sequence[Accepted] = (),
) -> Verdict | VectorOutcome:
    """The gate without its judge: the Verdict the vector stage reaches on its own
    (duplicate, or new), else the VectorOutcome whose `to_judge` neighbours an LLM must
    judge (`judge`)."""
    check_model(embedder, thresholds)
    if vector is None:
        vector = embedder.embed([text])[0]
    found = neighbours(conn, vector, namespace, model=embedder.name, dims=embedder.dims,
                       batch=batch, k=thresholds.k)
    outcome = vector_stage(text, found, thresholds)
    if outcome.kind == "duplicate":
        n = outcome.best
        assert n is not None
        return Verdict("duplicate", "vector",
                       f"similarity {n.similarity:.3f} >= {thresholds.duplicate} with the same "
                       f"significant tokens as {n.describe()}", neighbour=n)
    if outcome.kind == "new":
        n = outcome.best
        reason = (f"nearest is {n.describe()} at {n.similarity:.3f} < {thresholds.grey}"
                  if n else "no stored memory to compare with")
        return Verdict("new", "vector", reason, neighbour=n)
    return outcome


def decide(
    conn,
    text: str,
    namespace: str,
    *,
    embedder,
    llm: LLM | None,
    thresholds: Thresholds = THRESHOLDS,
    vector: np.ndarray | None = None,
    batch: Sequence[Accepted] = (),
) -> Verdict:
    """Decide one text aimed at primary `namespace` against the vault (and `batch`).
    `llm` may be None only if no grey-band judgement is needed (else DedupError)."""
    found = screen(conn, text, namespace, embedder=embedder, thresholds=thresholds,
                   vector=vector, batch=batch)
    if isinstance(found, Verdict):
        return found
    if llm is None:
        raise DedupError(f"{text[:80]!r} is in the grey band (nearest "
                         f"{found.best.similarity:.3f}) and needs an LLM judge; none given")
    return judge(llm, text, found.to_judge)


def check_model(embedder, thresholds: Thresholds) -> None:
    if embedder.name != thresholds.model:
        raise DedupError(
            f"dedup thresholds are calibrated for {thresholds.model!r}, not {embedder.name!r}; "
            f"measure the new model's cosines with `memory-platform bench dedup` and pass "
            f"Thresholds(model={embedder.name!r}, ...)")


__all__ = [
    "THRESHOLDS", "Accepted", "DedupError", "Neighbour", "Thresholds", "VectorOutcome",
    "Verdict", "check_model", "decide", "judge", "neighbours", "screen", "vector_stage",
]
