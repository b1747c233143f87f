"""The HTTP client under the SDK clients that stream chat replies (debates/providers/openai_compat.py).

httpcore bounds every read of a connection with anyio's `fail_after`: a cancel scope entered and
left, the running task looked up through sniffio, once per chunk a server streams, that is once
per token. With 100 debates streaming that was 5% of the web process's CPU (bench/README.md). Our
clients bound every read themselves already (`debates.providers.silence.SilenceWatch`: the first
token's limit, then the silence limit; the model list under `asyncio.timeout`), so they ask httpx
for no read timeout, and this backend reads without a scope when none is asked for. Everything
else is httpcore's own AnyIO backend: connecting, TLS, writes, and reads that do ask for a limit.
"""

from __future__ import annotations

import anyio
import httpcore2
import httpx2
import openai
from httpcore2._backends.anyio import AnyIOStream  # the stream AnyIOBackend returns

# Connections as the SDK's own client pools them (openai's DEFAULT_CONNECTION_LIMITS).
LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)


class _Stream(AnyIOStream):
    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if timeout is not None:
            return await super().read(max_bytes, timeout)
        try:
            return await self._stream.receive(max_bytes=max_bytes)
        except anyio.EndOfStream:
            return b""
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise httpcore2.ReadError(exc) from exc

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None) -> _Stream:
        return _Stream((await super().start_tls(ssl_context, server_hostname, timeout))._stream)


class Backend(httpcore2.AnyIOBackend):
    """httpcore's AnyIO backend, whose streams read without a scope when no limit is asked."""

    async def connect_tcp(self, *args, **kwargs) -> _Stream:
        return _Stream((await super().connect_tcp(*args, **kwargs))._stream)

    async def connect_unix_socket(self, *args, **kwargs) -> _Stream:
        return _Stream((await super().connect_unix_socket(*args, **kwargs))._stream)


def http_client() -> httpx2.AsyncClient:
    """The SDK's default client (its redirects, limits and proxies from the environment) over
    this backend. The timeouts are the SDK client's, sent with each request: give it no read
    timeout (`httpx2.Timeout(seconds, read=None)`), and bound each read yourself."""
    transport = httpx2.AsyncHTTPTransport(limits=LIMITS)
    pool = transport._pool  # httpx gives no way to pass httpcore a backend
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpcore's connection pool no longer takes its backend as _network_backend")
    pool._network_backend = Backend()
    # No redirects: an OpenAI-compatible API answers where it is asked, and a provider that
    # answers 302 to a loopback address would otherwise have this server read it for whoever
    # pointed the provider there (the key is not resent, but the answer is shown as models).
    return openai.DefaultAsyncHttpxClient(transport=transport, follow_redirects=False)
