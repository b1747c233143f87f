"""Frames to a process's viewers: one channel-layer subscription per debate and language per
process, not one per viewer.

Through the channel layer, every frame cost every viewer a copy of the message, a queue, a wake-up
of its consumer and a dispatch; a thousand viewers of one popular debate cost a thousand of each
per frame. Here the process's subscription receives a frame once and appends it to each local
viewer's outbox (a list append), and one pump per subscription sends each viewer what its outbox
holds as one WebSocket message. While the process keeps up, that is one frame per message; when
it falls behind, a viewer's queued frames leave together, so the cost tracks what the process can
send and a viewer never waits for a slower one. Ordering and the no-gap, no-repeat rule stay with
each viewer (`debates.consumers`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import weakref
from typing import Protocol

log = logging.getLogger(__name__)
RECENT = 256  # frames kept per subscription: about 10 s of one debate's text at 40 ms a frame


class Viewer(Protocol):
    outbox: list[dict]
    ready: bool

    async def send_outbox(self) -> None: ...


class Subscription:
    def __init__(self, layer, group: str) -> None:
        self.layer = layer
        self.group = group
        self.viewers: dict[Viewer, None] = {}  # an ordered set: viewers are served in join order
        self.wake = asyncio.Event()
        self.opened: asyncio.Future | None = None
        self.tasks: list[asyncio.Task] = []
        # The latest frames, contiguous by seq: a viewer whose page is a few frames behind is
        # caught up from here, with no database read or render (many viewers joining one popular
        # debate would otherwise each cost a full render of its transcript).
        self.recent: collections.deque[dict] = collections.deque(maxlen=RECENT)

    def since(self, seq: int) -> list[dict] | None:
        """Every frame after `seq` this subscription received, if it holds all of them: the frame
        `seq + 1` and everything after it without a gap (else None: read the database)."""
        if seq < 0 or not self.recent or self.recent[0]["seq"] > seq + 1:
            return None
        if self.recent[-1]["seq"] - self.recent[0]["seq"] != len(self.recent) - 1:
            return None  # a frame went missing (the layer dropped it): no shortcut
        return [frame for frame in self.recent if frame["seq"] > seq]

    async def open(self) -> None:
        self.channel = await self.layer.new_channel()
        await self.layer.group_add(self.group, self.channel)
        self.tasks = [asyncio.ensure_future(self._read()), asyncio.ensure_future(self._pump())]

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await self.layer.group_discard(self.group, self.channel)

    async def _read(self) -> None:
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:  # e.g. Redis restarting: viewers catch up from the next frame's gap
                log.exception("frames of %s could not be read; retrying", self.group)
                await asyncio.sleep(1)
                continue
            if message.get("type") == "debate.frame":
                if self.recent and message["seq"] <= self.recent[-1]["seq"]:
                    self.recent.clear()  # seq went back (a debate reset): start the run again
                self.recent.append(message)
            for viewer in self.viewers:
                viewer.outbox.append(message)
            self.wake.set()

    async def _pump(self) -> None:
        while True:
            await self.wake.wait()
            self.wake.clear()
            for viewer in list(self.viewers):
                if viewer.ready and viewer.outbox:
                    try:
                        await viewer.send_outbox()
                    except Exception:  # one viewer's broken socket must not stop the others
                        log.exception("a viewer of %s could not be sent its frames", self.group)


class Hub:
    def __init__(self) -> None:
        self.subscriptions: dict[tuple[int, str], Subscription] = {}

    async def join(self, layer, group: str, viewer: Viewer) -> Subscription:
        """Subscribe `viewer`; returns once the process is in the group, so that every frame sent
        from now on reaches the viewer's outbox (the consumer reads the database after this)."""
        key = (id(layer), group)
        subscription = self.subscriptions.get(key)
        if subscription is None:
            subscription = self.subscriptions[key] = Subscription(layer, group)
            subscription.opened = asyncio.ensure_future(subscription.open())
        subscription.viewers[viewer] = None
        try:
            await asyncio.shield(subscription.opened)
        except BaseException:
            await self.leave(layer, group, viewer)
            raise
        return subscription

    async def leave(self, layer, group: str, viewer: Viewer) -> None:
        key = (id(layer), group)
        subscription = self.subscriptions.get(key)
        if subscription is None:
            return
        subscription.viewers.pop(viewer, None)
        if not subscription.viewers:
            del self.subscriptions[key]
            opened = subscription.opened
            if opened.done():
                if not opened.cancelled() and opened.exception() is None:
                    await subscription.close()
            else:  # the last viewer left while the subscription was still being made
                opened.add_done_callback(
                    lambda done: done.cancelled() or done.exception() or asyncio.ensure_future(subscription.close())
                )


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub() -> Hub:
    """This event loop's hub (consumers of one process share a loop; tests run several loops)."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = Hub()
    return _hubs[loop]
