"""The Claude Code CLI as a provider: `claude -p --output-format json`, the prompt on stdin.
Which credential it used is read from the environment the way Claude Code reads it (an
ANTHROPIC_API_KEY silently wins over the subscription login: recorded, not guessed)."""

import json
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from memory_platform.json_depth import nesting_depth
from memory_platform.llm.base import (
    DEFAULT_MAX_ATTEMPTS,
    Completion,
    LLMCallFailed,
    LLMNotConfigured,
    Message,
    Provider,
)
from memory_platform.llm.vendors import env_value

log = logging.getLogger(__name__)

# Claude Code's own credential precedence, highest first: a cloud provider switch, then the
# environment's bearer token and API key, then a setup-token, then the `claude` login.
_CLI_ENV_CREDENTIALS = (
    ("CLAUDE_CODE_USE_BEDROCK", "env:CLAUDE_CODE_USE_BEDROCK (AWS Bedrock credentials)"),
    ("CLAUDE_CODE_USE_VERTEX", "env:CLAUDE_CODE_USE_VERTEX (Google Vertex credentials)"),
    ("ANTHROPIC_AUTH_TOKEN", "env:ANTHROPIC_AUTH_TOKEN (overrides the Claude subscription login)"),
    ("ANTHROPIC_API_KEY", "env:ANTHROPIC_API_KEY (overrides the Claude subscription login)"),
    ("CLAUDE_CODE_OAUTH_TOKEN", "env:CLAUDE_CODE_OAUTH_TOKEN (subscription token)"),
)
# The result object nests three levels or so; the hooks allow 64 (ingest/hooks.py).
MAX_OUTPUT_DEPTH = 64
SUBSCRIPTION_LOGIN = "claude subscription login"


class ClaudeCLIProvider(Provider):
    """The Claude Code CLI in print mode: `claude -p --output-format json`, prompt on stdin.

    Runs in `cwd` (the curator runs situated in a project's repository). The CLI picks its
    credential from the environment it is given before the subscription login, silently:
    an ANTHROPIC_API_KEY exported for other tools bills the API instead of the subscription.
    We record which one applies and log a warning when it is not the login.
    """

    name = "claude-cli"

    def __init__(
        self,
        *,
        model: str | None = None,
        executable: str = "claude",
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        system_prompt_flag: str = "--append-system-prompt",
        timeout: float = 900.0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ):
        """`env`: the CLI's environment (default: this process's, read at each call).
        `system_prompt_flag`: --append-system-prompt keeps Claude Code's own prompt (the
        curator wants the agent); --system-prompt replaces it (cheaper for plain text)."""
        resolved = shutil.which(executable, path=(os.environ if env is None else env).get(
            "PATH", os.defpath))
        if resolved is None:
            raise LLMNotConfigured(
                f"the claude-cli provider cannot find the `{executable}` executable: install "
                "Claude Code and log in (`claude`), or set MEMORY_PLATFORM_CLAUDE_EXECUTABLE"
            )
        self.executable = resolved
        self.model = model or "claude-cli-default"
        self._model_flag = model
        self.cwd = cwd
        self._env = env
        self.extra_args = tuple(extra_args)
        self.system_prompt_flag = system_prompt_flag
        self.timeout = timeout
        self.max_attempts = max_attempts
        self._warned: set[str] = set()

    def _environment(self) -> Mapping[str, str]:
        return os.environ if self._env is None else self._env

    @property
    def credential_source(self) -> str:
        env = self._environment()
        for variable, label in _CLI_ENV_CREDENTIALS:
            if env_value(env, variable):
                return label
        return SUBSCRIPTION_LOGIN

    def _warn_credential(self, source: str) -> None:
        if source == SUBSCRIPTION_LOGIN or source in self._warned:
            return
        self._warned.add(source)  # once per provider: a batch of calls is one decision
        log.warning(
            "claude CLI calls use %s, not the Claude subscription login; unset the variable "
            "in the environment given to the CLI to bill the subscription instead",
            source,
        )

    def send(
        self, messages: list[Message], *, system: str | None, max_tokens: int, json_mode: bool
    ) -> Completion:
        # The CLI takes one prompt per run (no --max-tokens either); a re-ask carries the
        # earlier answer and the error in that prompt.
        argv = [self.executable, "-p", "--output-format", "json"]
        if self._model_flag:
            argv += ["--model", self._model_flag]
        if system:
            argv += [self.system_prompt_flag, system]
        argv += list(self.extra_args)
        source = self.credential_source
        self._warn_credential(source)
        try:
            # Prompt on stdin: no argv length limit, and it stays out of `ps`.
            proc = subprocess.run(
                argv,
                input=_render_transcript(messages),
                capture_output=True,
                text=True,
                cwd=self.cwd,
                env=dict(self._environment()),
                timeout=self.timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise LLMCallFailed(f"claude-cli: no answer within {self.timeout:.0f}s") from exc
        except OSError as exc:
            raise LLMCallFailed(f"claude-cli: cannot run {self.executable}: {exc}") from exc
        data = parse_cli_output(proc.stdout)
        if proc.returncode != 0 or data is None or data.get("is_error"):
            found = data or {}
            detail = found.get("result") or proc.stderr.strip()[-2000:] or proc.stdout[-2000:]
            subtype = found.get("subtype", "no JSON result")
            raise LLMCallFailed(
                f"claude-cli exited {proc.returncode} ({subtype}): {detail}".strip()
            )
        if data.get("subtype", "success") != "success" or not isinstance(data.get("result"), str):
            raise LLMCallFailed(f"claude-cli: unexpected result {data.get('subtype')!r}")
        usage = data.get("usage") or {}
        input_tokens = sum(
            int(usage.get(key) or 0)
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        cost = data.get("total_cost_usd")
        return Completion(
            text=data["result"],
            model=cli_model(data) or self.model,
            input_tokens=input_tokens,
            output_tokens=int(usage.get("output_tokens") or 0),
            cost_usd=float(cost) if cost is not None else None,
        )


def _render_transcript(messages: list[Message]) -> str:
    if len(messages) == 1:
        return messages[0]["content"]
    parts = [messages[0]["content"]]
    for message in messages[1:]:
        if message["role"] == "assistant":
            parts.append(f"Your previous answer was:\n{message['content']}")
        else:
            parts.append(message["content"])
    return "\n\n---\n\n".join(parts)


def parse_cli_output(stdout: str) -> dict | None:
    """The result object; with --verbose or a wrapper script it is the last JSON line. None
    when there is none; LLMCallFailed when there is none and some output nested deeper than
    MAX_OUTPUT_DEPTH (measured first: the parser would recurse past the stack)."""
    text = stdout.strip()
    candidates = [text] + [line for line in reversed(text.splitlines()) if line.strip()]
    too_deep = False
    for candidate in candidates:
        if nesting_depth(candidate, MAX_OUTPUT_DEPTH) > MAX_OUTPUT_DEPTH:
            too_deep = True
            continue
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("type") == "result":
            return data
    if too_deep:
        raise LLMCallFailed(f"claude-cli output nests deeper than {MAX_OUTPUT_DEPTH} levels "
                            f"and holds no result object")
    return None


def cli_model(data: dict) -> str | None:
    """The model that did the work: the CLI reports usage per model (it also calls a small
    model for housekeeping), so take the one that wrote the most."""
    per_model = data.get("modelUsage")
    if not isinstance(per_model, dict) or not per_model:
        return None
    return max(per_model, key=lambda m: (per_model[m] or {}).get("outputTokens", 0))
