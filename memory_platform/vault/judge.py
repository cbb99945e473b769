"""The dedup gate's LLM judge: its prompt (versioned), and the answer schema it must fill
(same_fact / contradiction / new, naming the [handle] of the memory it matches)."""

from collections.abc import Sequence
from functools import cache
from typing import ClassVar, Literal, Protocol

from pydantic import BaseModel, Field, model_validator

from memory_platform.privacy.masking import masked

JUDGE_PROMPT_VERSION = "dedup-judge-2025-11-29"


class Quoted(Protocol):
    """A stored memory as the judge is shown it."""

    text: str


class JudgeAnswer(BaseModel):
    """The judge's answer. `neighbour` is the [handle] of the memory the candidate matches
    or contradicts; it may be left out when only one memory was shown."""

    relation: Literal["same_fact", "contradiction", "new"]
    neighbour: int | None = Field(default=None, description="handle of the memory it matches")
    reason: str = Field(min_length=1, max_length=600, description="one sentence")

    handles: ClassVar[int] = 1

    @model_validator(mode="after")
    def _names_its_neighbour(self) -> "JudgeAnswer":
        if self.neighbour is not None and not 1 <= self.neighbour <= self.handles:
            raise ValueError(f"neighbour must be one of the handles 1..{self.handles}")
        if self.relation != "new" and self.neighbour is None:
            if self.handles > 1:
                raise ValueError("name the handle of the memory it matches in `neighbour`")
            self.neighbour = 1
        return self


@cache
def judge_schema(handles: int) -> type[JudgeAnswer]:
    """JudgeAnswer for a prompt showing `handles` memories (the schema names the range)."""

    class Answer(JudgeAnswer):
        neighbour: int | None = Field(default=None, ge=1, le=handles,
                                      description="handle [n] of the memory it matches")

    Answer.handles = handles
    Answer.__name__ = Answer.__qualname__ = "JudgeAnswer"
    return Answer


JUDGE_SYSTEM = (
    "You keep a person's long-term memory free of duplicates. You compare one candidate "
    "memory with memories already stored and say how it relates to them. Be strict about "
    "values: numbers, versions, ports, paths, dates, ids and names are what make a fact that "
    "fact."
)

JUDGE_PROMPT = """Candidate memory:
{candidate}

Stored memories it is closest to:
{neighbours}

Decide the candidate's relation to these memories:
- "same_fact": it states a fact a stored memory already states, possibly in other words,
  and adds nothing a future reader would need. Terse notes and full sentences can be the
  same fact.
- "contradiction": same subject, but a value that cannot also be true (a port, version,
  path, date, owner or preference that changed). Name that memory.
- "new": anything else, including a related but different fact.
Two facts that differ only in a number, version, port, path, date or id are different
facts: "new", or "contradiction" when the subject can hold only one value. They are the
same fact only if the differing tokens are one value written two ways.
Give `neighbour` (the [handle] of the memory it matches or contradicts) and a one-sentence
`reason`."""


def judge_prompt(text: str, shown: Sequence[tuple[Quoted, tuple[str, ...]]]) -> str:
    """The judge's prompt; credentials are masked in every text it quotes and in the
    prompt as a whole (rule 10)."""
    lines = []
    for i, (n, tokens) in enumerate(shown, 1):
        lines.append(f"[{i}] {masked(n.text)}")
        if tokens:
            lines.append("    tokens that differ from the candidate: "
                         + ", ".join(masked(t) for t in tokens))
    return masked(JUDGE_PROMPT.format(candidate=masked(text), neighbours="\n".join(lines)))
