"""The in-process channel layer (the default, no Redis), with its expiry sweep made cheap.

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
"""

from __future__ import annotations

import time

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer

SWEEP_INTERVAL = 1.0  # seconds


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
