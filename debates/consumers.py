"""The live page's WebSocket: catch up once, then forward frames.

Order matters: join the group *first* (through the process's hub, debates.fanout: one
subscription per debate and language, shared by the process's viewers), then read the debate's
state. Every frame is sent after its change committed, so any frame this viewer was not yet
subscribed for is already in what it reads; frames numbered at or below that read are dropped, the
rest forwarded: no gap, no repeat.

The socket is accepted at once and checked after (so a busy process does not drop the handshake);
one refused is closed before anything is sent, with a code the page explains (static/js/agora.js):
4404 no such debate (or not yours), 4403 the share link was revoked, 4429 too many open live views
(per viewer and per debate, per process; the API's event streams count too: debates.live_counts).
"""

import asyncio
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http import Http404
from django.utils.translation import get_supported_language_variant
from django.utils.translation.trans_real import parse_accept_lang_header

from agora.ws_auth import resolve_user
from debates import audience, fanout, frames
from debates.access import via_share_only, viewable_debate
from debates.live_counts import counts, viewer_key

NOT_FOUND, REVOKED, TOO_MANY = 4404, 4403, 4429


def viewer_language(scope) -> str:
    """The language the viewer's pages are in: the switcher's cookie, else the browser's
    Accept-Language, else the default (what Django's LocaleMiddleware decides for a page)."""
    headers = dict(scope.get("headers") or [])
    cookies = SimpleCookie(headers.get(b"cookie", b"").decode("latin-1"))
    chosen = cookies.get(settings.LANGUAGE_COOKIE_NAME)
    supported = [code for code, _name in settings.LANGUAGES]
    if chosen and chosen.value in supported:
        return chosen.value
    accept = headers.get(b"accept-language", b"").decode("latin-1")
    for tag, _quality in parse_accept_lang_header(accept):
        try:
            return get_supported_language_variant(tag)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


class DebateConsumer(AsyncWebsocketConsumer):
    counted = False
    ready = False  # caught up: the hub's pump may send this viewer its outbox
    # Frames queued past this many (a viewer whose sends cannot keep up) are dropped for one
    # catch-up from the database, as a channel layer drops messages past its capacity.
    OUTBOX_LIMIT = 200

    async def dispatch(self, message):
        """Channels' dispatch without its first step, a trip to the database thread to close old
        connections before every message: that trip came before the accept, and under load it
        waited behind page views and debate starts until daphne dropped the handshake (19 of
        300 viewers in one run at 100 debates, bench/README.md). Every database call here goes
        through `database_sync_to_async`, which closes old connections around itself."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self):
        self.debate_id = int(self.scope["url_route"]["kwargs"]["debate_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode())
        # Accepted before anything is read: the checks below wait their turn on the database
        # thread, and under load (a hundred debates starting, their pages loading) daphne dropped
        # handshakes not answered within its 5 s connect timeout (bench/README.md). Nothing is
        # sent before the checks pass; a viewer they refuse is closed with its code, which the
        # page then shows (a refused handshake carries none).
        await self.accept()
        try:
            debate = await database_sync_to_async(_admitted)(self.scope, self.debate_id, query.get("share", [None])[0])
        except Http404:
            await self.close(code=NOT_FOUND)
            return
        self.shared_only = via_share_only(self.scope, debate)
        self.viewer = viewer_key(self.scope)
        if not counts.take(self.viewer, self.debate_id):
            await self.close(code=TOO_MANY)
            return
        self.counted = True
        self.outbox: list[dict] = []
        self.catching_up: asyncio.Task | None = None
        self.group = frames.group(self.debate_id, viewer_language(self.scope))
        self.seen = _int(query.get("after", ["-1"])[0])
        # The audience panel's version the page was drawn at (#30); a client without it (not the
        # live page) is sent no audience messages.
        self.audience_seen = _int(query["audience"][0]) if "audience" in query else None
        self.subscription = await fanout.hub().join(self.channel_layer, self.group, self)
        missed = self.subscription.since(self.seen)
        if missed is not None:
            # Everything after the page's seq passed through this process's subscription: no read.
            # (Every frame reaches the subscription's list and this outbox in one step, so the
            # list holds all that the outbox does.)
            self.outbox = missed
            await self._catch_up_audience()
        else:
            await self._catch_up()
        self._ready()

    async def _catch_up(self):
        snap = await database_sync_to_async(frames.snapshot)(self.debate_id)
        if snap.seq != self.seen:
            # The page is behind (or ahead, after a resume): replace every live region wholesale.
            language = viewer_language(self.scope)
            await self.send(text_data=await database_sync_to_async(frames.full_in)(snap, language))
        self.seen = snap.seq
        await self._catch_up_audience()

    async def _catch_up_audience(self):
        """The audience's votes and questions (#30) as they are now, if newer than the page's:
        its messages carry a version of their own, apart from the debate's numbered frames."""
        if self.audience_seen is None:
            return
        language = viewer_language(self.scope)
        version, html = await database_sync_to_async(audience.current)(self.debate_id, language, self.audience_seen)
        if version > self.audience_seen:
            self.audience_seen = version
            await self.send(text_data=html)

    def _ready(self) -> None:
        self.ready = True
        self.subscription.wake.set()

    async def send_outbox(self) -> None:
        """What the hub queued for this viewer since its last send, as one message: frames it
        already has are dropped, a gap (frames lost past the outbox limit or by the channel layer)
        is filled from the database, which already holds the missing change."""
        queued, self.outbox = self.outbox, []
        parts = []
        for message in queued:
            if message["type"] == "debate.revoked":
                if self.shared_only:
                    self.ready = False
                    await self.close(code=REVOKED)
                    return
                continue
            if message["type"] == "debate.audience":  # whole, versioned: only a newer one counts
                if self.audience_seen is not None and message["version"] > self.audience_seen:
                    self.audience_seen = message["version"]
                    parts.append(message["html"])
                continue
            seq = message["seq"]
            if seq <= self.seen:
                continue
            if seq > self.seen + 1 or len(queued) > self.OUTBOX_LIMIT:
                # Every change is one frame, so a gap means a frame never arrived.
                self.ready = False
                self.catching_up = asyncio.ensure_future(self._refill())
                break
            self.seen = seq
            parts.append(message["html"])
        if parts:
            await self.send(text_data="".join(parts))

    async def _refill(self) -> None:
        """A catch-up outside the hub's pump, so other viewers are not kept waiting for it."""
        await self._catch_up()
        self._ready()

    async def disconnect(self, code):
        self.ready = False
        if hasattr(self, "group"):
            await fanout.hub().leave(self.channel_layer, self.group, self)
        if getattr(self, "catching_up", None):
            self.catching_up.cancel()
        if self.counted:
            self.counted = False
            counts.give_back(self.viewer, self.debate_id)

    async def receive(self, text_data=None, bytes_data=None):
        """The page sends nothing the server acts on; forms go through HTTP views."""


def _admitted(scope, debate_id: int, share: str | None):
    """The debate, if this socket's user (read here, after the accept: agora/ws_auth.py) may see
    it; one trip to the database thread for both."""
    resolve_user(scope)
    return viewable_debate(scope, debate_id, share)


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1
