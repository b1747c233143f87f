"""A debate as Server-Sent Events (`GET /api/v1/debates/{id}/stream`).

The stream joins the debate's channel group first and reads the database second, so no change
can fall between the read and the frames that follow it. Frames are only hints ("something
changed, up to seq N"): what changed is read from the database, which the sink commits before it
announces, and a frame at or below the seq already read is skipped. Events and their ids:
`debates.api.changes` and `debates.api.cursor`.

Each stream holds one of the process's live-view slots (`debates.live_counts`, shared with the
live page's WebSockets) until it ends, and asks every `AGORA_STREAM_RECHECK` seconds whether its
token still opens the API: a revoked token's streams end within that long.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse

from debates import frames
from debates.api.changes import Follower, changes, read
from debates.api.cursor import Cursor
from debates.live_counts import Slot

# With no change for this long the stream re-reads the debate (a full channel may drop a frame)
# and sends a comment, which also keeps proxies from closing a quiet connection.
QUIET = 10.0
RECONNECT_MS = 1000  # the `retry:` a browser's EventSource waits before reconnecting


def frame(event: str, data: dict, event_id: str) -> bytes:
    # JSON escapes line breaks, so the data is one `data:` line.
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def follow(
    debate_id: int,
    last_event_id: str | None,
    *,
    language: str,
    internals: bool,
    still_allowed: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[tuple[str, dict, str] | None]:
    """The debate's changes as `(event, data, event id)` until it is over; None after a quiet
    spell. Every door that follows a debate reads this: the event stream below, the OpenAI-
    compatible door (`debates.as_model`)."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    # One group is enough for hints: being in it, this stream has every frame sent to it (frames.watched).
    group = next(iter(frames.groups(debate_id).values()))
    await layer.group_add(group, channel)
    inbox = _Inbox(layer, channel)
    try:
        cursor = Cursor.decode(last_event_id)
        follower = Follower(cursor or Cursor(), rejected=bool(last_event_id) and cursor is None)
        check = _Check(still_allowed)
        while True:
            state = await database_sync_to_async(read)(debate_id, follower, language=language, internals=internals)
            if state is None:  # deleted meanwhile
                return
            for event, data in changes(state, follower):
                yield event, data, follower.cursor.encode()
            if state.final:
                return
            woke = await _newer_than(inbox, follower.cursor.seq, check)
            if woke is None:  # the token no longer opens the API
                return
            if not woke:
                yield None
    finally:
        # Also on a disconnect: Django cancels the response, and this still runs.
        inbox.close()
        await layer.group_discard(group, channel)


async def events(
    debate_id: int,
    last_event_id: str | None,
    *,
    language: str,
    internals: bool,
    slot: Slot | None = None,
    still_allowed: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncIterator[bytes]:
    try:
        yield f"retry: {RECONNECT_MS}\n\n".encode()
        changed = follow(debate_id, last_event_id, language=language, internals=internals, still_allowed=still_allowed)
        try:
            async for item in changed:
                yield b": quiet\n\n" if item is None else frame(*item)
        finally:
            await changed.aclose()
    finally:
        if slot is not None:
            slot.release()


class _Check:
    """Asks `still_allowed` at most every AGORA_STREAM_RECHECK seconds."""

    def __init__(self, still_allowed: Callable[[], Awaitable[bool]] | None) -> None:
        self.still_allowed = still_allowed
        self.every = float(settings.AGORA_STREAM_RECHECK)
        self.next_at = asyncio.get_running_loop().time() + self.every

    async def allowed(self, now: float) -> bool:
        if self.still_allowed is None or now < self.next_at:
            return True
        self.next_at = now + self.every
        return await self.still_allowed()


class _Inbox:
    """The stream's channel, read so that a wait that times out leaves the read pending for the
    next wait instead of cancelling it: the Redis layer (publish/subscribe) drops a channel whose
    read is cancelled and subscribes it again on the next, and a frame in between would be lost."""

    def __init__(self, layer, channel: str) -> None:
        self.layer, self.channel = layer, channel
        self.pending: asyncio.Future | None = None

    async def get(self, timeout: float) -> dict:
        if self.pending is None:
            self.pending = asyncio.ensure_future(self.layer.receive(self.channel))
        done, _ = await asyncio.wait({self.pending}, timeout=timeout)
        if not done:
            raise TimeoutError
        received, self.pending = self.pending, None
        return received.result()

    def close(self) -> None:
        if self.pending is not None:
            self.pending.cancel()


async def _newer_than(inbox: _Inbox, seq: int, check: _Check) -> bool | None:
    """Wait for a frame past `seq`: True; False after a quiet spell (read again all the same);
    None when the check says the stream must end."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + QUIET
    while True:
        now = loop.time()
        if not await check.allowed(now):
            return None
        left = deadline - now
        if left <= 0:
            return False
        if check.still_allowed is not None:
            left = min(left, max(0.0, check.next_at - now))
        try:
            message = await inbox.get(left)
        except TimeoutError:
            continue
        if message.get("type") == "debate.frame" and message.get("seq", 0) > seq:
            return True


def response(
    debate_id: int,
    last_event_id: str | None,
    *,
    language: str,
    internals: bool,
    slot: Slot | None = None,
    still_allowed: Callable[[], Awaitable[bool]] | None = None,
) -> StreamingHttpResponse:
    stream = events(
        debate_id, last_event_id, language=language, internals=internals, slot=slot, still_allowed=still_allowed
    )
    if slot is not None:
        # A client gone before the first byte: Django drops the response without ever starting
        # the stream (so its `finally` never runs); the slot goes back with the generator.
        weakref.finalize(stream, slot.release)
    reply = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    reply["Cache-Control"] = "no-cache"
    reply["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return reply
