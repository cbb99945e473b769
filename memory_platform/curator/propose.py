"""Ask the model for one week's verdict on one namespace, judge it, and record it.

The listing is built and fingerprinted, split into prompts when it is too large for one
(handles stay global; each part is judged on its own handles), each part is asked and its
verdict validated, and the breaker judges the whole. The run is recorded in
`curator_runs` as proposed (waiting for the cut step) or refused (invalid verdict, or the
breaker), with what the model was shown (handles -> memory ids, fingerprint) and said.
Nothing is cut here. A partition that was already executed is not asked again.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from memory_platform.curator import breaker, listing, prompt
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.repo_tools import RepoTools
from memory_platform.curator.verdict import Verdict, problems
from memory_platform.llm import LLM, LLMRefused
from memory_platform.store import Database
from memory_platform.store import curator as store

VERDICT_MAX_TOKENS = 8192
MAX_PROBLEMS_SHOWN = 20


@dataclass
class Proposal:
    """What a verdicts step did for one partition."""

    namespace: str
    week: date
    status: str  # proposed | refused | already_executed
    dry_run: bool = False
    run_pk: int | None = None
    refusal: str | None = None
    detail: str | None = None
    listed: int = 0
    proposed_cuts: int = 0
    max_cuts: int = 0
    ceiling: float = 0.0
    chunks: int = 0
    listing_tokens: int = 0
    repo: str | None = None
    agent: str | None = None
    verdict: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def as_metadata(self) -> dict[str, Any]:
        reasons: dict[str, int] = {}
        for cut in self.verdict.get("cuts", []):
            reasons[cut["reason"]] = reasons.get(cut["reason"], 0) + 1
        return {
            "namespace": self.namespace, "week": self.week.isoformat(), "status": self.status,
            "dry_run": self.dry_run, "curator_run_id": self.run_pk, "refusal": self.refusal,
            "detail": self.detail, "listed": self.listed, "proposed_cuts": self.proposed_cuts,
            "max_cuts": self.max_cuts, "ceiling": self.ceiling, "chunks": self.chunks,
            "listing_tokens": self.listing_tokens, "repo": self.repo, "agent": self.agent,
            "reasons": reasons, "merges": len(self.verdict.get("merges", [])),
            "contradictions": len(self.verdict.get("contradictions", [])),
            "problems": self.problems[:MAX_PROBLEMS_SHOWN],
        }


def propose(db: Database, namespace: str, week: date, *, agent: Callable[[], LLM],
            dagster_run_id: str, config: CuratorConfig, repo: Path | None,
            dry_run: bool = False, now: datetime | None = None,
            log: Callable[[str], None] = lambda _: None) -> Proposal:
    """Ask, judge and record one partition's verdict. `agent` builds the model on first
    need: an executed partition or an empty namespace asks nothing."""
    now = now or datetime.now(timezone.utc)
    with db.connect() as conn:
        done = [r for r in store.partition_runs(conn, namespace, week)
                if r["status"] == "executed"]
    if done:
        return Proposal(namespace, week, "already_executed", run_pk=done[-1]["id"],
                        detail=f"week {week} of {namespace} was executed by curator run "
                               f"{done[-1]['id']}; nothing is asked or cut twice")
    shown = listing.build(db, namespace, now)
    ceiling = config.ceiling_for(namespace)
    parts = listing.chunks(shown, config.prompt_tokens) if len(shown) else []
    tools = RepoTools(repo) if repo is not None else None
    result = Proposal(namespace, week, "proposed", dry_run=dry_run, listed=len(shown),
                      ceiling=ceiling, chunks=len(parts),
                      listing_tokens=sum(c.tokens for c in parts),
                      repo=str(repo) if repo else None,
                      max_cuts=breaker.max_cuts(len(shown), ceiling))
    verdicts: list[Verdict] = []
    model = agent() if parts else None
    result.agent = f"{model.name}/{model.model}" if model is not None else "none (empty)"
    try:
        for number, chunk in enumerate(parts, 1):
            log(f"{namespace} {week}: asking {result.agent} about handles "
                f"{chunk.first}..{chunk.last} ({chunk.tokens} tokens, part {number} of "
                f"{len(parts)})")
            answer = model.complete(
                prompt.task(namespace, chunk, total=len(shown), parts=len(parts), part=number,
                            repo=result.repo, today=now.date().isoformat()),
                system=prompt.SYSTEM, schema=Verdict, max_tokens=VERDICT_MAX_TOKENS,
                purpose="curator")
            found = problems(answer.parsed, shown, chunk, tools)
            prefix = f"part {number}: " if len(parts) > 1 else ""
            result.problems += [prefix + p for p in found]
            verdicts.append(answer.parsed)
    except LLMRefused as exc:
        result.problems.append(f"the model gave no well-formed verdict: {exc.validation_error}")
    verdict = Verdict.combine(verdicts)
    result.verdict = verdict.model_dump(mode="json", exclude_none=True)
    result.proposed_cuts = len(verdict.cuts)
    judgement = breaker.judge(len(verdict.cuts), len(shown), ceiling)
    if result.problems:
        result.status, result.refusal = "refused", "invalid_verdict"
        result.detail = (f"invalid verdict ({len(result.problems)} problems): "
                         + "; ".join(result.problems[:5]))
    elif not judgement.passed:
        result.status, result.refusal = "refused", "breaker"
        result.detail = f"circuit breaker: {judgement.explain()}"
    with db.connect() as conn:
        result.run_pk = store.insert_run(
            conn, namespace=namespace, week=week, dagster_run_id=dagster_run_id,
            status=result.status, dry_run=dry_run, refusal=result.refusal,
            refusal_detail=result.detail, memory_ids=shown.memory_ids,
            fingerprint=shown.fingerprint, ceiling=ceiling, max_cuts=result.max_cuts,
            proposed_cuts=result.proposed_cuts, verdict=result.verdict, chunks=len(parts),
            listing_tokens=result.listing_tokens, repo=result.repo, agent=result.agent,
            prompt_version=prompt.PROMPT_VERSION, row_digests=shown.row_digests)
    log(f"{namespace} {week}: {result.status}"
        + (f" ({result.detail})" if result.detail else "")
        + f"; {result.proposed_cuts} cuts proposed of {len(shown)} memories")
    return result


def verdicts_of(db: Database, dagster_run_id: str) -> list[dict]:
    """The verdicts a Dagster run recorded (what the breaker check judges)."""
    with db.connect() as conn:
        return [r for r in store.runs_of(conn, [dagster_run_id])
                if r["dagster_run_id"] == dagster_run_id]
