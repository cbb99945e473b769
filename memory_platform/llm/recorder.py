"""Every call on the books: a provider wrapper that logs each call to `llm_calls` and keeps
the totals a Dagster asset reports as run metadata."""

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from memory_platform.llm.base import CallStats, LLMCallError, LLMResult, Provider
from memory_platform.store import Database, llm_calls

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


class CallRecorder:
    """Wraps a provider; `complete()` is the provider's, plus a row per call (successful or
    not) when given a database, and running totals for `as_metadata()`.

    Usable wherever a provider is. A failure to write the row raises: an unlogged call is
    exactly what this exists to prevent. Given a zero-argument factory instead of a
    provider, it builds the provider at the first call: a run with nothing to send never
    needs one configured.
    """

    def __init__(
        self,
        provider: Provider | Callable[[], Provider],
        *,
        db: Database | None = None,
        run_id: str | None = None,
    ):
        self._provider = provider
        self.db = db
        self.run_id = run_id
        self._lock = threading.Lock()  # Dagster may call from several threads
        self.calls: list[tuple[CallStats, str | None]] = []  # (stats, error or None)

    @property
    def provider(self) -> Provider:
        if not hasattr(self._provider, "complete"):  # a factory: build on first use
            self._provider = self._provider()
        return self._provider

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def model(self) -> str:
        return self.provider.model

    @property
    def credential_source(self) -> str:
        return self.provider.credential_source

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        schema: type[M] | None = None,
        max_tokens: int = 1024,
        purpose: str = "",
    ) -> LLMResult[M]:
        provider = self.provider  # a missing configuration raises here: not a call
        started = time.monotonic()
        try:
            result = provider.complete(
                prompt, system=system, schema=schema, max_tokens=max_tokens, purpose=purpose
            )
        except Exception as exc:
            stats = exc.stats if isinstance(exc, LLMCallError) else None
            if stats is None:  # not an LLM error (a bug, a missing executable): still a call
                stats = CallStats(
                    provider=provider.name,
                    model=provider.model,
                    purpose=purpose,
                    input_tokens=0,
                    output_tokens=0,
                    cost_usd=None,
                    latency_ms=round((time.monotonic() - started) * 1000),
                    credential_source=provider.credential_source,
                    attempts=1,
                )
            self._record(stats, f"{type(exc).__name__}: {exc}")
            raise
        self._record(result, None)
        return result

    def _record(self, stats: CallStats, error: str | None) -> None:
        # Keep only the accounting: holding every answer's text would grow with the run.
        facts = CallStats(**{f.name: getattr(stats, f.name) for f in dataclasses.fields(CallStats)})
        with self._lock:
            self.calls.append((facts, error))
        if error is not None:
            log.warning("llm call failed: %s/%s: %s", facts.provider, facts.model, error)
        if self.db is not None:
            with self.db.connect() as conn:
                llm_calls.record_call(conn, facts, error=error, run_id=self.run_id)

    def as_metadata(self) -> dict[str, Any]:
        """Totals for Dagster `MaterializeResult(metadata=...)`: plain values only.
        `llm_cost_usd` sums the known estimates; `llm_calls_cost_unknown` says how many
        calls it leaves out, so a partial sum is never mistaken for the total."""
        with self._lock:
            calls = list(self.calls)
        known_costs = [s.cost_usd for s, _ in calls if s.cost_usd is not None]
        return {
            "llm_calls": len(calls),
            "llm_calls_failed": sum(error is not None for _, error in calls),
            "llm_input_tokens": sum(s.input_tokens for s, _ in calls),
            "llm_output_tokens": sum(s.output_tokens for s, _ in calls),
            "llm_cost_usd": round(sum(known_costs), 6),
            "llm_calls_cost_unknown": len(calls) - len(known_costs),
            "llm_latency_ms": sum(s.latency_ms for s, _ in calls),
            "llm_attempts": sum(s.attempts for s, _ in calls),
            "llm_sdk_retries": sum(s.sdk_retries for s, _ in calls),
            "llm_models": dict(Counter(f"{s.provider}/{s.model}" for s, _ in calls)),
            "llm_credential_sources": dict(Counter(s.credential_source for s, _ in calls)),
        }
