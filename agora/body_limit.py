"""Request bodies bounded before they are read (issue #24, finding 1).

How large a body may be: `AGORA_MAX_BODY_BYTES` for every URL (derived from the start form's
uploads), `AGORA_MAX_API_BODY_BYTES` for the JSON endpoints (`/api/`, `/openai/`: no uploads). A
larger body is answered 413, as JSON `{"detail": …}` on the JSON endpoints and a short HTML page
elsewhere, in the visitor's language, and is never held in memory. Two layers enforce it:

- `install_in_daphne()`, at the HTTP parser. Daphne (Twisted) receives a request's whole body into
  a temporary file before it calls the application at all, and then puts every chunk of it on the
  application's queue at once, so an application can only refuse a body that is already in memory
  (and Twisted's own form parsing, which daphne never uses, first copies a multipart body a dozen
  times: 100 MB cost 1.2 GB). The installed request class checks the declared `Content-Length`
  when the headers end and counts the bytes of a chunked body as they arrive; past the limit it
  answers 413 at once, drops the rest unread (a lingering close, as nginx does, so the client can
  read the answer), and the application never sees the request. It also turns Twisted's unused
  form parsing off for the bodies it lets through.
- `BodyLimitMiddleware`, the same rule at the ASGI boundary, for any other server (or daphne over
  HTTP/2, which the hook leaves alone): it refuses by `Content-Length` before calling the
  application and stops reading a chunked body past the limit.

Django's DATA_UPLOAD_MAX_MEMORY_SIZE still bounds the non-file fields of a form and any body read
whole (`request.body`); the JSON API answers that as JSON too (debates/api/routes.py).
"""

from __future__ import annotations

import json
import logging
import sys
from http.cookies import SimpleCookie
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext

log = logging.getLogger(__name__)

JSON_PREFIXES = ("/api/", "/openai/", "/mcp")  # /mcp: the MCP endpoint, /mcp and /mcp/…
# Seconds a refused connection keeps reading (and dropping) what the client still sends before it
# is cut: long enough for a client to see the 413 and stop, short enough to cost nothing.
LINGER_SECONDS = 5.0


def is_json(path: str) -> bool:
    return path.startswith(JSON_PREFIXES)


def limit_for(path: str) -> int:
    """The largest body, in bytes, accepted for a request to `path` (decoded, as Django routes it)."""
    return settings.AGORA_MAX_API_BODY_BYTES if is_json(path) else settings.AGORA_MAX_BODY_BYTES


def megabytes(size: int) -> str:
    return f"{size / 2**20:.3g} MB"


def _language(accept_language: str, language_cookie: str) -> str:
    """The language LocaleMiddleware would choose (its cookie, then Accept-Language), without a
    Django request: a refused request never gets that far."""
    request = HttpRequest()
    if language_cookie:
        request.COOKIES[settings.LANGUAGE_COOKIE_NAME] = language_cookie
    if accept_language:
        request.META["HTTP_ACCEPT_LANGUAGE"] = accept_language
    return translation.get_language_from_request(request)


def too_large(limit: int) -> str:
    """What a 413 says, in the active language."""
    return gettext("This request is too large: this server accepts at most %(size)s.") % {"size": megabytes(limit)}


def refusal(path: str, limit: int, *, accept_language: str = "", language_cookie: str = "") -> tuple[bytes, bytes]:
    """(content type, body) of the 413 for a request to `path`."""
    with translation.override(_language(accept_language, language_cookie)):
        detail = too_large(limit)
        if is_json(path):
            return b"application/json; charset=utf-8", json.dumps({"detail": detail}, ensure_ascii=False).encode()
        title = gettext("Request too large")
        page = (
            f'<!doctype html><html lang="{translation.get_language()}"><meta charset="utf-8">'
            f"<title>{escape(title)}</title><h1>{escape(title)}</h1><p>{escape(detail)}</p></html>"
        )
        return b"text/html; charset=utf-8", page.encode()


# Sent with the page outside Django's middleware: nothing on it may run or be sniffed as something else.
_EXTRA_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"content-security-policy", b"default-src 'none'"),
    (b"cache-control", b"no-store"),
]


# --- at the ASGI boundary ------------------------------------------------------------------------


class BodyTooLarge(Exception):
    """Raised from `receive` once a body passes its limit; the middleware answers 413."""


def _header(headers, name: bytes) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _language_cookie(cookie_header: str) -> str:
    if not cookie_header:
        return ""
    cookies = SimpleCookie()
    try:
        cookies.load(cookie_header)
    except Exception:  # noqa: BLE001 - a malformed cookie only loses the language choice
        return ""
    morsel = cookies.get(settings.LANGUAGE_COOKIE_NAME)
    return morsel.value if morsel else ""


class BodyLimitMiddleware:
    """ASGI middleware around the HTTP application: a body over `limit_for(path)` is answered 413
    before the application reads it (by `Content-Length`) or as soon as it passes the limit
    (chunked), and the application is never given more than the limit."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "/")
        limit = limit_for(path)
        declared = _header(scope.get("headers", ()), b"content-length").strip()
        if declared.isdigit() and int(declared) > limit:
            return await self._refuse(scope, send, path, limit)

        seen = 0
        started = False

        async def bounded_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(path)
            return message

        async def watched_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, watched_send)
        except BodyTooLarge:
            if started:  # too late to answer 413: the response is under way
                log.warning("a body to %s passed %s after the response had started", path, megabytes(limit))
                return
            await self._refuse(scope, send, path, limit)

    async def _refuse(self, scope, send, path: str, limit: int) -> None:
        headers = scope.get("headers", ())
        content_type, body = refusal(
            path,
            limit,
            accept_language=_header(headers, b"accept-language"),
            language_cookie=_language_cookie(_header(headers, b"cookie")),
        )
        response_headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": response_headers + _EXTRA_HEADERS})
        await send({"type": "http.response.body", "body": body})


# --- at daphne's HTTP parser ---------------------------------------------------------------------


class _Dropped:
    """Where a refused body goes: nowhere. The file-like calls Twisted and daphne make on a
    request's content."""

    closed = False

    def write(self, data: bytes) -> None:
        pass

    def read(self, size: int = -1) -> bytes:
        return b""

    def seek(self, offset: int, whence: int = 0) -> int:
        return 0

    def tell(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


def _bounded(base):
    """A subclass of daphne's WebRequest (`base`) that enforces the body limit while Twisted
    receives the body. Only HTTP/1.x channels: an HTTP/2 stream is left to BodyLimitMiddleware."""
    from twisted.web.http import HTTPChannel

    class BoundedWebRequest(base):
        _body_limit: int | None = None
        _body_path = "/"
        _body_seen = 0
        _refused = False
        _linger = None

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            # Twisted parses urlencoded and multipart bodies into `request.args` when they have
            # arrived; daphne never reads `args`, and the parse copies a multipart body many times.
            self._parsePOSTFormSubmission = False

        def gotLength(self, length):
            if isinstance(self.channel, HTTPChannel):
                raw = getattr(self.channel, "_path", b"/").split(b"?", 1)[0]
                self._body_path = unquote(raw.decode("latin-1"))
                self._body_limit = limit_for(self._body_path)
                if length is not None and length > self._body_limit:
                    return self._refuse()
            return super().gotLength(length)

        def handleContentChunk(self, data):
            if self._refused:
                return
            if self._body_limit is not None:
                self._body_seen += len(data)
                if self._body_seen > self._body_limit:
                    return self._refuse()
            return super().handleContentChunk(data)

        def requestReceived(self, command, path, version):
            if self._refused:  # the client sent the whole refused body meanwhile: close now
                if self.channel is not None and self.channel.transport is not None:
                    self.channel.transport.loseConnection()
                return
            return super().requestReceived(command, path, version)

        def connectionLost(self, reason):
            if self._linger is not None and self._linger.active():
                self._linger.cancel()
            return super().connectionLost(reason)

        def _refuse(self):
            self._refused = True
            if self.content is not None and not isinstance(self.content, _Dropped):
                self.content.close()
            self.content = _Dropped()
            # A final answer is sent now: no "100 Continue" after it.
            self.requestHeaders.removeHeader(b"expect")
            channel = self.channel
            channel.persistent = False
            cookie = self.received_cookies.get(settings.LANGUAGE_COOKIE_NAME.encode(), b"")
            content_type, body = refusal(
                self._body_path,
                self._body_limit,
                accept_language=b",".join(self.requestHeaders.getRawHeaders(b"accept-language", [])).decode("latin-1"),
                language_cookie=cookie.decode("latin-1"),
            )
            head = [
                b"HTTP/1.1 413 Content Too Large",
                b"Content-Type: " + content_type,
                b"Content-Length: " + str(len(body)).encode(),
                b"Connection: close",
                *(name.title() + b": " + value for name, value in _EXTRA_HEADERS),
            ]
            if getattr(self.server, "server_name", None):
                head.append(b"Server: " + self.server.server_name.encode())
            transport = channel.transport
            transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
            # Lingering close: say we are done writing, keep reading (and dropping) what the client
            # still sends for a moment, then cut the connection. Closing at once with its data unread
            # would reset it, and a client still sending might never see the 413.
            half_close = getattr(transport, "loseWriteConnection", None)
            if half_close is not None:
                half_close()
            self._linger = channel.callLater(LINGER_SECONDS, transport.abortConnection)
            self._log_refusal(len(body))

        def _log_refusal(self, size: int) -> None:
            client = getattr(self, "client", None)
            address = f"{client.host}:{client.port}" if hasattr(client, "host") else None
            try:
                self.server.log_action(
                    "http",
                    "complete",
                    {
                        "path": getattr(self.channel, "_path", b"").decode("latin-1") if self.channel else "",
                        "status": 413,
                        "method": getattr(self.channel, "_command", b"").decode("latin-1") if self.channel else "",
                        "client": address,
                        "time_taken": 0.0,
                        "size": size,
                    },
                )
            except Exception:  # noqa: BLE001 - the access log must not break the refusal
                log.exception("could not log a refused body")

    BoundedWebRequest.__qualname__ = BoundedWebRequest.__name__ = "BoundedWebRequest"
    return BoundedWebRequest


def install_in_daphne() -> bool:
    """Under daphne (its server module is loaded: the daphne command, or runserver), make every
    HTTP/1.x request it parses enforce the body limit. daphne's HTTPFactory builds each connection
    with the module-level name `daphne.http_protocol.WebRequest`, so rebinding that name before
    the server accepts its first connection (the application is imported before that) covers every
    request. Idempotent; returns whether the hook is in place."""
    if "daphne.server" not in sys.modules:
        return False
    from daphne import http_protocol

    if getattr(http_protocol.WebRequest, "_agora_body_limit", False):
        return True
    bounded = _bounded(http_protocol.WebRequest)
    bounded._agora_body_limit = True
    http_protocol.WebRequest = bounded
    return True
