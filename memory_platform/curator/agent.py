"""The agents that judge a namespace, as `llm.Provider`s, so `complete()` validates the
verdict, re-asks a malformed one and keeps the accounting, and `CallRecorder` logs every
call, whichever agent it was.

- `claude-cli`: `SituatedClaudeCLI` runs `claude -p` with none of Claude Code's own tools
  (`--tools ""`): its only tools are our stdio MCP server's (repo_server.py: the repository
  tools of the API tool loop, confined, checked and masked, plus `write_verdict`), with
  `--strict-mcp-config` (none of the user's MCP servers) and `--setting-sources ""` (none
  of the user's or the repository's settings, hooks or CLAUDE.md). The task goes on stdin,
  the child gets an allow-listed environment (CLI_ENVIRONMENT and the one credential it
  uses), a turn budget (`--max-turns`) and a time budget, and its verdict is read from the
  file `write_verdict` wrote, never from the chat.
- `anthropic`, `openai`, `openai-compatible` with a repository: the tool loop
  (tool_loop.py) over `RepoTools`, confined to the repository.
- An API provider for a namespace with no repository: the plain provider (the memories
  alone are judged).
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from memory_platform.curator import repo_server
from memory_platform.curator.config import CuratorConfig
from memory_platform.curator.repo_tools import RepoTools
from memory_platform.curator.tool_loop import AnthropicToolLoop, OpenAIToolLoop
from memory_platform.llm import (
    ClaudeCLIProvider,
    Completion,
    LLMCallFailed,
    LLMNotConfigured,
    LLMSettings,
    Message,
    Provider,
    load_provider,
)
from memory_platform.llm.claude_cli import _CLI_ENV_CREDENTIALS, cli_model, parse_cli_output

# Every tool of our MCP server, and nothing else: Claude Code's own tools are off.
ALLOWED_TOOLS = f"mcp__{repo_server.SERVER_NAME}"
MCP_CONFIG_FILE = "mcp.json"
VERDICT_FILE = "verdict.json"
# What of our environment the `claude` child (and the MCP server it starts) may see: the
# programs it runs (PATH), its login and settings folder (HOME, CLAUDE_CONFIG_DIR,
# XDG_CONFIG_HOME), a locale and a temp folder, a proxy where the network needs one, and
# ANTHROPIC_BASE_URL for a gateway (an address, not a secret). Nothing else: not the
# database URL, not another tool's key. The credential is added on its own
# (`child_environment`): only the one Claude Code would use.
CLI_ENVIRONMENT = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TERM",
                   "TMPDIR", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "HTTPS_PROXY",
                   "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy",
                   "ANTHROPIC_BASE_URL")
# A cloud provider's switch brings its own configuration (region, project, profile).
CLOUD_ENVIRONMENT = {
    "CLAUDE_CODE_USE_BEDROCK": ("AWS_", "ANTHROPIC_BEDROCK_"),
    "CLAUDE_CODE_USE_VERTEX": ("CLOUD_ML_REGION", "VERTEX_REGION_", "ANTHROPIC_VERTEX_",
                               "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT"),
}


def child_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The `claude` child's environment from ours: CLI_ENVIRONMENT, plus the first
    credential variable set in Claude Code's own precedence (with its cloud provider's
    configuration, for Bedrock or Vertex), and nothing else."""
    found = {k: env[k] for k in CLI_ENVIRONMENT if env.get(k)}
    for variable, _ in _CLI_ENV_CREDENTIALS:
        if (env.get(variable) or "").strip():
            found[variable] = env[variable]
            prefixes = CLOUD_ENVIRONMENT.get(variable, ())
            found.update({k: v for k, v in env.items() if prefixes and k.startswith(prefixes)})
            break
    return found


class SituatedClaudeCLI(Provider):
    """`claude -p` judging a namespace through our MCP server's tools: the repository's
    (read-only, confined, masked) when the namespace has one, `write_verdict` always."""

    name = "claude-cli"

    def __init__(self, *, repo: Path | None, executable: str = "claude",
                 model: str | None = None, env: Mapping[str, str] | None = None,
                 max_turns: int = 30, timeout: float = 900.0):
        # The plain provider resolves the executable (LLMNotConfigured when missing) and
        # knows which credential the CLI will use.
        self._cli = ClaudeCLIProvider(model=model, executable=executable, env=env)
        self.executable = self._cli.executable
        self.model = self._cli.model
        self._model_flag = model
        self.repo = repo
        self._env = env
        self.max_turns = max_turns
        self.timeout = timeout

    @property
    def credential_source(self) -> str:
        return self._cli.credential_source

    def argv(self, mcp_config: Path) -> list[str]:
        """`claude -p` (the task on stdin) with our MCP server's tools only."""
        argv = [self.executable, "-p", "--output-format", "json",
                "--max-turns", str(self.max_turns), "--tools", "",
                "--mcp-config", str(mcp_config), "--strict-mcp-config",
                "--allowedTools", ALLOWED_TOOLS, "--setting-sources", ""]
        if self._model_flag:
            argv += ["--model", self._model_flag]
        return argv

    def mcp_config(self, verdict: Path, deadline: float) -> dict:
        """The one MCP server `claude` may start: repo_server over the repository (if any),
        writing the verdict to `verdict`, stopping at `deadline` (epoch seconds)."""
        args = ["-m", "memory_platform.curator.repo_server", "--verdict", str(verdict),
                "--deadline", f"{deadline:.3f}"]
        if self.repo is not None:
            args += ["--root", str(self.repo)]
        # The package from where this process runs it, whatever the child's cwd.
        package_root = str(Path(repo_server.__file__).resolve().parents[2])
        return {"mcpServers": {repo_server.SERVER_NAME: {
            "type": "stdio", "command": sys.executable, "args": args,
            "env": {"PYTHONPATH": package_root}}}}

    def send(self, messages: list[Message], *, system: str | None, max_tokens: int,
             json_mode: bool) -> Completion:
        workdir = Path(tempfile.mkdtemp(prefix="memory-platform-curator-"))
        try:
            verdict, config = workdir / VERDICT_FILE, workdir / MCP_CONFIG_FILE
            config.write_text(json.dumps(self.mcp_config(verdict, time.time() + self.timeout)),
                              encoding="utf-8")
            env = child_environment(os.environ if self._env is None else self._env)
            try:
                # cwd: the private folder, not the repository: its .claude settings, hooks
                # and CLAUDE.md are not ours to run (the tools reach the repository).
                proc = subprocess.run(
                    self.argv(config), cwd=workdir, env=env, input=_task_text(messages, system),
                    capture_output=True, text=True, timeout=self.timeout)
            except subprocess.TimeoutExpired as exc:
                raise LLMCallFailed(f"claude-cli: no verdict within {self.timeout:.0f}s "
                                    f"(the curator's time budget)") from exc
            except OSError as exc:
                raise LLMCallFailed(f"claude-cli: cannot run {self.executable}: {exc}") from exc
            data = parse_cli_output(proc.stdout)
            if proc.returncode != 0 or data is None or data.get("is_error"):
                found = data or {}
                detail = (found.get("result") or proc.stderr.strip()[-2000:]
                          or proc.stdout[-2000:])
                raise LLMCallFailed(f"claude-cli exited {proc.returncode} "
                                    f"({found.get('subtype', 'no JSON result')}): {detail}")
            if data.get("subtype", "success") != "success":
                raise LLMCallFailed(f"claude-cli stopped: {data.get('subtype')} (turn budget "
                                    f"{self.max_turns})")
            if not verdict.is_file():
                raise LLMCallFailed(f"claude-cli saved no verdict (write_verdict was not "
                                    f"called); its last words: {str(data.get('result'))[:500]}")
            text = verdict.read_text(encoding="utf-8")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        usage = data.get("usage") or {}
        cost = data.get("total_cost_usd")
        return Completion(
            text=text, model=cli_model(data) or self.model,
            input_tokens=sum(int(usage.get(k) or 0) for k in (
                "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")),
            output_tokens=int(usage.get("output_tokens") or 0),
            cost_usd=float(cost) if cost is not None else None)


def _task_text(messages: list[Message], system: str | None) -> str:
    """The instructions, the conversation so far (a re-ask carries the earlier answer and
    its validation error) and where the answer goes."""
    parts = [system or ""]
    for message in messages:
        label = "Your previous answer" if message["role"] == "assistant" else "Task"
        parts.append(f"## {label}\n\n{message['content']}")
    parts.append("## Where the answer goes\n\nCall the write_verdict tool once with the JSON "
                 "object (and nothing else) as its `verdict`, then reply with the single "
                 "word: done.")
    return "\n\n".join(parts) + "\n"


def build_agent(repo: Path | None, config: CuratorConfig,
                settings: LLMSettings | None = None) -> Provider:
    """The agent for one namespace, from the configured provider (LLMNotConfigured, naming
    the settings, when there is none)."""
    settings = settings or LLMSettings.from_env()
    if settings.provider == "claude-cli":
        return SituatedClaudeCLI(repo=repo, executable=settings.claude_executable,
                                 model=settings.model, env=settings.env,
                                 max_turns=config.max_turns, timeout=config.timeout_seconds)
    base = load_provider(settings)  # validates the configuration, naming what is missing
    if repo is None:
        return base
    tools = RepoTools(repo)
    budget = {"max_turns": config.max_turns, "timeout": float(config.timeout_seconds)}
    if settings.provider == "anthropic":
        key = _env(settings.env, "ANTHROPIC_API_KEY")
        token = None if key else _env(settings.env, "ANTHROPIC_AUTH_TOKEN")
        return AnthropicToolLoop(model=base.model, api_key=key, auth_token=token,
                                 base_url=settings.base_url,
                                 credential_source=base.credential_source, tools=tools,
                                 **budget)
    if settings.provider in ("openai", "openai-compatible"):
        compatible = settings.provider == "openai-compatible"
        key = settings.api_key if compatible else _env(settings.env, "OPENAI_API_KEY")
        return OpenAIToolLoop(name=settings.provider, model=base.model, api_key=key,
                              base_url=settings.base_url,
                              credential_source=base.credential_source, tools=tools,
                              max_tokens_param="max_tokens" if compatible
                              else "max_completion_tokens", **budget)
    raise LLMNotConfigured(f"the curator cannot use provider {settings.provider!r}")


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = (env.get(name) or "").strip()
    return value or None


def describe(agent: Provider) -> str:
    return re.sub(r"\s+", " ", f"{agent.name}/{agent.model}")
