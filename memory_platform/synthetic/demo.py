"""`generate_demo`: the fixed first-run history.

A new user's first look: Dana works on bookminder (Python/FastAPI, reading highlights) and
tidepool (a Rust CLI for tide predictions) over ten days. Threads worth finding again:
- decision: SQLite FTS5 broke with concurrent writers ("database is locked") -> PostgreSQL
  tsvector + GIN (ADR-004), p95 840 ms -> 95 ms;
- bug fix: error[E0502] in tidepool's Cache::evict_stale, fixed with HashMap::retain;
- preferences: small PRs, real Postgres on port 5433 in tests (no mocks), anyhow in
  binaries / thiserror in libraries, breaking changes called out in the changelog,
  vegetarian and no cilantro.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memory_platform.synthetic.common import Clock, FileSink, build_manifest
from memory_platform.synthetic.demo_chats import (
    demo_chatgpt,
    demo_claude_ai,
    demo_gemini,
    demo_notes,
)
from memory_platform.synthetic.demo_claude_code import demo_claude_code


def generate_demo(root: Path, *, today: date | None = None) -> dict[str, Any]:
    """Write the fixed first-run demo history (about 200 events over the last ten days).

    Everything except the dates is fixed. The story is anchored on `today` (default: today's
    date in UTC) and ends yesterday, so nothing is in the future. Returns the same manifest
    shape as `generate_history`.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    anchor = today or datetime.now(timezone.utc).date()
    midnight = datetime(anchor.year, anchor.month, anchor.day, tzinfo=timezone.utc).timestamp()

    def at(days_ago: int, hhmm: str) -> float:
        hours, minutes = hhmm.split(":")
        return midnight - days_ago * 86400 + int(hours) * 3600 + int(minutes) * 60

    def day(days_ago: int) -> str:
        return (anchor - timedelta(days=days_ago)).isoformat()

    rng = random.Random(20250917)  # ids and small gaps only; the story itself is fixed
    clk = Clock()
    sink = FileSink()
    try:
        cc = demo_claude_code(sink, root, rng, clk, at, day)
        ai = demo_claude_ai(root, rng, clk, at)
        gpt = demo_chatgpt(root, rng, clk, at)
        gem = demo_gemini(root, rng, clk, at)
        notes = demo_notes(sink, root, clk, at, day)
    finally:
        sink.close()
    parts = {"claude-code": cc, "claude-ai": ai, "chatgpt": gpt, "gemini": gem, "notes": notes}
    by_source = {source: n for source, (n, _) in parts.items()}
    return build_manifest(root, by_source, sum(f for _, f in parts.values()), clk)
