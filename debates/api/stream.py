"""A debate as Server-Sent Events (`GET /api/v1/debates/{id}/stream`).

The stream joins the debate's channel group first and reads the database second, so no change
can fall between the read and the frames that follow it. Frames are only hints ("something
changed, up to seq N"): what changed is read from the database, which the sink commits before it
announces, and a frame at or below the seq already read is skipped. Events and their ids:
`debates.api.changes` and `debates.api.cursor`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.http import StreamingHttpResponse

from debates import frames
from debates.api.changes import Follower, changes, read
from debates.api.cursor import Cursor

# With no change for this long the stream re-reads the debate (a full channel may drop a frame)
# and sends a comment, which also keeps proxies from closing a quiet connection.
QUIET = 10.0
RECONNECT_MS = 1000  # the `retry:` a browser's EventSource waits before reconnecting


def frame(event: str, data: dict, event_id: str) -> bytes:
    # JSON escapes line breaks, so the data is one `data:` line.
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def events(debate_id: int, last_event_id: str | None, *, language: str, internals: bool) -> AsyncIterator[bytes]:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    # Every language's group gets every frame; one is enough for hints.
    group = next(iter(frames.groups(debate_id).values()))
    await layer.group_add(group, channel)
    try:
        cursor = Cursor.decode(last_event_id)
        follower = Follower(cursor or Cursor(), rejected=bool(last_event_id) and cursor is None)
        yield f"retry: {RECONNECT_MS}\n\n".encode()
        while True:
            state = await database_sync_to_async(read)(debate_id, follower, language=language, internals=internals)
            if state is None:  # deleted meanwhile
                return
            for event, data in changes(state, follower):
                yield frame(event, data, follower.cursor.encode())
            if state.final:
                return
            if not await _newer_than(layer, channel, follower.cursor.seq):
                yield b": quiet\n\n"
    finally:
        # Also on a disconnect: Django cancels the response, and this still runs.
        await layer.group_discard(group, channel)


async def _newer_than(layer, channel: str, seq: int) -> bool:
    """Wait for a frame past `seq`: True; False after a quiet spell (read again all the same)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + QUIET
    while (left := deadline - loop.time()) > 0:
        try:
            message = await asyncio.wait_for(layer.receive(channel), left)
        except TimeoutError:
            return False
        if message.get("type") == "debate.frame" and message.get("seq", 0) > seq:
            return True
    return False


def response(debate_id: int, last_event_id: str | None, *, language: str, internals: bool) -> StreamingHttpResponse:
    stream = events(debate_id, last_event_id, language=language, internals=internals)
    reply = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    reply["Cache-Control"] = "no-cache"
    reply["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return reply
