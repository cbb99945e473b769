"""A scripted provider for tests and pipeline logic: answers given in advance, every call
recorded."""

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from memory_platform.llm.base import DEFAULT_MAX_ATTEMPTS, Completion, Message, Provider


@dataclass(frozen=True)
class ScriptedCall:
    """What a ScriptedProvider was asked, one entry per round trip."""

    messages: list[Message]
    system: str | None
    max_tokens: int
    json_mode: bool

    @property
    def prompt(self) -> str:
        return self.messages[-1]["content"]


# An answer: text, a model (sent as its JSON), or an exception to raise from the round trip.
ScriptedAnswer = str | BaseModel | Exception
Responder = Callable[[ScriptedCall], ScriptedAnswer]


@dataclass
class ScriptedProvider(Provider):
    """Canned answers for tests and pipeline logic: a queue, or a function of the call.
    Goes through the same `complete()` (validation, re-asks, accounting) as the real ones."""

    answers: Iterable[ScriptedAnswer] | Responder = ()
    model: str = "scripted"
    name: str = "scripted"
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    cost_per_call: float | None = None
    calls: list[ScriptedCall] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._responder = self.answers if callable(self.answers) else None
        self._queue: deque[ScriptedAnswer] = (
            deque() if callable(self.answers) else deque(self.answers)
        )

    def add(self, *answers: ScriptedAnswer) -> None:
        self._queue.extend(answers)

    @property
    def credential_source(self) -> str:
        return "none (scripted)"

    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        call = ScriptedCall([dict(m) for m in messages], system, max_tokens, json_mode)
        self.calls.append(call)
        if self._responder is not None:
            answer = self._responder(call)
        elif self._queue:
            answer = self._queue.popleft()
        else:
            raise RuntimeError(
                f"ScriptedProvider has no answer left for call {len(self.calls)}: "
                f"{call.prompt[:200]!r}"
            )
        if isinstance(answer, Exception):
            raise answer
        text = answer.model_dump_json() if isinstance(answer, BaseModel) else answer
        prompt_chars = sum(len(m["content"]) for m in messages) + len(system or "")
        return Completion(
            text=text,
            model=self.model,
            # A rough 4 characters per token, so totals and metadata have numbers to add.
            input_tokens=-(-prompt_chars // 4),
            output_tokens=-(-len(text) // 4),
            cost_usd=self.cost_per_call,
        )
