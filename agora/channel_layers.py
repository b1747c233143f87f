"""The channel layers: the in-process one (the default, no Redis), with its expiry sweep made
cheap, and the Redis one (`REDIS_URL`), over Redis's publish/subscribe with joins confirmed.

In process:

Channels' InMemoryChannelLayer walks every channel's queue and every group's members for expired
entries on each `receive` and each `group_send`. With a debate's frames sent to a group per language
every frame interval and a subscription per group receiving them, that walk ran thousands of times
a second over hundreds of channels: at 100 debates it was the largest single cost in the process
after the streams themselves (7% of its CPU in a py-spy profile, bench/README.md). Expiry is
measured in seconds (a message lives 60 s, a group membership a day), so the sweep runs here at
most once a `SWEEP_INTERVAL`: what it removes is the same, at most that much later.

`group_send` also awaits each member's `send` in turn instead of a task per member gathered with
`as_completed`: the in-memory `send` never waits (it puts or raises ChannelFull at once), so the
order and the outcome are the same without a task per message.

Over Redis: channels-redis's core layer keeps every channel's messages in a Redis sorted set. A
`group_send` was four round trips (expire the group, list its members, expire each member's queue,
a Lua script that appends to each), and every receiving process polled its queues with a blocking
pop and a clean-up script per message: at twelve debates on one worker, that layer was 28% of the
worker's CPU and 38% of the web process's (py-spy, bench/README.md). Its publish/subscribe layer
sends a group message with one PUBLISH, which Redis pushes to every process subscribed: one round
trip to send, none to receive. Frames need nothing the sorted sets add: each carries its seq, a
viewer that misses one (a process that was not subscribed, Redis restarting) finds the gap at the
next frame and reads the database (debates.consumers), and the fanout already keeps one
subscription per debate and language per process.

One thing the stock publish/subscribe layer does not promise, and the live page's no-gap rule
needs: that the process is subscribed when `group_add` returns. The consumer joins its group, then
reads the database; a frame committed after that read must reach it. The stock layer writes the
SUBSCRIBE and returns without waiting for Redis's confirmation, so a PUBLISH arriving first is not
delivered here. This layer's joins wait for the confirmation (`SUBSCRIBE_TIMEOUT`).

And one thing it adds: `subscribed_sync` asks Redis which groups have a subscriber in any process,
so that a debate's turn and phase frames are drawn only in the languages someone watches
(`debates.frames.watched`), as the in-process layer can tell from its own groups.
"""

from __future__ import annotations

import asyncio
import logging
import time

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer
from channels_redis import pubsub
from channels_redis.utils import _wrap_close, decode_hosts

log = logging.getLogger(__name__)
SWEEP_INTERVAL = 1.0  # seconds
SUBSCRIBE_TIMEOUT = 10.0  # seconds for Redis to confirm a subscription


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    _swept_at = float("-inf")

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._swept_at < SWEEP_INTERVAL:
            return
        self._swept_at = now
        super()._clean_expired()

    async def group_send(self, group: str, message: dict) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            try:
                await self.send(channel, message)
            except ChannelFull:
                pass  # as channels' own layer: a full channel misses the message


class RedisChannelLayer(pubsub.RedisPubSubChannelLayer):
    """channels-redis's publish/subscribe layer whose subscriptions are confirmed before a join
    returns (see above). `CONFIG` as channels-redis's: `hosts`, `prefix`, `serializer_format`."""

    _sync_client = None

    def subscribed_sync(self, groups: list[str]) -> set[str] | None:
        """Which of `groups` some process is subscribed to now (PUBSUB NUMSUB: one round trip),
        from a worker thread, never the event loop; None when it cannot tell (several Redis
        servers or a sentinel set-up, where a group's server is the layer's choice; Redis not
        answering): then the caller assumes every group."""
        client = self._sync()
        if client is None:
            return None
        prefix = self._kwargs.get("prefix", "asgi")
        # channels-redis's name for a group's Redis channel (RedisPubSubLoopLayer._get_group_channel_name).
        names = {f"{prefix}__group__{group}": group for group in groups}
        try:
            counts = client.pubsub_numsub(*names)
        except Exception:  # noqa: BLE001 - a frame drawn in every language is the safe answer
            log.warning("could not ask Redis who is subscribed; drawing every language", exc_info=True)
            return None
        return {names[name.decode() if isinstance(name, bytes) else name] for name, count in counts if count}

    def _sync(self):
        if self._sync_client is None:
            import redis

            hosts = decode_hosts(self._kwargs.get("hosts"))
            if len(hosts) != 1 or set(hosts[0]) != {"address"}:
                self._sync_client = False
            else:
                self._sync_client = redis.Redis.from_url(hosts[0]["address"], socket_timeout=2)
        return self._sync_client or None

    def _get_layer(self):
        loop = asyncio.get_running_loop()
        layer = self._layers.get(loop)
        if layer is None:
            layer = self._layers[loop] = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            _wrap_close(self, loop)
        return layer


class _LoopLayer(pubsub.RedisPubSubLoopLayer):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._shards = [_Shard(shard.host, self) for shard in self._shards]


class _Shard(pubsub.RedisSingleShardConnection):
    """One Redis server's connections; `subscribe` returns once Redis has confirmed it."""

    def __init__(self, host, channel_layer) -> None:
        super().__init__(host, channel_layer)
        self._confirming: dict[str, asyncio.Future] = {}  # channel → confirmed
        self._listening = asyncio.Event()  # a subscription exists: the receiver reads

    async def subscribe(self, channel: str) -> None:
        async with self._lock:
            confirmed = self._confirming.get(channel)
            if confirmed is None and channel not in self._subscribed_to:
                self._ensure_redis()
                self._ensure_receiver()
                confirmed = self._confirming[channel] = asyncio.get_running_loop().create_future()
                await self._pubsub.subscribe(channel)
                self._subscribed_to.add(channel)
                self._listening.set()
        if confirmed is not None:
            # Outside the lock: publishing need not wait for this round trip.
            await asyncio.wait_for(asyncio.shield(confirmed), SUBSCRIBE_TIMEOUT)

    async def flush(self) -> None:
        for confirmed in self._confirming.values():
            confirmed.cancel()
        self._confirming.clear()
        self._listening.clear()
        await super().flush()

    async def _do_receiving(self) -> None:
        """channels-redis's receiver, with the subscription confirmations kept (not ignored), and
        waiting for the first subscription rather than polling for it every 100 ms."""
        while True:
            try:
                await self._listening.wait()
                if not (self._pubsub and self._pubsub.subscribed):
                    self._listening.clear()
                    continue
                message = await self._pubsub.get_message(timeout=0.1)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    name = message["channel"]
                    confirmed = self._confirming.pop(name.decode() if isinstance(name, bytes) else name, None)
                    if confirmed is not None and not confirmed.done():
                        confirmed.set_result(None)
                elif message["type"] == "message":
                    self._receive_message(message)
            except (TimeoutError, asyncio.CancelledError, GeneratorExit):
                raise
            except Exception:  # Redis gone: redis-py reconnects and subscribes again on the next read
                log.exception("could not read from Redis; retrying")
                await asyncio.sleep(1)
