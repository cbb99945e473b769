"""Per programming language: the files, commands, errors, fixes and code a developer's
chatter draws from (`Talk` fills the `{placeholders}` from its current topic).

One data table (five entries of the same shape), kept in one module so the languages can be
compared side by side; that is why this module is longer than the others.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lang:
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


_PY = Lang(
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

_RS = Lang(
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

_TS = Lang(
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

_GO = Lang(
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

_INFRA = Lang(
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

LANGS = {"python": _PY, "rust": _RS, "ts": _TS, "go": _GO, "infra": _INFRA}
