"""The live page's WebSocket, tested as the Channels docs do (WebsocketCommunicator), against a
real debate streaming from the fake OpenAI server over loopback HTTP."""

from __future__ import annotations

import asyncio
import re

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client, override_settings

from agora.asgi import application
from debates import frames, runner
from debates.forms import create_debate
from debates.models import Debate, Turn
from tests.web.pagemodel import PageModel

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
async def viewer(alice):
    """alice's signed-in test client and the WebSocket headers of her session."""
    client = Client()
    await sync_to_async(client.force_login)(alice)
    headers = [(b"origin", b"http://127.0.0.1"), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]
    return client, headers


async def _create(owner, question="念佛与参禅，哪条路更适合现代人修行？", **values):
    debate, errors = await database_sync_to_async(create_debate)(
        {"topic": question, "format": "duel", **values}, owner=owner
    )
    assert not errors, errors
    return debate


async def _wait_for(predicate, timeout=20.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        value = await database_sync_to_async(predicate)()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


async def _receive_until_done(communicator, page: PageModel, timeout=30.0) -> list[str]:
    frames = []
    while True:
        message = await communicator.receive_from(timeout=timeout)
        frames.append(message)
        page.apply(message)
        if 'data-status="done"' in message or 'data-status="failed"' in message:
            return frames


async def test_viewer_joining_mid_stream_sees_every_word_once(libraries, fake_llm, viewer, alice):
    client, headers = viewer
    fake_llm.token_delay = 0.01
    with override_settings(OPENAI_BASE_URL=fake_llm.base_url):
        debate = await _create(alice, rounds=2)
        task = asyncio.create_task(runner.execute(debate.pk))
        # Mid-stream: a turn is running and already has text.
        await _wait_for(lambda: Turn.objects.filter(debate=debate, state="running").exclude(text="").exists())
        response = await sync_to_async(client.get)(f"/debates/{debate.pk}/")
        page_html = response.content.decode()
        after = int(re.search(r"\?after=(\d+)", page_html).group(1))
        page = PageModel()
        page.apply(page_html)
        running_at_render = set(page.live)
        assert running_at_render, "the page should show a turn in progress"
        await asyncio.sleep(0.3)  # frames keep flowing before the viewer subscribes: the race window

        communicator = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/?after={after}", headers=headers)
        connected, _ = await communicator.connect()
        assert connected
        await _receive_until_done(communicator, page)
        await communicator.disconnect()
        assert await task == "done"

    finals = await database_sync_to_async(lambda: dict(Turn.objects.filter(debate=debate).values_list("pk", "text")))()
    # Every state the page's live text passed through is a prefix of the turn's final text: a
    # repeated or missing chunk would break that, at the moment it happened.
    checked = 0
    for pk, shown in page.history:
        assert finals[pk].startswith(shown), f"turn {pk}: page showed {shown!r}"
        checked += 1
    assert checked > 10
    assert page.finished == set(finals), "every turn ends rendered in full"


async def test_catch_up_replaces_stale_page_wholesale(libraries, fake_llm, viewer, alice):
    _client, headers = viewer
    fake_llm.token_delay = 0.0
    with override_settings(OPENAI_BASE_URL=fake_llm.base_url):
        debate = await _create(alice, rounds=1)
        assert await runner.execute(debate.pk) == "done"
    seq = await database_sync_to_async(lambda: Debate.objects.get(pk=debate.pk).seq)()
    communicator = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/?after=0", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    snapshot = await communicator.receive_from(timeout=5)
    assert 'id="transcript"' in snapshot and 'hx-swap-oob="true"' in snapshot
    assert snapshot.count("<article") == await database_sync_to_async(debate.turns.count)()
    assert await communicator.receive_nothing(timeout=0.2)
    await communicator.disconnect()

    # A page that is already current gets nothing at all.
    communicator = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/?after={seq}", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    assert await communicator.receive_nothing(timeout=0.2)

    # A frame committed before the viewer's read (seq <= what it has) is dropped; later ones pass.
    layer, viewers = get_channel_layer(), frames.group(debate.pk, "zh-hans")
    await layer.group_send(viewers, {"type": "debate.frame", "seq": seq, "html": "<p>old</p>"})
    assert await communicator.receive_nothing(timeout=0.2)
    await layer.group_send(viewers, {"type": "debate.frame", "seq": seq + 1, "html": "<p>new</p>"})
    assert await communicator.receive_from(timeout=2) == "<p>new</p>"
    await layer.group_send(viewers, {"type": "debate.frame", "seq": seq + 1, "html": "<p>again</p>"})
    assert await communicator.receive_nothing(timeout=0.2)

    # A gap (a frame the layer dropped for a slow viewer) is filled from the database, wholesale.
    await layer.group_send(viewers, {"type": "debate.frame", "seq": seq + 3, "html": "<p>later</p>"})
    refill = await communicator.receive_from(timeout=2)
    assert 'id="transcript"' in refill and "<p>later</p>" not in refill
    await communicator.disconnect()


async def test_unknown_debate_is_refused(libraries, viewer):
    communicator = WebsocketCommunicator(application, "/ws/debates/999999/", headers=viewer[1])
    connected, _ = await communicator.connect()
    assert connected  # accepted at once, checked after: the page gets the code (a refused handshake has none)
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}


async def test_the_socket_is_accepted_while_the_database_thread_is_busy(libraries, viewer):
    """Under load the database thread has a queue (page views, debate starts); the accept must not
    wait in it (daphne drops a handshake not answered within 5 s), only the checks after it."""
    import threading

    busy, release = threading.Event(), threading.Event()

    def hold_the_thread():
        busy.set()
        release.wait(10)

    holding = asyncio.ensure_future(sync_to_async(hold_the_thread)())  # the thread database calls run on
    while not busy.is_set():
        await asyncio.sleep(0.01)
    communicator = WebsocketCommunicator(application, "/ws/debates/999999/", headers=viewer[1])
    try:
        connected, _ = await communicator.connect(timeout=2)
        assert connected
    finally:
        release.set()
        await holding
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}


async def test_two_viewers_in_two_languages_each_read_their_own(libraries, fake_llm, alice):
    """Frames are drawn once per language: the English viewer never sees a Chinese label, nor the
    Chinese viewer an English one (the debate's own words are the same for both)."""
    client = Client()
    await sync_to_async(client.force_login)(alice)
    session = f"sessionid={client.cookies['sessionid'].value}"
    viewers = {
        "en": [(b"origin", b"http://127.0.0.1"), (b"cookie", f"{session}; django_language=en".encode())],
        "zh-hans": [(b"origin", b"http://127.0.0.1"), (b"cookie", session.encode()), (b"accept-language", b"zh-CN")],
    }
    fake_llm.token_delay = 0.0
    with override_settings(OPENAI_BASE_URL=fake_llm.base_url):
        debate = await _create(alice, rounds=1)
        sockets = {}
        for language, headers in viewers.items():
            sockets[language] = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/?after=0", headers=headers)
            assert (await sockets[language].connect())[0]
        assert await runner.execute(debate.pk) == "done"
    seen = {}
    for language, communicator in sockets.items():
        frames_seen = []
        while not await communicator.receive_nothing(timeout=0.3):
            frames_seen.append(await communicator.receive_from())
        await communicator.disconnect()
        seen[language] = "".join(frames_seen)
    english, chinese = seen["en"], seen["zh-hans"]
    assert "Round 1" in english and "第 1 轮" not in english
    assert "第 1 轮" in chinese and "Round 1" not in chinese
    assert ">done<" in english and ">已完成<" in chinese, "the status badge"
    assert "Neutral synthesis" in english and "中立收束" in chinese, "the report's headings"
    # The debate's words are the same for both viewers.
    spoken = await database_sync_to_async(lambda: list(debate.turns.values_list("text", flat=True)))()
    assert all(text.split("] ", 1)[-1][:10] in english and text.split("] ", 1)[-1][:10] in chinese for text in spoken)


async def test_revoking_a_share_link_closes_only_the_sockets_opened_through_it(libraries, viewer, alice):
    """The owner's Share form revokes (`debates.sharing`): the visitor who came by the link is
    closed with 4403 at once; the owner's own live view stays open."""
    client, owner_headers = viewer
    debate = await _create(alice)
    assert (await sync_to_async(client.post)(f"/debates/{debate.pk}/share/", {"shared": "1"})).status_code == 302
    await debate.arefresh_from_db()
    owner = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/", headers=owner_headers)
    visitor = WebsocketCommunicator(
        application, f"/ws/debates/{debate.pk}/?share={debate.share_token}", headers=[(b"origin", b"http://127.0.0.1")]
    )
    for communicator in (owner, visitor):
        assert (await communicator.connect())[0]
        while not await communicator.receive_nothing(timeout=0.2):  # its catch-up, if any
            await communicator.receive_from()
    assert (await sync_to_async(client.post)(f"/debates/{debate.pk}/share/", {"shared": "0"})).status_code == 302
    assert await visitor.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert await owner.receive_nothing(timeout=0.5)
    await owner.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_the_socket_reads_its_user_only_after_the_consumer_accepted(alice):
    """Channels' stack read the session and the user on the database thread before the consumer
    ran; under load the handshake waited behind it past daphne's connect timeout."""
    from django.utils.functional import empty

    from agora.ws_auth import DeferredAuthMiddlewareStack, resolve_user

    client = Client()
    await sync_to_async(client.force_login)(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    seen = {}

    async def consumer(scope, receive, send):
        seen["ready_on_entry"] = scope["user"]._wrapped is not empty
        await database_sync_to_async(resolve_user)(scope)
        seen["user"] = scope["user"].username

    await DeferredAuthMiddlewareStack(consumer)({"type": "websocket", "headers": [(b"cookie", cookie)]}, None, None)
    assert seen == {"ready_on_entry": False, "user": "alice"}


@pytest.mark.django_db(transaction=True)
async def test_the_socket_stack_hands_the_consumer_the_servers_own_send(alice):
    """Channels' session wrapper read the session's state on every frame sent, for a save only an
    HTTP response can trigger; the WebSocket stack passes daphne's `send` through untouched and
    still gives the consumer the session."""
    from agora.ws_auth import DeferredAuthMiddlewareStack, resolve_user

    client = Client()
    await sync_to_async(client.force_login)(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    sent, seen = [], {}

    async def server_send(message):
        sent.append(message)

    async def consumer(scope, receive, send):
        seen["send"] = send
        await database_sync_to_async(resolve_user)(scope)
        seen["session_key"] = scope["session"].session_key
        await send({"type": "websocket.send", "text": "frame"})

    scope = {"type": "websocket", "headers": [(b"cookie", cookie)]}
    await DeferredAuthMiddlewareStack(consumer)(scope, None, server_send)
    assert seen["send"] is server_send
    assert seen["session_key"] == client.cookies["sessionid"].value
    assert sent == [{"type": "websocket.send", "text": "frame"}]
