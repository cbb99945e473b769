"""The API providers' curator: a tool loop whose tools (list files, read file, grep, git log,
git show) are implemented in code by `RepoTools`, confined to the repository root.

Each is a `Provider`: `send()` runs the loop (model turn, the tool calls it asks for, their
results back) until the model answers without a tool call, within a turn budget and a time
budget, and returns that answer with the tokens of every turn summed. `complete()` then
validates the verdict and re-asks as for any provider.

The time budget is a deadline, not a check between turns: each request to the vendor gets
the time left as its timeout, and each tool call gets the deadline (a grep whose pattern
backtracks stops at it). The model's arguments are untrusted input, checked by
`RepoTools.call` (tool_args.py): a bad call is a tool error the model reads. What a tool
answers is masked there (privacy.egress) before it is appended to the conversation. The
tool calls made are kept in `calls` (name, the arguments shortened and masked, the first
characters of the masked result) for the run's log.
"""

import time
from dataclasses import dataclass

from memory_platform.curator import tool_args
from memory_platform.curator.repo_tools import TOOL_SPECS, RepoTools
from memory_platform.llm import Completion, LLMCallFailed, Message, Provider
from memory_platform.privacy.egress import outgoing

DEFAULT_MAX_RETRIES = 3
_NO_KEY = "no-key"  # the OpenAI SDK wants a key even for a local server that ignores it


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict
    result: str


class _Loop(Provider):
    def __init__(self, *, model: str, credential_source: str, tools: RepoTools,
                 max_turns: int, timeout: float):
        self.model = model
        self._credential_source = credential_source
        self.tools = tools
        self.max_turns = max_turns
        self.timeout = timeout
        self.calls: list[ToolCall] = []

    @property
    def credential_source(self) -> str:
        return self._credential_source

    def _run_tool(self, name: str, raw_arguments, deadline: float) -> str:
        result = self.tools.call(name, raw_arguments, deadline=deadline)  # checked, masked
        try:
            shown = tool_args.loggable(tool_args.parse(raw_arguments))
        except tool_args.BadArguments:
            shown = tool_args.loggable(str(raw_arguments))
        shown = {k: outgoing(v) if isinstance(v, str) else v for k, v in shown.items()}
        self.calls.append(ToolCall(str(name)[:80], shown, result[:200]))
        return result

    def _check_budget(self, turn: int, deadline: float) -> float:
        """The seconds left (the next request's timeout), or LLMCallFailed."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise LLMCallFailed(f"{self.name}: the curator's time budget of "
                                f"{self.timeout:.0f}s ran out after {turn} turns")
        return left

    def _unreadable(self, exc: RecursionError) -> LLMCallFailed:
        return LLMCallFailed(f"{self.name}/{self.model}: the answer could not be read (nested "
                             f"too deeply for a JSON decoder)")


class OpenAIToolLoop(_Loop):
    """OpenAI Chat Completions with function tools (OpenAI, or any compatible server)."""

    def __init__(self, *, name: str = "openai", model: str, api_key: str | None,
                 base_url: str | None, credential_source: str, tools: RepoTools,
                 max_turns: int = 30, timeout: float = 900.0,
                 max_tokens_param: str = "max_completion_tokens"):
        import openai

        super().__init__(model=model, credential_source=credential_source, tools=tools,
                         max_turns=max_turns, timeout=timeout)
        self.name = name
        self.max_tokens_param = max_tokens_param
        self._errors = (openai.APIError,)
        self._client = openai.OpenAI(api_key=api_key or _NO_KEY, base_url=base_url,
                                     max_retries=DEFAULT_MAX_RETRIES, timeout=timeout)

    def send(self, messages: list[Message], *, system: str | None, max_tokens: int,
             json_mode: bool) -> Completion:
        chat: list[dict] = ([{"role": "system", "content": system}] if system else []) + [
            dict(m) for m in messages]
        tools = [{"type": "function", "function": spec} for spec in TOOL_SPECS]
        deadline = time.monotonic() + self.timeout
        used_in = used_out = retries = 0
        model = self.model
        for turn in range(self.max_turns):
            left = self._check_budget(turn, deadline)
            try:
                raw = self._client.chat.completions.with_raw_response.create(
                    model=self.model, messages=chat, tools=tools, timeout=left,
                    **{self.max_tokens_param: max_tokens})
                completion = raw.parse()
            except self._errors as exc:
                raise LLMCallFailed(f"{self.name}/{self.model}: {exc}") from exc
            except RecursionError as exc:
                raise self._unreadable(exc) from None
            retries += raw.retries_taken
            if completion.usage is not None:
                used_in += completion.usage.prompt_tokens
                used_out += completion.usage.completion_tokens
            model = completion.model or model
            if not completion.choices:
                raise LLMCallFailed(f"{self.name}/{self.model}: the answer had no choices")
            choice = completion.choices[0]
            message = choice.message
            if not message.tool_calls:
                return Completion(text=message.content or "", model=model,
                                  input_tokens=used_in, output_tokens=used_out,
                                  sdk_retries=retries,
                                  truncated=choice.finish_reason == "length")
            chat.append({"role": "assistant", "content": message.content,
                         "tool_calls": [{"id": c.id, "type": "function",
                                         "function": {"name": c.function.name,
                                                      "arguments": c.function.arguments}}
                                        for c in message.tool_calls]})
            for call in message.tool_calls:
                chat.append({"role": "tool", "tool_call_id": call.id,
                             "content": self._run_tool(call.function.name,
                                                       call.function.arguments, deadline)})
        raise LLMCallFailed(f"{self.name}/{self.model}: no verdict within the turn budget "
                            f"({self.max_turns} turns)")


class AnthropicToolLoop(_Loop):
    """The Anthropic Messages API with tool use."""

    name = "anthropic"

    def __init__(self, *, model: str, api_key: str | None, auth_token: str | None,
                 base_url: str | None, credential_source: str, tools: RepoTools,
                 max_turns: int = 30, timeout: float = 900.0):
        import anthropic

        super().__init__(model=model, credential_source=credential_source, tools=tools,
                         max_turns=max_turns, timeout=timeout)
        self._errors = (anthropic.APIError,)
        self._client = anthropic.Anthropic(api_key=api_key, auth_token=auth_token,
                                           base_url=base_url, max_retries=DEFAULT_MAX_RETRIES,
                                           timeout=timeout)

    def send(self, messages: list[Message], *, system: str | None, max_tokens: int,
             json_mode: bool) -> Completion:
        chat: list[dict] = [dict(m) for m in messages]
        tools = [{"name": s["name"], "description": s["description"],
                  "input_schema": s["parameters"]} for s in TOOL_SPECS]
        deadline = time.monotonic() + self.timeout
        used_in = used_out = retries = 0
        model = self.model
        for turn in range(self.max_turns):
            left = self._check_budget(turn, deadline)
            params: dict = {"model": self.model, "max_tokens": max_tokens, "messages": chat,
                            "tools": tools, "timeout": left}
            if system:
                params["system"] = system
            try:
                raw = self._client.messages.with_raw_response.create(**params)
                reply = raw.parse()
            except self._errors as exc:
                raise LLMCallFailed(f"{self.name}/{self.model}: {exc}") from exc
            except RecursionError as exc:
                raise self._unreadable(exc) from None
            retries += raw.retries_taken
            usage = reply.usage
            used_in += (usage.input_tokens + (usage.cache_creation_input_tokens or 0)
                        + (usage.cache_read_input_tokens or 0))
            used_out += usage.output_tokens
            model = reply.model or model
            uses = [b for b in reply.content if b.type == "tool_use"]
            if reply.stop_reason != "tool_use" or not uses:
                text = "".join(b.text for b in reply.content if b.type == "text")
                return Completion(text=text, model=model, input_tokens=used_in,
                                  output_tokens=used_out, sdk_retries=retries,
                                  truncated=reply.stop_reason == "max_tokens")
            chat.append({"role": "assistant",
                         "content": [b.model_dump(exclude_none=True) for b in reply.content]})
            chat.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": b.id,
                 "content": self._run_tool(b.name, b.input, deadline)} for b in uses]})
        raise LLMCallFailed(f"{self.name}/{self.model}: no verdict within the turn budget "
                            f"({self.max_turns} turns)")
