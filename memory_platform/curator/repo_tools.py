"""Read-only tools over one repository, for the API providers' tool loop (tool_loop.py) and
for checking a verdict's evidence (verdict.py).

Confined to the repository root: a path is relative, has no `..` segment, does not reach
into `.git`, and must resolve (symlinks followed) to a place inside the root, so a symlink
pointing out of the repository is refused like `../` or an absolute path. Nothing here
writes. Every answer is size-limited (lines, characters, matches, files scanned) and says
when it was cut. A refusal is an answer ("refused: ..."), not an exception: the model reads
it and carries on.
"""

import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

MAX_FILE_BYTES = 2_000_000  # a larger file is not read (a lockfile, a data dump)
MAX_LINES = 400  # per read_file call
MAX_LINE_CHARS = 500
MAX_OUTPUT_CHARS = 40_000
MAX_LIST = 500
MAX_MATCHES = 100
MAX_SCANNED_FILES = 5_000
MAX_PATTERN = 200
GIT_TIMEOUT_S = 30
_REV = re.compile(r"^(?:[0-9a-fA-F]{4,40}|HEAD(?:~\d{1,4})?)$")
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
            "LC_ALL": "C"}


class Refused(ValueError):
    """A tool call the confinement refuses (the message says why)."""


def _cap(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... output cut at {limit} characters]"


class RepoTools:
    """The tools, bound to one repository root."""

    def __init__(self, root: Path):
        self.root = Path(os.path.realpath(root))
        if not self.root.is_dir():
            raise ValueError(f"{root} is not a folder")

    # --- confinement ----------------------------------------------------------------------

    def resolve(self, path: str | None) -> Path:
        """The real path of `path` inside the root, or Refused."""
        path = "." if path is None or path == "" else str(path)
        if "\x00" in path:
            raise Refused("refused: the path contains a NUL byte")
        if os.path.isabs(path) or path.startswith("~"):
            raise Refused(f"refused: {path!r} is absolute; give a path relative to the "
                          f"repository root")
        parts = Path(path).parts
        if ".." in parts:
            raise Refused(f"refused: {path!r} leaves the repository ('..')")
        if parts and parts[0] == ".git":
            raise Refused("refused: .git is not readable; use git_log and git_show")
        real = Path(os.path.realpath(self.root / path))
        if real != self.root and self.root not in real.parents:
            raise Refused(f"refused: {path!r} resolves outside the repository (a symlink out)")
        return real

    def _relative(self, real: Path) -> str:
        return str(real.relative_to(self.root)) if real != self.root else "."

    def _walk(self, start: Path) -> Iterator[Path]:
        """Files under `start`, sorted, without following symlinked folders; a symlinked
        file is yielded only when it resolves inside the root."""
        for folder, dirs, files in os.walk(start, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(files):
                candidate = Path(folder) / name
                real = Path(os.path.realpath(candidate))
                if real == self.root or self.root in real.parents:
                    yield candidate

    # --- the tools ------------------------------------------------------------------------

    def list_files(self, path: str = ".", limit: int = MAX_LIST) -> str:
        start = self.resolve(path)
        if not start.is_dir():
            raise Refused(f"refused: {path!r} is not a folder")
        names, more = [], 0
        for file in self._walk(start):
            if len(names) < min(limit, MAX_LIST):
                names.append(str(file.relative_to(self.root)))
            else:
                more += 1
        tail = f"\n[... {more} more files]" if more else ""
        return _cap("\n".join(names) + tail) if names else "(no files)"

    def read_file(self, path: str, offset: int = 1, limit: int = MAX_LINES) -> str:
        real = self.resolve(path)
        if not real.is_file():
            raise Refused(f"refused: {path!r} is not a file")
        text = self._text(real)
        lines = text.splitlines()
        offset = max(1, int(offset))
        limit = max(1, min(int(limit), MAX_LINES))
        shown = lines[offset - 1: offset - 1 + limit]
        body = "\n".join(f"{n:>6}\t{line[:MAX_LINE_CHARS]}"
                         for n, line in enumerate(shown, offset))
        rest = len(lines) - (offset - 1 + len(shown))
        tail = f"\n[... {rest} more lines; read on with offset={offset + len(shown)}]" \
            if rest > 0 else ""
        return _cap(f"{self._relative(real)} ({len(lines)} lines)\n{body}{tail}")

    def _text(self, real: Path) -> str:
        size = real.stat().st_size
        if size > MAX_FILE_BYTES:
            raise Refused(f"refused: {self._relative(real)} is {size} bytes (limit "
                          f"{MAX_FILE_BYTES})")
        data = real.read_bytes()
        if b"\x00" in data[:8192]:
            raise Refused(f"refused: {self._relative(real)} is a binary file")
        return data.decode("utf-8", errors="replace")

    def line_count(self, path: str) -> int:
        """Lines of a file (for checking evidence); Refused outside the repository."""
        real = self.resolve(path)
        if not real.is_file():
            raise Refused(f"refused: {path!r} is not a file in the repository")
        return len(self._text(real).splitlines())

    def grep(self, pattern: str, path: str = ".", limit: int = MAX_MATCHES) -> str:
        if not pattern or len(pattern) > MAX_PATTERN:
            raise Refused(f"refused: give a pattern of 1 to {MAX_PATTERN} characters")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise Refused(f"refused: invalid regular expression: {exc}") from None
        start = self.resolve(path)
        files = [start] if start.is_file() else list(self._walk(start))
        found: list[str] = []
        scanned = 0
        for file in files[:MAX_SCANNED_FILES]:
            scanned += 1
            try:
                text = self._text(Path(os.path.realpath(file)))
            except (Refused, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    found.append(f"{file.relative_to(self.root)}:{n}: {line[:MAX_LINE_CHARS]}")
                    if len(found) >= min(limit, MAX_MATCHES):
                        return _cap("\n".join(found) + "\n[... match limit reached]")
        tail = (f"\n[... stopped after {MAX_SCANNED_FILES} files]"
                if len(files) > MAX_SCANNED_FILES else "")
        return _cap("\n".join(found) + tail) if found else f"(no match in {scanned} files)"

    def _git(self, *args: str) -> str:
        command = ["git", "-C", str(self.root), "-c", "core.fsmonitor=false",
                   "-c", "core.pager=cat", *args]
        try:
            done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                                  timeout=GIT_TIMEOUT_S, env={**os.environ, **_GIT_ENV})
        except subprocess.TimeoutExpired:
            raise Refused(f"refused: git took longer than {GIT_TIMEOUT_S}s") from None
        if done.returncode != 0:
            raise Refused(f"git: {done.stderr.strip()[:500]}")
        return done.stdout

    def _rev(self, commit: str) -> str:
        if not isinstance(commit, str) or not _REV.match(commit):
            raise Refused(f"refused: {commit!r} is not a commit id (4-40 hex digits, or "
                          f"HEAD~n)")
        return commit

    def git_log(self, path: str | None = None, limit: int = 20) -> str:
        args = ["log", "--no-color", "--date=short", "--format=%h %ad %an: %s",
                f"-n{max(1, min(int(limit), 200))}"]
        if path not in (None, "", "."):
            args += ["--", self._relative(self.resolve(path))]
        return _cap(self._git(*args)) or "(no commits)"

    def git_show(self, commit: str, path: str | None = None) -> str:
        args = ["show", "--no-color", "--no-ext-diff", "--no-textconv", "--stat", "--patch",
                "--end-of-options", self._rev(commit)]
        if path not in (None, "", "."):
            args += ["--", self._relative(self.resolve(path))]
        return _cap(self._git(*args))

    def commit_exists(self, commit: str) -> bool:
        try:
            self._git("cat-file", "-e", f"{self._rev(commit)}^{{commit}}")
        except Refused:
            return False
        return True

    # --- dispatch -------------------------------------------------------------------------

    def call(self, name: str, arguments: dict) -> str:
        """Run tool `name` with the model's arguments; a refusal or a bad call comes back as
        text the model can read."""
        tools: dict[str, Callable[..., str]] = {
            "list_files": self.list_files, "read_file": self.read_file, "grep": self.grep,
            "git_log": self.git_log, "git_show": self.git_show}
        if name not in tools:
            return f"refused: no tool {name!r}; use one of {', '.join(tools)}"
        if not isinstance(arguments, dict):
            return "refused: arguments must be a JSON object"
        try:
            return tools[name](**arguments)
        except Refused as exc:
            return str(exc)
        except (TypeError, ValueError) as exc:
            return f"error: bad arguments for {name}: {exc}"
        except OSError as exc:
            return f"error: {exc.strerror or exc}"


TOOL_SPECS = [
    {"name": "list_files", "description": "List the files under a folder of the repository.",
     "parameters": {"type": "object", "properties": {
         "path": {"type": "string", "description": "folder relative to the root (default .)"},
         "limit": {"type": "integer"}}}},
    {"name": "read_file", "description": "Read a file of the repository, with line numbers.",
     "parameters": {"type": "object", "required": ["path"], "properties": {
         "path": {"type": "string", "description": "file relative to the root"},
         "offset": {"type": "integer", "description": "first line (1-based)"},
         "limit": {"type": "integer", "description": f"lines, at most {MAX_LINES}"}}}},
    {"name": "grep", "description": "Search the repository's files for a regular expression.",
     "parameters": {"type": "object", "required": ["pattern"], "properties": {
         "pattern": {"type": "string"},
         "path": {"type": "string", "description": "folder or file (default .)"},
         "limit": {"type": "integer"}}}},
    {"name": "git_log", "description": "Recent commits, optionally those touching one path.",
     "parameters": {"type": "object", "properties": {
         "path": {"type": "string"}, "limit": {"type": "integer"}}}},
    {"name": "git_show", "description": "One commit's message and diff, optionally one path.",
     "parameters": {"type": "object", "required": ["commit"], "properties": {
         "commit": {"type": "string"}, "path": {"type": "string"}}}},
]
