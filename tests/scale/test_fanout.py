"""A process's viewers of one debate share one channel-layer subscription (debates.fanout): a frame
is received and drawn once, then sent to each viewer; a viewer a few frames behind is caught up
from the frames the process already holds; one that falls too far behind is refilled from the
database. The seq rule (no gap, no repeat) holds throughout."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client

from agora.asgi import application
from debates import fanout, frames
from debates.consumers import DebateConsumer
from debates.forms import create_debate
from debates.models import Debate

pytestmark = [pytest.mark.django_db(transaction=True)]
GROUP_LANGUAGE = "zh-hans"


@pytest.fixture
async def headers(alice):
    client = Client()
    await sync_to_async(client.force_login)(alice)
    return [(b"origin", b"http://127.0.0.1"), (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())]


async def _debate(owner):
    debate, errors = await database_sync_to_async(create_debate)(
        {"topic": "念佛与参禅，哪条路更适合现代人修行？", "format": "duel"}, owner=owner
    )
    assert not errors, errors
    return debate


async def _connect(debate, headers, after):
    """A viewer in the process's subscription and caught up. The socket is accepted before its
    checks and its join (debates.consumers), so this waits for the join: a frame sent before it
    would reach a real page through its catch-up from the database, which these frames are not in."""
    key = (id(get_channel_layer()), frames.group(debate.pk, GROUP_LANGUAGE))

    def ready() -> int:
        subscription = fanout.hub().subscriptions.get(key)
        return sum(1 for viewer in subscription.viewers if viewer.ready) if subscription else 0

    before = ready()
    communicator = WebsocketCommunicator(application, f"/ws/debates/{debate.pk}/?after={after}", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    async with asyncio.timeout(5):
        while ready() == before:
            await asyncio.sleep(0.01)
    return communicator


async def test_viewers_of_one_debate_share_one_subscription(libraries, alice, headers):
    debate = await _debate(alice)
    layer, group = get_channel_layer(), frames.group(debate.pk, GROUP_LANGUAGE)
    viewers = [await _connect(debate, headers, debate.seq) for _ in range(12)]
    for communicator in viewers:
        assert await communicator.receive_nothing(timeout=0.05)  # current already: no catch-up
    # One member in the layer's group for the process, however many viewers it serves.
    assert len(layer.groups[group]) == 1

    await layer.group_send(group, {"type": "debate.frame", "seq": debate.seq + 1, "html": "<p>one</p>"})
    for communicator in viewers:
        assert await communicator.receive_from(timeout=2) == "<p>one</p>"
    for communicator in viewers:
        await communicator.disconnect()
    assert not layer.groups.get(group)  # the last viewer gone, the process leaves the group


async def test_a_late_viewer_is_caught_up_from_frames_the_process_holds(libraries, alice, headers):
    debate = await _debate(alice)
    layer, group = get_channel_layer(), frames.group(debate.pk, GROUP_LANGUAGE)
    start = debate.seq
    first = await _connect(debate, headers, start)
    for n in range(1, 6):
        await layer.group_send(group, {"type": "debate.frame", "seq": start + n, "html": f"<p>{n}</p>"})
        assert await first.receive_from(timeout=2) == f"<p>{n}</p>"

    # A page read at start + 2 (as if loaded a moment ago): frames 3, 4, 5 come from the process's
    # recent frames, in order, once, as one message; nothing is read from the database (the
    # database's seq is still `start`, so a catch-up from there would be a full transcript).
    late = await _connect(debate, headers, start + 2)
    assert await late.receive_from(timeout=2) == "<p>3</p><p>4</p><p>5</p>"
    await layer.group_send(group, {"type": "debate.frame", "seq": start + 6, "html": "<p>6</p>"})
    assert await late.receive_from(timeout=2) == "<p>6</p>"
    assert await first.receive_from(timeout=2) == "<p>6</p>"

    # A page older than what the process holds is caught up from the database, wholesale.
    await Debate.objects.filter(pk=debate.pk).aupdate(seq=start + 6)  # what those frames announced
    subscription = fanout.hub().subscriptions[(id(layer), group)]
    subscription.recent.popleft()  # frame 1 gone: a page at `start` cannot be served from memory
    stale = await _connect(debate, headers, start)
    refill = await stale.receive_from(timeout=2)
    assert 'id="transcript"' in refill and "<p>" not in refill
    for communicator in (first, late, stale):
        await communicator.disconnect()


async def test_a_viewer_too_far_behind_is_refilled_from_the_database(libraries, alice, headers, monkeypatch):
    monkeypatch.setattr(DebateConsumer, "OUTBOX_LIMIT", 3)
    debate = await _debate(alice)
    layer, group = get_channel_layer(), frames.group(debate.pk, GROUP_LANGUAGE)
    viewer = await _connect(debate, headers, debate.seq)
    assert await viewer.receive_nothing(timeout=0.05)  # connected and caught up
    subscription = fanout.hub().subscriptions[(id(layer), group)]
    (consumer,) = subscription.viewers
    consumer.ready = False  # as if its sends could not keep up: frames pile up in its outbox
    for n in range(1, 6):
        await layer.group_send(group, {"type": "debate.frame", "seq": debate.seq + n, "html": f"<p>{n}</p>"})
    await viewer.receive_nothing(timeout=0.1)
    assert len(consumer.outbox) == 5
    await Debate.objects.filter(pk=debate.pk).aupdate(seq=debate.seq + 5)  # what those frames announced
    consumer.ready = True
    subscription.wake.set()
    refill = await viewer.receive_from(timeout=2)
    assert 'id="transcript"' in refill and "<p>" not in refill  # one wholesale refill, no stale frames
    await layer.group_send(group, {"type": "debate.frame", "seq": debate.seq + 5, "html": "<p>old</p>"})
    assert await viewer.receive_nothing(timeout=0.1)  # already covered by the refill (database seq)
    await layer.group_send(group, {"type": "debate.frame", "seq": debate.seq + 6, "html": "<p>6</p>"})
    assert await viewer.receive_from(timeout=2) == "<p>6</p>"
    await viewer.disconnect()
