"""The hook commands' fast path: standard library only, so `memory-platform hook prompt`
starts in tens of milliseconds instead of the ~1 s that pydantic, psycopg and typer take
to import (measured in BENCHMARKS.md). It reads the hook's JSON on stdin, hands it to the
resident process (server.py) over a Unix socket in `$MEMORY_PLATFORM_HOME/run/`, and
prints its answer. With no resident process, it runs the hook in this process instead
(server.run_local: keyword relevance, and it starts the resident process for next time).

Whatever happens, it exits 0 and prints either Claude Code's hook JSON or nothing; errors
go to `$MEMORY_PLATFORM_HOME/logs/hooks.log`.

The one deliberate exception to "settings.py reads every MEMORY_PLATFORM_* variable":
`home()` reads MEMORY_PLATFORM_HOME here, with Settings.home's default and expansion, since
importing settings.py costs more than the whole prompt hook's budget. A test keeps the
two equal.
"""

import json
import os
import socket
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path

from memory_platform.ingest.hooks import read_hook_input  # standard library only, as here
from memory_platform.recall.wire import PROTOCOL, socket_path

STDIN_SECONDS = 5.0
# How long the hook waits for the resident process: a prompt must not wait on a stuck one.
ANSWER_SECONDS = {"SessionStart": 20.0, "UserPromptSubmit": 3.0}
COMMANDS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}


def home() -> Path:
    """$MEMORY_PLATFORM_HOME as Settings.home reads it (default ~/.memory-platform)."""
    value = (os.environ.get("MEMORY_PLATFORM_HOME") or "").strip()
    return Path(value or "~/.memory-platform").expanduser()


class NoServer(ConnectionError):
    """No resident process answers on the socket."""


def ask(folder: Path, event: str, raw: bytes, timeout: float) -> str:
    """The resident process's answer to one hook call. NoServer when none listens."""
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
    try:
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        with (folder / "logs" / "hooks.log").open("a", encoding="utf-8") as fh:
            fh.write(entry)
    except OSError:
        sys.stderr.write(entry)


def main(command: str) -> int:
    """`memory-platform hook session-start|prompt`: always exit 0."""
    event = COMMANDS[command]
    folder = home()
    try:
        raw = read_hook_input(sys.stdin.buffer, timeout=STDIN_SECONDS)
        try:
            output = ask(folder, event, raw, ANSWER_SECONDS[event])
        except NoServer:
            from memory_platform.recall.server import run_local  # the slow path

            output = run_local(event, raw)
    except Exception as exc:  # a hook never breaks a session: logged, nothing added
        _log(folder, event, exc)
        return 0
    if output:
        sys.stdout.write(output)
        sys.stdout.flush()
    return 0
