"""The verdict the model returns, and the code that judges it.

The schema (pydantic) is what the provider layer validates and re-asks for: a malformed
answer is asked again, then refused. `problems()` is the second line: handles in range and
in the part shown, no handle twice, reasons from the closed set with what each needs, the
evidence present and checked against the repository (the file exists and has that line,
the commit exists), the original of a duplicate kept, and Chesterton's fence (a memory
filed as a decision or worded as one is cut only as contradicted or wrong with a commit or
a memory naming its reversal, as a duplicate of another decision record, or as a secret).
Any problem refuses the whole run: nothing is cut.
"""

import re
from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory_platform.curator.listing import Chunk, Listing
from memory_platform.curator.repo_tools import Refused, RepoTools
from memory_platform.privacy.masking import looks_like_secret

Reason = Literal["stale", "duplicate", "contradicted", "wrong", "secret"]

# A memory that reads as a decision or a failed attempt: kept unless the evidence shows the
# decision was reversed. Broad on purpose: a false match only asks for better evidence.
DECISION = re.compile(
    r"\bdecid(?:e|ed|es|ing)\b|\bdecision\b|\bchose\b|\bchosen\b"
    r"|\b(?:we|i)\s+(?:tried|picked|went with|settled on|rejected|abandoned|dropped|"
    r"switched)\b"
    r"|\btried\b.*\b(?:instead|didn'?t work|did not work|failed)\b"
    r"|\b(?:don'?t|do not|never)\s+use\b|\binstead of\b|\brather than\b",
    re.IGNORECASE)


class Evidence(BaseModel):
    """One piece of evidence: exactly one of file (with its line), commit, handle or date,
    and a note saying what it shows."""

    model_config = ConfigDict(extra="forbid")
    file: str | None = Field(None, description="path relative to the repository root")
    line: int | None = Field(None, ge=1, description="the line in `file`")
    commit: str | None = Field(None, description="a commit id")
    handle: int | None = Field(None, description="another memory's handle")
    date: str | None = Field(None, description="YYYY-MM-DD: the date that has passed")
    note: str = Field(..., min_length=1, max_length=500, description="what it shows")

    @model_validator(mode="after")
    def _one_kind(self):
        kinds = [k for k in ("file", "commit", "handle", "date") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("give exactly one of file, commit, handle or date")
        if self.file is not None and self.line is None:
            raise ValueError("file evidence needs the line")
        if self.line is not None and self.file is None:
            raise ValueError("line goes with file")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("file", "commit", "handle", "date") if getattr(self, k) is not None)


class Cut(BaseModel):
    model_config = ConfigDict(extra="forbid")
    handle: int
    reason: Reason
    of: int | None = Field(None, description="duplicate of / contradicted by this handle")
    evidence: list[Evidence] = Field(..., min_length=1)


class Proposal(BaseModel):
    """A merge (memories saying one thing) or a contradiction (memories that cannot all be
    true): never executed, staged for review with the text that should hold."""

    model_config = ConfigDict(extra="forbid")
    handles: list[int] = Field(..., min_length=2)
    text: str = Field(..., min_length=1, max_length=2000)
    why: str = Field(..., min_length=1, max_length=1000)


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cuts: list[Cut] = Field(default_factory=list)
    merges: list[Proposal] = Field(default_factory=list)
    contradictions: list[Proposal] = Field(default_factory=list)

    @classmethod
    def combine(cls, parts: list["Verdict"]) -> "Verdict":
        return cls(cuts=[c for p in parts for c in p.cuts],
                   merges=[m for p in parts for m in p.merges],
                   contradictions=[c for p in parts for c in p.contradictions])


def is_decision_record(text: str, category: str | None = None) -> bool:
    """A memory filed as a decision, or one whose words record a decision or a failed
    attempt."""
    return category == "decision" or bool(DECISION.search(text))


def problems(verdict: Verdict, listing: Listing, chunk: Chunk,
             repo: RepoTools | None) -> list[str]:
    """Everything wrong with one part's verdict (empty: valid)."""
    found: list[str] = []
    cut_handles = [c.handle for c in verdict.cuts]

    def in_part(handle: int | None, what: str) -> bool:
        if handle is None or not chunk.holds(handle):
            found.append(f"{what}: handle {handle} is not one of the handles shown "
                         f"({chunk.first}..{chunk.last})")
            return False
        return True

    seen: set[int] = set()
    for cut in verdict.cuts:
        where = f"cut of handle {cut.handle}"
        if not in_part(cut.handle, where):
            continue
        if cut.handle in seen:
            found.append(f"{where}: the handle is cut twice")
        seen.add(cut.handle)
        if cut.of is not None:
            if cut.of == cut.handle:
                found.append(f"{where}: a memory cannot be its own {cut.reason} source")
            elif in_part(cut.of, f"{where} ('of')") and cut.of in cut_handles:
                found.append(f"{where}: handle {cut.of}, which it names as the kept "
                             f"original, is cut too: both would be lost")
        if cut.reason == "duplicate" and cut.of is None:
            found.append(f"{where}: a duplicate names the handle it duplicates ('of')")
        kinds = {e.kind for e in cut.evidence}
        if cut.reason == "contradicted" and cut.of is None and not kinds & {"file", "commit"}:
            found.append(f"{where}: contradicted by what? name the handle ('of') or give "
                         f"file or commit evidence")
        if cut.reason == "wrong" and kinds == {"date"}:
            found.append(f"{where}: 'wrong' needs file, commit or handle evidence")
        for evidence in cut.evidence:
            found.extend(_evidence_problems(evidence, where, chunk, repo))
        row = listing.row(cut.handle)
        if is_decision_record(row["text"], row.get("category")) and not _fence_opens(
                cut, kinds, listing):
            found.append(f"{where}: it records a decision or a failed attempt; it is kept "
                         f"unless the evidence names what reversed it: reason "
                         f"'contradicted' or 'wrong' with a commit, or a current memory "
                         f"recording the reversal ('of' or handle evidence); a file line "
                         f"shows what the code does now, not that the decision was undone")
    claimed: set[int] = set()
    for kind, proposals in (("merge", verdict.merges), ("contradiction", verdict.contradictions)):
        for i, proposal in enumerate(proposals, 1):
            where = f"{kind} {i}"
            if len(set(proposal.handles)) != len(proposal.handles):
                found.append(f"{where}: a handle is named twice")
            for handle in proposal.handles:
                if not in_part(handle, where):
                    continue
                if handle in seen:
                    found.append(f"{where}: handle {handle} is also cut")
                if handle in claimed:
                    found.append(f"{where}: handle {handle} is in another merge or "
                                 f"contradiction")
                claimed.add(handle)
            if looks_like_secret(proposal.text):
                found.append(f"{where}: the proposed text looks like it holds a credential")
    return found


def _fence_opens(cut: Cut, kinds: set[str], listing: Listing) -> bool:
    """Chesterton's fence, in code: a decision record goes only when nothing of it is lost
    (a duplicate of a memory that records the decision too), when it must (a secret), or
    when the evidence names what reversed it: 'contradicted' or 'wrong' with a commit, or
    with a current memory (`of`, or handle evidence) recording the reversal. A file line
    alone never opens it: "we tried SQLite, it broke, use PostgreSQL" next to a file that
    uses PostgreSQL is the decision carried out, not undone."""
    if cut.reason == "secret":
        return True
    if cut.reason == "duplicate":
        if cut.of is None or not 1 <= cut.of <= len(listing):
            return False
        kept = listing.row(cut.of)
        return is_decision_record(kept["text"], kept.get("category"))
    if cut.reason not in ("contradicted", "wrong"):
        return False
    return cut.of is not None or bool(kinds & {"commit", "handle"})


def _evidence_problems(evidence: Evidence, where: str, chunk: Chunk,
                       repo: RepoTools | None) -> list[str]:
    kind = evidence.kind
    if kind in ("file", "commit") and repo is None:
        return [f"{where}: {kind} evidence, but this namespace has no repository"]
    if kind == "file":
        try:
            lines = repo.line_count(evidence.file)
        except Refused as exc:
            return [f"{where}: evidence {evidence.file!r}: {exc}"]
        except OSError as exc:
            return [f"{where}: evidence {evidence.file!r}: {exc}"]
        if evidence.line > max(lines, 1):
            return [f"{where}: evidence {evidence.file}:{evidence.line}, but the file has "
                    f"{lines} lines"]
    elif kind == "commit":
        if not repo.commit_exists(evidence.commit):
            return [f"{where}: evidence commit {evidence.commit!r} is not in the repository"]
    elif kind == "handle":
        if not chunk.holds(evidence.handle):
            return [f"{where}: evidence handle {evidence.handle} is not one of the handles "
                    f"shown"]
    else:
        try:
            date.fromisoformat(evidence.date)
        except ValueError:
            return [f"{where}: evidence date {evidence.date!r} is not YYYY-MM-DD"]
    return []
