"""Databases that stop answering, on loopback, for the timeout tests: a socket that accepts
connections and never says a word (not even to the startup packet), and a proxy in front of
a real PostgreSQL that forwards faithfully until frozen, then holds every byte (a server
that answered the startup and then stalls, as a hung or partitioned one does)."""

import socket
import threading
from contextlib import contextmanager

from psycopg.conninfo import conninfo_to_dict, make_conninfo


@contextmanager
def silent_server():
    """(url) of a listener on 127.0.0.1 that accepts and never replies."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)  # kept open, never read from or written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"postgresql://nobody@127.0.0.1:{listener.getsockname()[1]}/none"
    finally:
        stop.set()
        listener.close()
        for conn in held:
            conn.close()
        thread.join(5)


class StallingProxy:
    """Forwards TCP between clients and the PostgreSQL of `url` until `freeze()`; after it,
    nothing more is forwarded either way (connections stay open). `thaw()` forwards again."""

    def __init__(self, url: str):
        params = conninfo_to_dict(url)
        host = params.get("host") or "127.0.0.1"
        self._unix = host.startswith("/")
        self._target = (f"{host}/.s.PGSQL.{params.get('port') or 5432}" if self._unix
                        else (host, int(params.get("port") or 5432)))
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        port = self._listener.getsockname()[1]
        self.url = make_conninfo(url, host="127.0.0.1", port=str(port))
        self._open = threading.Event()
        self._open.set()
        self._closing = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        self._open.clear()

    def thaw(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._closing = True
        self._open.set()
        self._listener.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            family = socket.AF_UNIX if self._unix else socket.AF_INET
            server = socket.socket(family, socket.SOCK_STREAM)
            server.connect(self._target)
            self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(1 << 16)
            except OSError:
                return
            if not data or self._closing:
                return
            self._open.wait()  # frozen: hold the bytes
            if self._closing:
                return
            try:
                sink.sendall(data)
            except OSError:
                return
