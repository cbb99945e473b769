"""The agents that judge a namespace, as `llm.Provider`s, so `complete()` validates the
verdict, re-asks a malformed one and keeps the accounting, and `CallRecorder` logs every
call, whichever agent it was.

- `claude-cli`: `SituatedClaudeCLI` runs `claude -p` with its working directory in the
  repository, the task in a file (the argv only names it), the built-in tools limited to
  read-only ones (Read, Grep, Glob, and Bash for `git log` / `git show` only) plus Write
  for the verdict file alone, a turn budget (`--max-turns`) and a time budget, and reads
  the verdict from the file it was told to write.
- `anthropic`, `openai`, `openai-compatible` with a repository: the tool loop
  (tool_loop.py) over `RepoTools`, confined to the repository.
- An API provider for a namespace with no repository: the plain provider (the memories
  alone are judged).
"""

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

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
from memory_platform.llm.claude_cli import cli_model, parse_cli_output

READ_ONLY_TOOLS = ("Read", "Grep", "Glob")
GIT_READS = ("Bash(git log:*)", "Bash(git show:*)")
TASK_FILE = "task.md"
VERDICT_FILE = "verdict.json"


class SituatedClaudeCLI(Provider):
    """`claude -p` working in a repository (or, for a namespace with none, in an empty
    folder holding only the task)."""

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

    def argv(self, task: Path, verdict: Path) -> list[str]:
        tools = list(READ_ONLY_TOOLS) + (["Bash"] if self.repo else []) + ["Write"]
        allowed = list(READ_ONLY_TOOLS) + (list(GIT_READS) if self.repo else []) + [
            f"Write(/{verdict})"]  # `//abs/path`: an absolute path in a permission rule
        prompt = (f"Read the task in {task} and do what it says. Write your verdict as one "
                  f"JSON object to {verdict} with the Write tool; change no other file. "
                  f"Then reply with the single word: done.")
        argv = [self.executable, "-p", prompt, "--output-format", "json",
                "--max-turns", str(self.max_turns), "--tools", ",".join(tools),
                "--allowedTools", ",".join(allowed), "--add-dir", str(task.parent),
                "--strict-mcp-config"]
        if self._model_flag:
            argv += ["--model", self._model_flag]
        return argv

    def send(self, messages: list[Message], *, system: str | None, max_tokens: int,
             json_mode: bool) -> Completion:
        workdir = Path(tempfile.mkdtemp(prefix="memory-platform-curator-"))
        try:
            task, verdict = workdir / TASK_FILE, workdir / VERDICT_FILE
            task.write_text(_task_text(messages, system, verdict), encoding="utf-8")
            env = dict(os.environ if self._env is None else self._env)
            try:
                proc = subprocess.run(
                    self.argv(task, verdict), cwd=self.repo or workdir, env=env,
                    stdin=subprocess.DEVNULL, capture_output=True, text=True,
                    timeout=self.timeout)
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
                raise LLMCallFailed(f"claude-cli wrote no verdict file ({verdict}); its last "
                                    f"words: {str(data.get('result'))[:500]}")
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


def _task_text(messages: list[Message], system: str | None, verdict: Path) -> str:
    """The instructions, the conversation so far (a re-ask carries the earlier answer and
    its validation error) and where the answer goes."""
    parts = [system or ""]
    for message in messages:
        label = "Your previous answer" if message["role"] == "assistant" else "Task"
        parts.append(f"## {label}\n\n{message['content']}")
    parts.append(f"## Where the answer goes\n\nWrite the JSON object (and nothing else) to "
                 f"{verdict}.")
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
