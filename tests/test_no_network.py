""""No test reaches the network" is enforced (pyproject's pytest addopts, pytest-socket): a
connection to any host but loopback fails the test that makes it; loopback and unix
sockets, which the suite's servers and its PostgreSQL use, work."""

import socket
import threading

import httpx
import pytest
from pytest_socket import SocketConnectBlockedError

# The refusals below are what is tested; pytest-socket's warning on each says it again.
pytestmark = pytest.mark.filterwarnings("ignore:A test tried to use socket")


@pytest.mark.parametrize("host", ["192.0.2.1", "2001:db8::1", "10.0.0.1"])
def test_a_connection_off_loopback_is_refused(host):
    with pytest.raises(SocketConnectBlockedError):
        socket.create_connection((host, 443), timeout=1)


def test_an_http_client_off_loopback_is_refused():
    with pytest.raises((SocketConnectBlockedError, httpx.ConnectError)) as failure:
        httpx.get("http://192.0.2.1/", timeout=1)
    chain = failure.value
    while chain is not None and not isinstance(chain, SocketConnectBlockedError):
        chain = chain.__cause__ or chain.__context__
    assert isinstance(chain, SocketConnectBlockedError)


def test_loopback_and_unix_sockets_work(tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted = threading.Thread(target=lambda: server.accept()[0].sendall(b"ok"))
    accepted.start()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        assert client.recv(2) == b"ok"
    accepted.join(5)
    server.close()

    path = str(tmp_path / "s.sock")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(path)
    unix.listen(1)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(path)
        conn, _ = unix.accept()
        conn.sendall(b"ok")
        assert client.recv(2) == b"ok"
        conn.close()
    unix.close()
