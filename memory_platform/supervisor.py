"""The Dagster UI's process tree, for `memory-platform up`: start `dagster dev` in its own
session with its logs in a file (`dagster_log`), say where the UI is once its port answers,
run the first import while it serves, and stop the whole tree on SIGINT or SIGTERM.

No Dagster import here: the tree runs in a child process; launch.py launches the runs.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from memory_platform.settings import Settings

# `dagster dev` still works but says `dg dev` supersedes it, in every start; that is
# Dagster's roadmap, not the user's concern.
_CHILD_WARNINGS = "ignore:Function `dev_command` is superseded"
UI_START_TIMEOUT = 180.0
STOP_GRACE = 30.0
POLL_SECONDS = 0.5
SAY_EVERY = 5.0


def dagster_log(settings: Settings) -> Path:
    """Where the webserver's, daemon's and code server's output goes (`up --verbose`
    prints it instead)."""
    return settings.home / "logs" / "dagster.log"


def _default_signals() -> None:
    """In the `dagster dev` child: SIGINT and SIGTERM back to their defaults. Started in the
    background (`memory-platform up &`, nohup) a process inherits SIGINT ignored, and
    Dagster maps SIGTERM to SIGINT's handler: the whole tree would ignore both."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def start_ui(settings: Settings, host: str, port: int, *, verbose: bool = False
             ) -> tuple[subprocess.Popen, IO | None]:
    """`dagster dev` on the project's definitions, Dagster's storage beside the data, in
    its own session (a signal meant for the tree goes through `up`, once, and the group can
    be ended as a whole). Its output goes to dagster_log(settings), appended, unless
    `verbose`. Returns the child and the open log (the caller closes it)."""
    env = {**os.environ, "DAGSTER_HOME": str(settings.dagster_home),
           "PYTHONWARNINGS": _CHILD_WARNINGS}
    command = [sys.executable, "-m", "dagster", "dev", "-m", "memory_platform.definitions",
               "-h", host, "-p", str(port)]
    sink = None
    if not verbose:
        path = dagster_log(settings)
        path.parent.mkdir(parents=True, exist_ok=True)
        sink = path.open("a", encoding="utf-8")
        sink.write(f"--- memory-platform up, {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        sink.flush()
    child = subprocess.Popen(command, env=env, start_new_session=True,
                             preexec_fn=_default_signals, stdin=subprocess.DEVNULL,
                             stdout=sink, stderr=subprocess.STDOUT if sink else None)
    return child, sink


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 3000, *,
          log: Callable[[str], None] = print, verbose: bool = False,
          ready: Callable[[str], None] | None = None,
          work: Callable[[], None] | None = None) -> int:
    """Serve the UI until SIGINT or SIGTERM: start the tree, say its URL once the port
    answers (then `ready(url)`), run `work` (the first import) in this thread while it
    serves, then wait. A signal stops the tree (and interrupts `work`) and waits for it; a
    tree that does not stop within STOP_GRACE seconds is terminated, then killed. Returns
    the child's exit code (0 after a requested stop), 1 when `work` failed."""
    child, sink = start_ui(settings, host, port, verbose=verbose)
    stopping = threading.Event()
    in_work = threading.Event()

    def forward(signum, frame) -> None:
        stopping.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGINT)
        if in_work.is_set():
            in_work.clear()
            raise KeyboardInterrupt  # the run in this thread stops too

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    failed = False
    try:
        try:
            url = _wait_until_answers(child, host, port, stopping, log,
                                      None if verbose else dagster_log(settings))
            if url and ready is not None:
                ready(url)
            if url and work is not None and not stopping.is_set():
                in_work.set()
                try:
                    work()
                except KeyboardInterrupt:
                    raise
                except Exception as error:  # said, and the UI keeps serving its run's logs
                    failed = True
                    log(f"error: {error} (the run's logs are in the UI: {url}/runs)")
                finally:
                    in_work.clear()
            while child.poll() is None and not stopping.wait(1.0):
                pass
        except KeyboardInterrupt:
            stopping.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGINT)
        code = stop(child) if stopping.is_set() else child.returncode
        return 1 if failed and code == 0 else code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:  # an error on the way: the tree never outlives `up`
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGINT)
            stop(child)
        if sink is not None:
            sink.close()


def _wait_until_answers(child: subprocess.Popen, host: str, port: int,
                        stopping: threading.Event, log: Callable[[str], None],
                        logfile: Path | None) -> str | None:
    """The UI's URL once its port answers (said with where the logs are); None when the
    tree exited or a stop was asked first."""
    began = time.monotonic()
    deadline = began + UI_START_TIMEOUT
    said = began
    where = f"; Dagster's logs: {logfile}" if logfile else ""
    log("starting the Dagster UI (its definitions load first)…")
    while child.poll() is None and not stopping.is_set():
        if time.monotonic() - said >= SAY_EVERY:  # never a silent terminal while it loads
            said = time.monotonic()
            log(f"starting the Dagster UI… {said - began:.0f} s")
        if answers(host, port):
            url = f"http://{host}:{port}"
            log(f"Dagster UI: {url}  (Ctrl-C or SIGTERM to stop{where})")
            return url
        if time.monotonic() > deadline:
            log(f"the Dagster UI did not answer on {host}:{port} within "
                f"{UI_START_TIMEOUT:.0f} s; still waiting{where or ' (see the lines above)'}")
            deadline = float("inf")
        time.sleep(POLL_SECONDS)
    if child.poll() is not None and not stopping.is_set():
        log(f"`dagster dev` exited with code {child.returncode} before the UI answered"
            + (f"; its log: {logfile}" if logfile else ""))
    return None


def stop(child: subprocess.Popen) -> int:
    """Wait for a tree that was asked to stop; terminate, then kill, what lingers. 0 when
    the whole tree stopped within STOP_GRACE of the request, whatever code `dagster dev`
    gives (a stop that lands during a sensor tick makes it exit 1, with the daemon's
    "user code server unreachable" traceback in its log); else the child's code."""
    forced = False
    for sig, grace in ((None, STOP_GRACE), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        if sig is not None:
            forced = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, sig)
        if _group_gone(child, grace):
            break
    child.wait()
    if not forced or child.returncode in (0, -signal.SIGINT, 130):
        return 0
    return child.returncode or 1


def _group_gone(child: subprocess.Popen, timeout: float) -> bool:
    """Whether every process of the child's group has exited within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        child.poll()  # reap the leader: a zombie still counts as a member of its group
        try:
            os.killpg(child.pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
