"""Synthetic AI chat histories written in the real on-disk export formats.

Two entry points:

- `generate_history(root, events, seed=...)`: a large, deterministic, randomly assembled
  history (load tests, search benchmarks). Files are streamed conversation by conversation,
  so a million events never sit in memory at once.
- `generate_demo(root)`: a small hand-written history (two projects, a decision, a bug fix,
  some preferences) anchored on today's date, for a first run.

Layout under `root` (each tree is what the real tool or export puts on disk):

    claude-code/projects/<encoded cwd>/<sessionId>.jsonl
    claude-code/projects/<encoded cwd>/<sessionId>/subagents/agent-<agentId>.jsonl
    claude-ai/conversations.json, claude-ai/projects.json
    chatgpt/conversations.json
    gemini/Takeout/My Activity/Gemini Apps/MyActivity.json
    notes/<date>-<slug>.md

Record shapes follow ../shared/formats/FORMATS.md sections 1-4 and the samples beside it.
Event accounting (what the manifest counts, and what the importers store):
one JSONL line (Claude Code, meta lines included), one claude.ai chat message or
projects.json entry, one ChatGPT mapping node that has a message, two per Gemini
"Prompted" row (prompt + response) and one per other Gemini row, and for notes one per
top-level section when a file has two or more, else one per file.
"""

from __future__ import annotations

import base64
import html
import json
import math
import multiprocessing
import os
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

try:  # optional speed-up; the same JSON values either way (byte layout may differ)
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    orjson = None

SOURCES = ("claude-code", "claude-ai", "chatgpt", "gemini", "notes")
DEFAULT_MIX = {
    "claude-code": 0.6,
    "claude-ai": 0.15,
    "chatgpt": 0.15,
    "gemini": 0.08,
    "notes": 0.02,
}

# claude.ai's parent pointer for the first message of a conversation.
ROOT_PARENT = "00000000-0000-4000-8000-000000000000"
GEMINI_DIR = Path("gemini/Takeout/My Activity/Gemini Apps")

_B58_FIX = str.maketrans("+/0OIl", "xZ9QJk")
_HEX = "0123456789abcdef"
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in _HEX}
_ENCODE_CWD = re.compile(r"[^A-Za-z0-9]")


# --- serialisation and small helpers ------------------------------------------------------


if orjson is not None:

    def _jl(obj: Any) -> str:
        return orjson.dumps(obj).decode()

else:

    def _jl(obj: Any) -> str:
        # Claude Code is written by JS JSON.stringify: compact, non-ASCII left as UTF-8.
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _jq(value: str | None) -> str:
    # Only ever given our own uuids, which need no escaping.
    return "null" if value is None else f'"{value}"'


def encode_cwd(cwd: str) -> str:
    """Claude Code's project folder name: every char outside [A-Za-z0-9] becomes '-'."""
    return _ENCODE_CWD.sub("-", cwd)


def _uuid4(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


def _b58(rng: random.Random, k: int) -> str:
    # base64 of random bytes with the six non-base58 characters mapped onto base58 ones:
    # same look as Anthropic's ids (msg_01..., toolu_01...), a C-speed path instead of choices().
    raw = base64.b64encode(rng.randbytes(k * 3 // 4 + 3)).decode()
    return raw[:k].translate(_B58_FIX)


def _hex(rng: random.Random, k: int) -> str:
    return "%0*x" % (k, rng.getrandbits(4 * k))


def _ri(rng: random.Random, lo: int, hi: int) -> int:
    """randint(lo, hi) without randrange's Python-level overhead (hot paths only)."""
    return lo + int(rng.random() * (hi - lo + 1))


def _unit_rng(seed: int, source: str, index: int) -> random.Random:
    # Each conversation/session gets its own stream so regenerating one (to fit the time
    # window) or generating them in another order gives the same bytes.
    return random.Random(f"{seed}/{source}/{index}")


class _Clock:
    """Formats times the way each source writes them and remembers the extremes written."""

    __slots__ = ("lo", "hi", "_minute", "_prefix")

    def __init__(self) -> None:
        self.lo = 1 << 62  # microseconds since the epoch
        self.hi = -1
        self._minute = -1
        self._prefix = ""

    def _see(self, us: int) -> None:
        if us < self.lo:
            self.lo = us
        if us > self.hi:
            self.hi = us

    def merge(self, other: _Clock) -> None:
        self.merge_range(other.lo, other.hi)

    def merge_range(self, lo: int, hi: int) -> None:
        if hi >= 0:  # hi < 0: nothing was written
            self._see(lo)
            self._see(hi)

    def _stamp(self, s: int) -> str:
        # strftime is the slow part; consecutive records mostly share the minute.
        m, sec = divmod(s, 60)
        if m != self._minute:
            self._minute = m
            self._prefix = time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(m * 60))
        return "%s%02d" % (self._prefix, sec)

    def ms(self, t: float) -> str:
        """Claude Code and Gemini Takeout: `2025-10-12T21:35:53.825Z`."""
        ms = int(t * 1000)
        self._see(ms * 1000)
        s, r = divmod(ms, 1000)
        return "%s.%03dZ" % (self._stamp(s), r)

    def us(self, t: float, suffix: str = "Z") -> str:
        """claude.ai: `2025-07-06T03:10:13.076141Z` (projects.json uses `+00:00`)."""
        us = int(t * 1_000_000)
        self._see(us)
        s, r = divmod(us, 1_000_000)
        return "%s.%06d%s" % (self._stamp(s), r, suffix)

    def epoch(self, t: float) -> float:
        """ChatGPT: float epoch seconds with microseconds."""
        v = round(t, 6)
        self._see(int(round(v * 1_000_000)))
        return v

    def seconds(self, t: float) -> str:
        """Note front matter: `2026-03-10T09:14:00Z`."""
        s = int(t)
        self._see(s * 1_000_000)
        return self._stamp(s) + "Z"


def _iso_from_us(us: int) -> str:
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=us)
    return moment.isoformat()


def _fit(
    gen: Callable[[float, float], tuple[Any, _Clock]],
    base: float,
    scale: float,
    lo: float,
    hi: float,
) -> tuple[Any, _Clock]:
    """Run a unit generator at `base`; if it runs past `hi`, shift it back (never before
    `lo`, squeezing its gaps if it is longer than the whole range) and run it again.
    Generators reseed their own RNG, so a rerun differs only in its times."""
    hi_us = int(hi * 1_000_000)
    for _ in range(8):
        out, clk = gen(base, scale)
        if clk.hi <= hi_us:
            return out, clk
        duration = clk.hi / 1_000_000 - base
        room = max(hi - lo, 1.0)
        if duration > room * 0.95:
            factor = room * 0.9 / duration
            scale *= factor
            duration *= factor
        base = max(lo, hi - duration - 0.5)
    return out, clk


# --- vocabulary -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lang:
    name: str
    fence: str
    comment: str
    files: tuple[str, ...]
    cmds: tuple[str, ...]
    test_cmd: str
    errors: tuple[str, ...]
    causes: tuple[tuple[str, str], ...]
    alts: tuple[tuple[str, str, str], ...]
    libs: tuple[tuple[str, str], ...]
    fns: tuple[str, ...]
    snippets: tuple[str, ...]
    pass_out: str
    fail_out: str


@dataclass(frozen=True)
class _Project:
    name: str
    pkg: str
    lang: str
    cwd: str
    modules: tuple[str, ...]
    weight: float
    branches: tuple[str, ...]


_PY = _Lang(
    name="Python",
    fence="python",
    comment="#",
    files=(
        "src/{pkg}/{mod}.py",
        "src/{pkg}/api/{mod}.py",
        "src/{pkg}/services/{mod}_service.py",
        "tests/test_{mod}.py",
        "src/{pkg}/db/models.py",
        "src/{pkg}/settings.py",
    ),
    cmds=(
        "pytest -q tests/test_{mod}.py",
        "uv run pytest -x -k {fn}",
        "ruff check src tests",
        "mypy src/{pkg}",
        "alembic upgrade head",
        "python -m {pkg}.cli {mod} --dry-run",
        "docker compose up -d postgres",
        "uv lock --upgrade-package {lib}",
    ),
    test_cmd="uv run pytest -q tests/test_{mod}.py",
    errors=(
        "ModuleNotFoundError: No module named '{pkg}.{mod}_v{n}'",
        "sqlalchemy.exc.IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value "
        'violates unique constraint "{mod}_pkey"',
        "TypeError: {fn}() missing 1 required positional argument: '{arg}'",
        "AttributeError: 'NoneType' object has no attribute '{arg}'",
        'psycopg.OperationalError: connection failed: connection to server at "127.0.0.1", '
        "port {port} failed: Connection refused",
        "AssertionError: assert {n} == {m}",
        "KeyError: '{arg}'",
        "RuntimeError: Event loop is closed",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for {Type}\n{arg}\n"
        "  Field required [type=missing, input_type=dict]",
        "sqlite3.OperationalError: database is locked",
        "httpx.ReadTimeout: timed out after {n}.0 seconds",
    ),
    causes=(
        (
            "the engine is created at import time, so the test fixture never sees the "
            "overridden DATABASE_URL",
            "create the engine lazily inside `get_session()`",
        ),
        (
            "`{fn}` returns None on a cache miss instead of raising",
            "raise `LookupError` and let the route turn it into a 404",
        ),
        (
            "two tests share one sqlite file and step on each other under xdist",
            "give each test its own database through the `db` fixture",
        ),
        (
            "the retry decorator swallows `asyncio.CancelledError`",
            "re-raise CancelledError before deciding to retry",
        ),
        (
            "the migration adds a NOT NULL column without a server default",
            "add `server_default` and backfill in a second migration",
        ),
        (
            "`datetime.utcnow()` is naive and gets compared with an aware timestamp",
            "use `datetime.now(timezone.utc)` everywhere",
        ),
        (
            "`{fn}` issues one SELECT per {mod} row (N+1)",
            "use `selectinload()` so the page is two queries instead of {n}",
        ),
    ),
    alts=(
        ("asyncpg", "psycopg 3", "the pool leaked connections under pytest-xdist"),
        ("SQLite FTS5", "PostgreSQL tsvector", "two writers gave us `database is locked`"),
        ("pickle for the cache", "orjson files", "pickles broke after the Python 3.12 upgrade"),
        ("requests", "httpx", "we need async and HTTP/2"),
        ("Celery beat", "a plain cron job", "beat double-fired after every restart"),
        ("pandas", "polars", "the import went from {n} s to {m} s"),
        ("black + isort + flake8", "ruff", "one tool and CI lint went from 40 s to 2 s"),
        ("mocking the database", "a real Postgres in a container", "the mocks hid a bad index"),
    ),
    libs=(
        ("fastapi", "0.115.4"),
        ("pydantic", "2.9.2"),
        ("sqlalchemy", "2.0.36"),
        ("httpx", "0.27.2"),
        ("psycopg", "3.2.3"),
        ("alembic", "1.14.0"),
        ("pytest", "8.3.3"),
        ("polars", "1.12.0"),
        ("celery", "5.4.0"),
        ("redis", "5.2.0"),
    ),
    fns=(
        "get_{mod}",
        "sync_{mod}",
        "parse_{mod}_row",
        "build_{mod}_query",
        "refresh_{mod}_cache",
        "validate_{mod}",
        "import_{mod}_csv",
    ),
    snippets=(
        "def {fn}({arg}: str, *, timeout: float = {n}.0) -> {Type} | None:\n"
        '    """Look up one {mod} by {arg}; None when it does not exist."""\n'
        "    with get_session() as session:\n"
        "        stmt = select({Type}).where({Type}.{arg} == {arg})\n"
        "        row = session.execute(stmt).scalar_one_or_none()\n"
        "    if row is None:\n"
        '        log.info("{mod} miss", extra={{"{arg}": {arg}}})\n'
        "    return row",
        "async def {fn}(client: httpx.AsyncClient, {arg}: str) -> dict[str, Any]:\n"
        "    for attempt in range({n}):\n"
        "        try:\n"
        '            resp = await client.get(f"/api/{mod}/{{{arg}}}", timeout={m})\n'
        "            resp.raise_for_status()\n"
        "            return resp.json()\n"
        "        except httpx.TransportError:\n"
        "            await asyncio.sleep(2**attempt)\n"
        '    raise RuntimeError("{mod} service unavailable")',
        "def test_{fn}(db) -> None:\n"
        '    item = make_{mod}(db, {arg}="x-{n}")\n'
        '    assert {fn}("x-{n}") == item\n'
        '    assert {fn}("missing") is None',
    ),
    pass_out="{dots}\n{n} passed in {secs}s",
    fail_out="{dots}F\n=================================== FAILURES "
    "===================================\n_____ test_{fn} _____\n\n{error}\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_{mod}.py::test_{fn} - {error1}\n1 failed, {n} passed in {secs}s",
)

_RS = _Lang(
    name="Rust",
    fence="rust",
    comment="//",
    files=(
        "src/{mod}.rs",
        "src/{mod}/mod.rs",
        "src/bin/{pkg}.rs",
        "tests/{mod}_test.rs",
        "src/lib.rs",
    ),
    cmds=(
        "cargo test -p {pkg} {mod}",
        "cargo clippy --all-targets -- -D warnings",
        "cargo build --release",
        "cargo run -- sync --station {n}",
        "cargo bench --bench {mod}",
        "RUST_LOG=debug cargo run -- {mod}",
    ),
    test_cmd="cargo test {mod}",
    errors=(
        "error[E0502]: cannot borrow `self.{arg}` as mutable because it is also borrowed "
        "as immutable\n  --> src/{mod}.rs:{line}:{col}",
        "error[E0382]: borrow of moved value: `{arg}`\n  --> src/{mod}.rs:{line}:{col}",
        "error[E0308]: mismatched types: expected `Option<{Type}>`, found `{Type}`",
        "error[E0599]: no method named `{fn}` found for struct `{Type}` in the current scope",
        "error[E0277]: `{Type}` cannot be sent between threads safely",
        "error[E0106]: missing lifetime specifier\n  --> src/{mod}.rs:{line}:{col}",
        "thread 'main' panicked at src/{mod}.rs:{line}:{col}:\n"
        "called `Option::unwrap()` on a `None` value",
        "thread 'tokio-runtime-worker' panicked at src/{mod}.rs:{line}:{col}:\n"
        "index out of bounds: the len is {n} but the index is {m}",
    ),
    causes=(
        (
            "we hold an iterator over `self.{arg}` while calling `self.insert()`",
            "collect the keys first, then mutate (or use the entry API)",
        ),
        (
            "`{arg}` is moved into the spawned task and used again afterwards",
            "clone the `Arc` before `tokio::spawn`",
        ),
        (
            "the `Rc<RefCell<..>>` inside `{Type}` is not Send",
            "give the task sole ownership and talk to it over an mpsc channel",
        ),
        (
            "the parser assumes every line has {n} columns",
            "return `Err(ParseError::ShortRow)` instead of indexing blindly",
        ),
        (
            "the mutex guard on `{arg}` lives across the `.await`",
            "scope the guard in a block so it drops before awaiting",
        ),
    ),
    alts=(
        ("Arc<Mutex<HashMap>>", "dashmap", "lock contention showed up at {n} req/s"),
        ("serde_json::Value everywhere", "typed structs", "a typo in a field went unnoticed"),
        ("the blocking reqwest client", "async reqwest on tokio", "the TUI froze during sync"),
        ("hand-rolled argument parsing", "clap derive", "--help was always out of date"),
        ("sled", "rusqlite", "sled's on-disk format changed between betas"),
    ),
    libs=(
        ("tokio", "1.41.1"),
        ("serde", "1.0.215"),
        ("clap", "4.5.21"),
        ("reqwest", "0.12.9"),
        ("rusqlite", "0.32.1"),
        ("anyhow", "1.0.93"),
        ("thiserror", "2.0.3"),
        ("ratatui", "0.29.0"),
    ),
    fns=("load_{mod}", "refresh_{mod}", "parse_{mod}", "evict_stale", "merge_{mod}"),
    snippets=(
        "pub fn {fn}(&mut self, {arg}: &str) -> Result<{Type}, Error> {{\n"
        "    let entry = self.{arg}s.get({arg}).cloned().ok_or(Error::NotFound)?;\n"
        "    self.hits += 1;\n"
        "    Ok(entry)\n"
        "}}",
        "pub async fn {fn}(client: &Client, station: u32) -> anyhow::Result<Vec<{Type}>> {{\n"
        '    let url = format!("{{}}/stations/{{}}/{mod}", BASE_URL, station);\n'
        "    let body = client.get(url).timeout(Duration::from_secs({n})).send().await?;\n"
        "    Ok(body.json().await?)\n"
        "}}",
        "#[test]\n"
        "fn {fn}_handles_empty_input() {{\n"
        "    let mut cache = {Type}::with_capacity({n});\n"
        '    assert!(cache.{fn}("").is_err());\n'
        "}}",
    ),
    pass_out="running {n} tests\n{oks}\ntest result: ok. {n} passed; 0 failed; 0 ignored; "
    "0 measured; 0 filtered out; finished in {secs}s",
    fail_out="{error}\n\nerror: could not compile `{pkg}` (lib) due to 1 previous error",
)

_TS = _Lang(
    name="TypeScript",
    fence="tsx",
    comment="//",
    files=(
        "src/components/{Mod}.tsx",
        "src/hooks/use{Mod}.ts",
        "src/lib/{mod}.ts",
        "src/components/{Mod}.test.tsx",
        "vite.config.ts",
    ),
    cmds=(
        "pnpm test -- {mod}",
        "pnpm vitest run src/lib/{mod}.test.ts",
        "pnpm tsc --noEmit",
        "pnpm lint --fix",
        "pnpm build",
        "pnpm dev --port {port}",
        "pnpm playwright test e2e/{mod}.spec.ts",
    ),
    test_cmd="pnpm vitest run {mod}",
    errors=(
        "TS2345: Argument of type 'string | undefined' is not assignable to parameter of "
        "type 'string'.",
        "TS2339: Property '{arg}' does not exist on type '{Type}'.",
        "TypeError: Cannot read properties of undefined (reading '{arg}')",
        "Error: Hydration failed because the initial UI does not match what was rendered "
        "on the server.",
        'Warning: Each child in a list should have a unique "key" prop. Check the render '
        "method of `{Mod}`.",
        "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/app/dist/{mod}' imported from "
        "/app/dist/index.js",
        "Uncaught (in promise) AbortError: signal is aborted without reason",
    ),
    causes=(
        (
            "the effect in `use{Mod}` has no cleanup, so a stale request resolves last",
            "abort the previous fetch with an AbortController in the cleanup",
        ),
        (
            "`{arg}` is optional in the API type but `{Mod}` assumes it is set",
            "narrow it with an early return and render a skeleton",
        ),
        (
            "the list uses the array index as key and reorders on sort",
            "use the item id as the key",
        ),
        (
            "Date.now() is rendered on the server and again on the client",
            "render the timestamp in a client-only component",
        ),
        (
            "the ESM build drops the `.js` extension in relative imports",
            'set `moduleResolution: "bundler"` and add the extensions',
        ),
    ),
    alts=(
        ("moment.js", "date-fns", "the bundle went from 212 KB to 41 KB gzip"),
        ("Redux", "Zustand", "three files per feature was too much ceremony"),
        ("Jest", "Vitest", "the suite went from {n} s to {m} s"),
        ("styled-components", "Tailwind", "runtime CSS-in-JS showed up in the profiler"),
        ("useEffect + fetch", "TanStack Query", "we kept re-implementing caching and retries"),
    ),
    libs=(
        ("react", "18.3.1"),
        ("vite", "5.4.11"),
        ("typescript", "5.6.3"),
        ("vitest", "2.1.5"),
        ("@tanstack/react-query", "5.61.0"),
        ("zod", "3.23.8"),
        ("tailwindcss", "3.4.15"),
        ("zustand", "5.0.1"),
    ),
    fns=("use{Mod}", "format{Mod}", "fetch{Mod}", "render{Mod}Row", "to{Mod}Props"),
    snippets=(
        "export function use{Mod}({arg}: string) {{\n"
        "  const [state, setState] = useState<{Type} | null>(null);\n"
        "  useEffect(() => {{\n"
        "    const ctrl = new AbortController();\n"
        "    fetch(`/api/{mod}/${{{arg}}}`, {{ signal: ctrl.signal }})\n"
        "      .then((r) => r.json())\n"
        "      .then(setState);\n"
        "    return () => ctrl.abort();\n"
        "  }}, [{arg}]);\n"
        "  return state;\n"
        "}}",
        "export const {Mod} = ({{ items }}: {{ items: {Type}[] }}) => (\n"
        '  <ul className="space-y-{n}">\n'
        "    {{items.map((item) => (\n"
        "      <li key={{item.id}}>{{item.{arg}}}</li>\n"
        "    ))}}\n"
        "  </ul>\n"
        ");",
        "it('{fn} handles an empty list', () => {{\n"
        "  render(<{Mod} items={{[]}} />);\n"
        "  expect(screen.getByText(/nothing here/i)).toBeInTheDocument();\n"
        "}});",
    ),
    pass_out=" ✓ src/lib/{mod}.test.ts ({n} tests) {ms}ms\n\n Test Files  1 passed (1)\n"
    "      Tests  {n} passed ({n})\n   Duration  {secs}s",
    fail_out=" ❯ src/lib/{mod}.test.ts ({n} tests | 1 failed) {ms}ms\n   × {fn} > handles "
    "the empty case\n     → {error1}\n\n Test Files  1 failed (1)",
)

_GO = _Lang(
    name="Go",
    fence="go",
    comment="//",
    files=(
        "internal/{mod}/{mod}.go",
        "internal/{mod}/{mod}_test.go",
        "cmd/{pkg}/main.go",
        "pkg/{mod}/client.go",
        "go.mod",
    ),
    cmds=(
        "go test ./internal/{mod}/... -run Test{Mod}",
        "go test -race ./...",
        "go vet ./...",
        "golangci-lint run",
        "go build -o bin/{pkg} ./cmd/{pkg}",
        "go mod tidy",
    ),
    test_cmd="go test ./internal/{mod}/...",
    errors=(
        "panic: runtime error: invalid memory address or nil pointer dereference\n"
        "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x{hex}]",
        "./internal/{mod}/{mod}.go:{line}:{col}: undefined: {Fn}",
        "WARNING: DATA RACE\nWrite at 0x00c000{hex} by goroutine {n}:",
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
        "dial tcp 127.0.0.1:{port}: connect: connection refused",
        "--- FAIL: Test{Mod} ({n}.{m}s)",
    ),
    causes=(
        (
            "the retry loop reuses the request body after it was drained",
            "rebuild the body with `req.GetBody()` on every attempt",
        ),
        (
            "the map in `{Mod}Cache` is written from two goroutines",
            "guard it with a `sync.RWMutex`",
        ),
        (
            "the http.Client has no timeout, so a stuck server hangs the upload forever",
            "set `Timeout: {n} * time.Second` on the client",
        ),
        ("`cfg` is nil when the config file is missing", "return a default config instead"),
    ),
    alts=(
        ("cobra + viper", "cobra with plain flags and env", "viper's key folding bit us twice"),
        ("gorilla/mux", "net/http ServeMux patterns", "one less dependency since Go 1.22"),
        ("logrus", "log/slog", "slog is in the standard library now"),
        ("single-request uploads", "chunked uploads of {n} MB", "uploads over 2 GB failed"),
    ),
    libs=(
        ("github.com/spf13/cobra", "v1.8.1"),
        ("google.golang.org/grpc", "v1.68.0"),
        ("github.com/stretchr/testify", "v1.10.0"),
        ("go.uber.org/zap", "v1.27.0"),
    ),
    fns=("{Mod}", "New{Mod}Client", "Upload{Mod}", "Parse{Mod}", "retry{Mod}"),
    snippets=(
        "func (c *{Type}) {Fn}(ctx context.Context, {arg} string) error {{\n"
        "\tctx, cancel := context.WithTimeout(ctx, {n}*time.Second)\n"
        "\tdefer cancel()\n"
        "\treturn c.do(ctx, {arg})\n"
        "}}",
        "func Test{Fn}(t *testing.T) {{\n"
        '\tsrv := httptest.NewServer(handler(t, {n}))\n'
        "\tdefer srv.Close()\n"
        "\trequire.NoError(t, New{Mod}Client(srv.URL).{Fn}(context.Background(), \"x\"))\n"
        "}}",
    ),
    pass_out="ok  \tgithub.com/dana/{pkg}/internal/{mod}\t{secs}s",
    fail_out="--- FAIL: Test{Mod} ({secs}s)\n    {mod}_test.go:{line}: {error1}\nFAIL\n"
    "FAIL\tgithub.com/dana/{pkg}/internal/{mod}\t{secs}s",
)

_INFRA = _Lang(
    name="Terraform/Kubernetes",
    fence="hcl",
    comment="#",
    files=(
        "modules/{mod}/main.tf",
        "modules/{mod}/variables.tf",
        "envs/staging/{mod}.tf",
        "charts/{mod}/values.yaml",
        "charts/{mod}/templates/deployment.yaml",
        ".github/workflows/deploy.yml",
    ),
    cmds=(
        "terraform plan -out=plan.tfplan",
        "terraform -chdir=envs/staging apply plan.tfplan",
        "kubectl -n {mod} rollout status deploy/{mod}-api",
        "kubectl -n {mod} logs deploy/{mod}-api --since=15m",
        "helm upgrade --install {mod} charts/{mod} -f envs/staging/values.yaml",
        "docker compose up -d {mod}",
    ),
    test_cmd="terraform -chdir=envs/staging plan",
    errors=(
        "Error: creating EC2 Instance: UnauthorizedOperation: You are not authorized to "
        "perform this operation.",
        "Back-off restarting failed container {mod}-api in pod {mod}-api-{hex}",
        "OOMKilled (exit code 137), memory limit {n}Mi",
        "Error response from daemon: driver failed programming external connectivity: "
        "Bind for 0.0.0.0:{port} failed: port is already allocated",
        "Error: Error acquiring the state lock: ConditionalCheckFailedException",
        "x509: certificate signed by unknown authority",
    ),
    causes=(
        (
            "the memory limit is {n}Mi but the sidecar alone needs more",
            "raise the limit to {m}Mi and set requests to match",
        ),
        (
            "the readiness probe hits /healthz before migrations finish",
            "add a startupProbe with failureThreshold 30",
        ),
        (
            "a crashed apply left the DynamoDB lock behind",
            "force-unlock with the lock id after checking nobody else is applying",
        ),
        (
            "the ingress points at port {port} but the service exposes 8080",
            "fix targetPort in the chart",
        ),
    ),
    alts=(
        ("one big Terraform state", "a state per environment", "a staging plan touched prod"),
        ("nginx ingress", "Traefik", "we wanted per-route middleware without annotations"),
        ("Docker Hub", "GHCR", "pull rate limits broke CI twice this month"),
    ),
    libs=(
        ("hashicorp/aws", "5.78.0"),
        ("helm", "3.16.3"),
        ("traefik", "3.2.1"),
        ("terraform", "1.9.8"),
    ),
    fns=("{mod}_api", "{mod}_worker", "{mod}_db"),
    snippets=(
        'resource "aws_db_instance" "{mod}" {{\n'
        '  identifier        = "{mod}-staging"\n'
        '  instance_class    = "db.t4g.medium"\n'
        "  allocated_storage = {n}\n"
        "  deletion_protection = true\n"
        "}}",
        "resources:\n  requests:\n    memory: {n}Mi\n    cpu: 250m\n  limits:\n"
        "    memory: {m}Mi",
    ),
    pass_out="Plan: {n} to add, 1 to change, 0 to destroy.",
    fail_out="{error}\n\nOperation failed: failed running terraform plan (exit 1)",
)

_LANGS = {"python": _PY, "rust": _RS, "ts": _TS, "go": _GO, "infra": _INFRA}

_PROJECTS = (
    _Project(
        "bookminder",
        "bookminder",
        "python",
        "/Users/dana/code/bookminder",
        ("shelves", "highlights", "isbn_lookup", "search", "importer", "reminders", "accounts"),
        3.0,
        ("main", "feat/search-ranking", "fix/importer-dupes"),
    ),
    _Project(
        "tidepool",
        "tidepool",
        "rust",
        "/Users/dana/code/tidepool",
        ("cache", "stations", "harmonics", "sync", "parser", "forecast"),
        2.5,
        ("main", "feat/offline-cache", "fix/station-timeouts"),
    ),
    _Project(
        "lumen-ui",
        "lumen",
        "ts",
        "/Users/dana/work/lumen-ui",
        ("Timeline", "SearchBar", "InfiniteList", "ThemeToggle", "AvatarMenu", "Toast"),
        2.0,
        ("main", "feat/timeline-virtualization", "chore/vite-5"),
    ),
    _Project(
        "ledgerly",
        "ledgerly",
        "python",
        "/Users/dana/work/ledgerly",
        ("invoices", "payouts", "webhooks", "reconciliation", "tax_rates", "ledger"),
        1.5,
        ("main", "fix/webhook-retries", "feat/payout-batching"),
    ),
    _Project(
        "orbit_cli.v2",
        "orbit",
        "go",
        "/Users/dana/code/orbit_cli.v2",
        ("upload", "retry", "config", "auth", "manifest"),
        1.0,
        ("main", "feat/chunked-upload"),
    ),
    _Project(
        "harbor-infra",
        "harbor",
        "infra",
        "/Users/dana/work/harbor-infra",
        ("api", "postgres", "redis", "ingress", "monitoring", "vpc"),
        1.0,
        ("main", "staging-rollout"),
    ),
    _Project(
        "pixel-forge",
        "pixelforge",
        "ts",
        "/Users/dana/Side Projects/pixel-forge",
        ("Canvas", "Palette", "Layers", "ExportDialog", "Brush"),
        0.6,
        ("main",),
    ),
    _Project(
        "wavelet",
        "wavelet",
        "python",
        "/Users/dana/research/wavelet",
        ("dataloader", "trainer", "tokenizer", "eval_suite", "checkpoints"),
        0.8,
        ("main", "exp/cosine-schedule"),
    ),
)

_ARGS = ("key", "isbn", "station_id", "user_id", "cursor", "slug", "entries", "token", "path")
_TYPE_SUFFIX = ("Config", "Client", "Row", "Entry", "State", "Record", "Service", "Cache")
_PORTS = (5432, 5433, 6379, 8000, 8080, 3000, 5173, 9090, 4317, 27017)
_FEATURES = (
    "cursor-based pagination",
    "a --dry-run flag",
    "retries with exponential backoff (max {n} attempts)",
    "rate limiting at {n} requests per minute per user",
    "a /healthz endpoint",
    "structured JSON logging",
    "a CSV export",
    "optimistic updates",
    "a TTL cache ({n} s)",
    "webhook signature verification",
    "batch import of {n} rows at a time",
    "a progress bar for long syncs",
)
_REFACTORS = (
    "split it into a pure function and a thin I/O wrapper",
    "remove the global state so tests can run in parallel",
    "replace the nested ifs with early returns",
    "move the SQL into the repository layer",
    "make the config an explicit parameter instead of a module global",
)
_PREFS = (
    "small PRs I can review in one sitting",
    "no mocks for the database in tests; use the real one on port {port}",
    "type hints on every public function",
    "line length 100 everywhere",
    "explicit error types over stringly errors",
    "commit messages in the imperative mood",
    "tabs never, 4 spaces in Python and 2 in TypeScript",
)
_ACKS = ("", "ok. ", "nice. ", "hmm. ", "good, ", "thanks. ", "right, ", "perfect. ", "wait — ")
_FOLLOWUPS = (
    "go ahead, but keep `{fn}` backwards compatible",
    "commit it with a message that mentions {fn} and the {error_code} fix",
    "keep the public signature of `{fn}` — callers in {mod2} depend on it",
    "run the full suite before you stop, not just `{test_cmd}`",
    "also update the README section about {mod} (the part about port {port})",
    "that fixed it locally, but CI still fails on {branch} after {n} minutes",
    "why did you pick {Y} here? last time {X} was fine for {mod}",
    "add a regression test for the {error_code} case with {n} items",
    "revert the change to {file}, it was not needed",
    "now do the same for {mod2}, it has the same `{arg}` handling",
    "don't touch the migrations, only {file}",
    "how confident are you that this doesn't break {mod2}? it ran {n} times today",
    "line {line} of {file} still looks wrong to me",
    "can we get {fn} under {n} ms? it's at {ms} ms now",
    "use {lib} {ver} for that, it's what we pin everywhere else",
    "split that into two commits: {file} first, then the tests",
    "explain the change to `{fn}` in two sentences for the PR description",
)
_CONCEPTS = (
    "Rust two-phase borrows",
    "PostgreSQL MVCC and why VACUUM matters",
    "React reconciliation and keys",
    "Go context cancellation",
    "idempotency keys for webhooks",
    "exponential backoff with jitter",
    "HNSW vs IVFFlat indexes in pgvector",
    "connection pooling with PgBouncer",
    "CRDTs for offline-first sync",
    "the OAuth PKCE flow",
    "structured concurrency",
    "Bloom filters",
    "B-tree vs GIN indexes",
    "the CAP theorem in practice",
    "write-ahead logging",
    "consistent hashing",
)
_LIFE = (
    "Plan a {n}-day trip to {city} in {month}. I'm vegetarian and hate early mornings.",
    "Draft a short, polite email to {person} asking to move our 1:1 to {day}.",
    "Suggest a {n}-week plan to go from 5k to 10k running three times a week.",
    "What's a high-protein vegetarian lunch I can meal-prep on Sunday for {n} days?",
    "Help me write a birthday message for {person}, something warm but not cheesy.",
    "Summarise the pros and cons of a standing desk after {n} months of back pain.",
    "Give me a packing list for {n} days in {city} with only a carry-on.",
    "Which houseplants survive a north-facing window and a forgetful owner?",
)
_CITIES = ("Lisbon", "Kyoto", "Vienna", "Montreal", "Copenhagen", "Porto", "Seoul", "Oaxaca")
_MONTHS = ("March", "April", "May", "June", "September", "October", "November")
_PEOPLE = ("Priya", "Marco", "Jun", "Alex", "Sam", "Noor", "Elena", "Tomasz")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_MODELS = (
    "claude-sonnet-4-5-20250929",
    "claude-opus-4-5-20251101",
    "claude-sonnet-4-20250514",
    "claude-opus-4-1-20250805",
)
_SUBAGENT_MODEL = "claude-haiku-4-5-20251001"
_CC_VERSIONS = ("2.0.13", "2.0.14", "2.0.28", "2.0.37", "2.0.55", "2.1.3", "2.1.14", "2.1.32")
_GPT_MODELS = ("gpt-4o", "gpt-4o", "o3", "gpt-5", "gpt-4o-mini")
_SLUG_WORDS = (
    "quiet", "brisk", "amber", "lucid", "nimble", "velvet", "humble", "rapid", "gentle",
    "otter", "falcon", "willow", "ember", "harbor", "comet", "maple", "pebble", "lantern",
)  # fmt: skip


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


_HTML_KEYS = ("X", "Y", "reason", "n", "ms", "fix", "lib", "ver")


class _Talk:
    """Assembles developer chatter for one project from the vocabularies above.

    `topic` is the current unit of work (a file, a function, an error, a decision); prompts,
    tool calls and answers in one exchange all draw from it so a conversation stays coherent.
    """

    def __init__(self, rng: random.Random, project: _Project) -> None:
        self.rng = rng
        self.project = project
        self.lang = _LANGS[project.lang]
        self.topic: dict[str, Any] = {}
        self.new_topic()

    def fill(self, template: str) -> str:
        return template.format_map(self.topic)

    def new_topic(self) -> dict[str, Any]:
        rng, lang, proj = self.rng, self.lang, self.project
        mod, mod2 = rng.sample(proj.modules, 2)
        mod_snake = mod if proj.lang != "ts" else re.sub(r"(?<!^)([A-Z])", r"_\1", mod).lower()
        mod_name = mod if proj.lang != "ts" else mod[:1].lower() + mod[1:]
        Mod = _pascal(mod_snake) if proj.lang != "ts" else mod
        lib, ver = rng.choice(lang.libs)
        x, y, reason = rng.choice(lang.alts)
        n = _ri(rng, 2, 64)
        t: dict[str, Any] = {
            "pkg": proj.pkg,
            "mod": mod_name,
            "Mod": Mod,
            "mod2": mod2,
            "arg": rng.choice(_ARGS),
            "Type": Mod + rng.choice(_TYPE_SUFFIX),
            "line": _ri(rng, 12, 480),
            "col": _ri(rng, 5, 40),
            "n": n,
            "m": n + _ri(rng, 1, 90),
            "port": rng.choice(_PORTS),
            "hex": _hex(rng, 6),
            "lib": lib,
            "ver": ver,
            "ms": _ri(rng, 40, 2400),
            "branch": rng.choice(proj.branches),
            "secs": "%.2f" % rng.uniform(0.3, 40.0),
        }
        self.topic = t
        fn = self.fill(rng.choice(lang.fns))
        t["fn"] = fn
        t["Fn"] = fn[:1].upper() + fn[1:]
        t["X"], t["Y"] = x, y
        t["reason"] = self.fill(reason)
        # The file being worked on is a module, not go.mod or vite.config.ts.
        t["file"] = self.fill(rng.choice([f for f in lang.files if "{" in f]))
        t["cmd"] = self.fill(rng.choice(lang.cmds))
        t["test_cmd"] = self.fill(lang.test_cmd)
        err = self.fill(rng.choice(lang.errors))
        t["error"] = err
        t["error1"] = err.split("\n", 1)[0]
        code = re.search(r"E\d{4}|TS\d{4}|[A-Z][A-Za-z]+Error|OOMKilled|panic|DATA RACE", err)
        t["error_code"] = code.group(0) if code else t["error1"][:24]
        cause, fix = rng.choice(lang.causes)
        t["cause"] = self.fill(cause)
        t["fix"] = self.fill(fix)
        t["feature"] = self.fill(rng.choice(_FEATURES))
        t["pref"] = self.fill(rng.choice(_PREFS))
        t["path"] = f"{proj.cwd}/{t['file']}"
        return t

    # -- Claude Code -------------------------------------------------------------------------

    def prompt(self) -> str:
        rng = self.rng
        k = rng.randrange(12)
        if k == 0:
            s = "{error}\n\nwhen I run `{cmd}`. can you figure out what's going on?"
        elif k == 1:
            s = "add {feature} to {file}. keep it small, I want to review it in one sitting"
        elif k == 2:
            s = "the {mod} tests are flaky on CI ({n} failures in the last {m} runs). look into it"
        elif k == 3:
            s = "refactor {file}: " + rng.choice(_REFACTORS)
        elif k == 4:
            s = "why is {fn} so slow? p95 is {ms} ms on staging and it was under 100 last week"
        elif k == 5:
            s = "bump {lib} to {ver} and fix whatever breaks"
        elif k == 6:
            s = "we tried {X} last week and it broke ({reason}). switch {mod} to {Y}"
        elif k == 7:
            s = "write tests for `{fn}` in {file}, especially the empty and the {n}-item case"
        elif k == 8:
            s = "port {port} is already in use when I start the {mod} service. what's holding it?"
        elif k == 9:
            s = "explain what `{fn}` does, I wrote it {n} months ago and have no idea anymore"
        elif k == 10:
            s = "CI on {branch} fails with\n```\n{error1}\n```\nfix it. btw I prefer {pref}"
        else:
            s = "continue with {mod}: {feature}, then run `{test_cmd}`"
        return self.fill(s)

    def followup(self) -> str:
        self.topic["n"] = _ri(self.rng, 2, 64)
        self.topic["line"] = _ri(self.rng, 12, 480)
        return self.rng.choice(_ACKS) + self.fill(self.rng.choice(_FOLLOWUPS))

    def intro(self) -> str:
        self.topic["line"] = _ri(self.rng, 12, 480)
        s = self.rng.choice(
            (
                "I'll start by reading {file} to see how `{fn}` is wired up.",
                "Let me reproduce the failure first with `{test_cmd}`, then look at line {line}.",
                "Let me search for every caller of `{fn}` before changing anything in {file}.",
                "I'll look at {file} and the {mod2} module, since both touch `{arg}`.",
                "First I'll check which version of {lib} is pinned (we expect {ver}).",
                "Let me check the current state of {mod} on {branch} before I touch it.",
                "I'll read {file} around line {line}, where `{arg}` is set.",
            )
        )
        return self.fill(s)

    def thinking(self) -> str:
        s = self.rng.choice(
            (
                "The user wants {feature} in {file}. The risky part is `{fn}`: it is called "
                "from {mod2} too, so the signature must stay. I should read the file, make the "
                "smallest change, and run `{test_cmd}`.",
                "The error is `{error1}`. My guess: {cause}. If that's right the fix is to "
                "{fix}. Let me verify by reading {file} around line {line}.",
                "They said {X} broke before ({reason}). So {Y} is the direction for {mod}; I "
                "need to check whether `{fn}` or anything in {mod2} still depends on {X}.",
                "p95 {ms} ms for `{fn}` smells like a missing index or an N+1. I'll grep for "
                "the query in {file} first, then time it with {n} rows.",
                "{lib} {ver} changed a default that `{fn}` relies on. Check {file} line {line} "
                "and the {n} call sites before bumping anything.",
                "Before editing {file} I want to know who else reads `{arg}`: {mod2} did last "
                "time. Then the fix: {fix}.",
            )
        )
        return self.fill(s)

    def progress(self) -> str:
        s = self.rng.choice(
            (
                "Found it: {cause} ({file}:{line}).",
                "The test output confirms it — `{error_code}` comes from {file}:{line}.",
                "That narrows it down to `{fn}` at line {line}. Now I'll apply the fix.",
                "Callers in {mod2} look fine. Next I'll update {file}.",
                "Now let me run `{test_cmd}` again.",
                "The change compiles. Running `{test_cmd}` ({n} tests).",
                "{n} call sites of `{fn}`, all in {mod} and {mod2}. Editing {file}.",
                "`{arg}` is only written in {file}; the other {n} places just read it.",
            )
        )
        return self.fill(s)

    def done(self) -> str:
        s = self.rng.choice(
            (
                "Done. The problem was that {cause}. I changed {file} to {fix}.\n\n"
                "- `{test_cmd}`: {n} passed\n- no public signatures changed\n\n"
                "You may want to also look at {mod2}, it has the same pattern.",
                "Fixed. `{error_code}` is gone: {fix}. All {m} tests pass.",
                "I switched {mod} from {X} to {Y} ({reason}). The diff is limited to {file} "
                "and its test. p95 went from {ms} ms to {n} ms locally.",
                "Added {feature} in {file}. I kept `{fn}` backwards compatible and added "
                "{n} tests for the edge cases.",
                "`{fn}` takes the {arg}, looks it up in {mod} and falls back to {mod2} when "
                "the cache is cold. The {n}-second timeout comes from the {lib} {ver} default.",
                "Port {port} was held by a leftover `{mod}` container from yesterday. "
                "I stopped it; "
                "the service starts fine now.",
            )
        )
        return self.fill(s)

    def task_title(self) -> str:
        s = self.rng.choice(
            (
                "Fix {error_code} in {mod}",
                "{Y} instead of {X} for {mod}",
                "Add {feature}",
                "Speed up {fn}",
                "Flaky {mod} tests on {branch}",
                "Bump {lib} to {ver}",
            )
        )
        return self.fill(s)

    def compact_summary(self) -> str:
        return self.fill(
            "This session is being continued from a previous conversation that ran out of "
            "context. The conversation is summarized below:\nAnalysis:\nThe user is working on "
            "{pkg} ({mod}). Earlier we hit `{error1}` and traced it to the fact that {cause}.\n\n"
            "Summary:\n1. Primary Request and Intent:\n   {feature} in {file}, keeping `{fn}` "
            "backwards compatible.\n2. Key Technical Concepts:\n   - {X} vs {Y}: {reason}\n"
            "   - {lib} {ver}\n3. Files and Code Sections:\n   - {file}\n4. Errors and fixes:\n"
            "   - {error_code}: {fix}\n5. Pending Tasks:\n   - run `{test_cmd}` on {branch}\n"
            "6. Current Work:\n   Updating {mod2} to the same pattern."
        )

    def code(self) -> str:
        return self.fill(self.rng.choice(self.lang.snippets))

    def test_output(self, ok: bool) -> str:
        rng = self.rng
        extra = {
            "dots": "." * rng.randint(8, 60),
            "oks": "\n".join(
                f"test {self.topic['mod']}::tests::case_{i} ... ok"
                for i in range(rng.randint(2, 5))
            ),
        }
        template = self.lang.pass_out if ok else self.lang.fail_out
        return template.format_map({**self.topic, **extra})

    # -- chat apps (claude.ai, ChatGPT, Gemini) ----------------------------------------------

    def chat_topic(self) -> str:
        """Pick what a chat-app conversation is about and return its title."""
        rng = self.rng
        self.new_topic()
        t = self.topic
        t["concept"] = rng.choice(_CONCEPTS)
        t["city"] = rng.choice(_CITIES)
        t["month"] = rng.choice(_MONTHS)
        t["person"] = rng.choice(_PEOPLE)
        t["day"] = rng.choice(_DAYS)
        t["life"] = self.fill(rng.choice(_LIFE))
        kinds = ("compare", "concept", "review", "error", "life")
        t["kind"] = rng.choices(kinds, (3, 3, 2, 3, 2))[0]
        title = {
            "compare": "{X} vs {Y} for {mod}",
            "concept": "{concept} explained",
            "review": "Review of {fn}",
            "error": "Fixing {error_code} in {pkg}",
            "life": rng.choice(
                ("Trip to {city}", "Email to {person}", "Weekly plan", "Quick help")
            ),
        }[t["kind"]]
        return self.fill(title)

    def chat_question(self, first: bool) -> str:
        rng = self.rng
        kind = self.topic["kind"]
        if not first:
            t = self.topic
            t["n"] = rng.randint(2, 64)
            t["m"] = t["n"] + rng.randint(1, 90)
            if t["kind"] == "life":
                pool = (
                    "make it a bit more casual, and mention {day}.",
                    "shorter please, {n} sentences max",
                    "what if it's {n} days instead?",
                    "swap anything with mushrooms, and keep it under {m} minutes",
                    "can you turn that into a checklist for {day}?",
                    "and if {person} can't make it before {n}:00?",
                    "add a rainy-day option for {city}",
                )
            else:
                pool = (
                    "ok, and how would that look with {n} concurrent writers?",
                    "what would you do differently if {mod} had {m} million rows?",
                    "shorten that to something I can paste into the PR for `{fn}`",
                    "that makes sense. what's the catch with {Y} for {mod}?",
                    "how do I test `{fn}` without mocking the database?",
                    "and if I'm on {lib} {ver}, does anything change?",
                    "should `{fn}` be async? it's called {n} times per request",
                    "give me that as a checklist for {mod}",
                    "we measured {ms} ms p95 — is that the {X} overhead you mean?",
                    "would {X} be fine if we only have {n} writers?",
                    "what would the migration from {X} to {Y} look like, step by step?",
                )
            return rng.choice(_ACKS) + self.fill(rng.choice(pool))
        template = {
            "compare": "What's the practical difference between {X} and {Y} for {mod} in a "
            "{lang} service? We tried {X} and {reason}.",
            "concept": "Can you explain {concept} with a small {lang} example? I keep "
            "hand-waving it in code reviews.",
            "review": "Review this {lang} function and tell me what you'd change:\n\n"
            "```{fence}\n{code}\n```",
            "error": "I keep getting\n\n```\n{error}\n```\n\nwhen running `{cmd}` in {pkg}. "
            "Any idea?",
            "life": "{life}",
        }[kind]
        self.topic["lang"] = self.lang.name
        self.topic["fence"] = self.lang.fence
        self.topic["code"] = self.code()
        return self.fill(template)

    def chat_answer(self) -> str:
        rng = self.rng
        kind = self.topic["kind"]
        parts: list[str] = []
        if kind == "life":
            parts.append(
                rng.choice(
                    (
                        "Here's a plan that keeps mornings slow and food vegetarian-friendly:",
                        "Sure — here is a draft you can tweak:",
                        "A simple version you can actually stick to:",
                    )
                )
            )
            parts.append(
                self.fill(
                    "1. **Day 1** — settle in, late lunch, walk the old town ({n} min).\n"
                    "2. **Day 2** — museum after 10:00, market for dinner.\n"
                    "3. **Day 3** — day trip; book the {m}:00 train the night before."
                    if "trip" in self.topic["life"].lower() or "packing" in self.topic["life"]
                    else "Hi {person},\n\nwould it be possible to move our 1:1 to {day}? "
                    "Something came up on my side. Any time after 10 works.\n\nThanks!"
                    if "email" in self.topic["life"].lower()
                    else "- Week 1-2: 3 × 30 min easy\n- Week 3-4: add one {n}-minute tempo "
                    "block\n- Week 5+: long run grows by 10% a week"
                )
            )
            return "\n\n".join(parts)
        parts.append(
            self.fill(
                rng.choice(
                    (
                        "Short version: {Y} is the safer default for {mod}; {X} only wins when "
                        "you control every writer.",
                        "The key idea behind {concept} is that ownership and time are explicit, "
                        "so the compiler or the database can check what you meant.",
                        "`{error_code}` almost always means {cause}.",
                        "A few things stand out in `{fn}`:",
                        "Good question. There are three parts to it:",
                    )
                )
            )
        )
        bullets = [
            "**Latency**: in benchmarks like yours {X} sits around {ms} ms p95, {Y} around {n} ms.",
            "**Failure mode**: {reason} is the classic symptom.",
            "**Fix**: {fix}.",
            "**Testing**: run `{test_cmd}` against a real instance on port {port}, not a mock.",
            "**Versioning**: pin {lib} to {ver}; newer releases changed the defaults.",
            "**Naming**: `{fn}` hides that it does I/O; consider `fetch_` or `load_`.",
            "**Concurrency**: with {n} workers you need the lock or a single owner task.",
        ]
        rng.shuffle(bullets)
        parts.append("\n".join("- " + self.fill(b) for b in bullets[: rng.randint(2, 5)]))
        if rng.random() < 0.5:
            parts.append(f"```{self.lang.fence}\n{self.code()}\n```")
        parts.append(
            self.fill(
                rng.choice(
                    (
                        "If you want, I can turn this into a migration plan for {mod}.",
                        "I'd go with {Y} and revisit in a month.",
                        "Happy to look at the actual diff if you paste it.",
                        "Rule of thumb: measure first with {n} rows, then decide.",
                    )
                )
            )
        )
        return "\n\n".join(parts)

    def gemini_prompt(self, new_topic: bool) -> str:
        rng = self.rng
        if new_topic:
            self.chat_topic()
            self.topic["lang"] = self.lang.name
        else:  # same conversation, same subject; fresh numbers so prompts differ
            self.topic["n"] = rng.randint(2, 64)
            self.topic["ms"] = rng.randint(40, 2400)
        s = rng.choice(
            (
                "what does {error_code} mean in {lang} and how do I fix it in {file}",
                "explain {concept} in {n} sentences",
                "how do I add {feature} in {lang} with {lib}",
                "{X} or {Y} for {mod}? we have about {n} writers",
                "convert {n} km to miles and {m} kg to pounds",
                "vegetarian dinner for {n} people with chickpeas, no cilantro, under {m} minutes",
                "is {month} a good time to visit {city}",
                "regex to match semver like {ver} with an optional -rc.{n}",
                "how long does pizza dough need to rest at {n} °C",
                "what port does the {mod} service use by default, and is {port} ok instead",
                "is {ms} ms p95 good for a {mod} endpoint with {n} rps",
                "summarise {concept} as {n} bullet points",
                "gift ideas for {person} under {m} euros",
                "what to pack for {n} days in {city} in {month}",
            )
        )
        return self.fill(s)

    def gemini_html(self) -> str:
        rng = self.rng
        t = {k: html.escape(str(self.topic[k])) for k in _HTML_KEYS}
        parts = [
            "<p>"
            + rng.choice(
                (
                    "Here is a short answer:",
                    "In a nutshell:",
                    "Good question!",
                    "It depends on your setup, but usually:",
                )
            )
            + "</p>"
        ]
        items = [
            "<li><b>{X}</b>: simple to start with, but {reason}.</li>",
            "<li><b>{Y}</b>: a bit more setup, more predictable under load.</li>",
            "<li>Typical numbers: about {n} ms at p50 and {ms} ms at p95.</li>",
            "<li>{fix}</li>",
            "<li>Check the {lib} {ver} changelog first.</li>",
        ]
        rng.shuffle(items)
        chosen = items[: rng.randint(2, 4)]
        parts.append("<ul>" + "".join(i.format_map(t) for i in chosen) + "</ul>")
        if rng.random() < 0.3:
            parts.append("<pre><code>" + html.escape(self.code()) + "</code></pre>")
        parts.append("<p>" + "Want me to go deeper on any of these?" + "</p>")
        return "".join(parts)


# --- Claude Code ----------------------------------------------------------------------------


class _CCSession:
    """Writes the records of one Claude Code transcript file, one JSON line per record.

    Times advance from `t` by `gap * scale` per record (never less than 3 ms, so timestamps
    strictly increase at millisecond precision).
    """

    def __init__(
        self,
        rng: random.Random,
        clk: _Clock,
        *,
        session_id: str,
        cwd: str,
        branch: str,
        version: str,
        model: str,
        t: float,
        scale: float = 1.0,
        agent_id: str | None = None,
        slug: str | None = None,
    ) -> None:
        self.rng = rng
        self.clk = clk
        self.t = t
        self.scale = scale
        self.version = version
        self.model = model
        self.cwd = cwd
        self.session_id = session_id
        self.branch = branch
        self.v21 = version.startswith("2.1")
        self.lines: list[str] = []
        self.head: list[str] = []  # summary lines, written first like the CLI does
        self.last: str | None = None
        self.prompt_uuid: str | None = None
        self.prompt_ts = ""
        # The API response being written: (message JSON before the block, after it, requestId).
        self._msg: tuple[str, str, str] | None = None
        self.agent_id = agent_id
        env: dict[str, Any] = {
            "isSidechain": agent_id is not None,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": version,
            "gitBranch": branch,
        }
        if agent_id is not None:
            env["agentId"] = agent_id
        if slug is not None:
            env["slug"] = slug
        # Every user/assistant/system record repeats these; serialise them once.
        self.env = _jl(env)[1:-1]

    # -- plumbing ----------------------------------------------------------------------------

    def tick(self, lo: float, hi: float) -> str:
        self.t += max((lo + (hi - lo) * self.rng.random()) * self.scale, 0.003)
        return self.clk.ms(self.t)

    def _uuid(self) -> str:
        return _uuid4(self.rng)

    def _user(self, content: Any, ts: str, extra: str = "", meta: str = "") -> str:
        u = self._uuid()
        self.lines.append(
            f'{{"parentUuid":{_jq(self.last)},{self.env},"type":"user",'
            f'"message":{{"role":"user","content":{_jl(content)}}}{meta},'
            f'"uuid":"{u}","timestamp":"{ts}"{extra}}}'
        )
        self.last = u
        self._msg = None
        return u

    def _begin_message(self) -> None:
        rng = self.rng
        inp = _ri(rng, 3, 12)
        cc = _ri(rng, 0, 12000)
        cr = _ri(rng, 5000, 90000)
        out = _ri(rng, 1, 900)
        usage = (
            f'{{"input_tokens":{inp},"cache_creation_input_tokens":{cc},'
            f'"cache_read_input_tokens":{cr},"cache_creation":{{"ephemeral_5m_input_tokens":{cc},'
            f'"ephemeral_1h_input_tokens":0}},"output_tokens":{out},"service_tier":"standard"}}'
        )
        msg_id = "msg_01" + _b58(rng, 22)
        prefix = (
            f'{{"model":"{self.model}","id":"{msg_id}","type":"message",'
            f'"role":"assistant","content":['
        )
        suffix = f'],"stop_reason":null,"stop_sequence":null,"usage":{usage}}}'
        self._msg = (prefix, suffix, "req_011C" + _b58(rng, 20))

    def _assistant(self, block: dict[str, Any], gap: tuple[float, float]) -> str:
        if self._msg is None:
            self._begin_message()
        prefix, suffix, req = self._msg  # type: ignore[misc]
        ts = self.tick(*gap)
        u = self._uuid()
        self.lines.append(
            f'{{"parentUuid":{_jq(self.last)},{self.env},"message":{prefix}{_jl(block)}{suffix},'
            f'"requestId":"{req}","type":"assistant","uuid":"{u}","timestamp":"{ts}"}}'
        )
        self.last = u
        return u

    # -- records -----------------------------------------------------------------------------

    def snapshot(self, message_id: str | None = None, backups: dict | None = None) -> None:
        """A file-history-snapshot line. Real ones precede the prompt they back up."""
        mid = message_id or self._uuid()
        self.prompt_uuid = mid
        ts = self.clk.ms(self.t + 0.004)
        self.lines.append(
            f'{{"type":"file-history-snapshot","messageId":"{mid}","snapshot":{{"messageId":'
            f'"{mid}","trackedFileBackups":{_jl(backups or {})},"timestamp":"{ts}"}},'
            f'"isSnapshotUpdate":false}}'
        )

    def snapshot_update(self, rel_path: str, version: int) -> None:
        if self.prompt_uuid is None or self.last is None:
            return
        backup = None if version == 1 else f"{_hex(self.rng, 16)}@v{version}"
        files = {rel_path: {"backupFileName": backup, "version": version,
                            "backupTime": self.clk.ms(self.t + 0.15)}}  # fmt: skip
        self.lines.append(
            f'{{"type":"file-history-snapshot","messageId":"{self.last}","snapshot":'
            f'{{"messageId":"{self.prompt_uuid}","trackedFileBackups":{_jl(files)},'
            f'"timestamp":"{self.prompt_ts}"}},"isSnapshotUpdate":true}}'
        )

    def prompt(self, text: str, *, with_snapshot: bool = True, gap=(20.0, 900.0)) -> str:
        ts = self.tick(*gap)
        mid = self._uuid()
        if with_snapshot:
            # The snapshot is keyed by the prompt's uuid and written just before it.
            self.snapshot(mid)
        self.prompt_uuid = mid
        self.prompt_ts = ts
        level = self.rng.choice(('"high","disabled":false', '"none","disabled":true'))
        extra = f',"thinkingMetadata":{{"level":{level},"triggers":[]}}'
        if self.v21:
            extra += ',"todos":[]'
        self.lines.append(
            f'{{"parentUuid":{_jq(self.last)},{self.env},"type":"user",'
            f'"message":{{"role":"user","content":{_jl(text)}}},'
            f'"uuid":"{mid}","timestamp":"{ts}"{extra}}}'
        )
        self.last = mid
        self._msg = None
        return mid

    def interrupt(self) -> str:
        ts = self.tick(1.0, 20.0)
        text = "[Request interrupted by user for tool use]"
        return self._user([{"type": "text", "text": text}], ts)

    def think(self, text: str) -> str:
        sig = "E" + base64.b64encode(self.rng.randbytes(_ri(self.rng, 90, 300))).decode()
        return self._assistant({"type": "thinking", "thinking": text, "signature": sig}, (2, 14))

    def say(self, text: str) -> str:
        return self._assistant({"type": "text", "text": text}, (1.0, 12.0))

    def tool_use(self, name: str, inp: dict[str, Any]) -> tuple[str, str]:
        tid = "toolu_01" + _b58(self.rng, 22)
        u = self._assistant({"type": "tool_use", "id": tid, "name": name, "input": inp}, (0.4, 6))
        return tid, u

    def tool_result(
        self,
        tid: str,
        source_uuid: str,
        content: Any,
        result: Any,
        *,
        is_error: bool = False,
        gap: tuple[float, float] = (0.05, 4.0),
        agent_id: str | None = None,
    ) -> str:
        ts = self.tick(*gap)
        block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        extra = f',"toolUseResult":{_jl(result)}'
        if self.v21:
            extra += f',"sourceToolAssistantUUID":"{source_uuid}"'
        if agent_id is not None:
            extra += f',"agentId":"{agent_id}"'
        return self._user([block], ts, extra)

    def meta(self, text: str) -> str:
        ts = self.tick(0.5, 3.0)
        return self._user(text, ts, meta=',"isMeta":true')

    def command(self, name: str, stdout: str) -> None:
        self.meta(
            "Caveat: The messages below were generated by the user while running local "
            "commands. DO NOT respond to these messages or otherwise consider them in your "
            "response unless the user explicitly asks you to."
        )
        ts = self.tick(0.001, 0.01)
        self._user(
            f"<command-name>/{name}</command-name>\n            <command-message>{name}"
            "</command-message>\n            <command-args></command-args>",
            ts,
        )
        ts = self.tick(0.05, 1.0)
        self._user(f"<local-command-stdout>{stdout}</local-command-stdout>", ts)

    def compact(self, summary: str, trigger: str = "auto") -> None:
        ts = self.tick(2.0, 30.0)
        u = self._uuid()
        pre = self.rng.randint(120_000, 170_000)
        self.lines.append(
            f'{{"parentUuid":null,"logicalParentUuid":{_jq(self.last)},{self.env},'
            f'"type":"system","subtype":"compact_boundary","content":"Conversation compacted",'
            f'"isMeta":false,"timestamp":"{ts}","uuid":"{u}","level":"info",'
            f'"compactMetadata":{{"trigger":"{trigger}","preTokens":{pre}}}}}'
        )
        self.last = u
        ts = self.tick(0.001, 0.01)
        self._user(summary, ts, ',"isVisibleInTranscriptOnly":true,"isCompactSummary":true')

    def summary(self, text: str, leaf: str | None = None) -> None:
        leaf = leaf or self.last or self._uuid()
        self.head.append(f'{{"type":"summary","summary":{_jl(text)},"leafUuid":"{leaf}"}}')

    def subagent(self, agent_id: str) -> _CCSession:
        return _CCSession(
            self.rng,
            self.clk,
            session_id=self.session_id,
            cwd=self.cwd,
            branch=self.branch,
            version=self.version,
            model=_SUBAGENT_MODEL,
            t=self.t + 0.2,
            scale=self.scale,
            agent_id=agent_id,
        )

    def text(self) -> str:
        return "\n".join(self.head + self.lines) + "\n"

    # -- tools with realistic results --------------------------------------------------------

    def read(self, path: str, content: str) -> None:
        tid, u = self.tool_use("Read", {"file_path": path})
        lines = content.split("\n")
        numbered = "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(lines, 1))
        result = {
            "type": "text",
            "file": {
                "filePath": path,
                "content": content,
                "numLines": len(lines),
                "startLine": 1,
                "totalLines": len(lines),
            },
        }
        self.tool_result(tid, u, numbered, result)

    def bash(self, command: str, description: str, stdout: str, ok: bool = True) -> None:
        tid, u = self.tool_use("Bash", {"command": command, "description": description})
        if ok:
            result: Any = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
            self.tool_result(tid, u, stdout, result, gap=(0.2, 45.0))
        else:
            text = f"Exit code 1\n{stdout}"
            self.tool_result(tid, u, text, f"Error: {text}", is_error=True, gap=(0.2, 45.0))

    def edit(self, path: str, original: str, old: str, new: str) -> None:
        tid, u = self.tool_use(
            "Edit", {"file_path": path, "old_string": old, "new_string": new}
        )
        before = original[: original.find(old)].count("\n") + 1 if old in original else 1
        old_lines, new_lines = old.split("\n"), new.split("\n")
        patch = [
            {
                "oldStart": before,
                "oldLines": len(old_lines),
                "newStart": before,
                "newLines": len(new_lines),
                "lines": ["-" + x for x in old_lines] + ["+" + x for x in new_lines],
            }
        ]
        snippet = "\n".join(f"{before + i:>6}\u2192{x}" for i, x in enumerate(new_lines))
        content = (
            f"The file {path} has been updated. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n{snippet}"
        )
        result = {
            "filePath": path,
            "oldString": old,
            "newString": new,
            "originalFile": original,
            "structuredPatch": patch,
            "userModified": False,
            "replaceAll": False,
        }
        self.tool_result(tid, u, content, result)

    def write(self, path: str, content: str) -> None:
        tid, u = self.tool_use("Write", {"file_path": path, "content": content})
        result = {"type": "create", "filePath": path, "content": content, "structuredPatch": []}
        self.tool_result(tid, u, f"File created successfully at: {path}", result)

    def grep(self, pattern: str, root: str, files: list[str]) -> None:
        tid, u = self.tool_use(
            "Grep", {"pattern": pattern, "path": root, "output_mode": "files_with_matches"}
        )
        content = f"Found {len(files)} file{'s' if len(files) != 1 else ''}\n" + "\n".join(files)
        result = {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}
        self.tool_result(tid, u, content, result)

    def glob(self, pattern: str, files: list[str]) -> None:
        tid, u = self.tool_use("Glob", {"pattern": pattern})
        result = {
            "filenames": files,
            "durationMs": self.rng.randint(3, 90),
            "numFiles": len(files),
            "truncated": False,
        }
        self.tool_result(tid, u, "\n".join(files), result)

    def todo(self, old: list[dict], new: list[dict]) -> None:
        tid, u = self.tool_use("TodoWrite", {"todos": new})
        self.tool_result(
            tid,
            u,
            "Todos have been modified successfully. Ensure that you continue to use the todo "
            "list to track your progress. Please proceed with the current tasks if applicable",
            {"oldTodos": old, "newTodos": new},
        )

    def task(
        self, description: str, prompt: str, agent_type: str, run: Callable[[_CCSession], str]
    ) -> _CCSession:
        """A Task tool call whose subagent transcript `run` writes; returns that transcript."""
        tid, u = self.tool_use(
            "Task", {"subagent_type": agent_type, "description": description, "prompt": prompt}
        )
        agent_id = "a" + _hex(self.rng, 16)
        child = self.subagent(agent_id)
        started = self.t
        answer = run(child)
        self.t = child.t
        tokens = self.rng.randint(8_000, 60_000)
        result = {
            "status": "completed",
            "prompt": prompt,
            "agentId": agent_id,
            "content": [{"type": "text", "text": answer}],
            "totalDurationMs": int((child.t - started) * 1000),
            "totalTokens": tokens,
            "totalToolUseCount": sum(1 for x in child.lines if '"type":"tool_use"' in x),
            "usage": {"input_tokens": 6, "output_tokens": self.rng.randint(200, 2000)},
        }
        self.tool_result(
            tid, u, [{"type": "text", "text": answer}], result, gap=(0.1, 1.0), agent_id=agent_id
        )
        return child


def _todos(items: list[str], done: int) -> list[dict]:
    out = []
    for i, item in enumerate(items):
        status = "completed" if i < done else ("in_progress" if i == done else "pending")
        active = item[:1].lower() + item[1:]
        out.append({"content": item, "status": status, "activeForm": "Working on " + active})
    return out


def _random_tool_step(s: _CCSession, talk: _Talk, edits: dict[str, int], room: int) -> None:
    """One tool call and its result (two lines, three when `room` allows a file-history
    snapshot after an edit), in a shape that fits the current topic."""
    rng, t = s.rng, talk.topic
    proj = talk.project
    k = rng.random()
    if k < 0.30:
        s.read(t["path"], talk.code())
    elif k < 0.55:
        ok = rng.random() < 0.7
        cmd = t["test_cmd"] if rng.random() < 0.6 else t["cmd"]
        s.bash(cmd, talk.fill(rng.choice(("Run the {mod} tests", "Check {mod}", "Run {fn}"))),
               talk.test_output(ok), ok)  # fmt: skip
    elif k < 0.75:
        original = talk.code()
        lines = original.split("\n")
        old = rng.choice(lines[1:] or lines)
        indent = old[: len(old) - len(old.lstrip())]
        new = f"{indent}{talk.lang.comment} {talk.fill(t['fix'])}\n{old}"
        s.edit(t["path"], original, old, new)
        edits[t["file"]] = edits.get(t["file"], 1) + 1
        if room >= 3 and rng.random() < 0.5:
            s.snapshot_update(t["file"], edits[t["file"]])
    elif k < 0.85:
        n = rng.randint(1, 4)
        files = [f"{proj.cwd}/{talk.fill(rng.choice(talk.lang.files))}" for _ in range(n)]
        s.grep(t["fn"], proj.cwd, sorted(set(files)))
    elif k < 0.90:
        ext = {"python": "py", "rust": "rs", "ts": "tsx", "go": "go", "infra": "tf"}[proj.lang]
        files = sorted({f"{proj.cwd}/{talk.fill(rng.choice(talk.lang.files))}" for _ in range(3)})
        s.glob(f"**/*{t['mod']}*.{ext}", files)
    elif k < 0.95:
        path = f"{proj.cwd}/{talk.fill(rng.choice(talk.lang.files))}"
        s.write(path, talk.code())
        edits[path] = 1
    else:
        items = [
            talk.fill("Reproduce {error_code}"),
            talk.fill("Fix {fn} in {file}"),
            talk.fill("Run {test_cmd}"),
        ]
        done = rng.randint(0, 2)
        s.todo(_todos(items, max(done - 1, 0)) if done else [], _todos(items, done))


def _subagent_body(child: _CCSession, talk: _Talk, budget: int, prompt: str) -> str:
    """Exactly `budget` records in the subagent file: its prompt, tool steps, a final answer."""
    child.prompt(prompt, with_snapshot=False, gap=(0.01, 0.3))
    answer = talk.fill(
        "Found {n} call sites of `{fn}`. The relevant ones are in {file} (line {line}) and in "
        "the {mod2} module. {cause}; the safest fix is to {fix}."
    )
    rng = child.rng
    while True:
        r = budget - len(child.lines)
        if r <= 0:
            break
        if r <= 2:
            if r == 2:
                child.think(talk.thinking())
            child.say(answer)
            break
        if rng.random() < 0.3 and r >= 4:
            child.say(talk.progress())
        k = rng.random()
        t = talk.topic
        if k < 0.5:
            child.read(t["path"], talk.code())
        elif k < 0.8:
            child.grep(t["fn"], talk.project.cwd, [t["path"]])
        else:
            log = "\n".join(f"{_hex(rng, 7)} {talk.task_title()}" for _ in range(3))
            child.bash(f"git log --oneline -n {rng.randint(3, 12)} -- {t['file']}", "History", log)
    return answer


@dataclass
class _SessionPlan:
    index: int
    project: _Project
    size: int
    sub_size: int
    base: float
    version: str


def _random_session(
    plan: _SessionPlan, seed: int, base: float, scale: float
) -> tuple[tuple[str, dict[str, str], str], _Clock]:
    """One Claude Code session with exactly `plan.size` lines over its main and subagent files."""
    rng = _unit_rng(seed, "claude-code", plan.index)
    clk = _Clock()
    proj = plan.project
    talk = _Talk(rng, proj)
    v21 = plan.version.startswith("2.1")
    slug = "-".join(rng.sample(_SLUG_WORDS, 3)) if v21 and rng.random() < 0.7 else None
    session_id = _uuid4(rng)
    s = _CCSession(
        rng,
        clk,
        session_id=session_id,
        cwd=proj.cwd,
        branch=rng.choice(proj.branches),
        version=plan.version,
        model=rng.choice(_MODELS),
        t=base,
        scale=scale,
        slug=slug,
    )
    n_summary = 0
    if plan.size >= 20 and rng.random() < 0.3:
        n_summary = rng.randint(1, 2)
    body = plan.size - plan.sub_size - n_summary
    subagents: dict[str, str] = {}
    compact_at = int(body * rng.uniform(0.4, 0.7)) if body >= 80 and rng.random() < 0.15 else -1
    edits: dict[str, int] = {}
    need_prompt = True
    first = True
    steps_left = 0
    while (r := body - len(s.lines)) > 0:
        if need_prompt:
            if 0 <= compact_at <= len(s.lines) and r >= 4:
                s.compact(talk.compact_summary())
                compact_at = -1
                continue
            if not first and r >= 5 and rng.random() < 0.02:
                s.command("model", f"Set model to {rng.choice(_MODELS)}")
                continue
            if not first and r >= 2 and rng.random() < 0.02:
                s.interrupt()
                continue
            if first or rng.random() < 0.3:
                talk.new_topic()
                text = talk.prompt()
            else:
                text = talk.followup()
            s.prompt(text, with_snapshot=r >= 2 and rng.random() < 0.85)
            need_prompt = False
            steps_left = rng.randint(0, 7)
            continue
        if plan.sub_size and not subagents and r >= 2:
            prompt = talk.fill(
                "Find every place that calls `{fn}` or reads `{arg}` in {pkg}. Report file paths, "
                "line numbers and anything that looks like {cause}."
            )
            child = s.task(
                talk.fill("Find callers of {fn}"),
                prompt,
                rng.choice(("Explore", "general-purpose")),
                lambda c: _subagent_body(c, talk, plan.sub_size, prompt),
            )
            subagents[str(child.agent_id)] = child.text()
            continue
        if r == 1 or steps_left <= 0:
            if r >= 2 and rng.random() < 0.3:
                s.think(talk.thinking())
            s.say(talk.done())
            need_prompt = True
            first = False
            continue
        lead = 0
        if r >= 4 and rng.random() < 0.25:
            s.think(talk.thinking())
            lead += 1
        if r - lead >= 3 and rng.random() < 0.5:
            s.say(talk.intro() if steps_left > 3 else talk.progress())
        _random_tool_step(s, talk, edits, body - len(s.lines))
        steps_left -= 1
    for _ in range(n_summary):
        leaf = s.last if rng.random() < 0.6 else _uuid4(rng)
        s.summary(talk.task_title(), leaf)
    return (session_id, subagents, s.text()), clk


def _plan_sizes(rng: random.Random, budget: int, lo: int, hi: int, log: bool = True) -> list[int]:
    """Unit sizes in [lo, hi] (log-uniform, or uniform) summing to exactly `budget`."""
    sizes: list[int] = []
    left = budget
    llo, lhi = math.log(lo), math.log(hi + 1)
    while left > 0:
        size = int(math.exp(rng.uniform(llo, lhi))) if log else rng.randint(lo, hi)
        size = min(max(size, lo), hi)
        if left - size < lo:
            size = left if left <= hi else left - lo
        sizes.append(size)
        left -= size
    return sizes


class _FileSink:
    """Writes many small files from a few threads.

    Creating a file costs 0.1-2 ms on some virtual disks while writing it costs microseconds;
    threads overlap that latency (the GIL is released in the syscalls). At most `depth` files
    wait in memory, so streaming stays bounded.
    """

    def __init__(self, threads: int = 8, depth: int = 64) -> None:
        self.pool = ThreadPoolExecutor(max_workers=threads)
        self.slots = threading.BoundedSemaphore(depth)
        self.futures: list[Future[None]] = []
        self.dirs: set[Path] = set()

    def _write(self, path: Path, text: str) -> None:
        try:
            path.write_text(text, encoding="utf-8")
        finally:
            self.slots.release()

    def put(self, path: Path, text: str) -> None:
        if path.parent not in self.dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.dirs.add(path.parent)
        self.slots.acquire()
        self.futures.append(self.pool.submit(self._write, path, text))
        if len(self.futures) > 4096:
            self._drain(done_only=True)

    def _drain(self, done_only: bool = False) -> None:
        keep = []
        for fut in self.futures:
            if done_only and not fut.done():
                keep.append(fut)
            else:
                fut.result()  # re-raise a failed write here, not silently
        self.futures = keep

    def close(self) -> None:
        self._drain()
        self.pool.shutdown()


def _plan_claude_code(
    budget: int, seed: int, t0: float, t1: float
) -> tuple[list[_SessionPlan], float]:
    rng = _unit_rng(seed, "claude-code-plan", 0)
    span = t1 - t0
    # Uniform rather than log-uniform: fewer, longer files (creating a file is the slow part
    # on some disks) and closer to real transcripts, which are rarely tiny.
    sizes = _plan_sizes(rng, budget, 10, 200, log=False) if budget >= 10 else [budget]
    sizes = [size for size in sizes if size > 0]
    weights = [p.weight for p in _PROJECTS]
    # Dense histories (many events in few days) squeeze the natural gaps so sessions overlap
    # less; 25 s is about the mean natural gap between records.
    scale = min(1.0, 3.0 * span / max(budget * 25.0, 1.0))
    plans: list[_SessionPlan] = []
    cum = 0
    for i, size in enumerate(sizes):
        frac = cum / budget
        base = t0 + span * frac + rng.random() * span * size / budget * 0.5
        vidx = int(frac * len(_CC_VERSIONS) + rng.uniform(-0.7, 0.7))
        version = _CC_VERSIONS[min(max(vidx, 0), len(_CC_VERSIONS) - 1)]
        sub = 0
        if size >= 30 and rng.random() < 0.05:
            sub = rng.randint(6, min(40, size // 3))
        plans.append(_SessionPlan(i, rng.choices(_PROJECTS, weights)[0], size, sub, base, version))
        cum += size
    if plans and not any(p.sub_size for p in plans):
        # Always show at least one subagent transcript when any session is big enough.
        big = max(plans, key=lambda p: p.size)
        if big.size >= 30:
            big.sub_size = rng.randint(6, min(40, big.size // 3))
    for plan in plans:
        if plan.sub_size and not plan.version.startswith("2.1"):
            plan.version = rng.choice(_CC_VERSIONS[5:])  # subagents/ folders are a 2.1.x layout
    return plans, scale


def _write_claude_code(
    root: Path, plans: list[_SessionPlan], seed: int, t0: float, t1: float, scale: float
) -> tuple[int, int, int, int]:
    clk = _Clock()
    sink = _FileSink()
    lines = files = 0
    try:
        for plan in plans:
            (session_id, subs, text), uclk = _fit(
                lambda b, s, plan=plan: _random_session(plan, seed, b, s),
                plan.base,
                scale,
                t0,
                t1,
            )
            clk.merge(uclk)
            folder = root / "claude-code" / "projects" / encode_cwd(plan.project.cwd)
            sink.put(folder / f"{session_id}.jsonl", text)
            lines += text.count("\n")
            files += 1
            for agent_id, sub_text in subs.items():
                sink.put(folder / session_id / "subagents" / f"agent-{agent_id}.jsonl", sub_text)
                lines += sub_text.count("\n")
                files += 1
    finally:
        sink.close()
    return lines, files, clk.lo, clk.hi


# --- claude.ai ------------------------------------------------------------------------------

_UNSUPPORTED = "\n```\nThis block is not supported on your current device yet.\n```\n"


class _ClaudeAIConversation:
    def __init__(self, rng: random.Random, clk: _Clock, t: float, scale: float = 1.0) -> None:
        self.rng = rng
        self.clk = clk
        self.t = t
        self.scale = scale
        self.messages: list[dict[str, Any]] = []

    def tick(self, lo: float, hi: float) -> float:
        self.t += max(self.rng.uniform(lo, hi) * self.scale, 0.001)
        return self.t

    def _block(self, kind: str, start: float, stop: float, **fields: Any) -> dict[str, Any]:
        block = {"start_timestamp": self.clk.us(start), "stop_timestamp": self.clk.us(stop)}
        block = {"type": kind, **block, "flags": None, **fields}
        return block

    def human(
        self, text: str, parent: str, *, attachment: tuple[str, str] | None = None,
        gap: tuple[float, float] = (20.0, 600.0),
    ) -> str:  # fmt: skip
        t = self.tick(*gap)
        u = _uuid4(self.rng)
        attachments = []
        if attachment:
            name, body = attachment
            attachments.append(
                {
                    "file_name": name,
                    "file_type": "text/plain",
                    "file_size": len(body.encode()),
                    "extracted_content": body,
                }
            )
        ts = self.clk.us(t)
        self.messages.append(
            {
                "uuid": u,
                "parent_message_uuid": parent,
                "sender": "human",
                "text": text,
                "content": [self._block("text", t, t, text=text, citations=[])],
                "created_at": ts,
                "updated_at": ts,
                "attachments": attachments,
                "files": [],
            }
        )
        return u

    def assistant(
        self,
        text: str,
        parent: str,
        *,
        thinking: str | None = None,
        artifact: tuple[str, str, str] | None = None,
        gap: tuple[float, float] = (4.0, 40.0),
    ) -> str:
        t0 = self.tick(*gap)
        u = _uuid4(self.rng)
        content = []
        t = t0
        if thinking:
            t1 = t + self.rng.uniform(1, 8) * self.scale
            content.append(
                self._block(
                    "thinking", t, t1, thinking=thinking,
                    summaries=[{"summary": thinking.split(".")[0][:80]}], cut_off=False,
                )  # fmt: skip
            )
            t = t1
        t1 = t + self.rng.uniform(2, 20) * self.scale
        flat = text
        if artifact:
            title, language, code = artifact
            head, _, tail = text.partition("\n\n")
            content.append(self._block("text", t, t1, text=head, citations=[]))
            art_id = title.lower().replace(" ", "-")[:40]
            t2 = t1 + self.rng.uniform(1, 10) * self.scale
            content.append(
                self._block(
                    "tool_use", t1, t2, name="artifacts",
                    input={"id": art_id, "type": "application/vnd.ant.code", "title": title,
                           "command": "create", "content": code, "language": language,
                           "version_uuid": _uuid4(self.rng)},
                    message="artifacts", integration_name=None, integration_icon_url=None,
                    context=None, display_content=None, approval_options=None, approval_key=None,
                )  # fmt: skip
            )
            content.append(
                {
                    "type": "tool_result", "start_timestamp": None, "stop_timestamp": None,
                    "flags": None, "name": "artifacts",
                    "content": [{"type": "text", "text": "OK", "uuid": _uuid4(self.rng)}],
                    "is_error": False, "message": None, "display_content": None,
                }  # fmt: skip
            )
            t3 = t2 + self.rng.uniform(1, 10) * self.scale
            content.append(self._block("text", t2, t3, text=tail or "Done.", citations=[]))
            flat = head + "\n" + _UNSUPPORTED + "\n" + (tail or "Done.")
            t1 = t3
        else:
            content.append(self._block("text", t, t1, text=text, citations=[]))
        self.t = t1
        self.messages.append(
            {
                "uuid": u,
                "parent_message_uuid": parent,
                "sender": "assistant",
                "text": flat,
                "content": content,
                "created_at": self.clk.us(t0),
                "updated_at": self.clk.us(t1),
                "attachments": [],
                "files": [],
            }
        )
        return u

    def export(self, uuid: str, name: str, account: str, summary: str = "") -> dict[str, Any]:
        created = self.messages[0]["created_at"] if self.messages else self.clk.us(self.t)
        updated = max((m["updated_at"] for m in self.messages), default=created)
        return {
            "uuid": uuid,
            "name": name,
            "summary": summary,
            "created_at": created,
            "updated_at": updated,
            "account": {"uuid": account},
            "chat_messages": self.messages,
        }


def _random_claude_ai(
    index: int, size: int, seed: int, account: str, base: float, scale: float
) -> tuple[dict[str, Any], _Clock]:
    rng = _unit_rng(seed, "claude-ai", index)
    clk = _Clock()
    talk = _Talk(rng, rng.choices(_PROJECTS, [p.weight for p in _PROJECTS])[0])
    title = talk.chat_topic()
    conv_id = _uuid4(rng)
    c = _ClaudeAIConversation(rng, clk, base, scale)
    retries = size % 2
    if size >= 8 and rng.random() < 0.15:
        retries += 2
    pairs = (size - retries) // 2
    retry_at = set(rng.sample(range(pairs), min(retries, pairs))) if pairs else set()
    parent = ROOT_PARENT
    for i in range(pairs):
        attach = None
        if i == 0 and rng.random() < 0.1:
            log = talk.topic["error"] + "\n" + talk.test_output(False)
            attach = (f"{talk.topic['mod']}.log", log)
        h = c.human(talk.chat_question(i == 0), parent, attachment=attach)
        kinds = rng.random()
        thinking = talk.thinking() if kinds < 0.25 else None
        artifact = None
        if talk.topic["kind"] != "life" and 0.25 <= kinds < 0.35:
            artifact = (talk.task_title(), talk.lang.fence, talk.code())
        parent = c.assistant(talk.chat_answer(), h, thinking=thinking, artifact=artifact)
        if i in retry_at:
            # "Retry": a second assistant answer under the same prompt, created later.
            parent = c.assistant(talk.chat_answer(), h, gap=(10.0, 120.0))
    if len(c.messages) < size:  # odd size with no room for a retry: a prompt left unanswered
        c.human(talk.chat_question(False), parent)
    summary = talk.fill("Discussion about {mod} in {pkg}.") if rng.random() < 0.3 else ""
    return c.export(conv_id, title, account, summary), clk


def _claude_ai_project(rng: random.Random, clk: _Clock, t: float, proj: _Project) -> dict:
    talk = _Talk(rng, proj)
    created = clk.us(t, "+00:00")
    return {
        "uuid": _uuid4(rng),
        "name": proj.name.replace("_", " ").title(),
        "description": f"Notes, decisions and design docs for {proj.name}.",
        "is_private": True,
        "is_starter_project": False,
        "prompt_template": talk.fill(
            "You are helping Dana with {pkg}. Prefer {pref}. Be concise."
        ),
        "created_at": created,
        "updated_at": clk.us(t + rng.uniform(60, 3600), "+00:00"),
        "creator": {"uuid": _ACCOUNT_UUID, "full_name": "Dana Ruiz"},
        "docs": [
            {
                "uuid": _uuid4(rng),
                "filename": "architecture.md",
                "content": talk.fill(
                    "# {pkg} architecture\n\n- {mod} owns {arg}\n- decision: {Y} over {X} "
                    "({reason})\n- services listen on port {port}\n"
                ),
                "created_at": created,
            }
        ],
    }


_ACCOUNT_UUID = "5b0e6a8c-2f4d-4c1e-9a7b-3d2e1f0c9b8a"


class _ArrayWriter:
    """Streams a JSON array one element at a time."""

    def __init__(self, path: Path, sep: str = ",") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.f: TextIO = path.open("w", encoding="utf-8")
        self.f.write("[")
        self.first = True
        self.sep = sep

    def add(self, text: str) -> None:
        if not self.first:
            self.f.write(self.sep)
        self.first = False
        self.f.write(text)

    def close(self) -> None:
        self.f.write("]")
        self.f.close()


def _write_claude_ai(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = _Clock()
    rng = _unit_rng(seed, "claude-ai-plan", 0)
    span = t1 - t0
    n_projects = min(8, max(1, budget // 1500)) if budget >= 3 else 0
    sizes = _plan_sizes(rng, budget - n_projects, 2, 40) if budget - n_projects >= 2 else (
        [budget - n_projects] if budget - n_projects else []
    )  # fmt: skip
    events = files = 0
    out = _ArrayWriter(root / "claude-ai" / "conversations.json")
    cum = 0
    total = max(sum(sizes), 1)
    scale = min(1.0, 3.0 * span / max(total * 60.0, 1.0))
    for i, size in enumerate(sizes):
        base = t0 + span * cum / total + rng.random() * span * size / total * 0.5
        conv, uclk = _fit(
            lambda b, s, i=i, size=size: _random_claude_ai(i, size, seed, _ACCOUNT_UUID, b, s),
            base,
            scale,
            t0,
            t1,
        )
        clk.merge(uclk)
        out.add(_jl(conv))
        events += len(conv["chat_messages"])
        cum += size
        if rng.random() < 0.01:  # real exports contain conversations nobody typed into
            t = t0 + rng.random() * span
            empty = {"uuid": _uuid4(rng), "name": "", "summary": "", "created_at": clk.us(t),
                     "updated_at": clk.us(t), "account": {"uuid": _ACCOUNT_UUID},
                     "chat_messages": []}  # fmt: skip
            out.add(json.dumps(empty))
    out.close()
    files += 1
    if n_projects:
        proj_out = _ArrayWriter(root / "claude-ai" / "projects.json")
        for j in range(n_projects):
            t = t0 + span * (j + rng.random()) / n_projects * 0.5
            proj_out.add(json.dumps(_claude_ai_project(rng, clk, t, _PROJECTS[j % len(_PROJECTS)])))
        proj_out.close()
        files += 1
        events += n_projects
    return events, files, clk.lo, clk.hi


# --- ChatGPT --------------------------------------------------------------------------------


class _ChatGPTConversation:
    def __init__(self, rng: random.Random, clk: _Clock, t: float, model: str, scale: float = 1.0):
        self.rng = rng
        self.clk = clk
        self.t = t
        self.scale = scale
        self.model = model
        self.mapping: dict[str, dict[str, Any]] = {
            "client-created-root": {
                "id": "client-created-root", "message": None, "parent": None, "children": [],
            }  # fmt: skip
        }
        self.current = "client-created-root"
        self.first_time: float | None = None

    def tick(self, lo: float, hi: float) -> float:
        self.t += max(self.rng.uniform(lo, hi) * self.scale, 0.001)
        if self.first_time is None:
            self.first_time = self.t
        return self.t

    def _node(
        self,
        parent: str,
        role: str,
        content: dict[str, Any],
        *,
        t: float | None,
        name: str | None = None,
        recipient: str = "all",
        weight: float = 1.0,
        end_turn: bool | None = None,
        metadata: dict[str, Any] | None = None,
        node_id: str | None = None,
    ) -> str:
        nid = node_id or _uuid4(self.rng)
        msg = {
            "id": nid,
            "author": {"role": role, "name": name, "metadata": {}},
            "create_time": None if t is None else self.clk.epoch(t),
            "update_time": None,
            "content": content,
            "status": "finished_successfully",
            "end_turn": end_turn,
            "weight": weight,
            "metadata": metadata or {},
            "recipient": recipient,
            "channel": None,
        }
        self.mapping[nid] = {"id": nid, "message": msg, "parent": parent, "children": []}
        self.mapping[parent]["children"].append(nid)
        return nid

    def _assistant_meta(self, parent: str) -> dict[str, Any]:
        return {
            "finish_details": {"type": "stop", "stop_tokens": [200002]},
            "is_complete": True,
            "citations": [],
            "content_references": [],
            "message_type": "next",
            "model_slug": self.model,
            "default_model_slug": self.model,
            "parent_id": parent,
            "request_id": _hex(self.rng, 16) + "-IAD",
            "timestamp_": "absolute",
        }

    def system(self) -> str:
        self.current = self._node(
            self.current, "system", {"content_type": "text", "parts": [""]}, t=None,
            weight=0.0, end_turn=True, metadata={"is_visually_hidden_from_conversation": True},
        )  # fmt: skip
        return self.current

    def user(self, text: str, parent: str | None = None, gap=(30.0, 900.0)) -> str:
        t = self.tick(*gap)
        nid = "aaa2" + _uuid4(self.rng)[4:]  # the web client's ids for user turns
        self.current = self._node(
            parent or self.current, "user", {"content_type": "text", "parts": [text]}, t=t,
            metadata={"request_id": _hex(self.rng, 16) + "-IAD", "message_source": None,
                      "timestamp_": "absolute", "message_type": None},
            node_id=nid,
        )  # fmt: skip
        return self.current

    def assistant(self, text: str, parent: str | None = None, gap=(3.0, 40.0)) -> str:
        t = self.tick(*gap)
        p = parent or self.current
        self.current = self._node(
            p, "assistant", {"content_type": "text", "parts": [text]}, t=t, end_turn=True,
            metadata=self._assistant_meta(p),
        )  # fmt: skip
        return self.current

    def code_run(self, code: str, output: str) -> None:
        """Code interpreter: assistant code to `python`, then the tool's execution_output."""
        t = self.tick(2.0, 20.0)
        p = self.current
        self.current = self._node(
            p, "assistant",
            {"content_type": "code", "language": "unknown", "response_format_name": None,
             "text": code},
            t=t, recipient="python", end_turn=False, metadata=self._assistant_meta(p),
        )  # fmt: skip
        t2 = self.tick(0.5, 8.0)
        run = {
            "status": "success", "run_id": _uuid4(self.rng), "start_time": self.clk.epoch(t),
            "update_time": self.clk.epoch(t2), "code": code, "end_time": self.clk.epoch(t2),
            "final_expression_output": output, "in_kernel_exception": None,
            "system_exception": None, "messages": [], "jupyter_messages": [],
            "timeout_triggered": None,
        }  # fmt: skip
        self.current = self._node(
            self.current, "tool", {"content_type": "execution_output", "text": output}, t=t2,
            name="python", metadata={"is_complete": True, "aggregate_result": run,
                                     "timestamp_": "absolute"},
        )  # fmt: skip

    def reasoning(self, summary: str, thought: str) -> None:
        t = self.tick(1.0, 6.0)
        p = self.current
        self.current = self._node(
            p, "assistant",
            {"content_type": "thoughts",
             "thoughts": [{"summary": summary, "content": thought, "chunks": [], "finished": True}],
             "source_analysis_msg_id": _uuid4(self.rng)},
            t=t, end_turn=False, metadata=self._assistant_meta(p),
        )  # fmt: skip
        secs = self.rng.randint(3, 40)
        t2 = self.tick(secs * 0.5, secs)
        p = self.current
        self.current = self._node(
            p, "assistant", {"content_type": "reasoning_recap", "content": f"Thought for {secs}s"},
            t=t2, end_turn=False, metadata=self._assistant_meta(p),
        )  # fmt: skip

    def export(self, title: str | None) -> dict[str, Any]:
        created = self.first_time if self.first_time is not None else self.t
        conv_id = "%08x-%s-8%s-%s%s-%s" % (
            int(created), _hex(self.rng, 4), _hex(self.rng, 3),
            "89ab"[self.rng.getrandbits(2)], _hex(self.rng, 3), _hex(self.rng, 12),
        )  # fmt: skip
        return {
            "title": title,
            "create_time": self.clk.epoch(created),
            "update_time": self.clk.epoch(self.t + 0.5),
            "mapping": self.mapping,
            "moderation_results": [],
            "current_node": self.current,
            "plugin_ids": None,
            "conversation_id": conv_id,
            "conversation_template_id": None,
            "gizmo_id": None,
            "gizmo_type": None,
            "is_archived": False,
            "is_starred": None,
            "safe_urls": [],
            "blocked_urls": [],
            "default_model_slug": self.model,
            "conversation_origin": None,
            "voice": None,
            "async_status": None,
            "disabled_tool_ids": [],
            "is_do_not_remember": False,
            "memory_scope": "global_enabled",
            "sugar_item_id": None,
            "id": conv_id,
        }


def _random_chatgpt(index: int, size: int, seed: int, base: float, scale: float):
    rng = _unit_rng(seed, "chatgpt", index)
    clk = _Clock()
    talk = _Talk(rng, rng.choices(_PROJECTS, [p.weight for p in _PROJECTS])[0])
    title = talk.chat_topic()
    model = rng.choice(_GPT_MODELS)
    c = _ChatGPTConversation(rng, clk, base, model, scale)
    left = size
    if size >= 3 and rng.random() < 0.6:
        c.system()
        left -= 1
    first = True
    cost = {"plain": 2, "regen": 3, "code": 4, "think": 4}
    while left > 0:
        if left == 1:
            kind = "user_only"
        elif left <= 4:
            kind = {2: "plain", 3: "regen", 4: rng.choice(("code", "think", "plain"))}[left]
        else:
            kind = rng.choices(("plain", "regen", "code", "think"), (10, 1, 2, 2))[0]
            if left - cost[kind] == 1:
                kind = "regen" if cost[kind] == 2 else "plain"
        u = c.user(talk.chat_question(first))
        first = False
        left -= 1
        if kind == "user_only":
            break
        if kind == "code":
            n = rng.randint(3, 40)
            samples = ", ".join(str(rng.randint(40, 900)) for _ in range(n % 7 + 3))
            code = (
                f"import statistics\nsamples = [{samples}]\n"
                "statistics.quantiles(samples, n=20)[-1]"
            )
            c.code_run(code, "%.1f" % rng.uniform(80, 900))
            left -= 2
        elif kind == "think":
            c.reasoning(talk.fill("Weighing {X} against {Y}"), talk.thinking())
            left -= 2
        c.assistant(talk.chat_answer())
        left -= 1
        if kind == "regen":
            c.assistant(talk.chat_answer(), parent=u, gap=(15.0, 200.0))
            left -= 1
    title_out = title if rng.random() > 0.02 else None  # null titles happen in real exports
    return c.export(title_out), clk


def _write_chatgpt(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = _Clock()
    if budget <= 0:
        return 0, 0, clk.lo, clk.hi
    rng = _unit_rng(seed, "chatgpt-plan", 0)
    span = t1 - t0
    sizes = _plan_sizes(rng, budget, 3, 60) if budget >= 3 else [budget]
    scale = min(1.0, 3.0 * span / max(budget * 60.0, 1.0))
    out = _ArrayWriter(root / "chatgpt" / "conversations.json", ", ")
    events = cum = 0
    for i, size in enumerate(sizes):
        base = t0 + span * cum / budget + rng.random() * span * size / budget * 0.5
        conv, uclk = _fit(
            lambda b, s, i=i, size=size: _random_chatgpt(i, size, seed, b, s), base, scale, t0, t1
        )
        clk.merge(uclk)
        # Real exports come from Python's json module: ASCII-escaped, ", " and ": " separators.
        out.add(json.dumps(conv))
        events += sum(1 for node in conv["mapping"].values() if node["message"] is not None)
        cum += size
    out.close()
    return events, 1, clk.lo, clk.hi


# --- Gemini Takeout -------------------------------------------------------------------------


def _gemini_row(clk: _Clock, t: float, prompt: str, html_: str, conv: str) -> dict:
    url = f"https://gemini.google.com/app/{conv}"
    row: dict[str, Any] = {
        "header": "Gemini Apps",
        "title": "Prompted " + prompt,
        "details": [{"name": url, "url": url}],
        "time": clk.ms(t),
        "products": ["Gemini Apps"],
        "activityControls": ["Gemini Apps Activity"],
        "safeHtmlItem": [{"html": html_}],
    }
    return row


def _feedback_row(clk: _Clock, t: float) -> dict:
    return {
        "header": "Gemini Apps",
        "title": "Gave feedback: Good response",
        "time": clk.ms(t),
        "products": ["Gemini Apps"],
        "activityControls": ["Gemini Apps Activity"],
    }


def _gemini_dump(row: dict) -> str:
    # Takeout pretty-prints with two spaces and writes the rows as `[{ ... },{ ... }]`.
    return json.dumps(row, indent=2, ensure_ascii=False)


def _write_gemini(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = _Clock()
    if budget <= 0:
        return 0, 0, clk.lo, clk.hi
    rng = _unit_rng(seed, "gemini-plan", 0)
    span = t1 - t0
    feedback = budget % 2 + (2 if budget >= 20 else 0)
    rows = (budget - feedback) // 2
    sizes = _plan_sizes(rng, rows, 1, 8) if rows else []
    fb_at = set(rng.sample(range(len(sizes)), min(feedback, len(sizes)))) if sizes else set()
    units = [size * 2 + (1 if i in fb_at else 0) for i, size in enumerate(sizes)]
    lone_feedback = feedback - len(fb_at)
    total = max(sum(units) + lone_feedback, 1)
    out = _ArrayWriter(root / GEMINI_DIR / "MyActivity.json")
    events = 0
    cum = 0
    # Rows are newest first: walk the windows from the end of the range backwards, and give
    # each conversation a window of its own so the global order holds.
    for i, size in enumerate(sizes):
        urng = _unit_rng(seed, "gemini", i)
        ucl = _Clock()
        w_hi = t1 - span * cum / total
        w_lo = t1 - span * (cum + units[i]) / total
        cum += units[i]
        room = (w_hi - w_lo) * 0.96
        gaps = [urng.uniform(20.0, 600.0) for _ in range(size)]
        natural = sum(gaps) + (30.0 if i in fb_at else 0.0)
        squeeze = min(1.0, room / natural) if natural > 0 else 1.0
        t = w_lo + (w_hi - w_lo) * 0.02 + urng.random() * max(room - natural * squeeze, 0.0)
        conv = _hex(urng, 16)
        talk = _Talk(urng, urng.choices(_PROJECTS, [p.weight for p in _PROJECTS])[0])
        built: list[dict] = []
        for j, g in enumerate(gaps):
            t += g * squeeze
            prompt = talk.gemini_prompt(j == 0)
            row = _gemini_row(ucl, t, prompt, talk.gemini_html(), conv)
            if urng.random() < 0.02:  # a regenerated draft kept beside the first one
                row["safeHtmlItem"].append({"html": talk.gemini_html()})
            built.append(row)
        if i in fb_at:
            t += urng.uniform(3.0, 30.0) * squeeze
            built.append(_feedback_row(ucl, t))
        clk.merge(ucl)
        for row in reversed(built):
            out.add(_gemini_dump(row))
            events += 2 if row["title"].startswith("Prompted ") else 1
    for j in range(lone_feedback):
        t = t0 + span * 0.001 * (lone_feedback - j)
        out.add(_gemini_dump(_feedback_row(clk, t)))
        events += 1
    out.close()
    return events, 1, clk.lo, clk.hi


# --- notes ----------------------------------------------------------------------------------


def _note_text(clk: _Clock, t: float, title: str, tags: list[str], sections: list[str]) -> str:
    head = (
        f"---\ndate: {clk.seconds(t)}\ntitle: {json.dumps(title)}\n"
        f"tags: [{', '.join(tags)}]\n---\n"
    )
    return head + "\n" + "\n\n".join(s.strip("\n") for s in sections) + "\n"


def _random_note_sections(talk: _Talk, count: int) -> tuple[str, list[str]]:
    rng = talk.rng
    talk.new_topic()
    pool = [
        (
            "Decision: {Y} over {X}",
            "We tried {X} in {mod}; it broke because {reason}. Going with {Y}.\n\n"
            "## Why\n- {reason}\n- {fix}\n- p95 target: {n} ms (was {ms} ms)\n",
        ),
        (
            "Bug: {error_code} in {mod}",
            "Symptom: `{error1}` when running `{cmd}`.\n\nRoot cause: {cause}.\n\n"
            "## Fix\n{fix}. Regression test lives in {file}.\n",
        ),
        (
            "Standup {pkg}",
            "- done: {feature} ({file})\n- next: bump {lib} to {ver}\n"
            "- blocked: CI on {branch} is red ({error_code})\n",
        ),
        (
            "Preferences",
            "- I prefer {pref}\n- default local Postgres port: {port}\n"
            "- review PRs before lunch, deploys after 14:00\n",
        ),
        (
            "Reading notes: {concept}",
            "Key idea: ownership and time made explicit. Applies to {mod} because `{fn}` "
            "touches shared state from {n} workers.\n\n## Open questions\n- does {Y} change "
            "this?\n",
        ),
        (
            "Ideas for {pkg}",
            "- {feature}\n- split {file} ({m} lines is too long)\n- try {Y} in {mod2}\n",
        ),
    ]
    talk.topic["concept"] = rng.choice(_CONCEPTS)
    picks = rng.sample(pool, count)
    sections = [f"# {talk.fill(h)}\n\n{talk.fill(b)}" for h, b in picks]
    return talk.fill(picks[0][0]), sections


def _slugify(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "note"


def _write_notes(
    root: Path, budget: int, seed: int, t0: float, t1: float
) -> tuple[int, int, int, int]:
    clk = _Clock()
    if budget <= 0:
        return 0, 0, clk.lo, clk.hi
    rng = _unit_rng(seed, "notes-plan", 0)
    folder = root / "notes"
    folder.mkdir(parents=True, exist_ok=True)
    span = t1 - t0
    names: set[str] = set()
    events = files = 0
    i = 0
    sink = _FileSink()
    while events < budget:
        count = 2 if budget - events >= 2 and rng.random() < 0.7 else 1
        urng = _unit_rng(seed, "notes", i)
        talk = _Talk(urng, urng.choices(_PROJECTS, [p.weight for p in _PROJECTS])[0])
        title, sections = _random_note_sections(talk, count)
        t = t0 + span * (events + urng.random() * count) / budget
        t = min(t, t1)
        text = _note_text(clk, t, title, [talk.project.pkg, "notes"], sections)
        name = time.strftime("%Y-%m-%d", time.gmtime(int(t))) + "-" + _slugify(title)
        stem, k = name, 2
        while name in names:
            name = f"{stem}-{k}"
            k += 1
        names.add(name)
        sink.put(folder / f"{name}.md", text)
        events += count
        files += 1
        i += 1
    sink.close()
    return events, files, clk.lo, clk.hi


# --- public API -----------------------------------------------------------------------------


def _split_budget(events: int, mix: dict[str, float]) -> dict[str, int]:
    unknown = set(mix) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown sources in mix: {sorted(unknown)}; known: {SOURCES}")
    if any(v < 0 for v in mix.values()):
        raise ValueError("mix weights must be non-negative")
    total = sum(mix.values())
    if total <= 0:
        raise ValueError("mix weights must not all be zero")
    exact = {s: events * mix.get(s, 0.0) / total for s in SOURCES}
    out = {s: int(v) for s, v in exact.items()}
    # Largest remainders get the leftover events so the budgets add up exactly.
    rest = events - sum(out.values())
    for s in sorted(SOURCES, key=lambda s: (-(exact[s] - out[s]), SOURCES.index(s)))[:rest]:
        out[s] += 1
    return out


def _as_utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment


def generate_history(
    root: Path,
    events: int,
    *,
    seed: int = 0,
    start: datetime | None = None,
    days: int = 30,
    mix: dict[str, float] | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Write a synthetic multi-source history of `events` events under `root`.

    Deterministic for a given (seed, start, days, mix), whatever `workers` is: every
    session/conversation draws from its own seeded RNG. `workers` processes share the work
    (default: one for small histories, else up to the CPU count). `root` should be empty:
    files already there are left alone and not counted. Returns a manifest with the exact
    counts written: {"root", "events", "by_source", "files", "first", "last"} (first/last are
    ISO-8601 UTC of the earliest and latest timestamp written, None if nothing was).
    """
    if events < 0:
        raise ValueError("events must be >= 0")
    if days <= 0:
        raise ValueError("days must be > 0")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    begin = _as_utc(start) if start is not None else datetime.now(timezone.utc) - timedelta(days)
    t0 = begin.timestamp()
    t1 = t0 + days * 86400.0
    budgets = _split_budget(events, mix if mix is not None else DEFAULT_MIX)
    if workers is None:
        workers = 1 if events < 50_000 else min(os.cpu_count() or 1, 8)

    # Jobs, largest first so the pool balances: Claude Code in chunks of sessions, every other
    # source as one job (each writes one streamed file, or many small notes).
    jobs: list[tuple[str, Callable[..., tuple[int, int, int, int]], tuple[Any, ...]]] = []
    plans, scale = _plan_claude_code(budgets["claude-code"], seed, t0, t1)
    chunk = max(1, len(plans) // (workers * 4)) if workers > 1 else max(len(plans), 1)
    for i in range(0, len(plans), chunk):
        args = (root, plans[i : i + chunk], seed, t0, t1, scale)
        jobs.append(("claude-code", _write_claude_code, args))
    single = {
        "claude-ai": _write_claude_ai,
        "chatgpt": _write_chatgpt,
        "gemini": _write_gemini,
        "notes": _write_notes,
    }
    for source, fn in single.items():
        if budgets[source] > 0:
            jobs.append((source, fn, (root, budgets[source], seed, t0, t1)))
    jobs.sort(key=lambda job: -_job_cost(job[0], job[2], budgets))

    by_source = dict.fromkeys(SOURCES, 0)
    files = 0
    clk = _Clock()
    if workers <= 1 or len(jobs) <= 1:
        results = [(source, fn(*args)) for source, fn, args in jobs]
    else:
        # spawn, not fork: the parent may hold threads (file sinks, test runners).
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [(source, pool.submit(fn, *args)) for source, fn, args in jobs]
            results = [(source, fut.result()) for source, fut in futures]
    for source, (n, f, lo, hi) in results:
        by_source[source] += n
        files += f
        clk.merge_range(lo, hi)
    return _manifest(root, by_source, files, clk)


def _job_cost(source: str, args: tuple[Any, ...], budgets: dict[str, int]) -> float:
    if source == "claude-code":
        return float(sum(p.size for p in args[1]))
    return float(budgets[source]) * 1.3  # chat exports carry longer texts per event


def _manifest(root: Path, by_source: dict[str, int], files: int, clk: _Clock) -> dict[str, Any]:
    return {
        "root": str(root),
        "events": sum(by_source.values()),
        "by_source": by_source,
        "files": files,
        "first": _iso_from_us(clk.lo) if clk.hi >= 0 else None,
        "last": _iso_from_us(clk.hi) if clk.hi >= 0 else None,
    }




# --- demo -----------------------------------------------------------------------------------
#
# A new user's first look: Dana works on bookminder (Python/FastAPI, reading highlights) and
# tidepool (a Rust CLI for tide predictions) over ten days. Threads worth finding again:
# - decision: SQLite FTS5 broke with concurrent writers ("database is locked") -> PostgreSQL
#   tsvector + GIN (ADR-004), p95 840 ms -> 95 ms;
# - bug fix: error[E0502] in tidepool's Cache::evict_stale, fixed with HashMap::retain;
# - preferences: small PRs, real Postgres on port 5433 in tests (no mocks), anyhow in
#   binaries / thiserror in libraries, breaking changes called out in the changelog,
#   vegetarian and no cilantro.

_DEMO_BOOK = "/Users/dana/code/bookminder"
_DEMO_TIDE = "/Users/dana/code/tidepool"
_DEMO_MODEL = "claude-sonnet-4-5-20250929"

_DEMO_MODELS_PY = '''class Highlight(Base):
    __tablename__ = "highlights"

    id: Mapped[int] = mapped_column(primary_key=True)
    book_id: Mapped[int] = mapped_column(ForeignKey("books.id"), index=True)
    text: Mapped[str]
    note: Mapped[str | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)'''

_DEMO_FTS_MIGRATION = '''"""highlights full-text search (SQLite FTS5)"""

revision = "0007"
down_revision = "0006"


def upgrade() -> None:
    op.execute(
        "CREATE VIRTUAL TABLE highlights_fts USING fts5(text, note, "
        "content='highlights', content_rowid='id')"
    )
    op.execute(
        "CREATE TRIGGER highlights_ai AFTER INSERT ON highlights BEGIN "
        "INSERT INTO highlights_fts(rowid, text, note) VALUES (new.id, new.text, new.note); END"
    )'''

_DEMO_SEARCH_STUB = '''@router.get("/search")
def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:
    return []'''

_DEMO_SEARCH_FTS = '''@router.get("/search")
def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:
    rows = db.execute(
        text(
            "SELECT h.* FROM highlights_fts f JOIN highlights h ON h.id = f.rowid "
            "WHERE highlights_fts MATCH :q ORDER BY rank LIMIT 50"
        ),
        {"q": q},
    )
    return [HighlightOut.model_validate(r) for r in rows]'''

_DEMO_IMPORTER = '''def import_kindle_clippings(path: Path, db: Session) -> int:
    count = 0
    with db.begin():  # one transaction for the whole file
        for clip in parse_clippings(path):
            db.add(Highlight(book_id=resolve_book(db, clip), text=clip.text))
            count += 1
    return count'''

_DEMO_LOCKED = """...........F
=================================== FAILURES ===================================
_________________________ test_import_while_searching __________________________
sqlite3.OperationalError: database is locked

The above exception was the direct cause of the following exception:

sqlalchemy.exc.OperationalError: (sqlite3.OperationalError) database is locked
[SQL: INSERT INTO highlights (book_id, text, note, created_at) VALUES (?, ?, ?, ?)]
=========================== short test summary info ============================
FAILED tests/test_importer.py::test_import_while_searching - sqlalchemy.exc.OperationalError: \
(sqlite3.OperationalError) database is locked
1 failed, 11 passed in 6.02s"""

_DEMO_TSV_MIGRATION = '''"""highlights: tsvector search (replaces FTS5, see ADR-004)"""

revision = "0008"
down_revision = "0007"


def upgrade() -> None:
    op.execute("DROP TABLE IF EXISTS highlights_fts")
    op.execute(
        "ALTER TABLE highlights ADD COLUMN search tsvector GENERATED ALWAYS AS ("
        "setweight(to_tsvector('english', coalesce(text, '')), 'B') || "
        "setweight(to_tsvector('english', coalesce(note, '')), 'C')) STORED"
    )
    op.create_index("ix_highlights_search", "highlights", ["search"], postgresql_using="gin")'''

_DEMO_SEARCH_PG = '''@router.get("/search")
def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:
    query = func.websearch_to_tsquery("english", q)
    stmt = (
        select(Highlight)
        .where(Highlight.search.op("@@")(query))
        .order_by(func.ts_rank_cd(Highlight.search, query).desc())
        .limit(50)
    )
    return [HighlightOut.model_validate(h) for h in db.scalars(stmt)]'''

_DEMO_CACHE_RS = """use anyhow::Result;

impl Cache {
    pub fn evict_stale(&mut self, now: DateTime<Utc>) -> usize {
        let mut evicted = 0;
        for (station, entry) in self.entries.iter() {
            if entry.expires_at < now {
                self.entries.remove(station);
                evicted += 1;
            }
        }
        evicted
    }

    pub fn load(path: &Path) -> Result<Cache> {
        let bytes = std::fs::read(path)?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}"""

_DEMO_E0502 = """error[E0502]: cannot borrow `self.entries` as mutable because it is also \
borrowed as immutable
  --> src/cache.rs:88:17
   |
85 |         for (station, entry) in self.entries.iter() {
   |                                 -------------------
   |                                 |
   |                                 immutable borrow occurs here
   |                                 immutable borrow later used here
...
88 |                 self.entries.remove(station);
   |                 ^^^^^^^^^^^^^^^^^^^^^^^^^^^^ mutable borrow occurs here

For more information about this error, try `rustc --explain E0502`.
error: could not compile `tidepool` (lib) due to 1 previous error"""

_DEMO_EVICT_OLD = """        let mut evicted = 0;
        for (station, entry) in self.entries.iter() {
            if entry.expires_at < now {
                self.entries.remove(station);
                evicted += 1;
            }
        }
        evicted"""

_DEMO_EVICT_NEW = """        let before = self.entries.len();
        self.entries.retain(|_, entry| entry.expires_at >= now);
        before - self.entries.len()"""

_DEMO_SYNC_OLD = """\
pub async fn fetch_predictions(client: &Client, id: u32) -> Result<Vec<Prediction>> {
    let url = format!("{}/datagetter?station={}&product=predictions", NOAA_BASE, id);
    let resp = client.get(url).send().await?;
    Ok(resp.json::<Predictions>().await?.predictions)
}"""

_DEMO_SYNC_NEW = """\
pub async fn fetch_predictions(client: &Client, id: u32) -> Result<Vec<Prediction>> {
    let url = format!("{}/datagetter?station={}&product=predictions", NOAA_BASE, id);
    let mut delay = Duration::from_millis(250);
    for attempt in 1..=MAX_ATTEMPTS {
        match client.get(&url).send().await.and_then(|r| r.error_for_status()) {
            Ok(resp) => return Ok(resp.json::<Predictions>().await?.predictions),
            Err(err) if attempt < MAX_ATTEMPTS && is_retryable(&err) => {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            Err(err) => return Err(err.into()),
        }
    }
    unreachable!("the last attempt returns")
}"""


def _demo_session(
    rng: random.Random, clk: _Clock, cwd: str, t: float, branch: str
) -> _CCSession:
    return _CCSession(
        rng,
        clk,
        session_id=_uuid4(rng),
        cwd=cwd,
        branch=branch,
        version="2.1.14",
        model=_DEMO_MODEL,
        t=t,
        slug="-".join(rng.sample(_SLUG_WORDS, 3)),
    )


def _demo_ask(s: _CCSession, t: float, text: str) -> None:
    s.t = t
    s.prompt(text, gap=(0.0, 0.0))


def _demo_claude_code(
    sink: _FileSink, root: Path, rng: random.Random, clk: _Clock, at: Callable[..., float],
    day: Callable[[int], str],
) -> tuple[int, int]:  # fmt: skip
    sessions: list[_CCSession] = []
    book = lambda rel: f"{_DEMO_BOOK}/{rel}"  # noqa: E731
    tide = lambda rel: f"{_DEMO_TIDE}/{rel}"  # noqa: E731

    # Day -9: FTS5 search, the first attempt.
    s = _demo_session(rng, clk, _DEMO_BOOK, at(9, "09:12"), "feat/search")
    _demo_ask(s, at(9, "09:12"), "add full-text search over book highlights to bookminder. we're "
              "on SQLite locally, so FTS5 is probably the easiest. keep the PR small, I prefer "
              "small PRs I can review in one sitting.")  # fmt: skip
    s.think("Dana wants search over highlights. SQLite ships FTS5, so an external-content FTS "
            "table kept in sync by triggers is the smallest change. I should look at the "
            "Highlight model and the routes first.")  # fmt: skip
    s.say("I'll look at the highlight model and the existing routes first.")
    s.read(book("src/bookminder/db/models.py"), _DEMO_MODELS_PY)
    s.grep("Highlight", _DEMO_BOOK, [book("src/bookminder/api/search.py"),
                                     book("src/bookminder/db/models.py")])  # fmt: skip
    s.say("Plan: an FTS5 virtual table over `highlights` kept in sync by triggers, and a "
          "`GET /search?q=` endpoint ranked by bm25.")  # fmt: skip
    todo = ["Add FTS5 table and triggers", "Implement GET /search", "Add tests for search"]
    s.todo([], _todos(todo, 0))
    s.write(book("alembic/versions/0007_highlights_fts.py"), _DEMO_FTS_MIGRATION)
    s.edit(book("src/bookminder/api/search.py"), _DEMO_SEARCH_STUB, _DEMO_SEARCH_STUB,
           _DEMO_SEARCH_FTS)  # fmt: skip
    s.snapshot_update("src/bookminder/api/search.py", 2)
    s.bash("uv run pytest -q tests/test_search.py", "Run the search tests",
           "............\n12 passed in 0.84s")  # fmt: skip
    s.todo(_todos(todo, 0), _todos(todo, 3))
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
    s = _demo_session(rng, clk, _DEMO_BOOK, at(8, "14:03"), "feat/search")
    _demo_ask(s, at(8, "14:03"), "CI is red on feat/search:\n```\nsqlite3.OperationalError: "
              "database is locked\n```\nit happens in test_import_while_searching. the Kindle "
              "importer and the API write at the same time.")  # fmt: skip
    s.think("`database is locked` means a second writer waited longer than the busy timeout. "
            "SQLite allows one writer at a time; WAL lets readers proceed but not two writers. "
            "The importer probably holds one transaction for the whole file.")  # fmt: skip
    s.bash("uv run pytest -x tests/test_importer.py", "Reproduce the failure", _DEMO_LOCKED,
           ok=False)  # fmt: skip
    s.read(book("src/bookminder/importer.py"), _DEMO_IMPORTER)
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
    s = _demo_session(rng, clk, _DEMO_BOOK, at(7, "10:20"), "feat/pg-search")
    _demo_ask(s, at(7, "10:20"), "implement ADR-004: tsvector column on highlights, GIN index, "
              "websearch_to_tsquery in /search. tests against the real postgres on 5433 "
              "(docker compose).")  # fmt: skip
    s.bash("docker compose up -d postgres", "Start Postgres",
           " Container bookminder-postgres-1  Started")  # fmt: skip
    s.write(book("alembic/versions/0008_highlights_tsvector.py"), _DEMO_TSV_MIGRATION)
    s.bash("DATABASE_URL=postgresql://dana@localhost:5433/bookminder uv run alembic upgrade head",
           "Apply the migration",
           "INFO  [alembic.runtime.migration] Context impl PostgresqlImpl.\n"
           "INFO  [alembic.runtime.migration] Running upgrade 0007 -> 0008, highlights: "
           "tsvector search")  # fmt: skip
    s.edit(book("src/bookminder/api/search.py"), _DEMO_SEARCH_FTS, _DEMO_SEARCH_FTS,
           _DEMO_SEARCH_PG)  # fmt: skip
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
    s = _demo_session(rng, clk, _DEMO_TIDE, at(6, "16:40"), "feat/offline-cache")
    _demo_ask(s, at(6, "16:40"), f"cargo build fails in tidepool:\n```\n{_DEMO_E0502}\n```\n"
              "this is in evict_stale. fix it, and explain why it happens")  # fmt: skip
    s.think("Classic E0502: `self.entries.iter()` holds an immutable borrow for the whole loop "
            "and `self.entries.remove()` needs a mutable one. `HashMap::retain` does the "
            "filtering in place with a single mutable borrow. I should check whether other "
            "code does the same thing.")  # fmt: skip
    s.read(tide("src/cache.rs"), _DEMO_CACHE_RS)

    def explore(child: _CCSession) -> str:
        child.prompt("Find every caller of Cache::evict_stale and any other place in tidepool "
                     "that mutates a collection while iterating over it.",
                     with_snapshot=False, gap=(0.01, 0.2))  # fmt: skip
        child.grep("evict_stale", _DEMO_TIDE, [tide("src/cache.rs"), tide("src/sync.rs")])
        child.grep(r"\.iter\(\)", _DEMO_TIDE, [tide("src/cache.rs"), tide("src/forecast.rs")])
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
    s.edit(tide("src/cache.rs"), _DEMO_CACHE_RS, _DEMO_EVICT_OLD, _DEMO_EVICT_NEW)
    s.bash("cargo build && cargo test cache", "Build and run cache tests",
           "   Compiling tidepool v0.3.2 (/Users/dana/code/tidepool)\n    Finished `dev` profile "
           "[unoptimized + debuginfo] target(s) in 3.41s\nrunning 14 tests\ntest result: ok. 14 "
           "passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s")
    s.say("Fixed: `evict_stale` now uses `self.entries.retain(|_, e| e.expires_at >= now)` and "
          "returns how many entries it dropped. Build is green, 14 cache tests pass. The subagent "
          "found no other place that mutates while iterating.")  # fmt: skip
    _demo_ask(s, at(6, "17:05"), "much cleaner. btw I prefer anyhow in the binary and thiserror "
              "in the library crate — check that cache.rs follows that")  # fmt: skip
    s.grep("anyhow", f"{_DEMO_TIDE}/src", [tide("src/cache.rs"), tide("src/bin/tidepool.rs")])
    s.edit(tide("src/cache.rs"), _DEMO_CACHE_RS, "use anyhow::Result;",
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
    s = _demo_session(rng, clk, _DEMO_TIDE, at(4, "11:05"), "feat/station-flag")
    _demo_ask(s, at(4, "11:05"), "add a --station flag to `tidepool sync` (instead of the "
              "positional arg) and retry NOAA requests with exponential backoff, max 5 attempts")
    s.read(tide("src/sync.rs"), _DEMO_SYNC_OLD)
    s.edit(tide("src/sync.rs"), _DEMO_SYNC_OLD, _DEMO_SYNC_OLD, _DEMO_SYNC_NEW)
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
    s = _demo_session(rng, clk, _DEMO_BOOK, at(2, "09:30"), "feat/search-ranking")
    _demo_ask(s, at(2, "09:30"), "search results: exact title matches should rank above "
              "highlight matches. use ts_rank_cd with weights")  # fmt: skip
    s.read(book("alembic/versions/0008_highlights_tsvector.py"), _DEMO_TSV_MIGRATION)
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
    s.edit(book("src/bookminder/api/search.py"), _DEMO_SEARCH_PG,
           "def search(q: str, db: Session = Depends(get_db)) -> list[HighlightOut]:",
           "def search(\n    q: str, limit: int = Query(20, ge=1, le=100), "
           "db: Session = Depends(get_db)\n) -> list[HighlightOut]:")  # fmt: skip
    s.bash("uv run pytest -q tests/test_search.py", "Run search tests",
           "................\n16 passed in 1.10s")  # fmt: skip
    s.say("Added `limit` (default 20, 1-100, validated by FastAPI). 16 tests pass.")
    s.summary("Weighted search ranking and a limit parameter")
    sessions.append(s)

    # Day -1: tidepool release.
    s = _demo_session(rng, clk, _DEMO_TIDE, at(1, "17:10"), "main")
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


def _demo_claude_ai(
    root: Path, rng: random.Random, clk: _Clock, at: Callable[..., float]
) -> tuple[int, int]:
    convs: list[dict[str, Any]] = []

    c = _ClaudeAIConversation(rng, clk, at(10, "20:15"))
    h = c.human("I'm adding search over book highlights to bookminder (FastAPI, SQLite locally, "
                "Postgres in production). SQLite FTS5 or Postgres full-text search?",
                ROOT_PARENT, gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Both work; the deciding question is **how many writers** you have.\n\n"
                "- **SQLite FTS5**: zero setup, great ranking (bm25), fast for one process. But "
                "SQLite has a single writer: an importer and an API writing at once will see "
                "`database is locked`.\n- **PostgreSQL tsvector + GIN**: a bit more setup, "
                "handles concurrent writers, and it's what production runs anyway.\n\nIf the "
                "importer runs while people use the app, I'd start on Postgres.", h)
    c.assistant("Short answer: FTS5 for a prototype, Postgres `tsvector` once anything writes "
                "concurrently. FTS5's weak spot is SQLite's single writer.", h,
                gap=(30.0, 60.0))  # fmt: skip  # a retry: two answers to the same prompt
    h2 = c.human("I'll start with FTS5 since it's zero setup. Can you sketch the FTS5 schema "
                 "with triggers?", c.messages[-1]["uuid"])  # fmt: skip
    c.assistant("Here's an external-content FTS5 table kept in sync by triggers.\n\nInserts "
                "are covered by `highlights_ai`; add matching `_ad`/`_au` triggers for deletes "
                "and updates.", h2,
                artifact=("highlights FTS5 schema", "sql",
                          "CREATE VIRTUAL TABLE highlights_fts USING fts5(\n  text, note,\n  "
                          "content='highlights', content_rowid='id'\n);\n\nCREATE TRIGGER "
                          "highlights_ai AFTER INSERT ON highlights BEGIN\n  INSERT INTO "
                          "highlights_fts(rowid, text, note)\n  VALUES (new.id, new.text, "
                          "new.note);\nEND;"))  # fmt: skip
    convs.append(c.export(_uuid4(rng), "Search backend for bookminder", _ACCOUNT_UUID,
                          "FTS5 vs Postgres full-text search for highlights."))  # fmt: skip

    c = _ClaudeAIConversation(rng, clk, at(5, "19:40"))
    h = c.human("I'm vegetarian and I really don't like cilantro. Give me a meal-prep plan for "
                "4 workday lunches, high protein, about 30 g per lunch.", ROOT_PARENT,
                gap=(0.0, 0.0))  # fmt: skip
    a = c.assistant("Four lunches, ~30 g protein each, no cilantro anywhere:\n\n1. **Lentil & "
                    "feta salad** — green lentils, roasted peppers, feta, lemon (31 g)\n2. "
                    "**Tofu peanut noodles** — baked tofu, soba, edamame (33 g)\n3. **Chickpea "
                    "shakshuka** with eggs, parsley instead of cilantro (29 g)\n4. **Tempeh "
                    "grain bowl** — farro, tempeh, roasted broccoli, tahini (32 g)\n\nPrep on "
                    "Sunday: cook lentils and farro, bake tofu and tempeh, roast the veg.", h)
    h = c.human("swap the tofu one, I had tofu all week", a)
    c.assistant("Swap #2 for **white bean & halloumi traybake** — butter beans, halloumi, "
                "cherry tomatoes, spinach (30 g). Same Sunday prep slot, 35 minutes in the "
                "oven.", h)  # fmt: skip
    convs.append(c.export(_uuid4(rng), "Vegetarian meal prep", _ACCOUNT_UUID))

    c = _ClaudeAIConversation(rng, clk, at(3, "13:00"))
    h = c.human("How would you explain Rust's E0502 to a junior dev? I hit it in tidepool's "
                "cache eviction loop this week.", ROOT_PARENT, gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Think of a borrow as a library card. `iter()` checks the map out for "
                "*reading* for as long as the loop runs. `remove()` wants to check the same map "
                "out for *writing*. The library (the compiler) refuses to hand out a write card "
                "while a read card is out — that's E0502.\n\nThe fix is to ask for one write "
                "card that does both jobs: `map.retain(|_, v| keep(v))`.", h,
                thinking="The user wants a teaching explanation, not a fix. An analogy plus the "
                "retain() idiom they already used should land well.")  # fmt: skip
    convs.append(c.export(_uuid4(rng), "Explaining E0502", _ACCOUNT_UUID))

    out = _ArrayWriter(root / "claude-ai" / "conversations.json")
    for conv in convs:
        out.add(_jl(conv))
    out.close()
    t = at(10, "19:58")
    project = {
        "uuid": _uuid4(rng),
        "name": "Bookminder",
        "description": "Reading highlights app: FastAPI + PostgreSQL.",
        "is_private": True,
        "is_starter_project": False,
        "prompt_template": "You are helping Dana with bookminder. Dana prefers small PRs, ruff "
        "with line length 100, and tests against a real Postgres (port 5433), never mocks.",
        "created_at": clk.us(t, "+00:00"),
        "updated_at": clk.us(t + 420.5, "+00:00"),
        "creator": {"uuid": _ACCOUNT_UUID, "full_name": "Dana Ruiz"},
        "docs": [
            {
                "uuid": _uuid4(rng),
                "filename": "architecture.md",
                "content": "# bookminder\n\n- FastAPI app in src/bookminder\n- PostgreSQL in "
                "production, port 5433 locally\n- Kindle clippings importer runs hourly\n",
                "created_at": clk.us(t, "+00:00"),
            }
        ],
    }
    proj_out = _ArrayWriter(root / "claude-ai" / "projects.json")
    proj_out.add(json.dumps(project, ensure_ascii=False))
    proj_out.close()
    return sum(len(cv["chat_messages"]) for cv in convs) + 1, 2


def _demo_chatgpt(
    root: Path, rng: random.Random, clk: _Clock, at: Callable[..., float]
) -> tuple[int, int]:
    convs = []
    c = _ChatGPTConversation(rng, clk, at(8, "21:30"), "gpt-4o")
    c.system()
    c.user("For searching book titles and highlights in Postgres: tsvector or pg_trgm?",
           gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Use both, for different jobs:\n\n- **tsvector + GIN** for words and phrases "
                "in highlight text: stemming (\"running\" finds \"run\"), ranking with "
                "`ts_rank_cd`, `websearch_to_tsquery` for user input.\n- **pg_trgm** for short "
                "fields where typos matter, like titles and author names (`similarity()`, "
                "`%` operator with a GIN trigram index).")  # fmt: skip
    u = c.user("what about typos like 'Dostoyevsky' vs 'Dostoevsky'?")
    c.assistant("That's pg_trgm territory: `similarity('Dostoyevsky', 'Dostoevsky')` is about "
                "0.6, well above the default 0.3 threshold. tsvector would treat them as "
                "different words.")  # fmt: skip
    c.assistant("tsvector won't help with spelling variants. Add a trigram index on "
                "`authors.name` and query with `name % :q ORDER BY similarity(name, :q) DESC`.",
                parent=u, gap=(20.0, 40.0))  # fmt: skip  # regenerated answer, now current
    convs.append(c.export("tsvector vs pg_trgm"))

    c = _ChatGPTConversation(rng, clk, at(6, "08:10"), "gpt-4o")
    c.user("Tide prediction from harmonic constants: write the formula and compute the M2 "
           "contribution at t = 3 h for amplitude 0.58 m, phase 190°.", gap=(0.0, 0.0))
    height = 0.58 * math.cos(math.radians(28.984104 * 3.0 - 190.0))
    c.code_run("import math\nA, phase, speed = 0.58, 190.0, 28.984104  # M2 speed in °/h\n"
               "t = 3.0\nround(A * math.cos(math.radians(speed * t - phase)), 3)",
               f"{height:.3f}")  # fmt: skip
    c.assistant("Each constituent contributes h(t) = A·cos(ω·t − φ); the prediction is the "
                "mean sea level plus the sum over constituents.\n\nFor M2 (ω = 28.984104 °/h, "
                f"A = 0.58 m, φ = 190°) at t = 3 h: **{height:.3f} m**.")  # fmt: skip
    convs.append(c.export("Tide prediction math"))

    c = _ChatGPTConversation(rng, clk, at(3, "18:20"), "gpt-4o")
    c.system()
    c.user("Draft a short email to Priya asking to move our Thursday 1:1 to Friday morning.",
           gap=(0.0, 0.0))  # fmt: skip
    c.assistant("Subject: Moving our 1:1 to Friday?\n\nHi Priya,\n\nWould it work to move our "
                "Thursday 1:1 to Friday morning? Anything between 9 and 11 works for me.\n\n"
                "Thanks,\nDana")  # fmt: skip
    c.user("more casual please")
    c.assistant("Hey Priya — could we push Thursday's 1:1 to Friday morning? Anytime 9-11 is "
                "good for me. Thanks!")  # fmt: skip
    convs.append(c.export("Email to Priya"))

    out = _ArrayWriter(root / "chatgpt" / "conversations.json", ", ")
    events = 0
    for conv in convs:
        out.add(json.dumps(conv))
        events += sum(1 for node in conv["mapping"].values() if node["message"] is not None)
    out.close()
    return events, 1


_DEMO_GEMINI = (
    # (days ago, time, conversation, prompt, response html)
    (8, "14:20", 0, "what does 'database is locked' mean in sqlite",
     "<p>SQLite allows only <b>one writer at a time</b>. The error means a connection waited "
     "longer than its busy timeout for another connection's write transaction.</p><ul><li>Keep "
     "write transactions short.</li><li>Set <code>PRAGMA busy_timeout</code>.</li><li>For many "
     "concurrent writers, use a client/server database.</li></ul>"),
    (8, "14:24", 0, "does WAL mode allow two writers in sqlite",
     "<p>No. WAL lets readers run while one writer writes, but writers are still serialized."
     "</p>"),
    (6, "16:52", 1, "difference between rust E0502 and E0499",
     "<p><b>E0502</b>: a value is borrowed mutably while an immutable borrow is alive. "
     "<b>E0499</b>: a value is borrowed mutably twice at once.</p>"),
    (5, "12:30", 2, "high protein vegetarian lunch without tofu or cilantro",
     "<ul><li>Lentil and feta salad (about 30 g protein)</li><li>White bean and halloumi "
     "traybake</li><li>Greek yogurt bowl with hemp seeds</li></ul>"),
    (3, "07:45", 3, "best time of year to visit Lisbon",
     "<p>Late spring (May-June) and early autumn (September-October): warm, fewer crowds than "
     "July and August.</p>"),
    (3, "07:48", 3, "is the Lisbon card worth it for 3 days",
     "<p>Usually yes if you plan to use public transport a lot and visit 3-4 paid sights per "
     "day; otherwise a Viva Viagem card is cheaper.</p>"),
    (1, "12:05", 4, "how long does pizza dough need to rest",
     "<p>At least <b>24 hours</b> in the fridge for good flavour; 2-4 hours at room "
     "temperature works in a pinch.</p>"),
    (1, "12:09", 4, "and at room temperature?",
     "<p>About 2 hours at 22-24 °C, until it has roughly doubled.</p>"),
    (1, "21:40", 5, "regex to match semver like 0.4.0",
     "<pre><code>^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-[0-9A-Za-z.-]+)?$</code></pre>"),
)  # fmt: skip


def _demo_gemini(
    root: Path, rng: random.Random, clk: _Clock, at: Callable[..., float]
) -> tuple[int, int]:
    convs = [_hex(rng, 16) for _ in range(6)]
    rows: list[tuple[float, dict]] = []
    for days_ago, hhmm, conv, prompt, answer in _DEMO_GEMINI:
        t = at(days_ago, hhmm) + rng.uniform(0, 50)
        rows.append((t, _gemini_row(clk, t, prompt, answer, convs[conv])))
    t = at(6, "16:53")
    rows.append((t, _feedback_row(clk, t)))
    rows.sort(key=lambda r: -r[0])  # Takeout lists the newest activity first
    out = _ArrayWriter(root / GEMINI_DIR / "MyActivity.json")
    for _, row in rows:
        out.add(_gemini_dump(row))
    out.close()
    return sum(2 if r["title"].startswith("Prompted ") else 1 for _, r in rows), 1


def _demo_notes(
    sink: _FileSink, root: Path, clk: _Clock, at: Callable[..., float], day: Callable[[int], str]
) -> tuple[int, int]:
    notes = (
        (10, "08:30", "Week plan", ["bookminder", "tidepool"], [
            "# Week plan\n\n- bookminder: search over highlights (small PRs!)\n- tidepool: "
            "offline cache, then the 0.4.0 release\n- Thursday: 1:1 with Priya\n",
        ]),
        (8, "18:00", "Decision: PostgreSQL tsvector over SQLite FTS5", ["bookminder", "decision"], [
            "# Decision: PostgreSQL tsvector over SQLite FTS5\n\nWe tried SQLite FTS5; it broke "
            "with concurrent writers (`database is locked` when the importer and the API write "
            "at once). Use PostgreSQL tsvector + GIN instead. See ADR-004.\n",
            "# Follow-ups\n\n- migration 0008 drops the FTS5 table\n- tests against the real "
            "Postgres on port 5433, no mocks\n- benchmark with 250k highlights\n",
        ]),
        (6, "18:30", "TIL: E0502 and retain()", ["tidepool", "rust", "til"], [
            "# TIL: E0502 and retain()\n\n`error[E0502]` in `Cache::evict_stale`: iterating "
            "`self.entries` while calling `self.entries.remove()`. `HashMap::retain` does both "
            "with one mutable borrow.\n",
        ]),
        (1, "09:00", "Standup", ["standup"], [
            "# Standup\n\n- done: weighted search ranking, `?limit=` on /search\n- done: tidepool "
            "--station flag and retries\n- today: tidepool v0.4.0 release\n",
            "# Blockers\n\n- none; p95 search latency is 95 ms on 250k highlights\n",
        ]),
    )  # fmt: skip
    events = 0
    for days_ago, hhmm, title, tags, sections in notes:
        t = at(days_ago, hhmm)
        name = f"{day(days_ago)}-{_slugify(title)}.md"
        sink.put(root / "notes" / name, _note_text(clk, t, title, tags, sections))
        events += len(sections) if len(sections) >= 2 else 1
    return events, len(notes)


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
    clk = _Clock()
    sink = _FileSink()
    try:
        cc = _demo_claude_code(sink, root, rng, clk, at, day)
        ai = _demo_claude_ai(root, rng, clk, at)
        gpt = _demo_chatgpt(root, rng, clk, at)
        gem = _demo_gemini(root, rng, clk, at)
        notes = _demo_notes(sink, root, clk, at, day)
    finally:
        sink.close()
    parts = {"claude-code": cc, "claude-ai": ai, "chatgpt": gpt, "gemini": gem, "notes": notes}
    by_source = {source: n for source, (n, _) in parts.items()}
    return _manifest(root, by_source, sum(f for _, f in parts.values()), clk)
