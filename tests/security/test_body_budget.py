"""Request bodies bounded per route and in aggregate, and requests that must arrive in time
(issue 47: "bodies add up", slowloris; agora/body_limit.py, agora/body_budget.py,
agora/read_deadlines.py).

Against a real daphne started as the Procfile starts it (DEBUG off, --proxy-headers) with the
default body limits, bodies are sent from many threads at once, each stopping as soon as the server
answers. The server's peak memory (VmHWM, reset before each case) and the /healthz latency while
they arrive are measured. The red team's full figures (160 × 28 MiB fully sent, memory after) are
bench/body_limit.py's --parallel cases; here the anonymous bodies are sent only up to 1 MiB, enough
for a server that waits for the rest to show itself by not answering.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testkit.big_body import send_body
from tests.security.test_body_limit import ProcfileServer

MB = 1024 * 1024
BIG = 28 * MB  # under AGORA_MAX_BODY_BYTES (28.5 MB): the red team's bodies
API_BODY = 5 * MB // 2  # under AGORA_MAX_API_BODY_BYTES (2.5 MB)
BUDGET = 64 * MB  # AGORA_MAX_BODIES_BYTES's default
GROWTH_MB = 100  # the acceptance: at most +100 MB at the peak
HEALTHZ_S = 1.0  # and /healthz under 1 s meanwhile
WAIT = 20
HEADER_TIMEOUT = 2
BODY_TIMEOUT = 4
# A made-up upload that was read is judged by Django: its body is not a form (400), or the session
# is not one (302 to sign in), or the CSRF pair is refused (403).
READ = (302, 400, 403)


@pytest.fixture(scope="module")
def server(tmp_path_factory, template_db):
    running = ProcfileServer(
        tmp_path_factory.mktemp("body-budget"),
        "http://127.0.0.1:9/v1",
        template_db,
        DEBUG="0",
        LOG_LEVEL="WARNING",
        SECRET_KEY="body-budget-" + uuid.uuid4().hex * 2,
        AGORA_HEADER_TIMEOUT=str(HEADER_TIMEOUT),
        AGORA_BODY_TIMEOUT=str(BODY_TIMEOUT),
    ).start(timeout=60)
    yield running
    running.stop()


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


class Watch:
    """While a case runs: daphne's peak memory over its memory before, and the slowest /healthz."""

    def __init__(self, server):
        self.server, self.pid = server, server.process.pid
        self.latencies: list[float] = []
        self.stopping = threading.Event()

    def __enter__(self):
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # VmHWM := VmRSS now
        self.baseline_kb = status_kb(self.pid, "VmRSS")
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.poller.start()
        return self

    def _poll(self):
        while not self.stopping.wait(0.1):
            started = time.monotonic()
            try:
                with urllib.request.urlopen(self.server.url + "/healthz", timeout=5) as response:
                    response.read()
            except OSError:
                pass  # counted as the time it took (up to the 5-s timeout)
            self.latencies.append(time.monotonic() - started)

    def __exit__(self, *exc):
        self.stopping.set()
        self.poller.join(10)
        self.growth_mb = (status_kb(self.pid, "VmHWM") - self.baseline_kb) / 1024
        self.slowest = max(self.latencies, default=0.0)

    def assert_held(self):
        print(f"daphne +{self.growth_mb:.0f} MB at its peak; the slowest /healthz {self.slowest:.3f} s")
        assert self.latencies, "no /healthz was answered while the bodies arrived"
        assert self.growth_mb <= GROWTH_MB, f"daphne grew {self.growth_mb:.0f} MB"
        assert self.slowest < HEALTHZ_S, f"/healthz took {self.slowest:.2f} s"


def in_parallel(count: int, send) -> list:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: send(), range(count)))


def signed_in_headers() -> dict[str, str]:
    """A session cookie (made up: daphne cannot tell, Django refuses it later) and a CSRF pair."""
    token = uuid.uuid4().hex * 2
    return {"Cookie": f"sessionid={uuid.uuid4().hex}; csrftoken={token}", "X-CSRFToken": token}


@pytest.mark.parametrize("path", ["/accounts/login/", "/api/v1/debates"])
def test_160_anonymous_28_mib_bodies_are_refused_at_their_headers(server, path):
    """The red team's 160 parallel anonymous 28 MiB POSTs (4.7 GB held before): an anonymous
    request gets the small limit, so each is answered 413 once its headers are read."""
    with Watch(server) as watch:
        outcomes = in_parallel(
            160,
            lambda: send_body(
                "127.0.0.1",
                server.port,
                path,
                BIG,
                send_at_most=MB,
                content_type="application/json" if path.startswith("/api/") else "multipart/form-data; boundary=x",
                extra_headers={"Accept-Language": "en"},
                timeout=WAIT,
            ),
        )
    assert [o.status for o in outcomes] == [413] * 160, {o.status for o in outcomes}
    assert all(b"64 KB" in o.body for o in outcomes), outcomes[0].body[:300]
    watch.assert_held()


@pytest.mark.parametrize("token", ["made-up", "agora_made-up-never-issued"])
def test_200_api_bodies_at_once_are_held_only_to_the_budget(server, token):
    """200 × 2.5 MB to the API with a made-up token: each is within the API's limit, so the
    budget decides: what fits is read (and refused by the API for its token), the rest is answered
    503 with Retry-After at its headers, as JSON. 684 MB held before. A token of the agora_ scheme
    is also watched for revocation (debates/api/live_tokens.py), found dead while Django reads its
    body, and must still be answered: 16 of 25 such posts got no answer at all before."""
    with Watch(server) as watch:
        outcomes = in_parallel(
            200,
            lambda: send_body(
                "127.0.0.1",
                server.port,
                "/api/v1/debates",
                API_BODY,
                content_type="application/json",
                extra_headers={"Authorization": f"Bearer {token}", "Accept-Language": "en"},
                timeout=WAIT,
            ),
        )
    statuses = [o.status for o in outcomes]
    assert set(statuses) <= {401, 503}, set(statuses)
    assert statuses.count(401) >= 10  # the budget holds 25 at once; whoever finishes makes room
    busy = next(o for o in outcomes if o.status == 503)
    assert busy.headers["retry-after"].isdigit()
    assert busy.headers["content-type"].startswith("application/json")
    assert "too many large requests" in json.loads(busy.body)["detail"]
    watch.assert_held()


def test_parallel_uploads_share_one_budget_and_give_it_back(server):
    """Eight signed-in 28 MiB uploads at once to the start form (its limit is 28.5 MB): two fit the
    64 MiB budget and are read, the other six are answered 503 at their headers; once the two are
    done a ninth is read whole."""
    upload = lambda: send_body(  # noqa: E731
        "127.0.0.1",
        server.port,
        "/debates/new/",
        BIG,
        content_type="multipart/form-data; boundary=x",
        extra_headers={**signed_in_headers(), "Accept-Language": "en"},
        timeout=WAIT,
    )
    with Watch(server) as watch:
        outcomes = in_parallel(8, upload)
    statuses = sorted(o.status or 0 for o in outcomes)
    assert statuses.count(503) >= 8 - BUDGET // BIG, statuses
    assert all(o.early for o in outcomes if o.status == 503)
    assert all(o.status in READ + (503,) for o in outcomes), statuses
    watch.assert_held()
    after = upload()
    assert after.status in READ and after.complete, (after.status, after.body[:200])


def held_upload(port: int, size: int, sent: int) -> socket.socket:
    """A signed-in upload that declares `size` bytes, sends `sent` of them and then waits."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    head = (
        f"POST /debates/new/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: multipart/form-data; boundary=x\r\n"
        f"Content-Length: {size}\r\nCookie: sessionid={uuid.uuid4().hex}\r\n\r\n"
    )
    sock.sendall(head.encode() + b"a" * sent)
    return sock


def test_a_body_lost_mid_way_gives_its_bytes_back(server):
    """Two uploads that stop half-way hold the budget (a third is refused 503); when their clients
    drop the connections, their bytes are given back and the next upload is read."""
    held = [held_upload(server.port, BIG, MB) for _ in range(2)]
    try:
        time.sleep(0.3)  # both headers read
        third = send_body(
            "127.0.0.1",
            server.port,
            "/debates/new/",
            BIG,
            send_at_most=MB,
            extra_headers=signed_in_headers(),
            timeout=WAIT,
        )
        assert third.status == 503, (third.status, third.body[:200])
    finally:
        for sock in held:  # a reset, as a client that goes away mid-upload
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()
    outcome = None
    for _ in range(10):  # the server notices the resets on its next turn of the loop
        time.sleep(0.2)
        outcome = send_body(
            "127.0.0.1", server.port, "/debates/new/", BIG, extra_headers=signed_in_headers(), timeout=WAIT
        )
        if outcome.status != 503:
            break
    assert outcome.status in READ and outcome.complete, (outcome.status, outcome.body[:200])


def closed_after(sock: socket.socket, trickle: bytes, every: float, bound: float) -> float | None:
    """Send `trickle` a byte every `every` seconds; the seconds until the server closed the
    connection, or None if it was still open after `bound` seconds."""
    started = time.monotonic()
    sock.setblocking(False)
    for index in range(int(bound / every)):
        with contextlib.suppress(BlockingIOError):
            try:
                if sock.recv(4096) == b"":
                    return time.monotonic() - started
            except ConnectionError:
                return time.monotonic() - started
        try:
            sock.send(trickle[index % len(trickle) : index % len(trickle) + 1])
        except OSError:
            return time.monotonic() - started
        time.sleep(every)
    return None


def test_a_connection_trickling_its_headers_is_closed_in_time(server):
    """Slowloris: 30 connections sending their request line a byte at a time are closed once
    AGORA_HEADER_TIMEOUT (2 s here) has passed since they opened; every byte restarted Twisted's
    60-s idle timer, so they were held as long as they kept trickling."""
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 200

    def trickle():
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
            return closed_after(sock, request, 0.25, HEADER_TIMEOUT + 6)

    seconds = in_parallel(30, trickle)
    assert all(s is not None and s < HEADER_TIMEOUT + 3 for s in seconds), seconds


def test_a_body_that_trickles_is_closed_in_time(server):
    """The headers arrive whole, the body a byte every quarter second: closed once
    AGORA_BODY_TIMEOUT (4 s here) has passed without the body keeping AGORA_BODY_MIN_RATE."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        sock.sendall(
            b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded"
            b"\r\nContent-Length: 1000\r\n\r\n"
        )
        seconds = closed_after(sock, b"a", 0.25, BODY_TIMEOUT + 6)
    assert seconds is not None and seconds < BODY_TIMEOUT + 3, seconds
