"""The MCP server over streamable HTTP at /mcp/, behind the JSON API's bearer tokens.

`with_mcp(app)` routes the /mcp path prefix here and everything else to `app` (Django), in the
ASGI application (`agora/asgi.py`). A request without a live token is answered 401 (with
`WWW-Authenticate: Bearer`) before the MCP SDK sees it; one with a token acts as its user.

Stateless: each POST is served on its own, with no MCP session kept between requests, so every
request is authenticated afresh, any web process (or a restarted one) can answer it, and a token
revoked mid-way opens nothing more. Progress notifications still reach the client: they ride the
POST's own event stream.

The SDK's session manager serves requests inside an anyio task group that it opens in `run()`,
which a Starlette app enters in its ASGI lifespan. Daphne never sends lifespan events, so the
group is started here, lazily: the first request starts a task on the server's event loop that
holds `run()` open for the life of the process, and every request waits until it is up.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging

from channels.db import database_sync_to_async
from django.utils.translation import gettext as _
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from debates.mcp import tools
from debates.mcp.server import SCOPE_KEY, build

log = logging.getLogger(__name__)

PREFIX = "/mcp"


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _site(scope) -> str:
    """The address the client reached us by, for the links in the answers."""
    host = _header(scope, b"host") or "{}:{}".format(*scope.get("server") or ("localhost", 80))
    return f"{scope.get('scheme', 'http')}://{host}"


class McpEndpoint:
    def __init__(self) -> None:
        # No DNS-rebinding check (the SDK's TransportSecuritySettings): every request needs a
        # bearer token, which a page another site serves cannot send without a CORS preflight.
        self.manager = StreamableHTTPSessionManager(app=build(), stateless=True)
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._failed = False

    async def __call__(self, scope, receive, send) -> None:
        scheme, _sep, token = _header(scope, b"authorization").partition(" ")
        caller = None
        if scheme.lower() == "bearer" and token.strip():
            caller = await database_sync_to_async(tools.caller_for)(token.strip(), _site(scope))
        if caller is None:
            await self._unauthorized(send)
            return
        await self._running()
        await self.manager.handle_request({**scope, SCOPE_KEY: caller}, receive, send)

    async def _running(self) -> None:
        """Start the session manager's task group once, on this (the server's) event loop."""
        if self._ready is None:  # no await since the check: one request on this loop starts it
            self._ready = asyncio.Event()
            # A fresh context: the task outlives the request that happens to start it.
            self._task = asyncio.get_running_loop().create_task(self._hold(), context=contextvars.Context())
        await self._ready.wait()
        if self._failed:
            raise RuntimeError("the MCP endpoint's session manager could not start")

    async def _hold(self) -> None:
        try:
            async with self.manager.run():
                self._ready.set()
                await asyncio.Event().wait()  # until the process ends
        except Exception:
            log.exception("the MCP endpoint's session manager stopped")
            self._failed = True
            self._ready.set()  # waiting requests fail rather than hang

    async def _unauthorized(self, send) -> None:
        body = json.dumps({"detail": _("This needs a valid API token, sent as “Authorization: Bearer <token>”.")})
        headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})


class WithMcp:
    """`app`, with the /mcp path prefix answered by the MCP endpoint instead."""

    def __init__(self, app) -> None:
        self.app = app
        self.endpoint = McpEndpoint()

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == PREFIX or path.startswith(PREFIX + "/")):
            return await self.endpoint(scope, receive, send)
        return await self.app(scope, receive, send)
