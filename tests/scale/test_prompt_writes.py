"""Daphne's TCP connections write at once when nothing is queued (agora/prompt_writes.py): over a
real socket pair, with a reactor that records what it is asked to watch."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import main, tcp
from twisted.internet.protocol import Protocol

from agora import prompt_writes


class Reactor:
    """What a connection asks of its reactor, recorded (the reactor's loop is not needed here)."""

    def __init__(self) -> None:
        self.writers: set = set()
        self.asked = 0

    def addWriter(self, writer) -> None:
        self.asked += 1
        self.writers.add(writer)

    def removeWriter(self, writer) -> None:
        self.writers.discard(writer)

    def addReader(self, reader) -> None: ...

    def removeReader(self, reader) -> None: ...


@pytest.fixture
def twisteds_own(monkeypatch):
    """Twisted's own `write` on the class, as a fresh process has it; restored after."""
    monkeypatch.setattr(tcp.Server, "write", prompt_writes._twisteds_write)


@pytest.fixture
def connection():
    """A Twisted server connection on one end of a real socket pair; the test reads the other."""
    ours, peer = socket.socketpair()
    reactor = Reactor()
    conn = tcp.Server(ours, Protocol(), ("127.0.0.1", 1), None, 1, reactor)
    conn.connected = True
    peer.setblocking(False)
    yield conn, peer, reactor
    ours.close()
    peer.close()


def received(peer: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = peer.recv(1 << 20)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def drain(conn, peer, reactor) -> bytes:
    """Run the reactor's half by hand: while the connection is watched, read the peer and let the
    connection write (its `doWrite`); returns everything the peer got."""
    got = []
    while reactor.writers:
        got.append(received(peer))
        assert conn.doWrite() is None
    return b"".join(got) + received(peer)


def test_twisted_alone_queues_every_frame_for_the_next_turn_of_the_loop(twisteds_own, connection):
    conn, peer, reactor = connection
    conn.write(b"frame")
    assert received(peer) == b"" and reactor.asked == 1 and conn in reactor.writers
    assert drain(conn, peer, reactor) == b"frame"


def test_installed_a_frame_goes_out_at_once_without_watching_the_socket(twisteds_own, connection):
    conn, peer, reactor = connection
    assert prompt_writes.install() is True and prompt_writes.install() is False
    for i in range(3):
        conn.write(b"frame %d;" % i)
    assert received(peer) == b"frame 0;frame 1;frame 2;"
    assert reactor.asked == 0 and not reactor.writers


def test_a_full_socket_queues_the_rest_and_later_frames_keep_their_order(twisteds_own, connection):
    conn, peer, reactor = connection
    prompt_writes.install()
    big = bytes(range(256)) * (16 * 1024)  # 4 MiB: more than the kernel takes at once
    conn.write(big)
    assert conn in reactor.writers  # what the socket refused waits for doWrite
    conn.write(b"after")  # must not overtake the queued rest
    got = drain(conn, peer, reactor)
    assert got == big + b"after"
    conn.write(b"again")  # the queue is empty once more: at once
    assert received(peer) == b"again" and not reactor.writers


def test_a_closing_connection_is_left_to_twisteds_queue(twisteds_own, connection):
    conn, peer, reactor = connection
    prompt_writes.install()
    conn.loseConnection()  # Twisted's queue decides what is still sent, then closes
    conn.write(b"late")
    assert received(peer) == b"" and conn in reactor.writers


def test_a_lost_connection_is_reported_where_twisted_reports_it(twisteds_own, connection):
    conn, peer, reactor = connection
    prompt_writes.install()
    peer.close()
    conn.write(b"to nobody")  # the socket says the peer is gone: queued, not dropped or raised
    assert conn in reactor.writers
    assert conn.doWrite() is main.CONNECTION_LOST


# That agora/asgi.py installs it under daphne: tests/scale/test_plain_frame_logs.py, beside the other
# change to daphne's frame path, in one process.
