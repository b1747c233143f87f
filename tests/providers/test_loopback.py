"""The test kit's stdlib server (testkit/loopback.py): a client that hangs up is not the server's
failure and prints nothing; any other error in a request still prints its traceback."""

from __future__ import annotations

import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from testkit.loopback import LoopbackServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/broken":
            raise ValueError("a fault in the fake itself")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


class Served(LoopbackServer):
    """Counts each connection once it is done with (after any error was handled), so the test
    waits for the server instead of sleeping."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.done = threading.Semaphore(0)

    def shutdown_request(self, request) -> None:
        super().shutdown_request(request)
        self.done.release()


@pytest.fixture
def server():
    httpd = Served(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def reset_mid_request(port: int) -> None:
    """Half a request line, then a reset (SO_LINGER 0): the server's read fails with ECONNRESET."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET / HT")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def get(port: int, path: str) -> None:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        sock.recv(1024)


def test_a_client_that_hangs_up_prints_nothing_but_a_fault_still_does(server, capfd):
    port = server.server_address[1]
    reset_mid_request(port)
    assert server.done.acquire(timeout=10)  # its request was read, failed and handled
    get(port, "/")  # the server is still serving
    assert server.done.acquire(timeout=10)
    assert "Traceback" not in capfd.readouterr().err
    get(port, "/broken")
    assert server.done.acquire(timeout=10)
    err = capfd.readouterr().err
    assert "Traceback" in err and "a fault in the fake itself" in err
