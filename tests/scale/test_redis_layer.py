"""The Redis channel layer (`REDIS_URL`): channels-redis's publish/subscribe layer, whose joins
return only once Redis has confirmed the subscription (agora/channel_layers.py). Against a real
Redis server; the late subscription is made real by a TCP relay that holds what the joining
process writes to Redis for a while."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from urllib.parse import urlsplit

import pytest

from agora.channel_layers import RedisChannelLayer
from testkit.servers import REDIS, redis_ok, require_or_skip


@pytest.fixture(autouse=True)
def _redis():
    require_or_skip(redis_ok(), f"Redis is not reachable at {REDIS}; run bin/start-services")


@contextlib.asynccontextmanager
async def late_relay(delay: float):
    """A TCP relay to Redis that forwards what the client writes `delay` seconds late (in order);
    Redis's answers come back at once. Yields the relay's redis:// URL."""
    target = urlsplit(REDIS)
    tasks: list[asyncio.Task] = []

    async def pipe(reader, writer, wait):
        try:
            while data := await reader.read(65536):
                if wait:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def accept(client_reader, client_writer):
        redis_reader, redis_writer = await asyncio.open_connection(target.hostname, target.port or 6379)
        tasks.append(asyncio.ensure_future(pipe(client_reader, redis_writer, delay)))
        tasks.append(asyncio.ensure_future(pipe(redis_reader, client_writer, 0)))

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}{target.path or '/0'}"
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_redis_url_picks_it():
    """What agora/settings.py builds from REDIS_URL, in a fresh interpreter."""
    env = {**os.environ, "REDIS_URL": REDIS, "DJANGO_SETTINGS_MODULE": "agora.settings"}
    code = (
        "import django; django.setup(); from channels.layers import get_channel_layer; print(type(get_channel_layer()))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert "agora.channel_layers.RedisChannelLayer" in out.stdout, out.stderr


async def test_a_join_returns_only_once_redis_has_it():
    """The consumer joins its group, then reads the database: a frame sent by another process
    right after the join must arrive. The join's SUBSCRIBE reaches Redis 0.4 s late here; channels-
    redis's own layer returned at once and the frame, published first, was lost."""
    group = f"join-{uuid.uuid4().hex[:8]}"
    async with late_relay(0.4) as late_url:
        viewer = RedisChannelLayer(hosts=[late_url])
        sender = RedisChannelLayer(hosts=[REDIS])
        try:
            channel = await viewer.new_channel()
            began = time.monotonic()
            await viewer.group_add(group, channel)
            joined = time.monotonic() - began
            await sender.group_send(group, {"type": "debate.frame", "seq": 7, "html": "<p>7</p>"})
            message = await asyncio.wait_for(viewer.receive(channel), 3)
        finally:
            await viewer.flush()
            await sender.flush()
    assert message == {"type": "debate.frame", "seq": 7, "html": "<p>7</p>"}
    assert joined >= 0.4, joined  # it waited for Redis's confirmation


async def test_frames_reach_every_process_in_the_group_in_order_and_a_leaver_gets_none():
    group = f"order-{uuid.uuid4().hex[:8]}"
    sender, first, second = (RedisChannelLayer(hosts=[REDIS]) for _ in range(3))
    try:
        a, b = await first.new_channel(), await second.new_channel()
        await first.group_add(group, a)
        await second.group_add(group, b)
        for seq in range(1, 51):
            await sender.group_send(group, {"type": "debate.frame", "seq": seq})
        got_a = [(await asyncio.wait_for(first.receive(a), 3))["seq"] for _ in range(50)]
        got_b = [(await asyncio.wait_for(second.receive(b), 3))["seq"] for _ in range(50)]
        await second.group_discard(group, b)
        await sender.group_send(group, {"type": "debate.frame", "seq": 51})
        assert (await asyncio.wait_for(first.receive(a), 3))["seq"] == 51
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(second.receive(b), 0.5)
    finally:
        for layer in (sender, first, second):
            await layer.flush()
    assert got_a == got_b == list(range(1, 51))


@contextlib.contextmanager
def private_redis(tmp_path, port: int):
    """A redis-server of this test's own (the shared one must not restart under other tests)."""
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while subprocess.run(["redis-cli", "-p", str(port), "ping"], capture_output=True).stdout.strip() != b"PONG":
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield process
    finally:
        process.terminate()
        process.wait(10)


async def test_after_redis_restarts_the_process_is_subscribed_again(tmp_path):
    """Frames sent while Redis is down are lost (the viewer's next frame shows the gap and it reads
    the database); once Redis is back, the process's subscriptions are made again without a join."""
    from testkit.servers import free_port

    port = free_port()
    group = f"restart-{uuid.uuid4().hex[:8]}"
    url = f"redis://127.0.0.1:{port}/0"
    with private_redis(tmp_path, port) as first:
        viewer, sender = RedisChannelLayer(hosts=[url]), RedisChannelLayer(hosts=[url])
        channel = await viewer.new_channel()
        await viewer.group_add(group, channel)
        await sender.group_send(group, {"type": "debate.frame", "seq": 1})
        assert (await asyncio.wait_for(viewer.receive(channel), 3))["seq"] == 1
        first.terminate()
        first.wait(10)
    with private_redis(tmp_path, port):
        try:
            got, seq, deadline = None, 1, time.monotonic() + 15
            while got is None and time.monotonic() < deadline:
                seq += 1
                with contextlib.suppress(Exception):  # the sender's own connection comes back too
                    await sender.group_send(group, {"type": "debate.frame", "seq": seq})
                with contextlib.suppress(TimeoutError):
                    got = await asyncio.wait_for(viewer.receive(channel), 0.5)
        finally:
            await viewer.flush()
            await sender.flush()
    assert got is not None and got["seq"] > 1, got


async def test_an_api_stream_that_waited_in_vain_still_gets_the_next_frame():
    """The event stream waits for a frame with a timeout (a quiet spell, a token re-check). The
    publish/subscribe layer drops a channel whose read is cancelled, so a timed-out `wait_for`
    lost the frame sent just after; the stream's inbox keeps its read pending instead."""
    from debates.api.stream import _Inbox

    group = f"stream-{uuid.uuid4().hex[:8]}"
    stream, sender = RedisChannelLayer(hosts=[REDIS]), RedisChannelLayer(hosts=[REDIS])
    try:
        channel = await stream.new_channel()
        await stream.group_add(group, channel)
        inbox = _Inbox(stream, channel)
        with pytest.raises(TimeoutError):
            await inbox.get(0.2)
        await sender.group_send(group, {"type": "debate.frame", "seq": 3})
        message = await inbox.get(3)
        inbox.close()
    finally:
        await stream.flush()
        await sender.flush()
    assert message["seq"] == 3


async def test_it_tells_which_groups_some_process_watches():
    """A turn's or a phase's frame is drawn only in the languages watched (frames.watched): with
    Redis the viewers may be in any process, so Redis is asked (from a worker thread)."""
    from debates import frames

    debate = int(uuid.uuid4().int % 10**9)
    groups = frames.groups(debate)
    viewer, runner = RedisChannelLayer(hosts=[REDIS]), RedisChannelLayer(hosts=[REDIS])
    try:
        assert await asyncio.to_thread(frames.watched, groups, runner, ask=True) == []
        channel = await viewer.new_channel()
        await viewer.group_add(groups["en"], channel)
        assert await asyncio.to_thread(frames.watched, groups, runner, ask=True) == ["en"]
        assert await asyncio.to_thread(frames.watched, groups, runner) == list(groups)  # a text frame: no question
        await viewer.group_discard(groups["en"], channel)
        # A leave is not confirmed as a join is (channels-redis sends UNSUBSCRIBE and goes on):
        # Redis stops counting it soon after, and until then a frame is only drawn once too often.
        deadline = time.monotonic() + 5
        while (
            left := await asyncio.to_thread(frames.watched, groups, runner, ask=True)
        ) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert left == []
    finally:
        await viewer.flush()
        await runner.flush()


def test_with_several_redis_servers_it_cannot_tell_and_every_language_is_drawn():
    from debates import frames

    layer = RedisChannelLayer(hosts=[REDIS, REDIS.replace("/0", "/1")])
    assert layer.subscribed_sync(["debate-1-en"]) is None
    assert frames.watched(frames.groups(1), layer, ask=True) == list(frames.groups(1))
