"""Read-only tools over one repository, for the API providers' tool loop (tool_loop.py) and
for checking a verdict's evidence (verdict.py).

Confined to the repository root by the confined reader (`confined.Root`): a path is
relative, has no `..` segment, and must resolve (symlinks followed) to a place inside the
root and outside `.git`, so a symlink pointing out of the repository, or into `.git`, is
refused like `../` or an absolute path; a FIFO, socket or device is never opened, so no
tool blocks on one. Nothing here writes. Every answer is size-limited (lines, characters,
matches, files scanned) and says when it was cut. A refusal is an answer ("refused: ..."),
not an exception: the model reads it and carries on.
"""

import math
import os
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

# The third-party `regex` engine, not `re`, for the model's grep patterns: its matching
# takes a timeout, so a backtracking pattern such as (a+)+$ stops at the run's deadline
# (`re` cannot be interrupted, and holds the GIL while it backtracks).
import regex

from memory_platform import confined
from memory_platform.curator import tool_args
from memory_platform.privacy.egress import outgoing

MAX_FILE_BYTES = 2_000_000  # a larger file is not read (a lockfile, a data dump)
MAX_LINES = 400  # per read_file call
MAX_LINE_CHARS = 500
MAX_OUTPUT_CHARS = 40_000
MAX_LIST = 500
MAX_MATCHES = 100
MAX_SCANNED_FILES = 5_000
MAX_PATTERN = 200
GIT_TIMEOUT_S = 30
GREP_TIMEOUT_S = 30.0  # one grep's own limit, within the run's deadline
# regex's timeout counts the process's CPU time, not the clock: on a loaded machine a 10 s
# timeout ran ~40 s. So each line gets a small slice (a sane pattern matches a line in
# microseconds), the clock is checked between lines, and a pattern that exhausts its slice
# on MAX_SLOW_LINES lines is stopped: the clock can overrun the deadline by one slice.
LINE_TIMEOUT_S = 0.2
MAX_SLOW_LINES = 3
# Counted repeats make compilation itself slow: regex expands a repeated group, so
# ((a{1000}){1000}){1000} would compile for minutes, and compiling takes no timeout. Each
# count is bounded, and so is their product (which over-counts repeats side by side: a
# cheap, safe bound; \d{4}-\d{2}-\d{2} is 16).
MAX_REPEAT = 1000
MAX_REPEAT_PRODUCT = 10_000
_COUNTED = re.compile(r"(?<!\\)\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")
_REV = re.compile(r"^(?:[0-9a-fA-F]{4,40}|HEAD(?:~\d{1,4})?)$")
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat",
            "LC_ALL": "C"}


def _outside_git(folder: PurePosixPath) -> bool:
    return folder.name != ".git"


class Refused(ValueError):
    """A tool call the confinement refuses (the message says why)."""


def _left(deadline: float | None) -> float:
    """Seconds left before `deadline` (a time.monotonic() value; None: no deadline)."""
    return math.inf if deadline is None else deadline - time.monotonic()


def _pattern(pattern: str):
    """The model's pattern compiled by `regex`, or Refused (too long, invalid, or counted
    repeats that would make the compilation itself slow)."""
    if not pattern or len(pattern) > MAX_PATTERN:
        raise Refused(f"refused: give a pattern of 1 to {MAX_PATTERN} characters")
    product = 1
    for low, high in _COUNTED.findall(pattern):
        count = max(int(low or 0), int(high or 0))
        product *= max(count, 1)
        if count > MAX_REPEAT or product > MAX_REPEAT_PRODUCT:
            raise Refused(f"refused: counted repeats are limited to {MAX_REPEAT} each and "
                          f"{MAX_REPEAT_PRODUCT} multiplied together")
    try:
        return regex.compile(pattern)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise Refused(f"refused: invalid regular expression: {exc}") from None


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
        self._files = confined.Root(self.root, descend=_outside_git)

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
        try:
            return self._files.resolve(path)
        except confined.Refused as exc:
            if "left out" in exc.reason:
                raise Refused(f"refused: {path!r} leads into .git, which is not readable; use "
                              "git_log and git_show") from None
            raise Refused(f"refused: {path!r} resolves outside the repository (a symlink "
                          "out)") from None

    def _relative(self, real: Path) -> str:
        return str(real.relative_to(self.root)) if real != self.root else "."

    def _walk(self, start: Path) -> confined.Listing:
        """Files under `start` (confined.walk): sorted, `.git` left out, symlinked folders
        not descended, a symlinked file only when it resolves inside the root and outside
        `.git` (in `links`, as named), no FIFO, socket or device; what it skipped."""
        return self._files.walk(start=start)

    # --- the tools ------------------------------------------------------------------------

    def list_files(self, path: str = ".", limit: int = MAX_LIST) -> str:
        start = self.resolve(path)
        if not start.is_dir():
            raise Refused(f"refused: {path!r} is not a folder")
        found = self._walk(start)
        names, more = [], 0
        for file in sorted({*found.files, *found.links}):
            if len(names) < min(limit, MAX_LIST):
                names.append(str(file.relative_to(self.root)))
            else:
                more += 1
        tail = f"\n[... {more} more files]" if more else ""
        if found.skipped:
            tail += (f"\n[{len(found.skipped)} entries not listed: symlinks out of the "
                     "repository or into .git, FIFOs, sockets, devices]")
        return _cap("\n".join(names) + tail) if names else "(no files)" + tail

    def read_file(self, path: str, offset: int = 1, limit: int = MAX_LINES) -> str:
        real = self.resolve(path)
        if real.is_dir() or not os.path.lexists(real):
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
        try:
            data = confined.read_bytes(real, MAX_FILE_BYTES)
        except confined.Refused as exc:  # too big, a FIFO, a device, swapped for a symlink
            raise Refused(f"refused: {self._relative(real)}: {exc.reason}") from None
        if b"\x00" in data[:8192]:
            raise Refused(f"refused: {self._relative(real)} is a binary file")
        return data.decode("utf-8", errors="replace")

    def line_count(self, path: str) -> int:
        """Lines of a file (for checking evidence); Refused outside the repository."""
        real = self.resolve(path)
        if real.is_dir() or not os.path.lexists(real):
            raise Refused(f"refused: {path!r} is not a file in the repository")
        return len(self._text(real).splitlines())

    def grep(self, pattern: str, path: str = ".", limit: int = MAX_MATCHES, *,
             deadline: float | None = None) -> str:
        """Lines matching `pattern`; stops at `deadline` (and after GREP_TIMEOUT_S) with
        what it found so far, saying so."""
        compiled = _pattern(pattern)
        stop = min(_left(deadline), GREP_TIMEOUT_S) + time.monotonic()
        start = self.resolve(path)
        files = list(self._walk(start)) if start.is_dir() else [start]
        found: list[str] = []
        scanned = slow = 0

        def stopped(why: str) -> str:
            head = "\n".join(found) + "\n" if found else ""
            return _cap(f"{head}[... grep stopped after {scanned} files: {why}]")

        for file in files[:MAX_SCANNED_FILES]:
            if time.monotonic() >= stop:
                return stopped("the time budget ran out")
            scanned += 1
            try:
                text = self._text(file)
            except (Refused, OSError):
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if time.monotonic() >= stop:
                    return stopped("the time budget ran out")
                try:
                    hit = compiled.search(line, timeout=LINE_TIMEOUT_S)
                except TimeoutError:
                    slow += 1
                    if slow >= MAX_SLOW_LINES:
                        return stopped(f"the pattern backtracks ({LINE_TIMEOUT_S}s of matching "
                                       f"on each of {slow} lines): simplify it")
                    continue
                if hit:
                    found.append(f"{file.relative_to(self.root)}:{n}: {line[:MAX_LINE_CHARS]}")
                    if len(found) >= min(limit, MAX_MATCHES):
                        return _cap("\n".join(found) + "\n[... match limit reached]")
        tail = (f"\n[... stopped after {MAX_SCANNED_FILES} files]"
                if len(files) > MAX_SCANNED_FILES else "")
        return _cap("\n".join(found) + tail) if found else f"(no match in {scanned} files)"

    def _git(self, *args: str, deadline: float | None = None) -> str:
        command = ["git", "-C", str(self.root), "-c", "core.fsmonitor=false",
                   "-c", "core.pager=cat", *args]
        timeout = min(float(GIT_TIMEOUT_S), _left(deadline))
        if timeout <= 0:
            raise Refused("refused: the time budget ran out")
        try:
            done = subprocess.run(command, capture_output=True, text=True, errors="replace",
                                  timeout=timeout, env={**os.environ, **_GIT_ENV})
        except subprocess.TimeoutExpired:
            raise Refused(f"refused: git took longer than {timeout:.0f}s (the time "
                          f"budget)") from None
        if done.returncode != 0:
            raise Refused(f"git: {done.stderr.strip()[:500]}")
        return done.stdout

    def _rev(self, commit: str) -> str:
        if not isinstance(commit, str) or not _REV.match(commit):
            raise Refused(f"refused: {commit!r} is not a commit id (4-40 hex digits, or "
                          f"HEAD~n)")
        return commit

    def git_log(self, path: str | None = None, limit: int = 20, *,
                deadline: float | None = None) -> str:
        args = ["log", "--no-color", "--date=short", "--format=%h %ad %an: %s",
                f"-n{max(1, min(int(limit), 200))}"]
        if path not in (None, "", "."):
            args += ["--", self._relative(self.resolve(path))]
        return _cap(self._git(*args, deadline=deadline)) or "(no commits)"

    def git_show(self, commit: str, path: str | None = None, *,
                 deadline: float | None = None) -> str:
        args = ["show", "--no-color", "--no-ext-diff", "--no-textconv", "--stat", "--patch",
                "--end-of-options", self._rev(commit)]
        if path not in (None, "", "."):
            args += ["--", self._relative(self.resolve(path))]
        return _cap(self._git(*args, deadline=deadline))

    def commit_exists(self, commit: str) -> bool:
        try:
            self._git("cat-file", "-e", f"{self._rev(commit)}^{{commit}}")
        except Refused:
            return False
        return True

    # --- dispatch -------------------------------------------------------------------------

    def call(self, name: str, arguments, *, deadline: float | None = None) -> str:
        """Run tool `name` with the model's arguments (a dict, or the JSON text of one),
        by `deadline` (a time.monotonic() value). The answer is what the model may read:
        credentials masked (privacy.egress), a refusal or a bad call as text."""
        return outgoing(self._answer(name, arguments, deadline))

    def _answer(self, name: str, arguments, deadline: float | None) -> str:
        tools: dict[str, Callable[..., str]] = {
            "list_files": self.list_files, "read_file": self.read_file, "grep": self.grep,
            "git_log": self.git_log, "git_show": self.git_show}
        if name not in tools:
            return f"refused: no tool {str(name)[:80]!r}; use one of {', '.join(tools)}"
        if _left(deadline) <= 0:
            return "refused: the time budget ran out"
        try:
            checked = tool_args.check(tool_args.parse(arguments), SPECS[name])
        except tool_args.BadArguments as exc:
            return f"error: bad arguments for {name}: {exc}"
        checked = {k: v for k, v in checked.items() if v is not None}
        if name in ("grep", "git_log", "git_show"):
            checked["deadline"] = deadline
        try:
            return tools[name](**checked)
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
SPECS = {spec["name"]: spec for spec in TOOL_SPECS}
