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
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.translation import gettext as _
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from debates.live_counts import counts, too_many, user_key
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
    """The address the client reached us by, for the links in the answers (a Host that
    `_foreign` let through: one of ALLOWED_HOSTS)."""
    host = _header(scope, b"host") or "{}:{}".format(*scope.get("server") or ("localhost", 80))
    return f"{scope.get('scheme', 'http')}://{host}"


def _foreign(scope) -> int | None:
    """400 for a Host not in ALLOWED_HOSTS (Django's answer on every other path), 403 for an
    Origin that is neither this site nor in CSRF_TRUSTED_ORIGINS (MCP's rule against DNS
    rebinding); None when both are ours."""
    host = _header(scope, b"host")
    domain, _port = split_domain_port(host)
    if host and not (domain and validate_host(domain, settings.ALLOWED_HOSTS)):
        return 400
    origin = _header(scope, b"origin")
    if origin and origin not in (_site(scope), *settings.CSRF_TRUSTED_ORIGINS):
        return 403
    return None


class McpEndpoint:
    def __init__(self) -> None:
        # Host and Origin are checked here (`_foreign`), as Django checks them, rather than by the
        # SDK's TransportSecuritySettings, which would need the hosts listed twice.
        self.manager = StreamableHTTPSessionManager(app=build(), stateless=True)
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._failed = False

    async def __call__(self, scope, receive, send) -> None:
        status = _foreign(scope)
        if status is not None:
            await _answer(send, status, {"detail": _("This address does not serve Agora’s MCP endpoint.")})
            return
        scheme, _sep, token = _header(scope, b"authorization").partition(" ")
        caller = None
        if scheme.lower() == "bearer" and token.strip():
            caller = await database_sync_to_async(tools.caller_for)(token.strip(), _site(scope))
        if caller is None:
            await self._unauthorized(send)
            return
        # Every request is one of the user's live views while it lasts: its answer is an event
        # stream that a GET or `wait_for_debate` holds open for as long as it likes (200 waits
        # on one token were all held, past a cap of 20: hardening round three).
        slot = counts.slot(user_key(caller.user))
        if slot is None:
            await _answer(send, 429, _refusal(too_many()))
            return
        try:
            await self._running()
            await self.manager.handle_request({**scope, SCOPE_KEY: caller}, receive, send)
        finally:
            slot.release()

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
        body = {"detail": _("This needs a valid API token, sent as “Authorization: Bearer <token>”.")}
        await _answer(send, 401, body, [(b"www-authenticate", b"Bearer")])


def _refusal(message: str) -> dict:
    """A JSON-RPC error before the request's id is read: the MCP client shows its message as the
    request's error (it puts its own id on an error with none)."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": message}}


async def _answer(send, status: int, body: dict, headers: list | None = None) -> None:
    raw = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": raw})


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
