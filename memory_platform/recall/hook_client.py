"""The hook commands' fast path: standard library only, so `memory-platform hook prompt`
starts in tens of milliseconds instead of the ~1 s that pydantic, psycopg and typer take
to import (measured in BENCHMARKS.md). It reads the hook's JSON on stdin, hands it to the
resident process (server.py) over a Unix socket in `$MEMORY_PLATFORM_HOME/run/`, and
prints its answer. With no resident process, it runs the hook in this process instead
(server.run_local: keyword relevance, and it starts the resident process for next time).

Whatever happens, it exits 0 and prints either Claude Code's hook JSON or nothing; errors
go to `$MEMORY_PLATFORM_HOME/logs/hooks.log`.

Each hook has a budget, counted from the start of `main`, well inside the timeout the
docs/recall-and-wiki.md configures for it (BUDGET_SECONDS: 3.5 s of the prompt hook's 5 s, 20 s of the
session start's 30 s; settings change them for a hook given a longer timeout): stdin is
waited for at most STDIN_SECONDS, the resident process's answer and the hook run in this
process (in a thread) only for what is left; past it the hook gives up, logs
`HookTimeout`, and adds nothing. The databases the hooks use give up on their own too
(recall/hooks.hook_database).

The one deliberate exception to "settings.py reads every MEMORY_PLATFORM_* variable":
`home()`, `recall_server()` and `budget()` read MEMORY_PLATFORM_HOME, _RECALL_SERVER and
_SESSION_HOOK_SECONDS / _PROMPT_HOOK_SECONDS here, with the settings' defaults, since
importing settings.py costs more than the whole prompt hook's budget. Tests keep them
equal to the settings'.
"""

import json
import os
import socket
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.ingest.hooks import (  # standard library only, as here
    STDIN_SECONDS,
    parse_hook_object,
    read_hook_input,
)
from memory_platform.recall.wire import PROTOCOL, socket_path, write_log

# Seconds a hook may take in all, from the start of `main`, by default: docs/recall-and-wiki.md
# configures Claude Code's timeouts of 30 s (SessionStart) and 5 s (UserPromptSubmit); the
# rest is margin for the interpreter's start and Claude Code's own bookkeeping.
# MEMORY_PLATFORM_SESSION_HOOK_SECONDS / _PROMPT_HOOK_SECONDS change them (budget()).
BUDGET_SECONDS = {"SessionStart": 20.0, "UserPromptSubmit": 3.5}
_BUDGET_VARIABLES = {"SessionStart": "MEMORY_PLATFORM_SESSION_HOOK_SECONDS",
                     "UserPromptSubmit": "MEMORY_PLATFORM_PROMPT_HOOK_SECONDS"}
COMMANDS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}
__all__ = ["STDIN_SECONDS", "BUDGET_SECONDS", "ask", "budget", "home", "main",
           "recall_server"]


def home() -> Path:
    """$MEMORY_PLATFORM_HOME as Settings.home reads it (default ~/.memory-platform)."""
    value = (os.environ.get("MEMORY_PLATFORM_HOME") or "").strip()
    return Path(value or "~/.memory-platform").expanduser()


def recall_server() -> str:
    """$MEMORY_PLATFORM_RECALL_SERVER as Settings.recall_server reads it (empty: `auto`);
    a value the settings refuse is returned as is, and the hook then fails on the settings,
    logged."""
    return os.environ.get("MEMORY_PLATFORM_RECALL_SERVER") or "auto"


def budget(event: str) -> float:
    """The hook's budget as Settings.session_hook_seconds / prompt_hook_seconds read it (a
    value the settings refuse counts as the default here; the settings then fail, logged)."""
    try:
        seconds = float(os.environ.get(_BUDGET_VARIABLES[event]) or BUDGET_SECONDS[event])
    except ValueError:
        return BUDGET_SECONDS[event]
    return seconds if 0 < seconds <= 600 else BUDGET_SECONDS[event]


class NoServer(ConnectionError):
    """No resident process answers on the socket."""


class HookTimeout(TimeoutError):
    """The hook ran out of its budget; nothing is added to the session."""


def ask(folder: Path, event: str, raw: bytes, timeout: float) -> str:
    """The resident process's answer to one hook call, within `timeout` seconds in all
    (TimeoutError past it). NoServer when none listens."""
    if timeout <= 0:
        raise TimeoutError("no time left in the hook's budget to ask the resident process")
    deadline = time.monotonic() + timeout
    path = socket_path(folder)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        try:
            client.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise NoServer(str(exc)) from exc
        request = {"v": PROTOCOL, "event": event, "input": raw.decode("utf-8", "replace")}
        client.sendall(json.dumps(request).encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:  # a process that trickles bytes gets no more than the rest
                raise TimeoutError(f"the resident process did not answer within {timeout:g} s")
            client.settimeout(left)
            chunk = client.recv(1 << 16)
            if not chunk:
                break
            answer += chunk
    finally:
        client.close()
    reply = json.loads(answer)
    if reply.get("v") != PROTOCOL:
        raise NoServer(f"the resident process speaks protocol {reply.get('v')!r}, not "
                       f"{PROTOCOL}: restart it (`memory-platform recall stop`)")
    if "error" in reply:
        raise RuntimeError(f"resident process: {reply['error']}")
    return reply["output"]


def _log(folder: Path, event: str, exc: BaseException) -> None:
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    entry = (f"{stamp} {event}: {type(exc).__name__}: {exc}\n"
             + "".join(traceback.format_exception(exc)) + "\n")
    write_log(folder, entry)



def _local(event: str, raw: bytes) -> str:
    from memory_platform.recall.server import run_local  # the slow path: ~1 s of imports

    return run_local(event, raw)


def within(seconds: float, fn, *args):
    """fn(*args) in a daemon thread, given at most `seconds` (HookTimeout past them: the
    thread is left to the process's exit, which does not wait for it)."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(max(seconds, 0.0))
    if thread.is_alive():
        raise HookTimeout(f"the hook ran out of its budget ({seconds:.1f} s left for it); "
                          f"gave up with nothing added")
    if "error" in box:
        raise box["error"]
    return box["value"]


def main(command: str) -> int:
    """`memory-platform hook session-start|prompt`: always exit 0, within the budget."""
    event = COMMANDS[command]
    deadline = time.monotonic() + budget(event)
    folder = home()
    try:
        raw = read_hook_input(sys.stdin.buffer, timeout=STDIN_SECONDS)
        parse_hook_object(raw, event)  # bad input is refused before anything is loaded
        output = None
        if recall_server() != "off":  # off: the resident process is never asked
            try:
                output = ask(folder, event, raw, deadline - time.monotonic())
            except NoServer:
                pass
        if output is None:
            output = within(deadline - time.monotonic(), _local, event, raw)
    except HookTimeout as exc:
        _log(folder, event, exc)
        # At once: the interpreter's teardown of what the stuck thread loaded (and of the
        # connection it waits on) costs most of a second more on a loaded machine.
        sys.stdout.flush()
        os._exit(0)
    except Exception as exc:  # a hook never breaks a session: logged, nothing added
        _log(folder, event, exc)
        return 0
    if event == "SessionStart":
        output = _with_collector_line(folder, output)
    if output:
        sys.stdout.write(output)
        sys.stdout.flush()
    return 0


def _with_collector_line(folder: Path, output: str | None) -> str | None:
    """A collector on this machine that needs its person (a full spool, a refused token)
    says so in the session's first hook, as a message shown to the person."""
    from memory_platform.collect.status import warning  # standard library only

    try:
        line = warning(folder)
        if line is None:
            return output
        data = json.loads(output) if output else {}
        data["systemMessage"] = line
        return json.dumps(data)
    except Exception as exc:  # never breaks a session
        _log(folder, "SessionStart", exc)
        return output
