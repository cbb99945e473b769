"""The provider contract: one `complete()` call, its result, its errors, and structured output.

A provider implements `send()` (one round trip to its vendor, transport retries included);
`Provider.complete()` adds what every provider shares: the JSON-schema instructions, pydantic
validation, re-asking with the validation error, and the accounting of tokens, cost, latency
and attempts across those re-asks.
"""

import json
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from memory_platform.llm import pricing

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

# One chat turn, in the shape both vendors' SDKs accept: {"role": "user"|"assistant",
# "content": str}. The system prompt travels separately (Anthropic takes it apart).
Message = dict[str, str]

DEFAULT_MAX_ATTEMPTS = 3
# A validation error can quote a whole malformed answer back; the re-ask needs the gist only.
_MAX_ERROR_CHARS = 2000


class LLMError(RuntimeError):
    """Base of every error this package raises."""


class LLMNotConfigured(LLMError):
    """No usable provider: the message names the settings to set."""


@dataclass(frozen=True, kw_only=True)
class CallStats:
    """What one `complete()` cost, whether it succeeded or not. Summed over its attempts."""

    provider: str
    model: str
    purpose: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # estimate; None when the model's price is unknown (local models)
    latency_ms: int
    credential_source: str
    attempts: int  # round trips made for structured-output validation (not SDK retries)
    sdk_retries: int = 0  # transport retries the vendor SDK made (429, 5xx) inside them


@dataclass(frozen=True, kw_only=True)
class LLMResult(CallStats, Generic[M]):
    text: str
    parsed: M | None = None  # the validated model when a schema was given


class LLMCallError(LLMError):
    """A call that was made and failed. `stats` holds what it cost until it failed (tokens
    spent on refused answers are real money); `Provider.complete()` fills it in."""

    def __init__(self, message: str):
        super().__init__(message)
        self.stats: CallStats | None = None


class LLMCallFailed(LLMCallError):
    """The vendor or the transport failed, after the SDK's own retries."""

    def __init__(self, message: str, *, status_code: int | None = None):
        super().__init__(message)
        self.status_code = status_code


class LLMRefused(LLMCallError):
    """The model never produced an answer matching the schema within `max_attempts`."""

    def __init__(self, message: str, *, validation_error: str, last_text: str):
        super().__init__(message)
        self.validation_error = validation_error
        self.last_text = last_text


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One vendor round trip, as a provider's `send()` reports it."""

    text: str
    model: str  # the model the vendor says answered (may be a dated id for an alias)
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None  # vendor-reported (the Claude CLI); else estimated
    sdk_retries: int = 0
    truncated: bool = False  # stopped at max_tokens: a JSON answer is then likely cut off


def schema_instructions(schema: type[BaseModel]) -> str:
    """The text appended to a prompt that asks for structured output."""
    schema_json = json.dumps(schema.model_json_schema(), separators=(",", ":"))
    return (
        "Answer with one JSON object and nothing else (no prose, no code fence). "
        f"It must validate against this JSON Schema:\n{schema_json}"
    )


def parse_structured(text: str, schema: type[M]) -> M:
    """Validate an answer against `schema`. Raises pydantic's ValidationError (which also
    covers invalid JSON). A single surrounding code fence is tolerated: models add one even
    when told not to, and it carries no meaning; anything else around the JSON is refused."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and body.count("```") == 2:
        body = body[3:-3]
        first_line, _, rest = body.partition("\n")
        if first_line.strip().isalpha() or not first_line.strip():  # the "json" language tag
            body = rest
        body = body.strip()
    return schema.model_validate_json(body)


def _reask(error: str, truncated: bool) -> str:
    cut = (
        " Your answer was cut off at the token limit: answer more briefly."
        if truncated
        else ""
    )
    return (
        f"That answer was not valid.{cut} The validation error was:\n{error}\n\n"
        "Reply again with only the corrected JSON object."
    )


def _describe(error: ValidationError) -> str:
    """The validation error, one line per problem, without pydantic's doc links."""
    lines = [f"{error.error_count()} validation error(s) for {error.title}:"]
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"]) or "(the answer)"
        lines.append(f"- {where}: {problem['msg']}")
    text = "\n".join(lines)
    if len(text) > _MAX_ERROR_CHARS:
        text = text[:_MAX_ERROR_CHARS] + " …"
    return text


class LLM(Protocol):
    """What pipeline code needs: a Provider or a CallRecorder wrapping one."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def credential_source(self) -> str: ...

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        schema: type[M] | None = None,
        max_tokens: int = 1024,
        purpose: str = "",
    ) -> "LLMResult[M]": ...


class Provider(ABC):
    """An LLM behind `complete()`. Subclasses set `name`/`model` and implement `send()` and
    `credential_source`."""

    name: str
    model: str
    max_attempts: int = DEFAULT_MAX_ATTEMPTS

    @property
    @abstractmethod
    def credential_source(self) -> str:
        """Which credential the calls use, in words fit for a log line (never the secret)."""

    @abstractmethod
    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        """One round trip. Raise LLMCallFailed for vendor and transport errors; `json_mode`
        asks for the vendor's JSON mode where it has a cheap one."""

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        schema: type[M] | None = None,
        max_tokens: int = 1024,
        purpose: str = "",
    ) -> LLMResult[M]:
        """Ask once; with `schema`, validate the answer and re-ask with the validation error
        up to `max_attempts` times in all, then raise LLMRefused."""
        started = time.monotonic()
        content = prompt if schema is None else f"{prompt}\n\n{schema_instructions(schema)}"
        messages: list[Message] = [{"role": "user", "content": content}]
        totals = _Totals()
        attempts_allowed = 1 if schema is None else max(1, self.max_attempts)
        last_error = ""
        last_text = ""
        model = self.model
        for attempt in range(1, attempts_allowed + 1):
            try:
                completion = self.send(
                    messages, system=system, max_tokens=max_tokens, json_mode=schema is not None
                )
            except LLMCallError as exc:
                exc.stats = totals.stats(self, model, purpose, started, attempt)
                raise
            model = completion.model or self.model
            totals.add(completion, self.model)
            if schema is None:
                return self._result(totals, model, purpose, started, attempt, completion.text)
            try:
                parsed = parse_structured(completion.text, schema)
            except ValidationError as exc:
                last_error, last_text = _describe(exc), completion.text
                log.info(
                    "%s/%s: answer %d of %d does not match %s; %s",
                    self.name, model, attempt, attempts_allowed, schema.__name__,
                    "re-asking" if attempt < attempts_allowed else "refusing",
                )
                # The vendor rejects an empty assistant turn; keep the turn so the model
                # sees what it said.
                messages.append({"role": "assistant", "content": completion.text or "(empty)"})
                reask = _reask(last_error, completion.truncated)
                messages.append({"role": "user", "content": reask})
                continue
            return self._result(totals, model, purpose, started, attempt, completion.text, parsed)
        assert schema is not None
        refused = LLMRefused(
            f"{self.name}/{model} gave no answer matching {schema.__name__} in "
            f"{attempts_allowed} attempts; last validation error: {last_error}",
            validation_error=last_error,
            last_text=last_text,
        )
        refused.stats = totals.stats(self, model, purpose, started, attempts_allowed)
        raise refused

    def _result(
        self,
        totals: "_Totals",
        model: str,
        purpose: str,
        started: float,
        attempts: int,
        text: str,
        parsed: BaseModel | None = None,
    ) -> LLMResult:
        stats = totals.stats(self, model, purpose, started, attempts)
        result: LLMResult = LLMResult(**vars(stats), text=text, parsed=parsed)
        log.info(
            "llm call %s/%s purpose=%s tokens=%d+%d cost=%s latency=%dms attempts=%d "
            "credential=%s",
            result.provider, result.model, purpose or "-", result.input_tokens,
            result.output_tokens, "?" if result.cost_usd is None else f"${result.cost_usd:.6f}",
            result.latency_ms, attempts, result.credential_source,
        )
        return result


@dataclass
class _Totals:
    input_tokens: int = 0
    output_tokens: int = 0
    costs: list[float | None] = field(default_factory=list)
    sdk_retries: int = 0

    def add(self, completion: Completion, configured_model: str) -> None:
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.sdk_retries += completion.sdk_retries
        cost = completion.cost_usd
        # The reported id first (it is what ran); the configured name when a proxy reports
        # an id of its own.
        for model in (completion.model, configured_model):
            if cost is None:
                cost = pricing.estimate_cost(
                    model, completion.input_tokens, completion.output_tokens
                )
        self.costs.append(cost)

    def stats(
        self, provider: Provider, model: str, purpose: str, started: float, attempts: int
    ) -> CallStats:
        # One unknown price makes the sum unknown: a partial figure would read as the total.
        cost = (
            None
            if any(c is None for c in self.costs)
            else sum(c for c in self.costs if c is not None)
        )
        if not self.costs:
            # Failed before any answer: vendors do not bill a 429 or a 500.
            cost = 0.0 if pricing.estimate_cost(model, 0, 0) is not None else None
        return CallStats(
            provider=provider.name,
            model=model,
            purpose=purpose,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=cost,
            latency_ms=round((time.monotonic() - started) * 1000),
            credential_source=provider.credential_source,
            attempts=attempts,
            sdk_retries=self.sdk_retries,
        )
