"""The curator's tools for `claude -p`, as a stdio MCP server: the only tools the situated
Claude Code agent has (agent.py starts it with `--tools ""` and `--strict-mcp-config`).

    python -m memory_platform.curator.repo_server --verdict FILE [--root REPO] [--deadline T]

The repository tools are `RepoTools.call`, the ones the API tool loop uses (confined to the
root, arguments checked, answers masked, the deadline held inside a grep), so `claude -p`
reads the repository exactly as the API providers do: no Bash, hence no `git log
--output=FILE` that writes a file; no Read, hence no file outside the repository and no
unmasked `.env`. `write_verdict` writes the one file the run reads back, and nothing else
can be written. Without --root (a namespace tied to no repository) only `write_verdict`
is offered. `--deadline` is the run's deadline in seconds since the epoch.
"""

import argparse
import json
import os
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

from memory_platform.curator.repo_tools import RepoTools

SERVER_NAME = "curator"  # Claude Code names its tools mcp__curator__<tool>
MAX_VERDICT_CHARS = 1_000_000


def _monotonic_deadline(epoch: float | None) -> float | None:
    return None if epoch is None else time.monotonic() + (epoch - time.time())


def write_verdict(path: Path, verdict: str) -> str:
    """Save the verdict (a JSON object, checked) to `path`, replacing an earlier one."""
    if not isinstance(verdict, str) or len(verdict) > MAX_VERDICT_CHARS:
        return f"error: give the verdict as one JSON object of at most {MAX_VERDICT_CHARS} " \
               f"characters"
    try:
        parsed = json.loads(verdict)
    except (ValueError, RecursionError) as exc:
        return f"error: the verdict is not JSON: {str(exc)[:200]}"
    if not isinstance(parsed, dict):
        return "error: the verdict must be one JSON object"
    # O_NOFOLLOW: the file is in the run's private folder; a symlink there is not ours.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(verdict)
    return f"saved ({len(verdict)} characters). Reply with the single word: done."


def build(verdict_file: Path, root: Path | None = None,
          deadline: float | None = None) -> MCPServer:
    """The server: the repository tools over `root` (when given) and `write_verdict`;
    `deadline` is a time.monotonic() value."""
    server = MCPServer(SERVER_NAME, instructions=(
        "Tools to judge memories against one repository (read-only), and write_verdict to "
        "save your answer."))

    @server.tool(name="write_verdict")
    def save(verdict: str) -> str:
        """Save your verdict: one JSON object with cuts, merges and contradictions."""
        return write_verdict(verdict_file, verdict)

    if root is None:
        return server
    tools = RepoTools(root)

    def call(name: str, **arguments) -> str:
        return tools.call(name, {k: v for k, v in arguments.items() if v is not None},
                          deadline=deadline)

    @server.tool()
    def list_files(path: str = ".", limit: int | None = None) -> str:
        """List the files under a folder of the repository."""
        return call("list_files", path=path, limit=limit)

    @server.tool()
    def read_file(path: str, offset: int | None = None, limit: int | None = None) -> str:
        """Read a file of the repository, with line numbers (offset: first line, 1-based)."""
        return call("read_file", path=path, offset=offset, limit=limit)

    @server.tool()
    def grep(pattern: str, path: str = ".", limit: int | None = None) -> str:
        """Search the repository's files for a regular expression."""
        return call("grep", pattern=pattern, path=path, limit=limit)

    @server.tool()
    def git_log(path: str | None = None, limit: int | None = None) -> str:
        """Recent commits, optionally those touching one path."""
        return call("git_log", path=path, limit=limit)

    @server.tool()
    def git_show(commit: str, path: str | None = None) -> str:
        """One commit's message and diff, optionally one path."""
        return call("git_show", commit=commit, path=path)

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="memory_platform.curator.repo_server")
    parser.add_argument("--verdict", type=Path, required=True)
    parser.add_argument("--root", type=Path)
    parser.add_argument("--deadline", type=float, help="seconds since the epoch")
    args = parser.parse_args(argv)
    build(args.verdict, args.root, _monotonic_deadline(args.deadline)).run("stdio")


if __name__ == "__main__":
    main()
