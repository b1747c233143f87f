"""A request that came with an API token ends when that token stops opening the API.

Every request with a bearer token (the JSON API, the OpenAI door, MCP over HTTP) registers its
token here while it runs; one task per process asks the database every `AGORA_STREAM_RECHECK`
seconds, in one query for all of them, which are still live (not revoked, their user active). A
request whose token died is ended: its app reads a disconnect (Django and the MCP SDK stop a
stream on one), and a response already started is finished. A poll rather than a push on
revocation: it catches every way a token dies (the tokens page, the admin's bulk action, a
deactivated user) and costs one query per interval however many streams are open; before, each
stream asked for itself every 2 s, and MCP's idle event streams never did (hardening round three:
still open 15 s after the revocation).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars

from channels.db import database_sync_to_async
from django.conf import settings

from debates.api.tokens import SCHEME, digest
from debates.models import ApiToken

# How long an app has to end by itself after its disconnect before it is cancelled.
GRACE = 0.2


def _live(digests: list[str]) -> set[str]:
    rows = ApiToken.objects.filter(digest__in=digests, revoked_at__isnull=True, user__is_active=True)
    return set(rows.values_list("digest", flat=True))


class Watch:
    """The tokens of this process's open requests, each with the events set when it dies."""

    def __init__(self) -> None:
        self.held: dict[str, set[asyncio.Event]] = {}
        self.task: asyncio.Task | None = None

    def hold(self, token: str) -> asyncio.Event:
        ended = asyncio.Event()
        self.held.setdefault(digest(token), set()).add(ended)
        loop = asyncio.get_running_loop()
        if self.task is None or self.task.done() or self.task.get_loop() is not loop:
            # A fresh context: the task outlives the request that happens to start it.
            self.task = loop.create_task(self._check(), context=contextvars.Context())
        return ended

    def let_go(self, token: str, ended: asyncio.Event) -> None:
        key = digest(token)
        waiting = self.held.get(key)
        if waiting is not None:
            waiting.discard(ended)
            if not waiting:
                del self.held[key]

    async def _check(self) -> None:
        while self.held:
            await asyncio.sleep(settings.AGORA_STREAM_RECHECK)
            asked = {key: set(events) for key, events in self.held.items()}
            if not asked:
                continue
            live = await database_sync_to_async(_live)(list(asked))
            for key, events in asked.items():
                if key not in live:
                    for ended in events:
                        ended.set()


watch = Watch()


def bearer(scope) -> str:
    """The request's API token, if it brings one."""
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            kind, _sep, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if kind.lower() == "bearer" and token.startswith(SCHEME) else ""
    return ""


class EndsWithItsToken:
    """ASGI middleware: an HTTP request with an API token ends soon after the token dies."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        token = bearer(scope) if scope["type"] == "http" else ""
        if not token:
            return await self.app(scope, receive, send)
        ended = watch.hold(token)
        response = {"started": False, "finished": False}

        async def receive_until_ended():
            if ended.is_set():
                return {"type": "http.disconnect"}
            received = asyncio.ensure_future(receive())
            stop = asyncio.ensure_future(ended.wait())
            try:
                await asyncio.wait({received, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
            if received.done():
                return received.result()
            received.cancel()
            return {"type": "http.disconnect"}

        async def send_until_ended(message):
            if response["finished"]:
                return
            if message["type"] == "http.response.start":
                response["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                response["finished"] = True
            await send(message)

        handling = asyncio.ensure_future(self.app(scope, receive_until_ended, send_until_ended))
        stop = asyncio.ensure_future(ended.wait())
        try:
            await asyncio.wait({handling, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not ended.is_set():
                handling.result()
                return
            # The token died: the app has read (or will read) a disconnect; past the grace, cancel it.
            # It may already have returned, in the same turn of the loop as the event, and Django
            # returns from a disconnect without answering: whatever it did, the answer is ours.
            if not handling.done():
                done, _pending = await asyncio.wait({handling}, timeout=GRACE)
                if not done:
                    handling.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await handling
            # Finish the response (daphne holds a connection open until its last body).
            if not response["started"]:
                await send_until_ended(_revoked())
            await send_until_ended({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            stop.cancel()
            if not handling.done():
                handling.cancel()
            watch.let_go(token, ended)


def _revoked() -> dict:
    return {"type": "http.response.start", "status": 401, "headers": [(b"www-authenticate", b"Bearer")]}
