"""The pieces of a multi-process deployment a test starts and always stops: a standalone
PostgreSQL from pgserver's own binaries on a TCP port (password auth, as an external server
is reached), and long-running processes, each in a session of its own, killed by process
group at the end together with anything they started (found by a marker variable every
child inherits)."""

import functools
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pgserver
import psycopg

PG_BIN = Path(pgserver.__file__).parent / "pginstall" / "bin"
MARKER = "MP_DEPLOYMENT_TEST"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, timeout: float, what: str, every: float = 0.5, log: Path | None = None):
    """check()'s first truthy answer; fails naming `what` (and the log's tail) on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log and log.exists() else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")
        time.sleep(every)


@dataclass
class Postgres:
    """A PostgreSQL server of its own on 127.0.0.1:port, superuser `postgres` with a
    password, data in a temporary folder deleted by stop()."""

    folder: Path
    port: int
    password: str

    def url(self, database: str) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, *extensions: str) -> str:
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        with psycopg.connect(self.url(name), autocommit=True) as conn:
            for extension in extensions:
                conn.execute(f'CREATE EXTENSION IF NOT EXISTS "{extension}"')
        return self.url(name)

    def stop(self) -> None:
        subprocess.run([str(PG_BIN / "pg_ctl"), "-D", str(self.folder / "data"), "-m",
                        "immediate", "-w", "-t", "30", "stop"], capture_output=True,
                       timeout=60, user=_pg_user())
        shutil.rmtree(self.folder, ignore_errors=True)


@functools.cache
def _pg_user() -> str | None:
    """PostgreSQL refuses to run as root; as root, run it as pgserver's own `pgserver` user,
    prepared as pgserver prepares it (the user, and its access to the binaries)."""
    if os.geteuid() != 0:
        return None
    from pgserver import utils

    utils.ensure_user_exists("pgserver")
    utils.ensure_prefix_permissions(PG_BIN)
    utils.ensure_folder_permissions(PG_BIN, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP
                                    | stat.S_IXOTH)
    utils.ensure_folder_permissions(PG_BIN.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
    return "pgserver"


def start_postgres() -> Postgres:
    """initdb + pg_ctl start on a free port, scram-sha-256 over TCP, its socket in its own
    folder (not /tmp's shared one). Not under pytest's tmp_path: as root the server runs as
    `pgserver`, and pytest keeps its base folder private."""
    folder = Path(tempfile.mkdtemp(prefix="mp-deploy-pg-", dir="/tmp"))
    folder.chmod(0o755)
    password = uuid.uuid4().hex
    (folder / "pw").write_text(password + "\n")
    if _pg_user():
        shutil.chown(folder, _pg_user())
        shutil.chown(folder / "pw", _pg_user())
    data = folder / "data"
    init = subprocess.run(
        [str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "-E", "UTF8",
         "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={folder / 'pw'}",
         "--no-instructions"], capture_output=True, text=True, timeout=300, user=_pg_user())
    assert init.returncode == 0, init.stderr
    port = free_port()
    started = subprocess.run(
        [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w",
         "-t", "120", "-o", f"-p {port} -c listen_addresses=127.0.0.1 -k {folder}", "start"],
        capture_output=True, text=True, timeout=180, user=_pg_user())
    server = Postgres(folder, port, password)
    if started.returncode != 0:
        log = (folder / "server.log").read_text(errors="replace")
        server.stop()
        raise AssertionError(f"PostgreSQL did not start: {started.stderr}\n{log}")
    return server


@dataclass
class Processes:
    """Long-running processes of one test; `stop_all` ends them and their children."""

    env: dict[str, str]
    logs: Path
    started: dict[str, subprocess.Popen] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.marker = uuid.uuid4().hex
        self.env = {**self.env, MARKER: self.marker}

    def start(self, name: str, *command: str, env: dict[str, str] | None = None
              ) -> subprocess.Popen:
        """Start `command` with the group's environment (or `env` instead of it)."""
        log = self.log(name).open("w")
        env = self.env if env is None else {**env, MARKER: self.marker}
        proc = subprocess.Popen(list(command), env=env,
                                cwd=self.logs, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.started[name] = proc
        return proc

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def alive(self, name: str) -> bool:
        return self.started[name].poll() is None

    def stop_all(self, grace: float = 20.0) -> None:
        """SIGTERM to each process group, SIGKILL to what is left after `grace` seconds,
        then SIGKILL to any process still carrying this test's marker (a run worker that
        started a session of its own)."""
        for proc in self.started.values():
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.started.values():
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            _signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for pid in marked_processes(self.marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def marked_processes(marker: str) -> list[int]:
    """Pids of live processes whose environment carries MARKER=marker."""
    found = []
    needle = f"{MARKER}={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@contextmanager
def processes(env: dict[str, str], logs: Path):
    group = Processes(env, logs)
    try:
        yield group
    finally:
        group.stop_all()
