"""The demo's Claude Code sessions: bookminder's search moves from SQLite FTS5 to PostgreSQL
tsvector (ADR-004), tidepool's E0502 fix with a subagent, and smaller follow-ups.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from memory_platform.synthetic.claude_code import encode_cwd, todo_list
from memory_platform.synthetic.claude_code_session import ClaudeCodeSession
from memory_platform.synthetic.common import Clock, FileSink, random_uuid
from memory_platform.synthetic.demo_files import (
    DEMO_BOOK,
    DEMO_CACHE_RS,
    DEMO_E0502,
    DEMO_EVICT_NEW,
    DEMO_EVICT_OLD,
    DEMO_FTS_MIGRATION,
    DEMO_IMPORTER,
    DEMO_LOCKED,
    DEMO_MODEL,
    DEMO_MODELS_PY,
    DEMO_SEARCH_FTS,
    DEMO_SEARCH_PG,
    DEMO_SEARCH_STUB,
    DEMO_SYNC_NEW,
    DEMO_SYNC_OLD,
    DEMO_TIDE,
    DEMO_TSV_MIGRATION,
)
from memory_platform.synthetic.vocabulary import SLUG_WORDS


def _demo_session(
    rng: random.Random, clk: Clock, cwd: str, t: float, branch: str
) -> ClaudeCodeSession:
    return ClaudeCodeSession(
        rng,
        clk,
        session_id=random_uuid(rng),
        cwd=cwd,
        branch=branch,
        version="2.1.14",
        model=DEMO_MODEL,
        t=t,
        slug="-".join(rng.sample(SLUG_WORDS, 3)),
    )


def _demo_ask(s: ClaudeCodeSession, t: float, text: str) -> None:
    s.t = t
    s.prompt(text, gap=(0.0, 0.0))


def demo_claude_code(
    sink: FileSink, root: Path, rng: random.Random, clk: Clock, at: Callable[..., float],
    day: Callable[[int], str],
) -> tuple[int, int]:  # fmt: skip
    sessions: list[ClaudeCodeSession] = []
    book = lambda rel: f"{DEMO_BOOK}/{rel}"  # noqa: E731
    tide = lambda rel: f"{DEMO_TIDE}/{rel}"  # noqa: E731

    # Day -9: FTS5 search, the first attempt.
    s = _demo_session(rng, clk, DEMO_BOOK, at(9, "09:12"), "feat/search")
    _demo_ask(s, at(9, "09:12"), "add full-text search over book highlights to bookminder. we're "
              "on SQLite locally, so FTS5 is probably the easiest. keep the PR small, I prefer "
              "small PRs I can review in one sitting.")  # fmt: skip
    s.think("Dana wants search over highlights. SQLite ships FTS5, so an external-content FTS "
            "table kept in sync by triggers is the smallest change. I should look at the "
            "Highlight model and the routes first.")  # fmt: skip
    s.say("I'll look at the highlight model and the existing routes first.")
    s.read(book("src/bookminder/db/models.py"), DEMO_MODELS_PY)
    s.grep("Highlight", DEMO_BOOK, [book("src/bookminder/api/search.py"),
                                     book("src/bookminder/db/models.py")])  # fmt: skip
    s.say("Plan: an FTS5 virtual table over `highlights` kept in sync by triggers, and a "
          "`GET /search?q=` endpoint ranked by bm25.")  # fmt: skip
    todo = ["Add FTS5 table and triggers", "Implement GET /search", "Add tests for search"]
    s.todo([], todo_list(todo, 0))
    s.write(book("alembic/versions/0007_highlights_fts.py"), DEMO_FTS_MIGRATION)
    s.edit(book("src/bookminder/api/search.py"), DEMO_SEARCH_STUB, DEMO_SEARCH_STUB,
           DEMO_SEARCH_FTS)  # fmt: skip
    s.snapshot_update("src/bookminder/api/search.py", 2)
    s.bash("uv run pytest -q tests/test_search.py", "Run the search tests",
           "............\n12 passed in 0.84s")  # fmt: skip
    s.todo(todo_list(todo, 0), todo_list(todo, 3))
    s.say("Search works: `GET /search?q=stoic` returns highlights ranked by bm25, the FTS table "
          "is kept in sync by an insert trigger, and 12 tests pass. The diff is 3 files, "
          "+118 lines.")  # fmt: skip
    _demo_ask(s, at(9, "09:41"), "nice. commit it")
    s.bash('git add -A && git commit -m "Add FTS5 search over highlights"', "Commit",
           "[feat/search 3f9c2a1] Add FTS5 search over highlights\n 3 files changed, "
           "118 insertions(+), 2 deletions(-)")  # fmt: skip
    s.say("Committed as 3f9c2a1 on feat/search.")
    s.summary("Add SQLite FTS5 search over highlights")
    sessions.append(s)

    # Day -8: it breaks under concurrent writers; the decision.
    s = _demo_session(rng, clk, DEMO_BOOK, at(8, "14:03"), "feat/search")
    _demo_ask(s, at(8, "14:03"), "CI is red on feat/search:\n```\nsqlite3.OperationalError: "
              "database is locked\n```\nit happens in test_import_while_searching. the Kindle "
              "importer and the API write at the same time.")  # fmt: skip
    s.think("`database is locked` means a second writer waited longer than the busy timeout. "
            "SQLite allows one writer at a time; WAL lets readers proceed but not two writers. "
            "The importer probably holds one transaction for the whole file.")  # fmt: skip
    s.bash("uv run pytest -x tests/test_importer.py", "Reproduce the failure", DEMO_LOCKED,
           ok=False)  # fmt: skip
    s.read(book("src/bookminder/importer.py"), DEMO_IMPORTER)
    s.bash("sqlite3 data/bookminder.db 'PRAGMA journal_mode;'", "Check journal mode", "wal")
    s.say("Found it. `import_kindle_clippings` holds a single write transaction for the whole "
          "file (2,000 clippings in the test fixture), and the FTS trigger makes every insert "
          "heavier. SQLite allows exactly one writer, and WAL mode (already on) only helps "
          "readers, so the API's write times out with `database is locked`.\n\nOptions:\n"
          "1. batch the importer into short transactions and raise `busy_timeout` (a patch; "
          "it will come back with more writers)\n2. funnel all writes through one queue\n"
          "3. move search to PostgreSQL, which production already runs")  # fmt: skip
    _demo_ask(s, at(8, "14:31"), "we tried SQLite FTS5 and it broke with concurrent writers. "
              "let's not patch around it: move search to PostgreSQL tsvector with a GIN index. "
              "and no mocks for the database in tests — use the real Postgres on port 5433. "
              "write the decision down first.")  # fmt: skip
    adr = (
        "# ADR-004: Search on PostgreSQL tsvector, not SQLite FTS5\n\n"
        f"Date: {day(8)}\nStatus: accepted\n\n## Context\nWe tried SQLite FTS5 for highlight "
        "search (3f9c2a1). It broke as soon as the Kindle importer and the API wrote at the "
        "same time: `sqlite3.OperationalError: database is locked`. SQLite allows one writer; "
        "WAL only helps readers.\n\n## Decision\nUse PostgreSQL (already our production "
        "database) with a generated `tsvector` column and a GIN index, queried with "
        "`websearch_to_tsquery`.\n\n## Consequences\n- local dev needs Postgres: `docker "
        "compose up -d postgres` (port 5433)\n- tests run against the real database, no mocks\n"
        "- migration 0008 drops the FTS5 table from 0007\n"
    )
    s.write(book("docs/decisions/004-search-backend.md"), adr)
    s.say("Decision recorded in docs/decisions/004-search-backend.md (ADR-004): search moves "
          "to PostgreSQL `tsvector` + GIN, tests use the real Postgres on port 5433. I'd do the "
          "migration in a separate small PR.")  # fmt: skip
    s.summary("Decide: PostgreSQL tsvector instead of SQLite FTS5 (database is locked)")
    sessions.append(s)

    # Day -7: the migration.
    s = _demo_session(rng, clk, DEMO_BOOK, at(7, "10:20"), "feat/pg-search")
    _demo_ask(s, at(7, "10:20"), "implement ADR-004: tsvector column on highlights, GIN index, "
              "websearch_to_tsquery in /search. tests against the real postgres on 5433 "
              "(docker compose).")  # fmt: skip
    s.bash("docker compose up -d postgres", "Start Postgres",
           " Container bookminder-postgres-1  Started")  # fmt: skip
    s.write(book("alembic/versions/0008_highlights_tsvector.py"), DEMO_TSV_MIGRATION)
    s.bash("DATABASE_URL=postgresql://dana@localhost:5433/bookminder uv run alembic upgrade head",
           "Apply the migration",
           "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
           "INFO  [alembic.runtime.migration] Running upgrade 0007 -> 0008, highlights: "
           "tsvector search")  # fmt: skip
    s.edit(book("src/bookminder/api/search.py"), DEMO_SEARCH_FTS, DEMO_SEARCH_FTS,
           DEMO_SEARCH_PG)  # fmt: skip
    s.snapshot_update("src/bookminder/api/search.py", 3)
    s.bash("uv run pytest -q", "Run the whole suite against Postgres",
           "...............................\n31 passed in 4.12s")  # fmt: skip
    s.say("Done. Search now runs on PostgreSQL: a generated `search` tsvector column with a GIN "
          "index, `websearch_to_tsquery` for the query and `ts_rank_cd` for ordering. "
          "test_import_while_searching passes; 31 tests, all against the real database.")
    _demo_ask(s, at(7, "11:02"), "how fast is it on the big fixture?")
    s.bash("uv run python scripts/bench_search.py --rows 250000", "Benchmark search",
           "250,000 highlights, 500 queries, 4 concurrent writers\np50 12 ms  p95 95 ms  "
           "p99 140 ms")  # fmt: skip
    s.say("p95 is 95 ms on 250k highlights with 4 concurrent writers. For comparison, FTS5 was "
          "at 840 ms p95 under the same write load before it started failing.")  # fmt: skip
    s.summary("Move search to PostgreSQL tsvector + GIN (ADR-004)")
    sessions.append(s)

    # Day -6: E0502 in tidepool, with a subagent looking for other call sites.
    s = _demo_session(rng, clk, DEMO_TIDE, at(6, "16:40"), "feat/offline-cache")
    _demo_ask(s, at(6, "16:40"), f"cargo build fails in tidepool:\n```\n{DEMO_E0502}\n```\n"
              "this is in evict_stale. fix it, and explain why it happens")  # fmt: skip
    s.think("Classic E0502: `self.entries.iter()` holds an immutable borrow for the whole loop "
            "and `self.entries.remove()` needs a mutable one. `HashMap::retain` does the "
            "filtering in place with a single mutable borrow. I should check whether other "
            "code does the same thing.")  # fmt: skip
    s.read(tide("src/cache.rs"), DEMO_CACHE_RS)

    def explore(child: ClaudeCodeSession) -> str:
        child.prompt("Find every caller of Cache::evict_stale and any other place in tidepool "
                     "that mutates a collection while iterating over it.",
                     with_snapshot=False, gap=(0.01, 0.2))  # fmt: skip
        child.grep("evict_stale", DEMO_TIDE, [tide("src/cache.rs"), tide("src/sync.rs")])
        child.grep(r"\.iter\(\)", DEMO_TIDE, [tide("src/cache.rs"), tide("src/forecast.rs")])
        child.read(tide("src/forecast.rs"), "pub fn next_high(preds: &[Prediction]) -> "
                   "Option<&Prediction> {\n    preds.iter().filter(|p| p.kind == Kind::High)"
                   ".min_by_key(|p| p.at)\n}")  # fmt: skip
        answer = ("evict_stale is called once, from src/sync.rs:57 after each sync. The only "
                  "mutate-while-iterating pattern is the loop in src/cache.rs:85-91; "
                  "src/forecast.rs only reads.")  # fmt: skip
        child.say(answer)
        return answer

    sub = s.task("Find mutate-while-iterating", "Find every caller of Cache::evict_stale and "
                 "any other place in tidepool that mutates a collection while iterating over it.",
                 "Explore", explore)  # fmt: skip
    s.say("Why it happens: `for (station, entry) in self.entries.iter()` keeps an immutable "
          "borrow of `self.entries` alive for the whole loop, and `self.entries.remove(station)` "
          "needs a mutable borrow of the same map at the same time. Rust forbids that (E0502) "
          "because removing could invalidate the iterator.\n\nFix: `HashMap::retain`, which "
          "walks and removes in one mutable borrow.")  # fmt: skip
    s.edit(tide("src/cache.rs"), DEMO_CACHE_RS, DEMO_EVICT_OLD, DEMO_EVICT_NEW)
    s.bash("cargo build && cargo test cache", "Build and run cache tests",
           "   Compiling tidepool v0.3.2 (/Users/dana/code/tidepool)\n    Finished `dev` profile "
           "[unoptimized + debuginfo] target(s) in 3.41s\nrunning 14 tests\ntest result: ok. 14 "
           "passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s")
    s.say("Fixed: `evict_stale` now uses `self.entries.retain(|_, e| e.expires_at >= now)` and "
          "returns how many entries it dropped. Build is green, 14 cache tests pass. The subagent "
          "found no other place that mutates while iterating.")  # fmt: skip
    _demo_ask(s, at(6, "17:05"), "much cleaner. btw I prefer anyhow in the binary and thiserror "
              "in the library crate — check that cache.rs follows that")  # fmt: skip
    s.grep("anyhow", f"{DEMO_TIDE}/src", [tide("src/cache.rs"), tide("src/bin/tidepool.rs")])
    s.edit(tide("src/cache.rs"), DEMO_CACHE_RS, "use anyhow::Result;",
           "#[derive(Debug, thiserror::Error)]\npub enum CacheError {\n    #[error(\"cannot read "
           "cache file\")]\n    Io(#[from] std::io::Error),\n    #[error(\"corrupt cache\")]\n"
           "    Json(#[from] serde_json::Error),\n}")  # fmt: skip
    s.bash("cargo clippy --all-targets -- -D warnings", "Lint",
           "    Finished `dev` profile [unoptimized + debuginfo] target(s) in 2.87s")
    s.say("cache.rs (library) now returns `CacheError` (thiserror); anyhow stays only in "
          "src/bin/tidepool.rs. Clippy is clean.")  # fmt: skip
    s.summary("Fix E0502 in Cache::evict_stale with HashMap::retain")
    sessions.append(s)

    # Day -4: --station flag and retries.
    s = _demo_session(rng, clk, DEMO_TIDE, at(4, "11:05"), "feat/station-flag")
    _demo_ask(s, at(4, "11:05"), "add a --station flag to `tidepool sync` (instead of the "
              "positional arg) and retry NOAA requests with exponential backoff, max 5 attempts")
    s.read(tide("src/sync.rs"), DEMO_SYNC_OLD)
    s.edit(tide("src/sync.rs"), DEMO_SYNC_OLD, DEMO_SYNC_OLD, DEMO_SYNC_NEW)
    s.edit(tide("src/bin/tidepool.rs"), "    /// Station id, e.g. 9414290 (San Francisco)\n"
           "    station: u32,", "    station: u32,",
           "    #[arg(long, env = \"TIDEPOOL_STATION\")]\n    station: u32,")  # fmt: skip
    s.bash("cargo test", "Run all tests", "running 31 tests\ntest result: ok. 31 passed; 0 "
           "failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.41s")  # fmt: skip
    s.say("Added `--station <id>` (also read from `TIDEPOOL_STATION`) and retries: 250 ms, "
          "500 ms, 1 s, 2 s, then give up after the 5th attempt; only timeouts, connection "
          "errors and 5xx are retried. 31 tests pass. Note this is a breaking CLI change.")
    _demo_ask(s, at(4, "11:31"), "run it against station 9414290")
    s.bash("cargo run --release -- sync --station 9414290", "Sync San Francisco",
           "synced 744 predictions for San Francisco (9414290) in 1.9s (2 retries)")
    s.say("Works: 744 predictions for San Francisco, two retries on the way (NOAA returned 503 "
          "twice).")  # fmt: skip
    s.summary("tidepool: --station flag and NOAA retries with backoff")
    sessions.append(s)

    # Day -2: ranking, a compaction, and a limit parameter.
    s = _demo_session(rng, clk, DEMO_BOOK, at(2, "09:30"), "feat/search-ranking")
    _demo_ask(s, at(2, "09:30"), "search results: exact title matches should rank above "
              "highlight matches. use ts_rank_cd with weights")  # fmt: skip
    s.read(book("alembic/versions/0008_highlights_tsvector.py"), DEMO_TSV_MIGRATION)
    s.write(book("alembic/versions/0009_search_title_weight.py"),
            '"""weight book titles (A) above highlight text (B)"""\n\nrevision = "0009"\n'
            'down_revision = "0008"\n')  # fmt: skip
    s.bash("uv run pytest -q tests/test_search.py", "Run search tests",
           "..............\n14 passed in 1.02s")  # fmt: skip
    s.say("Titles now carry weight A and highlight text weight B, so an exact title match wins. "
          "14 search tests pass, including a new one for the ranking order.")  # fmt: skip
    s.compact("This session is being continued from a previous conversation that ran out of "
              "context. The conversation is summarized below:\nAnalysis:\nDana asked for title "
              "matches to rank above highlight matches in bookminder search (PostgreSQL "
              "tsvector, ADR-004).\n\nSummary:\n1. Primary Request and Intent:\n   Weighted "
              "ranking with ts_rank_cd.\n2. Files and Code Sections:\n   - alembic/versions/"
              "0009_search_title_weight.py\n3. Pending Tasks:\n   None.", trigger="manual")
    _demo_ask(s, at(2, "10:12"), "also add a `?limit=` param, default 20, max 100")
    s.edit(book("src/bookminder/api/search.py"), DEMO_SEARCH_PG,
           "def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:",
           "def search(\n    q: str, limit: int = Query(20, ge=1, le=100), "
           "db: Session = Depends(get_db)\n) -> list[HighlightOut]:")  # fmt: skip
    s.bash("uv run pytest -q tests/test_search.py", "Run search tests",
           "................\n16 passed in 1.10s")  # fmt: skip
    s.say("Added `limit` (default 20, 1-100, validated by FastAPI). 16 tests pass.")
    s.summary("Weighted search ranking and a limit parameter")
    sessions.append(s)

    # Day -1: tidepool release.
    s = _demo_session(rng, clk, DEMO_TIDE, at(1, "17:10"), "main")
    _demo_ask(s, at(1, "17:10"), "prepare the v0.4.0 release: changelog, bump Cargo.toml. call "
              "out breaking changes in the changelog — the --station flag replaced the "
              "positional arg")  # fmt: skip
    s.read(tide("CHANGELOG.md"), "# Changelog\n\n## [0.3.2]\n\n### Fixed\n- Handle stations "
           "without harmonic constants.")  # fmt: skip
    s.edit(tide("CHANGELOG.md"), "# Changelog\n\n## [0.3.2]", "# Changelog\n",
           f"# Changelog\n\n## [0.4.0] - {day(1)}\n\n### Breaking\n- `tidepool sync` takes "
           "`--station <id>` instead of a positional argument.\n\n### Added\n- Retries with "
           "exponential backoff for NOAA requests (max 5 attempts).\n\n### Fixed\n- "
           "`Cache::evict_stale` compiles again (E0502), now uses `retain`.\n")  # fmt: skip
    s.edit(tide("Cargo.toml"), '[package]\nname = "tidepool"\nversion = "0.3.2"',
           'version = "0.3.2"', 'version = "0.4.0"')  # fmt: skip
    s.bash("cargo build --release", "Release build",
           "   Compiling tidepool v0.4.0 (/Users/dana/code/tidepool)\n    Finished `release` "
           "profile [optimized] target(s) in 38.12s")  # fmt: skip
    s.say("Ready: CHANGELOG has a 0.4.0 section with the `--station` change under **Breaking**, "
          "Cargo.toml is at 0.4.0 and the release build passes.")  # fmt: skip
    _demo_ask(s, at(1, "17:26"), "tag it")
    s.bash('git commit -am "Release v0.4.0" && git tag -a v0.4.0 -m "tidepool 0.4.0"',
           "Commit and tag", "[main 9b1e4d7] Release v0.4.0\n 2 files changed, 14 insertions(+), "
           "1 deletion(-)")  # fmt: skip
    s.say("Tagged v0.4.0 (9b1e4d7). Push with `git push --follow-tags` when you're ready.")
    s.summary("Release tidepool v0.4.0")
    sessions.append(s)

    lines = files = 0
    for sess in sessions:
        folder = root / "claude-code" / "projects" / encode_cwd(sess.cwd)
        text = sess.text()
        sink.put(folder / f"{sess.session_id}.jsonl", text)
        lines += text.count("\n")
        files += 1
    sub_text = sub.text()
    owner = sessions[3]
    path = (root / "claude-code" / "projects" / encode_cwd(owner.cwd) / owner.session_id
            / "subagents" / f"agent-{sub.agent_id}.jsonl")  # fmt: skip
    sink.put(path, sub_text)
    return lines + sub_text.count("\n"), files + 1
