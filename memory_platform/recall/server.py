"""The resident process the hooks talk to: it keeps the settings, a pool of database
connections, the tokenizer and the vault's embedding model loaded, so a prompt hook costs a
socket round trip and a few queries instead of a Python start with every import and a model
load (measured in BENCHMARKS.md).

    memory-platform recall serve     # in the foreground (the hooks start it on their own)
    memory-platform recall stop

It listens on `$MEMORY_PLATFORM_HOME/run/recall.sock` (a folder only the user can read), one
JSON request per connection: {"v": 1, "event": "SessionStart" | "UserPromptSubmit",
"input": "<the hook's stdin>"} -> {"v": 1, "output": "<the hook's stdout>"}; {"v": 1,
"op": "stop"} stops it. A lock file keeps it to one per home. It exits after
MEMORY_PLATFORM_RECALL_IDLE_MINUTES without a request (an embedded PostgreSQL it kept up
then stops with it, unless `memory-platform up` holds it too).
"""

import fcntl
import json
import logging
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

from memory_platform.recall.hooks import hook_database, run_hook
from memory_platform.recall.wire import PROTOCOL, socket_path
from memory_platform.settings import Settings, load_settings
from memory_platform.store import Database

log = logging.getLogger(__name__)
MAX_REQUEST_BYTES = 2 << 20


class AlreadyRunning(RuntimeError):
    """Another resident process serves this home."""


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, db: Database, embedder, idle_seconds: float):
        self.db = db
        self.embedder = embedder
        self.idle_seconds = idle_seconds
        self.last_request = time.monotonic()
        self.served = 0
        super().__init__(str(path), _Handler)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server
    # A client that connects and sends nothing (or stops reading) is let go after this
    # long, far past any hook's budget: it holds no thread for ever.
    timeout = 30.0

    def handle(self) -> None:
        self.server.last_request = time.monotonic()
        try:
            line = self.rfile.readline(MAX_REQUEST_BYTES)
        except TimeoutError:
            log.info("a hook client sent nothing for %g s; closed", self.timeout)
            return
        try:
            request = json.loads(line)
            if request.get("v") != PROTOCOL:
                reply = {"v": PROTOCOL, "error": f"protocol {request.get('v')!r} unknown"}
            elif request.get("op") == "stop":
                reply = {"v": PROTOCOL, "output": "stopping"}
                threading.Thread(target=self.server.shutdown, daemon=True).start()
            else:
                # run_hook never raises: an error is logged and the output is empty.
                output = run_hook(request["event"], request["input"], relevance="hybrid",
                                  db=self.server.db, embedder=self.server.embedder)
                self.server.served += 1
                reply = {"v": PROTOCOL, "output": output}
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            # not JSON, too deep, or not an object with the fields: said, never a traceback
            reply = {"v": PROTOCOL, "error": f"bad request: {type(exc).__name__}: {exc}"}
        try:
            self.wfile.write(json.dumps(reply).encode() + b"\n")
        except OSError:  # the client gave up (its budget ran out) or stopped reading
            log.info("a hook client left before its answer")


def _lock(settings: Settings):
    folder = settings.home / "run"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    handle = (folder / "recall.lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise AlreadyRunning(f"a resident recall process already serves {settings.home}") \
            from None
    return handle


def serve(settings: Settings | None = None, *, ready=None) -> dict:
    """Serve hook requests until stopped or idle; returns {served}. `ready` is called once
    the socket listens (tests)."""
    settings = settings or load_settings()
    lock = _lock(settings)
    path = socket_path(settings.home)
    db = hook_database(settings)
    try:
        from memory_platform.vault.budget import count_tokens
        from memory_platform.vault.memories import vault_embedder

        # Warm everything a request needs, so the first hook is as fast as the next.
        with db.connect() as conn:
            conn.execute("SELECT 1")
        count_tokens("warm")
        embedder = vault_embedder()
        embedder.embed(["warm"])
        path.unlink(missing_ok=True)  # a stale socket of a process that died
        server = _Server(path, db, embedder, settings.recall_idle_minutes * 60.0)
        os.chmod(path, 0o600)

        def watchdog() -> None:
            while True:
                time.sleep(min(5.0, server.idle_seconds))
                if time.monotonic() - server.last_request > server.idle_seconds:
                    server.shutdown()
                    return

        threading.Thread(target=watchdog, daemon=True).start()
        if ready:
            ready()
        try:
            server.serve_forever(poll_interval=0.2)
        finally:
            server.server_close()
            path.unlink(missing_ok=True)
        return {"served": server.served}
    finally:
        db.close()
        lock.close()


def stop(settings: Settings | None = None, timeout: float = 5.0) -> bool:
    """Ask the resident process to stop; False when none was running."""
    settings = settings or load_settings()
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(timeout)
    try:
        client.connect(str(socket_path(settings.home)))
        client.sendall(json.dumps({"v": PROTOCOL, "op": "stop"}).encode() + b"\n")
        client.recv(1 << 12)
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    finally:
        client.close()
    return True


def starting(settings: Settings) -> bool:
    """True while a resident process holds the lock (warming up: not listening yet)."""
    path = settings.home / "run" / "recall.lock"
    if not path.exists():
        return False
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def spawn(settings: Settings) -> subprocess.Popen | None:
    """Start a resident process in the background, detached from the hook (its own
    session), logging to $MEMORY_PLATFORM_HOME/logs/recall-server.log. None when one is
    already starting (it loads the model for seconds before it listens)."""
    if starting(settings):
        return None
    logs = settings.home / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with (logs / "recall-server.log").open("a") as out:
        return subprocess.Popen([sys.executable, "-m", "memory_platform.recall.server"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                start_new_session=True, close_fds=True)


def run_local(event: str, raw: bytes) -> str:
    """The hook in this process, when no resident process answers: keyword relevance (no
    model to load), and, with MEMORY_PLATFORM_RECALL_SERVER=auto, a resident process
    started for the next call."""
    settings = load_settings()
    output = run_hook(event, raw, relevance="keyword", settings=settings,
                      db=hook_database(settings))
    if settings.recall_server == "auto":
        spawn(settings)
    return output


if __name__ == "__main__":  # spawn()'s target
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        figures = serve()
        log.info("resident recall process exits after %d requests", figures["served"])
    except AlreadyRunning as exc:
        log.info("%s", exc)
