"""The default in-process channel layer: channels' own, with its expiry sweep run at most once a
second (it walked every channel and group on every send to a group) and a group's members sent
to in turn."""

from __future__ import annotations

import pytest
from channels.layers import get_channel_layer

from agora import channel_layers
from agora.channel_layers import SWEEP_INTERVAL, InMemoryChannelLayer


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(channel_layers.time, "monotonic", lambda: now[0])
    return now


def test_it_is_the_default_layer_without_redis(settings):
    if settings.REDIS_URL:
        pytest.skip("REDIS_URL is set: the layer is the Redis one (agora.channel_layers.RedisChannelLayer)")
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"] == "agora.channel_layers.InMemoryChannelLayer"
    assert isinstance(get_channel_layer(), InMemoryChannelLayer)


async def test_a_group_send_reaches_every_member_and_skips_a_full_one():
    layer = InMemoryChannelLayer(capacity=1)
    first, full, outsider = [await layer.new_channel() for _ in range(3)]
    for channel in (first, full):
        await layer.group_add("debate-1-en", channel)
    await layer.send(full, {"type": "earlier"})  # capacity 1: the group's message will not fit
    await layer.group_send("debate-1-en", {"type": "debate.frame", "seq": 7})
    assert await layer.receive(first) == {"type": "debate.frame", "seq": 7}
    assert await layer.receive(full) == {"type": "earlier"}  # the full channel missed the frame
    assert outsider not in layer.channels  # not a member: nothing was queued for it
    assert layer.channels == {}  # every queue drained


async def test_expired_messages_are_swept_at_most_once_per_interval(clock):
    layer = InMemoryChannelLayer(expiry=0)  # every message expires at once
    member = await layer.new_channel()
    await layer.group_add("debate-1-zh-hans", member)
    await layer.group_send("elsewhere", {"type": "x"})  # the first sweep, nothing to remove yet
    await layer.send(member, {"type": "debate.frame", "seq": 1})  # expired as soon as it is queued

    clock[0] += SWEEP_INTERVAL / 2
    await layer.group_send("elsewhere", {"type": "x"})
    # Within the interval no sweep ran: the expired message and the membership are still there.
    assert member in layer.channels
    assert member in layer.groups["debate-1-zh-hans"]

    clock[0] += SWEEP_INTERVAL
    await layer.group_send("elsewhere", {"type": "x"})
    # The sweep ran: as channels' own layer, the expired message is dropped and its channel
    # leaves every group.
    assert member not in layer.channels
    assert member not in layer.groups.get("debate-1-zh-hans", {})
