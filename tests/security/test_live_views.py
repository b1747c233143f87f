"""Live views against a real daphne: the API's event streams count with the live page's WebSockets
in the per-user and per-debate caps (hardening round two, finding 8), a revoked token's open
streams end within seconds (14), and behind the documented proxy a forged X-Forwarded-For does not
get anonymous visitors past the per-address cap (13)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time

import httpx2
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from testkit.http import Browser
from testkit.proxy import ForwardingProxy
from testkit.servers import ROOT, USERS, AgoraServer
from tests.api.client import issue_token

pytestmark = pytest.mark.slow

NOWHERE = "http://127.0.0.1:9/v1"  # no debate runs here: the debates wait at a checkpoint


class ProxiedAgora(AgoraServer):
    """daphne as the Procfile runs it: with --proxy-headers."""

    def command(self) -> list[str]:
        return [*super().command()[:-1], "--proxy-headers", "agora.asgi:application"]


def waiting_debates(server: AgoraServer, owner: str, count: int, *, shared: bool = False) -> list[int]:
    """Debates that stay open (waiting at a checkpoint: no runner, never final), made in the
    server's database."""
    code = (
        "from django.contrib.auth.models import User\nfrom debates.models import Debate\n"
        f"owner = User.objects.get(username={owner!r})\n"
        f"made = [Debate.objects.create(owner=owner, question='Open question {{}}?'.format(i), format='duel', "
        f"status='waiting', shared={shared!r}) for i in range({count})]\n"
        "print([(d.pk, d.share_token) for d in made])"
    )
    out = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=server.env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return eval(out.strip().splitlines()[-1])  # noqa: S307 - our own print of a list of tuples


@pytest.fixture(scope="module")
def server(tmp_path_factory, template_db):
    made = AgoraServer(
        tmp_path_factory.mktemp("live-views"),
        NOWHERE,
        template_db,
        AGORA_WS_PER_USER="3",
        AGORA_WS_PER_DEBATE="4",
        AGORA_STREAM_RECHECK="1",
    ).start()
    yield made
    made.stop()


def api(server: AgoraServer, token: str) -> httpx2.Client:
    return httpx2.Client(
        base_url=server.url + "/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(20)
    )


@contextlib.contextmanager
def stream(client: httpx2.Client, pk: int):
    """An open event stream (its first bytes read: the server has admitted it), or the refusal."""
    with client.stream("GET", f"/debates/{pk}/stream") as response:
        if response.status_code == 200:
            lines = response.iter_lines()
            assert next(lines).startswith("retry:")
            response.lines = lines
        else:
            response.read()
        yield response


def admitted(client: httpx2.Client, pk: int, timeout: float = 20) -> None:
    """Wait until a new stream is admitted again (a closed one frees its slot once the server sees
    the hang-up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with stream(client, pk) as response:
            if response.status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError("no slot came back")


# -- 8. event streams count with WebSockets ------------------------------------------------------------


def test_event_streams_are_capped_per_user_and_per_debate_together_with_websockets(server):
    alice_token = issue_token(server.url, "alice", USERS["alice"])
    root_token = issue_token(server.url, "root", USERS["root"])
    first, second = waiting_debates(server, "alice", 2)
    alice, root = api(server, alice_token), api(server, root_token)
    with contextlib.ExitStack() as held:
        for _ in range(3):
            assert held.enter_context(stream(alice, first[0])).status_code == 200
        refused = held.enter_context(stream(alice, second[0]))
        assert refused.status_code == 429, "a fourth stream of one user (cap 3) is refused"
        assert refused.headers["content-type"].startswith("application/json")
        assert "打开的实时视图过多" in refused.json()["detail"], "said in the default language (zh-hans)"
        # Per debate (cap 4): alice's three and one of root's.
        assert held.enter_context(stream(root, first[0])).status_code == 200
        assert held.enter_context(stream(root, first[0])).status_code == 429
        assert held.enter_context(stream(root, second[0])).status_code == 200
    admitted(alice, first[0])

    # A live page's WebSocket takes a slot from the same count, and the other way round.
    web = Browser(server.url)
    web.log_in("alice", USERS["alice"])
    page = f"/ws/debates/{second[0]}/"
    with contextlib.ExitStack() as held:
        for _ in range(2):
            assert held.enter_context(stream(alice, first[0])).status_code == 200

        async def sockets() -> list[str]:
            async def one() -> tuple[str, object]:
                headers = {"Cookie": web.cookie_header}
                socket = await connect(
                    server.url.replace("http", "ws", 1) + page, origin=server.url, additional_headers=headers
                )
                try:
                    await asyncio.wait_for(socket.recv(), 10)
                    return "open", socket
                except ConnectionClosed as closed:
                    return str(closed.rcvd.code), socket

            kept, outcomes = [], []
            for _ in range(2):
                outcome, socket = await one()
                outcomes.append(outcome)
                kept.append(socket)
            # With one socket and two streams open, a third stream is refused too.
            outcomes.append(str(await asyncio.to_thread(lambda: _status_of_new_stream(alice, first[0]))))
            for socket in kept:
                await socket.close()
            return outcomes

        assert asyncio.run(sockets()) == ["open", "4429", "429"]


def _status_of_new_stream(client: httpx2.Client, pk: int) -> int:
    with stream(client, pk) as response:
        return response.status_code


# -- 14. revoking a token ends its open streams ----------------------------------------------------------


def test_revoking_a_token_ends_its_open_streams(server):
    web = Browser(server.url)
    web.log_in("bob", USERS["bob"])
    token = issue_token(server.url, "bob", USERS["bob"], name="revoke-me")
    ((pk, _share),) = waiting_debates(server, "bob", 1)
    client = api(server, token)
    with stream(client, pk) as response:
        assert response.status_code == 200
        listing = web.get("/accounts/tokens/")
        row = listing.split(token[:12])[0].rsplit('data-token="', 1)[1].split('"')[0]
        web.post(f"/accounts/tokens/{row}/revoke/", {}, form_page="/accounts/tokens/")
        # The debate is quiet: the stream sends a comment every 10 s while it runs, and ends (the
        # loop below finishes) once it notices the revocation.
        deadline = time.monotonic() + 15
        for _line in response.lines:
            if time.monotonic() > deadline:
                pytest.fail("the stream still ran 15 s after its token was revoked")
    assert client.get(f"/debates/{pk}/stream").status_code == 401


# -- 13. the per-address cap behind the documented proxy ---------------------------------------------------


@pytest.fixture(scope="module")
def proxied(tmp_path_factory, template_db):
    made = ProxiedAgora(
        tmp_path_factory.mktemp("proxied"),
        NOWHERE,
        template_db,
        name="proxied",
        BEHIND_HTTPS_PROXY="1",
        AGORA_WS_PER_USER="20",
    )
    made.health_path = "/healthz"
    yield made.start()
    made.stop()


async def crowd(url: str, pk: int, share: str, count: int) -> list[str]:
    """`count` anonymous sockets from one client, each with another forged X-Forwarded-For: how
    each fared ("open" or its close code)."""
    kept, outcomes = [], []
    for i in range(count):
        socket = await connect(
            url.replace("http", "ws", 1) + f"/ws/debates/{pk}/?share={share}",
            origin=url,
            additional_headers={"X-Forwarded-For": f"203.0.113.{i + 1}"},
        )
        kept.append(socket)
        try:
            await asyncio.wait_for(socket.recv(), 10)
            outcomes.append("open")
        except ConnectionClosed as closed:
            outcomes.append(str(closed.rcvd.code))
    for socket in kept:
        await socket.close()
    return outcomes


@pytest.mark.parametrize("mode", ["overwrite", "append"])
def test_forged_forwarded_for_does_not_pass_the_per_address_cap(proxied, mode):
    """25 anonymous sockets from one client, each with another forged X-Forwarded-For, through a
    proxy that replaces the header (the documented nginx line) or appends to it (nginx's
    $proxy_add_x_forwarded_for, the sample before): 20 are let in (AGORA_WS_PER_USER), 5 refused."""
    ((pk, share),) = waiting_debates(proxied, "alice", 1, shared=True)
    with ForwardingProxy(proxied.port, mode) as proxy:
        outcomes = asyncio.run(crowd(proxy.url, pk, share, 25))
    assert outcomes.count("open") == 20 and outcomes.count("4429") == 5, outcomes


@pytest.fixture(scope="module")
def unproxied(tmp_path_factory, template_db):
    """daphne as the Procfile runs it (--proxy-headers), reached directly: no proxy is trusted."""
    made = ProxiedAgora(
        tmp_path_factory.mktemp("unproxied"), NOWHERE, template_db, name="unproxied", AGORA_WS_PER_USER="5"
    )
    yield made.start()
    made.stop()


def test_forged_forwarded_for_from_a_client_that_is_no_trusted_proxy_is_ignored(unproxied):
    """Hardening round three: with --proxy-headers and nothing in front, one client wrote 500
    addresses and held all 500 seats of a shared debate. Its header is now its own word: eight
    sockets under eight forged addresses are one visitor, held to its five (AGORA_WS_PER_USER)."""
    ((pk, share),) = waiting_debates(unproxied, "alice", 1, shared=True)
    outcomes = asyncio.run(crowd(unproxied.url, pk, share, 8))
    assert outcomes.count("open") == 5 and outcomes.count("4429") == 3, outcomes


def test_the_documented_proxy_replaces_the_forwarded_header():
    text = (ROOT / "docs" / "production.md").read_text()
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in text
    assert "$proxy_add_x_forwarded_for" not in text.split("```nginx", 1)[1].split("```", 1)[0]
