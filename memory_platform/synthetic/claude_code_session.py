"""Claude Code transcripts: the records of one session file, one JSON line per record.

`ClaudeCodeSession` knows the record shapes (prompts, assistant blocks, tool calls and their
results, file-history snapshots, /commands, compaction, summaries, subagent files); what a
session says comes from `claude_code` (random) or `demo_claude_code` (the fixed story).
"""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from typing import Any

from memory_platform.synthetic.common import (
    Clock,
    base58_id,
    fast_randint,
    hex_id,
    json_line,
    random_uuid,
)
from memory_platform.synthetic.vocabulary import SUBAGENT_MODEL


def _json_id(value: str | None) -> str:
    # Only ever given our own uuids, which need no escaping.
    return "null" if value is None else f'"{value}"'


class ClaudeCodeSession:
    """Writes the records of one Claude Code transcript file, one JSON line per record.

    Times advance from `t` by `gap * scale` per record (never less than 3 ms, so timestamps
    strictly increase at millisecond precision).
    """

    def __init__(
        self,
        rng: random.Random,
        clk: Clock,
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
        self.env = json_line(env)[1:-1]

    # -- plumbing ----------------------------------------------------------------------------

    def tick(self, lo: float, hi: float) -> str:
        self.t += max((lo + (hi - lo) * self.rng.random()) * self.scale, 0.003)
        return self.clk.ms(self.t)

    def _uuid(self) -> str:
        return random_uuid(self.rng)

    def _user(self, content: Any, ts: str, extra: str = "", meta: str = "") -> str:
        u = self._uuid()
        self.lines.append(
            f'{{"parentUuid":{_json_id(self.last)},{self.env},"type":"user",'
            f'"message":{{"role":"user","content":{json_line(content)}}}{meta},'
            f'"uuid":"{u}","timestamp":"{ts}"{extra}}}'
        )
        self.last = u
        self._msg = None
        return u

    def _begin_message(self) -> None:
        rng = self.rng
        inp = fast_randint(rng, 3, 12)
        cc = fast_randint(rng, 0, 12000)
        cr = fast_randint(rng, 5000, 90000)
        out = fast_randint(rng, 1, 900)
        usage = (
            f'{{"input_tokens":{inp},"cache_creation_input_tokens":{cc},'
            f'"cache_read_input_tokens":{cr},"cache_creation":{{"ephemeral_5m_input_tokens":{cc},'
            f'"ephemeral_1h_input_tokens":0}},"output_tokens":{out},"service_tier":"standard"}}'
        )
        msg_id = "msg_01" + base58_id(rng, 22)
        prefix = (
            f'{{"model":"{self.model}","id":"{msg_id}","type":"message",'
            f'"role":"assistant","content":['
        )
        suffix = f'],"stop_reason":null,"stop_sequence":null,"usage":{usage}}}'
        self._msg = (prefix, suffix, "req_011C" + base58_id(rng, 20))

    def _assistant(self, block: dict[str, Any], gap: tuple[float, float]) -> str:
        if self._msg is None:
            self._begin_message()
        prefix, suffix, req = self._msg  # type: ignore[misc]
        ts = self.tick(*gap)
        u = self._uuid()
        self.lines.append(
            f'{{"parentUuid":{_json_id(self.last)},{self.env},'
            f'"message":{prefix}{json_line(block)}{suffix},'
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
            f'"{mid}","trackedFileBackups":{json_line(backups or {})},"timestamp":"{ts}"}},'
            f'"isSnapshotUpdate":false}}'
        )

    def snapshot_update(self, rel_path: str, version: int) -> None:
        if self.prompt_uuid is None or self.last is None:
            return
        backup = None if version == 1 else f"{hex_id(self.rng, 16)}@v{version}"
        files = {rel_path: {"backupFileName": backup, "version": version,
                            "backupTime": self.clk.ms(self.t + 0.15)}}  # fmt: skip
        self.lines.append(
            f'{{"type":"file-history-snapshot","messageId":"{self.last}","snapshot":'
            f'{{"messageId":"{self.prompt_uuid}","trackedFileBackups":{json_line(files)},'
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
            f'{{"parentUuid":{_json_id(self.last)},{self.env},"type":"user",'
            f'"message":{{"role":"user","content":{json_line(text)}}},'
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
        sig = "E" + base64.b64encode(self.rng.randbytes(fast_randint(self.rng, 90, 300))).decode()
        return self._assistant({"type": "thinking", "thinking": text, "signature": sig}, (2, 14))

    def say(self, text: str) -> str:
        return self._assistant({"type": "text", "text": text}, (1.0, 12.0))

    def tool_use(self, name: str, inp: dict[str, Any]) -> tuple[str, str]:
        tid = "toolu_01" + base58_id(self.rng, 22)
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
        extra = f',"toolUseResult":{json_line(result)}'
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
            f'{{"parentUuid":null,"logicalParentUuid":{_json_id(self.last)},{self.env},'
            f'"type":"system","subtype":"compact_boundary","content":"Conversation compacted",'
            f'"isMeta":false,"timestamp":"{ts}","uuid":"{u}","level":"info",'
            f'"compactMetadata":{{"trigger":"{trigger}","preTokens":{pre}}}}}'
        )
        self.last = u
        ts = self.tick(0.001, 0.01)
        self._user(summary, ts, ',"isVisibleInTranscriptOnly":true,"isCompactSummary":true')

    def summary(self, text: str, leaf: str | None = None) -> None:
        leaf = leaf or self.last or self._uuid()
        self.head.append(f'{{"type":"summary","summary":{json_line(text)},"leafUuid":"{leaf}"}}')

    def subagent(self, agent_id: str) -> ClaudeCodeSession:
        return ClaudeCodeSession(
            self.rng,
            self.clk,
            session_id=self.session_id,
            cwd=self.cwd,
            branch=self.branch,
            version=self.version,
            model=SUBAGENT_MODEL,
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
        self,
        description: str,
        prompt: str,
        agent_type: str,
        run: Callable[[ClaudeCodeSession], str],
    ) -> ClaudeCodeSession:
        """A Task tool call whose subagent transcript `run` writes; returns that transcript."""
        tid, u = self.tool_use(
            "Task", {"subagent_type": agent_type, "description": description, "prompt": prompt}
        )
        agent_id = "a" + hex_id(self.rng, 16)
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
