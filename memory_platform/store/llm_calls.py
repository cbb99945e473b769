"""SQL for the LLM call log (table `llm_calls`, migration 0002)."""

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

import psycopg
from psycopg.rows import class_row


class CallFacts(Protocol):
    """What a call log row is made of; `memory_platform.llm.CallStats` and `LLMResult` fit.
    A protocol, so the store does not depend on the llm package."""

    provider: str
    model: str
    purpose: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    latency_ms: int
    credential_source: str
    attempts: int
    sdk_retries: int


@dataclass(frozen=True)
class LLMCall:
    id: int
    created_at: datetime
    provider: str
    model: str
    purpose: str
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    latency_ms: int
    credential_source: str
    attempts: int
    sdk_retries: int
    ok: bool
    error: str | None
    run_id: str | None


_COLUMNS = (
    "id, created_at, provider, model, purpose, input_tokens, output_tokens, cost_usd, "
    "latency_ms, credential_source, attempts, sdk_retries, ok, error, run_id"
)


def record_call(
    conn: psycopg.Connection,
    call: CallFacts,
    *,
    error: str | None = None,
    run_id: str | None = None,
) -> int:
    """Insert one call; `error` None means it succeeded. Returns the row id."""
    row = conn.execute(
        """INSERT INTO llm_calls (provider, model, purpose, input_tokens, output_tokens,
               cost_usd, latency_ms, credential_source, attempts, sdk_retries, ok, error,
               run_id)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
           RETURNING id""",
        (
            call.provider,
            call.model,
            call.purpose,
            call.input_tokens,
            call.output_tokens,
            # Rounded to the column's scale, through str: a float's binary expansion would
            # otherwise land in numeric.
            None if call.cost_usd is None else Decimal(str(round(call.cost_usd, 8))),
            call.latency_ms,
            call.credential_source,
            call.attempts,
            call.sdk_retries,
            error is None,
            error,
            run_id,
        ),
    ).fetchone()
    assert row is not None
    return row[0]


def recent_calls(
    conn: psycopg.Connection, limit: int = 50, *, run_id: str | None = None
) -> list[LLMCall]:
    """The latest `limit` calls, newest first (optionally of one run)."""
    where = "WHERE run_id = %(run_id)s" if run_id is not None else ""
    with conn.cursor(row_factory=class_row(LLMCall)) as cur:
        cur.execute(
            f"SELECT {_COLUMNS} FROM llm_calls {where} ORDER BY id DESC LIMIT %(limit)s",
            {"run_id": run_id, "limit": limit},
        )
        return cur.fetchall()


def count_calls(conn: psycopg.Connection, *, run_id: str | None = None) -> int:
    """How many calls are logged; pairs with `recent_calls` so a capped list can be checked."""
    where = "WHERE run_id = %(run_id)s" if run_id is not None else ""
    row = conn.execute(f"SELECT count(*) FROM llm_calls {where}", {"run_id": run_id}).fetchone()
    assert row is not None
    return row[0]
