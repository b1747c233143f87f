"""The WebSocket's user, looked up by the consumer once it has accepted the socket.

Channels' `AuthMiddlewareStack` reads the session and the user on the database thread before the
consumer is even called. Under load that read waits behind everything else on that thread (a
hundred debates starting, their pages rendering), and daphne drops a handshake nobody answered
within its 5 s connect timeout: the live page's consumer accepts at once and checks after
(`debates.consumers`), so the user is resolved there, after the accept, in the same trip to the
database thread as the check. Until then `scope["user"]` is channels' lazy object, which refuses
to be read before it is ready.
"""

from __future__ import annotations

from channels.auth import AuthMiddleware, get_user
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware


class DeferredAuthMiddleware(AuthMiddleware):
    """AuthMiddleware that leaves the user to `resolve_user` (the consumer calls it)."""

    async def resolve_scope(self, scope) -> None:
        return None


class SocketSessionMiddleware(SessionMiddleware):
    """Channels' SessionMiddleware for WebSockets, without its wrapper around `send`.

    The wrapper saves a modified session when an HTTP response starts, which a WebSocket never
    sends, yet it read the session's state through its lazy object on every message: 3% of the
    process's CPU with 100 debates streaming to 300 viewers (bench/README.md). The session is
    still the scope's, read lazily, as before."""

    async def __call__(self, scope, receive, send):
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def DeferredAuthMiddlewareStack(inner):  # noqa: N802 - as channels names its AuthMiddlewareStack
    return CookieMiddleware(SocketSessionMiddleware(DeferredAuthMiddleware(inner)))


def resolve_user(scope) -> None:
    """Read the session's user into `scope["user"]`; on the database thread (sync), with channels'
    own lookup (`get_user` is its database_sync_to_async wrapper: `.func` is the lookup)."""
    scope["user"]._wrapped = get_user.func(scope)
