"""Request bodies bounded before they are read (issue #24, finding 1).

How large a body may be, by route (issue 47: a login form needs kilobytes, not 28 MB):
`AGORA_MAX_BODY_BYTES` (derived from the start form's uploads) only where an upload is expected,
`AGORA_MAX_API_BODY_BYTES` for the JSON endpoints (`/api/`, `/openai/`, `/mcp`: no uploads),
`AGORA_MAX_FORM_BODY_BYTES` for any other page, and never more than
`AGORA_MAX_ANONYMOUS_BODY_BYTES` for a request with neither a session cookie nor an Authorization
header (`limit_for`). A larger body is answered 413, as JSON `{"detail": …}` on the JSON endpoints
and a short HTML page elsewhere, in the visitor's language, and is never held in memory. Under
daphne the bodies held at once are also bounded together (agora/body_budget.py: 503 with
Retry-After past it). Two layers enforce the limits:

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
import re
import sys
from http.cookies import SimpleCookie
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext

from agora.body_budget import BUDGET

log = logging.getLogger(__name__)

JSON_PREFIXES = ("/api/", "/openai/", "/mcp")  # /mcp: the MCP endpoint, /mcp and /mcp/…
# Seconds a refused connection keeps reading (and dropping) what the client still sends before it
# is cut: long enough for a client to see the 413 and stop, short enough to cost nothing.
LINGER_SECONDS = 5.0


# Where an upload is expected: the start form's documents, the admin's manifest import. Only these
# take AGORA_MAX_BODY_BYTES; every other form needs what Django reads of its fields.
UPLOAD_PATHS = ("/debates/new/", "/admin/personas/library/import/")
# Forms that are small whoever posts them: the sign-in form (a made-up session cookie must not buy
# 2.5 MB there), the language switch, and the audience's votes and questions (a share link's
# visitors carry a session: the link's grant is kept in it).
SMALL_ROUTES = re.compile(r"/(accounts/login/|i18n/|debates/\d+/audience/)")
# How often a body on the application's queue is looked at, to give its bytes back once read.
READ_POLL_SECONDS = 0.05
# Seconds a client refused for the budget is asked to wait: long enough for the bodies in hand to
# be read, short enough for a person to retry.
RETRY_AFTER_SECONDS = 5


def is_json(path: str) -> bool:
    return path.startswith(JSON_PREFIXES)


def limit_for(path: str, *, signed_in: bool) -> int:
    """The largest body, in bytes, accepted for a request to `path` (decoded, as Django routes it).
    `signed_in`: the request carries a session cookie or an Authorization header. Whether either is
    valid is Django's to say later; without one, nothing anyone does here needs more than a few KB."""
    if is_json(path):
        route = settings.AGORA_MAX_API_BODY_BYTES
    elif path in UPLOAD_PATHS:
        route = settings.AGORA_MAX_BODY_BYTES
    else:
        route = settings.AGORA_MAX_FORM_BODY_BYTES
    small = not signed_in or SMALL_ROUTES.match(path)
    return min(route, settings.AGORA_MAX_ANONYMOUS_BODY_BYTES) if small else route


def megabytes(size: int) -> str:
    if size < 2**20:
        return f"{size / 2**10:.3g} KB"
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


def busy() -> str:
    """What a 503 for the budget says, in the active language."""
    return gettext("This server is receiving too many large requests at once. Please try again in a moment.")


def refusal(
    path: str, limit: int | None, *, accept_language: str = "", language_cookie: str = ""
) -> tuple[bytes, bytes]:
    """(content type, body) of the 413 for a request to `path`; with `limit` None, of the 503 for
    the budget."""
    with translation.override(_language(accept_language, language_cookie)):
        detail = busy() if limit is None else too_large(limit)
        if is_json(path):
            return b"application/json; charset=utf-8", json.dumps({"detail": detail}, ensure_ascii=False).encode()
        title = gettext("Server busy") if limit is None else gettext("Request too large")
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


def _cookie(cookie_header: str, name: str) -> str:
    if not cookie_header:
        return ""
    cookies = SimpleCookie()
    try:
        cookies.load(cookie_header)
    except Exception:  # noqa: BLE001 - a malformed cookie header counts as none
        return ""
    morsel = cookies.get(name)
    return morsel.value if morsel else ""


def _signed_in(headers) -> bool:
    """A session cookie or an Authorization header (not yet checked: see `limit_for`)."""
    if _header(headers, b"authorization"):
        return True
    return bool(_cookie(_header(headers, b"cookie"), settings.SESSION_COOKIE_NAME))


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
        limit = limit_for(path, signed_in=_signed_in(scope.get("headers", ())))
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
            language_cookie=_cookie(_header(headers, b"cookie"), settings.LANGUAGE_COOKIE_NAME),
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
        _body_held = 0  # bytes of BUDGET this request holds
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
                signed_in = self.requestHeaders.hasHeader(b"authorization") or bool(
                    self.received_cookies.get(settings.SESSION_COOKIE_NAME.encode())
                )
                self._body_limit = limit_for(self._body_path, signed_in=signed_in)
                if length is not None and length > self._body_limit:
                    return self._refuse(413)
                if length and not self._hold(length):
                    return self._refuse(503)
            return super().gotLength(length)

        def handleContentChunk(self, data):
            if self._refused:
                return
            if self._body_limit is not None:
                self._body_seen += len(data)
                if self._body_seen > self._body_limit:
                    return self._refuse(413)
                if self._body_seen > self._body_held and not self._hold(self._body_seen - self._body_held):
                    return self._refuse(503)  # chunked: held as it arrives
            return super().handleContentChunk(data)

        def _hold(self, size: int) -> bool:
            if not BUDGET.take(size):
                return False
            self._body_held += size
            return True

        def _give_back(self) -> None:
            held, self._body_held = self._body_held, 0
            if held:
                BUDGET.give_back(held)

        def finish(self):
            self._give_back()  # answered (or cut): nothing of the body is daphne's any more
            return super().finish()

        def requestReceived(self, command, path, version):
            if self._refused:  # the client sent the whole refused body meanwhile: close now
                if self.channel is not None and self.channel.transport is not None:
                    self.channel.transport.loseConnection()
                return
            result = super().requestReceived(command, path, version)
            self._until_read()
            return result

        def _until_read(self):
            """daphne has put the whole body on the application's queue: its bytes are given back
            once the application has taken the last chunk (Django spools a body to disk past
            FILE_UPLOAD_MAX_MEMORY_SIZE as it reads), not only when it answers: an application
            that never answers must not hold the budget."""
            if not self._body_held:
                return
            queue = getattr(self, "application_queue", None)
            if queue is not None and queue.empty():
                return self._give_back()
            if not self.finished and self.channel is not None:
                self.channel.callLater(READ_POLL_SECONDS, self._until_read)

        def connectionLost(self, reason):
            self._give_back()
            if self._linger is not None and self._linger.active():
                self._linger.cancel()
            return super().connectionLost(reason)

        def _refuse(self, status: int):
            """Answer now, 413 (past the route's limit) or 503 (past the budget), and drop the rest."""
            self._refused = True
            self._give_back()
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
                self._body_limit if status == 413 else None,
                accept_language=b",".join(self.requestHeaders.getRawHeaders(b"accept-language", [])).decode("latin-1"),
                language_cookie=cookie.decode("latin-1"),
            )
            head = [
                b"HTTP/1.1 413 Content Too Large" if status == 413 else b"HTTP/1.1 503 Service Unavailable",
                b"Content-Type: " + content_type,
                b"Content-Length: " + str(len(body)).encode(),
                b"Connection: close",
                *(name.title() + b": " + value for name, value in _EXTRA_HEADERS),
            ]
            if status == 503:
                head.append(b"Retry-After: " + str(RETRY_AFTER_SECONDS).encode())
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
            self._log_refusal(status, len(body))

        def _log_refusal(self, status: int, size: int) -> None:
            client = getattr(self, "client", None)
            address = f"{client.host}:{client.port}" if hasattr(client, "host") else None
            try:
                self.server.log_action(
                    "http",
                    "complete",
                    {
                        "path": getattr(self.channel, "_path", b"").decode("latin-1") if self.channel else "",
                        "status": status,
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

    from agora.read_deadlines import channel_with_deadlines

    if getattr(http_protocol.WebRequest, "_agora_body_limit", False):
        return True
    bounded = _bounded(http_protocol.WebRequest)
    bounded._agora_body_limit = True
    http_protocol.WebRequest = bounded
    # Every connection's channel has the header and body deadlines (agora/read_deadlines.py).
    http_protocol.HTTPFactory.protocol = channel_with_deadlines
    return True
