"""Every `MEMORY_PLATFORM_*` setting, in one typed object.

`load_settings()` reads the environment each time it is called (never at import time), so a
changed variable takes effect on the next command, sensor tick or request. A bad value is one
`SettingsError` naming the variable and what it should be. The configuration table of docs/configuration.md
is generated from the field descriptions here (`markdown_table`), and a test keeps the two
equal. Vendor keys (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) are not ours: the LLM providers
read them where the vendor SDK expects them.
"""

import json
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "MEMORY_PLATFORM_"


class SettingsError(ValueError):
    """A setting has a value it cannot take; the message names the variable."""


class Settings(BaseSettings):
    """Where things live, which models run, and the thresholds of the automation."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, env_ignore_empty=True, frozen=True, extra="ignore",
        populate_by_name=True)

    # --- where things live --------------------------------------------------------------
    home: Path = Field(Path("~/.memory-platform"), description=(
        "Data folder: the embedded PostgreSQL (`pgdata/`), Dagster's storage, the Parquet "
        "lake, digests, the demo history."))
    database_url: str | None = Field(None, description=(
        "A PostgreSQL (with pgvector) to use instead of the embedded one."))
    claude_projects: Path = Field(Path("~/.claude/projects"), description=(
        "Claude Code transcripts, watched while `up` runs."))
    inbox: Path = Field(None, validate_default=False, description=(
        "Drop exports here to have them imported while `up` runs (default `HOME/inbox`)."))
    notes: Path | None = Field(None, description="A folder of markdown notes to watch too.")
    routing: Path | None = Field(None, description=(
        "The routing rules: which namespace a conversation feeds (default "
        "`HOME/routing.toml`)."))
    warehouse: Path | None = Field(None, description=(
        "The DuckDB file dbt builds the reporting marts into (default "
        "`HOME/analytics/warehouse.duckdb`)."))
    reports: Path | None = Field(None, description=(
        "Where the weekly reports are written, one folder per ISO week (default "
        "`HOME/reports`)."))
    history_start: date | None = Field(None, description=(
        "First day of the daily partitions (default: the earliest day imported, which "
        "`up` and the folder sensor keep in `HOME/partitions_start`; 2022-01-01 before "
        "any); older events still import from the CLI."))

    # --- models ---------------------------------------------------------------------------
    embedder: str = Field("local-ctx2", description=(
        "Event embedder: `local-ctx2` (all-MiniLM-L6-v2 reading each turn with its two "
        "previous turns, offline), `local` (the plain model) or `openai` "
        "(`text-embedding-3-small`); after changing it run `memory-platform embed`."))
    vault_embedder: str = Field("local", description=(
        "Memory embedder (a memory stands alone): `local` or `openai`."))
    llm_provider: str | None = Field(None, description=(
        "`anthropic`, `openai`, `openai-compatible` or `claude-cli`; dreams and summaries "
        "need one. Unset with `claude` on PATH: `claude-cli`."))
    llm_model: str | None = Field(None, description="Model name (provider default when unset).")
    llm_base_url: str | None = Field(None, description=(
        "Base URL of an OpenAI-compatible server, e.g. `http://localhost:11434/v1`."))
    llm_api_key: SecretStr | None = Field(None, description=(
        "API key for an `openai-compatible` server (vendor keys use their own variables)."))
    claude_executable: str = Field("claude", description=(
        "The `claude` CLI used by the `claude-cli` provider."))

    # --- automation -----------------------------------------------------------------------
    timezone: str = Field("UTC", description=(
        "IANA zone of the nightly dream's 03:00, the weekly curator's Sunday 04:00, the "
        "daily purge's 04:30 and of the session-end sensor's days."))
    dream_min_score: Annotated[int, Field(ge=1, le=10)] = Field(6, description=(
        "Durability score (1-10) a candidate needs to reach the dedup gate."))
    dream_lookback_days: Annotated[int, Field(ge=1)] = Field(30, description=(
        "How far back unattended dreams (schedule, sensor, bare `dream`) reach."))
    session_quiet_minutes: Annotated[int, Field(ge=0)] = Field(15, description=(
        "A transcript quiet this long counts as an ended session."))
    dream_throttle_minutes: Annotated[int, Field(ge=0)] = Field(30, description=(
        "At most one session-end dream per this many minutes (later sessions are batched)."))
    review_backlog_max: Annotated[int, Field(ge=0)] = Field(50, description=(
        "The `review_backlog` check warns above this many pending entries."))
    review_backlog_max_days: Annotated[int, Field(ge=1)] = Field(14, description=(
        "... or when the oldest pending entry is older than this many days."))
    digest_webhook: str | None = Field(None, description=(
        "POST each dream digest as `{\"text\": markdown}` to this URL."))
    orchard_agent_updates_per_day: Annotated[int, Field(ge=1)] = Field(3, description=(
        "Milestones an agent (MCP `orchard_milestone`) may record per project and day "
        "(MEMORY_PLATFORM_TIMEZONE); more are refused as status churn. People are not "
        "limited."))
    orchard_title_repeats: Annotated[int, Field(ge=2)] = Field(3, description=(
        "Project discovery: a chat title (claude.ai, ChatGPT, Gemini) seen in this many "
        "conversations is proposed as a project."))
    orchard_evidence_turns: Annotated[int, Field(ge=1, le=20)] = Field(3, description=(
        "`orchard week`: how many of a project's latest cairn turns it shows as evidence."))

    # --- recall -------------------------------------------------------------------------
    session_context_tokens: Annotated[int, Field(ge=64, le=2000)] = Field(1500, description=(
        "Token budget of the context a Claude Code session starts with "
        "(`hook session-start`)."))
    prompt_context_tokens: Annotated[int, Field(ge=64, le=2000)] = Field(400, description=(
        "Token budget of the memories added to a prompt (`hook prompt`)."))
    recall_server: str = Field("auto", pattern="^(auto|off)$", description=(
        "`auto`: the hooks start a resident process on first use (fast hooks: it keeps the "
        "database and the embedding model loaded); `off`: every hook works in its own "
        "process (slower, keyword relevance only)."))
    recall_idle_minutes: Annotated[int, Field(ge=1)] = Field(30, description=(
        "The resident hook process exits after this many minutes without a request."))
    prompt_hook_seconds: Annotated[float, Field(gt=0, le=600)] = Field(3.5, description=(
        "`hook prompt` gives up after this long, adding nothing; keep it under the timeout "
        "Claude Code gives the hook (5 s in the example) with a second to spare."))
    session_hook_seconds: Annotated[float, Field(gt=0, le=600)] = Field(20.0, description=(
        "`hook session-start` gives up after this long, adding nothing; keep it under the "
        "hook's timeout (30 s in the example)."))
    wiki_sensitive: bool = Field(False, description=(
        "Write memories holding personal data to the wiki too (they are left out by "
        "default)."))
    classifier_llm: bool = Field(False, description=(
        "Ask the configured LLM for the category and topic of memories the rules are unsure "
        "of (on wiki builds and `memory-platform recall classify`)."))

    # --- curator --------------------------------------------------------------------------
    curator_ceiling: Annotated[float, Field(ge=0, le=1)] = Field(0.40, description=(
        "The share of a namespace's current memories one curator run may cut; a run that "
        "would cut more cuts nothing."))
    curator_ceilings: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(
        {"personal": 0.25}, description=(
            "Per-namespace ceilings over the default, as JSON, e.g. "
            "`{\"acme\": 0.3}`; `personal` stays at 0.25 unless it is named here."))
    curator_retention_days: Annotated[int, Field(ge=1)] = Field(14, description=(
        "A cut can be restored for this many days; the daily purge then deletes its "
        "archive and records what it purged."))
    curator_prompt_tokens: Annotated[int, Field(ge=1000)] = Field(24000, description=(
        "Listing tokens per curator prompt (estimated at 4 characters a token); a larger "
        "namespace is listed in several prompts."))
    curator_max_turns: Annotated[int, Field(ge=1)] = Field(30, description=(
        "Turn budget of one curator agent call (`claude -p --max-turns`, or the API tool "
        "loop's round trips)."))
    curator_timeout_seconds: Annotated[int, Field(ge=10)] = Field(900, description=(
        "Time budget of one curator agent call."))

    # --- faces ----------------------------------------------------------------------------
    api_token: SecretStr | None = Field(None, description=(
        "Admin bearer token of `serve` (every namespace); scoped ones come from "
        "`memory-platform token create`."))
    api_allowed_hosts: str | None = Field(None, description=(
        "Comma-separated extra `Host` names `serve` answers (e.g. `memory.example.org`); "
        "loopback names and the bound address are always allowed, any other gets 421 (DNS "
        "rebinding). `*` turns the check off (behind a proxy that checks it)."))
    api_max_body_bytes: Annotated[int, Field(ge=1024)] = Field(1_048_576, description=(
        "Largest request body `serve` reads, in bytes; a larger one gets 413."))

    # --- collector ------------------------------------------------------------------------
    collector_token: SecretStr | None = Field(None, description=(
        "The token `memory-platform collect` sends (`token create --kind collector "
        "--machine NAME` on the server)."))
    collector_spool_mb: Annotated[int, Field(ge=1)] = Field(256, description=(
        "Bound of the collector's on-disk spool (`HOME/collector/spool`), in MiB; when full "
        "it says so and reads nothing new until the server takes it."))

    # --- tools ----------------------------------------------------------------------------
    benchdata: Path | None = Field(None, description=(
        "Benchmark data (LoCoMo, transcripts) for `memory-platform bench` (default "
        "`../shared/benchdata` beside the checkout)."))

    @model_validator(mode="before")
    @classmethod
    def _inbox_under_home(cls, data):
        if isinstance(data, dict) and not data.get("inbox"):
            home = data.get("home") or cls.model_fields["home"].default
            data = {**data, "inbox": Path(home).expanduser() / "inbox"}
        return data

    @field_validator("curator_ceilings", mode="before")
    @classmethod
    def _json_map(cls, value):
        # From the environment the map arrives as JSON text; `load_settings(env)` passes
        # the raw string, so it is decoded here for both paths.
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not JSON: {exc}") from None
            if not isinstance(value, dict):
                raise ValueError("a JSON object of namespace -> share, e.g. {\"personal\": 0.25}")
        return value

    @field_validator("home", "claude_projects", "inbox", "notes", "routing", "benchdata",
                     "warehouse", "reports")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    # --- derived locations ------------------------------------------------------------------
    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def lake(self) -> Path:
        return self.home / "lake"

    @property
    def models(self) -> Path:
        """Model files built here from installed wheels (the int8 MiniLM, query/quantized.py)."""
        return self.home / "models"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster"

    @property
    def demo(self) -> Path:
        return self.home / "demo"

    @property
    def warehouse_file(self) -> Path:
        return self.warehouse or self.home / "analytics" / "warehouse.duckdb"

    @property
    def reports_folder(self) -> Path:
        return self.reports or self.home / "reports"

    @property
    def routing_file(self) -> Path:
        return self.routing or self.home / "routing.toml"

    def watched_folders(self) -> list[tuple[str | None, Path]]:
        """(kind, folder) pairs the sensor and the catalog scan look at. kind None means
        'detect from content' (the inbox takes any export)."""
        folders: list[tuple[str | None, Path]] = [
            ("claude-code", self.claude_projects),
            (None, self.inbox),
        ]
        if self.notes is not None:
            folders.append(("notes", self.notes))
        if self.demo.exists():  # written by `memory-platform up` on a machine with no history
            folders.append((None, self.demo))
        return folders

    def allowed_hosts(self) -> list[str]:
        """The extra Host names of `api_allowed_hosts`, lowercased."""
        return [h.strip().lower() for h in (self.api_allowed_hosts or "").split(",")
                if h.strip()]

    def secret(self, name: str) -> str | None:
        """The plain value of a SecretStr setting (None when unset)."""
        value = getattr(self, name)
        return value.get_secret_value() if value is not None else None


def variable(field: str) -> str:
    return PREFIX + field.upper()


def load_settings(env: Mapping[str, str] | None = None, **overrides) -> Settings:
    """The settings from the process environment, or from `env` alone when given (tests,
    a child process's environment). `overrides` replace single fields."""
    try:
        if env is None:
            return Settings(**overrides)
        values = {name: env[variable(name)] for name in Settings.model_fields
                  if (env.get(variable(name)) or "").strip()}
        return Settings.model_validate({**values, **overrides})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = str(error["loc"][0]) if error["loc"] else "?"
            ctx = error.get("ctx") or {}
            message = {"greater_than_equal": f"must be at least {ctx.get('ge')}",
                       "less_than_equal": f"must be at most {ctx.get('le')}",
                       }.get(error["type"], error["msg"])
            problems.append(f"{variable(name)}={error.get('input')!r}: {message}")
        raise SettingsError("; ".join(problems)) from None


def markdown_table() -> str:
    """docs/configuration.md's table, one row per variable."""
    rows = ["| variable | default | what it is |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        default = field.default
        if default is None:
            shown = ""
        elif isinstance(default, Path):
            shown = f"`{default}`"
        elif isinstance(default, dict):  # set as JSON, so shown as JSON
            shown = f"`{json.dumps(default)}`"
        else:
            shown = f"`{default}`"
        rows.append(f"| `{variable(name)}` | {shown} | {field.description} |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m memory_platform.settings: docs/configuration.md's table
    print(markdown_table())
