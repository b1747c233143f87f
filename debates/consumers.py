"""The live page's WebSocket: catch up once, then forward frames.

Order matters: join the group *first*, then read the debate's state. Every frame is sent after
its change committed, so any frame this consumer was not yet subscribed for is already in what it
reads; frames numbered at or below that read are dropped, the rest forwarded: no gap, no repeat.
"""

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.http import Http404

from debates import frames
from debates.access import viewable_debate


class DebateConsumer(AsyncWebsocketConsumer):
    async def connect(self):
        self.debate_id = int(self.scope["url_route"]["kwargs"]["debate_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            await database_sync_to_async(viewable_debate)(self.scope, self.debate_id, query.get("share", [None])[0])
        except Http404:
            await self.close(code=4404)
            return
        self.group = f"debate-{self.debate_id}"
        self.seen = _int(query.get("after", ["-1"])[0])
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._catch_up()

    async def _catch_up(self):
        snap = await database_sync_to_async(frames.snapshot)(self.debate_id)
        if snap.seq != self.seen:
            # The page is behind (or ahead, after a resume): replace every live region wholesale.
            await self.send(text_data=await database_sync_to_async(frames.full)(snap))
        self.seen = snap.seq

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def debate_frame(self, event):
        if event["seq"] <= self.seen:
            return
        if event["seq"] > self.seen + 1:
            # Every change is one frame, so a gap means a frame never arrived (a channel layer
            # drops frames for a viewer that fell behind its capacity): catch up from the database,
            # which already holds this frame's change.
            await self._catch_up()
            return
        self.seen = event["seq"]
        await self.send(text_data=event["html"])

    async def receive(self, text_data=None, bytes_data=None):
        """The page sends nothing the server acts on; forms go through HTTP views."""


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1
