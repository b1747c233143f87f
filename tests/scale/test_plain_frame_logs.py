"""autobahn's per-frame debug-log arguments, built without click's colours (agora/plain_frame_logs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import deque

import click
import pytest
from autobahn.twisted.websocket import WebSocketServerProtocol
from autobahn.util import hltype, hlval
from autobahn.websocket import protocol
from autobahn.websocket.protocol import TrafficStats, WebSocketProtocol

from agora import plain_frame_logs
from testkit.servers import ROOT


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


@pytest.fixture
def autobahns_own():
    """autobahn's own helpers, as a fresh process has them; whatever was there before comes back."""
    from autobahn.twisted import websocket

    before = [(m, m.hltype, m.hlval) for m in (protocol, websocket)]
    for module in (protocol, websocket):
        module.hltype, module.hlval = hltype, hlval
    yield
    for module, type_, value in before:
        module.hltype, module.hlval = type_, value


def sent_frame_styles(monkeypatch) -> int:
    """click.style calls while a real autobahn server protocol sends one frame."""
    calls = []
    style = click.style
    monkeypatch.setattr(click, "style", lambda *a, **k: calls.append(a) or style(*a, **k))
    ws = WebSocketServerProtocol()
    ws.send_queue, ws.transport, ws.state = deque(), Transport(), WebSocketProtocol.STATE_OPEN
    ws.trafficStats, ws.logOctets = TrafficStats(), False
    ws.sendData(b"frame")
    assert ws.transport.written == [b"frame"]  # the frame itself goes out either way
    return len(calls)


def test_a_sent_frame_styles_nothing_once_installed(monkeypatch, autobahns_own):
    assert sent_frame_styles(monkeypatch) > 0  # autobahn colours a debug line nobody logs
    assert plain_frame_logs.install() == ["autobahn.websocket.protocol", "autobahn.twisted.websocket"]
    assert sent_frame_styles(monkeypatch) == 0


def test_the_plain_helpers_say_what_autobahns_say_without_colour():
    assert plain_frame_logs.plain_type(WebSocketProtocol.sendData) == click.unstyle(hltype(WebSocketProtocol.sendData))
    assert plain_frame_logs.plain_value(42) == 42 and f"{plain_frame_logs.plain_value('peer')}" == "peer"


def test_the_asgi_application_installs_them_under_daphne():
    """As the web process loads it: daphne's server first, then the application. The other change
    to daphne's frame path, prompt writes (agora/prompt_writes.py), is checked in the same process."""
    code = (
        "import daphne.server, agora.asgi\n"
        "from autobahn.websocket import protocol\n"
        "from autobahn.twisted import websocket\n"
        "from twisted.internet import tcp\n"
        "from agora.plain_frame_logs import plain_type\n"
        "from agora.prompt_writes import prompt_write\n"
        "print(protocol.hltype is plain_type, websocket.hltype is plain_type, tcp.Server.write is prompt_write)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "agora.settings"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True", "True"]
