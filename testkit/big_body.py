"""A client that sends a large request body the way a careful HTTP client does (curl, a browser):
headers first, then the body in blocks, watching for an early answer all the while and stopping
when one comes. Used by the body-limit tests and bench/body_limit.py, so both see exactly when the
server answered relative to how much of the body it had been sent. Stdlib only; constant memory on
this side (one block is sent again and again)."""

from __future__ import annotations

import contextlib
import select
import socket
import time
from dataclasses import dataclass, field

BLOCK = 1024 * 1024


@dataclass
class Outcome:
    status: int | None  # None: no answer came (timeout, or the connection dropped first)
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    sent: int = 0  # body bytes (chunked: with their framing) written before the answer or the end
    complete: bool = False  # the whole body (and, chunked, its last chunk) went out
    error: str = ""  # what went wrong on the way, if anything (reset, timeout)
    seconds: float = 0.0

    @property
    def early(self) -> bool:
        """The server answered before it had been sent the whole body."""
        return self.status is not None and not self.complete


def send_body(
    host: str,
    port: int,
    path: str,
    size: int,
    *,
    chunked: bool = False,
    send_at_most: int | None = None,
    content_type: str = "application/x-www-form-urlencoded",
    extra_headers: dict[str, str] | None = None,
    timeout: float = 60,
    block: int = BLOCK,
) -> Outcome:
    """POST `size` body bytes to `path` (with Content-Length, or chunked in `block`-sized chunks).
    With `send_at_most`, stop sending after that many bytes and only wait for the answer: a server
    that waits for the rest of a body it was told is `size` bytes never answers (status None)."""
    started = time.monotonic()
    deadline = started + timeout
    outcome = Outcome(status=None)
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Type: {content_type}", "Connection: close"]
    head.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}")
    head += [f"{name}: {value}" for name, value in (extra_headers or {}).items()]
    payload = b"a" * block
    limit = size if send_at_most is None else min(size, send_at_most)

    def pieces():
        left = limit
        while left > 0:
            n = min(block, left)
            left -= n
            yield (b"%x\r\n" % n + payload[:n] + b"\r\n") if chunked else payload[:n]
        if chunked and limit >= size:
            yield b"0\r\n\r\n"

    sock = socket.create_connection((host, port), timeout=timeout)
    received = bytearray()
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        sock.setblocking(False)
        queue, pending, exhausted = pieces(), memoryview(b""), False
        while time.monotonic() < deadline:
            if not pending:
                piece = next(queue, None)
                if piece is None:
                    exhausted = True
                    break
                pending = memoryview(piece)
            readable, writable, _ = select.select([sock], [sock], [], max(0.0, deadline - time.monotonic()))
            if readable:  # the answer (or the server's close) came while we were still sending
                break
            if writable:
                try:
                    written = sock.send(pending)
                except BlockingIOError:
                    continue
                except OSError as error:  # reset or broken pipe: read what the server said before
                    outcome.error = type(error).__name__
                    break
                outcome.sent += written
                pending = pending[written:]
        outcome.complete = exhausted and limit >= size
        # Read the answer until the server closes (we asked for Connection: close) or it is complete.
        sock.setblocking(True)
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = sock.recv(65536)
            except TimeoutError:
                outcome.error = outcome.error or "timeout"
                break
            except OSError as error:
                outcome.error = outcome.error or type(error).__name__
                break
            if not data:
                break
            received += data
            if _complete(received):
                break
    finally:
        with contextlib.suppress(OSError):
            sock.close()
    _parse(bytes(received), outcome)
    outcome.seconds = time.monotonic() - started
    return outcome


def _complete(data: bytearray) -> bool:
    head, sep, body = bytes(data).partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip() or 0)
    return False


def _parse(data: bytes, outcome: Outcome) -> None:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        return
    outcome.status = int(parts[1])
    for line in lines[1:]:
        name, _, value = line.partition(":")
        outcome.headers[name.strip().lower()] = value.strip()
    if outcome.headers.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    outcome.body = body


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, rest = data.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += rest[:size]
        data = rest[size + 2 :]
    return bytes(out)
