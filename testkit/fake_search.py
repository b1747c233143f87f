"""A fake search engine (SearxNG's JSON API and Brave's) plus the pages it finds, for tests and demos.

Why a real server and not a mock: the search clients and the page fetcher talk through httpx2 over
real sockets, and what we need to prove only shows over one: a Retry-After header, a server that
never answers, a 5 MB body cut off at the limit, a redirect to 127.0.0.1 that must never be
connected to (`connections` counts accepted sockets, so "refused before connecting" is checkable).
Stdlib only: a `ThreadingHTTPServer` on a background thread, HTTP/1.1 with keep-alive::

    with FakeSearchServer() as server:
        server.add_page("tides", "Why the tides turn", "The moon pulls the sea...")
        client = SearxngClient(server.base_url, fetcher=PageFetcher(["127.0.0.1/32"]))
        server.fail_next("429")                      # the next search gets a 429, Retry-After: 2
        ...
        server.searches[-1].query["q"]              # what was searched, with which headers

What it serves:
  GET /search?q=...&format=json         SearxNG's shape; 403 unless format=json and json_enabled;
                                        401 without `Authorization: Bearer <searxng_key>` if set
  GET /res/v1/web/search?q=...&count=n  Brave's shape (`base_url + "/res/v1"` is the client's
                                        base_url); 401 without `X-Subscription-Token: <api_key>`
                                        when `api_key` is set; descriptions wrap a matched word
                                        in <strong>, HTML-escaped like Brave's
  GET /pages/<slug>                     an article page (nav, header, <article>, footer)
  GET /redirect?to=<url>                302 to that URL;  GET /loop: 302 to itself, forever
  GET /junk                             200 text/html with nothing readable (scripts, empty divs)
  GET /big                              200 text/html, ~5 MB, chunked (no Content-Length)
  GET /slow                             answers after 30 s (or as soon as the server stops)
  GET /image                            image/png bytes
  GET /text                             text/plain

Search results: pages sharing a word (for CJK, a character bigram) with the query, most shared
first; when none match, every page. Faults (`fail_next`) hit the next search requests after the
auth checks: "429", "500", "hang" (no answer until the client leaves), "junk" (200, not JSON).

Run it standalone for demos: `python -m testkit.fake_search --port 8020`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import html
import json
import re
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from testkit.loopback import LoopbackServer

__all__ = ["FakeSearchServer", "FakePage", "RecordedRequest", "RecordedSearch", "terms"]

FAULTS = ("429", "500", "hang", "junk")

# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)

_CJK = "\u3000-\u9fff\uf900-\ufaff"
_RUN = re.compile(rf"[{_CJK}]+|[^\W_]+")
_STOP = {"a", "an", "and", "are", "as", "at", "be", "by", "for", "in", "is", "it", "of", "on", "or", "the", "to"}


def terms(text: str) -> set[str]:
    """Words (lower case, minus a few stop words) and, for CJK runs, character bigrams:
    Chinese has no spaces, so bigrams are what a real engine would index."""
    found: set[str] = set()
    for run in _RUN.findall(text.lower()):
        if re.match(rf"[{_CJK}]", run):
            found.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        elif run not in _STOP:
            found.add(run)
    return found


@dataclass(frozen=True)
class FakePage:
    slug: str
    title: str
    text: str
    published: str = ""

    @property
    def snippet(self) -> str:
        return " ".join(self.text.split())[:160]


@dataclass(frozen=True)
class RecordedRequest:
    """Any request: method, path with query string, headers (lower-case names)."""

    method: str
    path: str
    headers: dict[str, str]


@dataclass
class RecordedSearch:
    """One search request: which API ("searxng" or "brave"), the parsed query string (first value
    of each parameter), the headers (lower-case names), and the status it got (None: hung)."""

    api: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int | None = None
    at: float = field(default_factory=time.monotonic)


def article_html(page: FakePage) -> str:
    """A plausible news article: the boilerplate around it is what extraction must drop."""
    title = html.escape(page.title)
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", page.text) if p.strip()]
    body = "\n".join(f"      <p>{html.escape(' '.join(p.split()))}</p>" for p in paragraphs)
    published = html.escape(page.published)
    meta = f'<meta property="article:published_time" content="{published}">' if page.published else ""
    when = (
        f'<p class="byline">By Staff Writer, <time datetime="{published}">{published}</time></p>' if published else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title} | The Fake Gazette</title>
  <meta property="og:title" content="{title}">
  <meta property="og:site_name" content="The Fake Gazette">
  {meta}
  <style>body {{ font-family: serif; }} nav a {{ margin: 0 1em; }}</style>
  <script>window.analytics = {{ track: function () {{}} }};</script>
</head>
<body>
  <header><a href="/">The Fake Gazette</a></header>
  <nav><a href="/">Home</a> <a href="/world">World</a> <a href="/science">Science</a>
    <a href="/opinion">Opinion</a></nav>
  <main>
    <article>
      <h1>{title}</h1>
      {when}
{body}
    </article>
  </main>
  <aside><h2>Most read</h2><ul><li><a href="/a">Ten things you missed</a></li></ul></aside>
  <footer><p>&copy; 2026 The Fake Gazette. All rights reserved.</p><a href="/privacy">Privacy</a></footer>
</body>
</html>
"""


JUNK_HTML = (
    "<!DOCTYPE html><html><head><title></title><style>.a{color:red}.b{display:none}</style>"
    "<script>var x = 1; function f() { return x * 2; }</script></head><body>"
    + "<div></div><div><span></span></div>" * 20
    + "<script>document.write('');</script><noscript></noscript></body></html>"
)


class FakeSearchServer:
    """A real HTTP server answering like SearxNG and Brave. See the module docstring.

    Args:
      host:         "127.0.0.1" by default; Linux also accepts 127.0.0.2 etc. (tests of the
                    address guard use a second loopback address as the "allowed network")
      port:         0 picks a free port
      api_key:      if set, Brave searches must send it as `X-Subscription-Token`
      searxng_key:  if set, SearxNG searches must send `Authorization: Bearer <searxng_key>`
                    (as a proxy in front of SearxNG would ask)
      ssl_context:  a server-side context to speak HTTPS (tests of SNI and certificate checks)
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        searxng_key: str | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.host = host
        self.ssl_context = ssl_context
        self.port = port
        self.api_key = api_key
        self.searxng_key = searxng_key
        self.json_enabled = True  # False: SearxNG without `json` in search.formats (answers 403)
        self._pages: dict[str, FakePage] = {}
        self._faults: list[str] = []
        self._searches: list[RecordedSearch] = []
        self._requests: list[RecordedRequest] = []
        self._connections = 0
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: LoopbackServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}"

    @property
    def brave_base_url(self) -> str:
        """What BraveClient takes as base_url."""
        return self.base_url + "/res/v1"

    def start(self) -> FakeSearchServer:
        if self._thread is not None:
            return self
        self._stopping.clear()
        self._httpd = _Server((self.host, self.port), _Handler, self)
        self.port = self._httpd.server_address[1]
        if self.ssl_context is not None:
            self._httpd.socket = self.ssl_context.wrap_socket(self._httpd.socket, server_side=True)
        # A short poll interval: stop() waits for the serving loop to notice, up to this long.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-search", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and end every connection, slow and hung requests included."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:  # wakes handlers blocked reading the next keep-alive request
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeSearchServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- configuration ------------------------------------------------------------------------

    def add_page(self, slug: str, title: str, text: str, published: str = "2026-03-01") -> str:
        """Serve an article at /pages/<slug> and include it in search results; returns its URL.
        `text`'s blank lines separate paragraphs; `published` ("" for none) is an ISO date."""
        with self._lock:
            self._pages[slug] = FakePage(slug, title, text, published)
        return self.page_url(slug)

    def page_url(self, slug: str) -> str:
        return f"{self.base_url}/pages/{quote(slug)}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def redirect_url(self, to: str) -> str:
        """A URL on this server that redirects (302) to `to`."""
        return f"{self.base_url}/redirect?to={quote(to, safe='')}"

    def fail_next(self, kind: str, times: int = 1) -> None:
        """Make the next `times` search requests fail: "429" (Retry-After: 2), "500", "hang"
        (no answer until the client leaves), "junk" (200 with a body that is not JSON)."""
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; choose from {', '.join(FAULTS)}")
        with self._lock:
            self._faults.extend([kind] * times)

    def reset(self) -> None:
        """Forget recorded requests and pending faults, and re-enable JSON (keeps the pages)."""
        with self._lock:
            self._faults.clear()
            self._searches.clear()
            self._requests.clear()
            self._connections = 0
        self.json_enabled = True

    # -- observation --------------------------------------------------------------------------

    @property
    def pages(self) -> list[FakePage]:
        with self._lock:
            return list(self._pages.values())

    @property
    def searches(self) -> list[RecordedSearch]:
        """Every search request so far, in arrival order."""
        with self._lock:
            return list(self._searches)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far (searches, pages, everything), in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def connections(self) -> int:
        """TCP connections accepted so far: 0 proves a client never connected."""
        with self._lock:
            return self._connections

    # -- answers ------------------------------------------------------------------------------

    def ranked(self, query: str) -> list[FakePage]:
        """Pages sharing terms with the query, most shared first (ties: added first); else all."""
        wanted = terms(query)
        scored = []
        for order, page in enumerate(self.pages):
            score = len(wanted & terms(page.title)) * 2 + len(wanted & terms(page.text))
            scored.append((score, order, page))
        hits = [(score, order, page) for score, order, page in scored if score]
        chosen = hits or scored
        return [page for _, _, page in sorted(chosen, key=lambda item: (-item[0], item[1]))]

    def _next_fault(self) -> str | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else None


class _Server(LoopbackServer):
    def __init__(self, address: tuple[str, int], handler: type, fake: FakeSearchServer) -> None:
        self.fake = fake
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.fake._lock:
            self.fake._connections += 1
            self.fake._sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.fake._lock:
            self.fake._sockets.discard(request)
        super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    server_version = "FakeSearch/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet tests

    @property
    def fake(self) -> FakeSearchServer:
        return self.server.fake

    # -- plumbing -------------------------------------------------------------------------------

    def _send(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload, ensure_ascii=False).encode(), "application/json", headers)

    def _html(self, status: int, text: str) -> None:
        self._send(status, text.encode(), "text/html; charset=utf-8")

    def _wait(self, seconds: float) -> bool:
        """Say nothing for up to `seconds`; False if the client left or the server is stopping."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.fake._stopping.is_set():
                return False
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return False  # the client closed its side
                except (OSError, ValueError):  # ValueError: TLS sockets take no recv flags
                    return False
        return True

    # -- routes -------------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        parts = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(parts.query, keep_blank_values=True).items()}
        with self.fake._lock:
            self.fake._requests.append(
                RecordedRequest("GET", self.path, {k.lower(): v for k, v in self.headers.items()})
            )
        path = parts.path
        if path == "/search":
            return self._search("searxng", parts.path, query)
        if path == "/res/v1/web/search":
            return self._search("brave", parts.path, query)
        if path.startswith("/pages/"):
            slug = path.removeprefix("/pages/")
            page = next((p for p in self.fake.pages if quote(p.slug) == slug or p.slug == slug), None)
            if page is None:
                return self._html(404, "<html><body><h1>Not found</h1></body></html>")
            return self._html(200, article_html(page))
        if path == "/redirect":
            return self._send(302, b"", "text/html", {"Location": query.get("to", "/")})
        if path == "/loop":
            return self._send(302, b"", "text/html", {"Location": "/loop"})
        if path == "/junk":
            return self._html(200, JUNK_HTML)
        if path == "/big":
            return self._big()
        if path == "/slow":
            if self._wait(30):
                return self._html(200, "<html><body><article><p>Finally.</p></article></body></html>")
            self.close_connection = True
            return None
        if path == "/image":
            return self._send(200, PNG, "image/png")
        if path == "/text":
            return self._send(200, b"Plain notes\n\nThe moon pulls the sea.\n", "text/plain; charset=utf-8")
        return self._html(404, "<html><body><h1>Not found</h1></body></html>")

    def _big(self) -> None:
        """~5 MB of paragraphs, chunked, so only counting the bytes read can stop it."""
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        paragraph = ("<p>" + "All work and no play makes a very long page. " * 20 + "</p>\n").encode()
        chunk = paragraph * max(1, 64_000 // len(paragraph))
        sent = 0
        try:
            self.wfile.write(b"%x\r\n<html><body><article>\r\n" % len(b"<html><body><article>"))
            while sent < 5_000_000 and not self.fake._stopping.is_set():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True  # the client stopped reading, as it should

    def _search(self, api: str, path: str, query: dict[str, str]) -> None:
        record = RecordedSearch(api, path, query, {k.lower(): v for k, v in self.headers.items()})
        with self.fake._lock:
            self.fake._searches.append(record)
        status = self._search_answer(api, query, record)
        record.status = status

    def _search_answer(self, api: str, query: dict[str, str], record: RecordedSearch) -> int | None:
        fake = self.fake
        if api == "searxng":
            if fake.searxng_key and record.headers.get("authorization") != f"Bearer {fake.searxng_key}":
                self._send(401, b"Unauthorized", "text/plain")
                return 401
            if query.get("format") != "json" or not fake.json_enabled:
                self._html(403, "<html><body><h1>403 Forbidden</h1></body></html>")
                return 403
        elif fake.api_key and record.headers.get("x-subscription-token") != fake.api_key:
            self._json(
                401,
                {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401,
                                                    "detail": "The provided subscription token is invalid."}},
            )  # fmt: skip
            return 401
        fault = fake._next_fault()
        if fault == "429":
            self._json(429, {"error": "Too Many Requests"}, {"Retry-After": "2"})
            return 429
        if fault == "500":
            self._html(500, "<html><body><h1>Internal Server Error</h1></body></html>")
            return 500
        if fault == "hang":
            self._wait(3600)
            self.close_connection = True
            return None
        if fault == "junk":
            self._html(200, "<html><body>Please enable JavaScript to continue.</body></html>")
            return 200
        q = query.get("q", "")
        pages = fake.ranked(q)
        if api == "searxng":
            self._json(200, _searxng_answer(fake, q, pages))
        else:
            count = int(query.get("count", "20") or 20)
            self._json(200, _brave_answer(fake, q, pages[:count]))
        return 200


def _searxng_answer(fake: FakeSearchServer, q: str, pages: list[FakePage]) -> dict[str, Any]:
    results = [
        {
            "url": fake.page_url(p.slug),
            "title": p.title,
            "content": p.snippet,
            "engine": "fake",
            "engines": ["fake"],
            "score": 1.0 / (i + 1),
            "category": "general",
            "publishedDate": f"{p.published}T00:00:00" if p.published else None,
        }
        for i, p in enumerate(pages)
    ]
    return {
        "query": q,
        "number_of_results": len(results),
        "results": results,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [],
    }


def _brave_answer(fake: FakeSearchServer, q: str, pages: list[FakePage]) -> dict[str, Any]:
    wanted = terms(q)
    results = []
    for p in pages:
        description = html.escape(p.snippet)
        for word in re.findall(r"[^\W_]+", p.snippet):
            if word.lower() in wanted:
                description = re.sub(rf"\b{re.escape(word)}\b", f"<strong>{word}</strong>", description, count=1)
                break
        result = {"type": "search_result", "title": p.title, "url": fake.page_url(p.slug), "description": description}
        if p.published:
            result["page_age"] = f"{p.published}T00:00:00"
            day = datetime.date.fromisoformat(p.published)
            result["age"] = f"{day:%B} {day.day}, {day.year}"
        results.append(result)
    return {"type": "search", "query": {"original": q}, "web": {"type": "search", "results": results}}


DEMO_PAGES = [
    (
        "tides",
        "Why the tides turn twice a day",
        "The moon's gravity pulls the ocean toward it, raising a bulge of water on the near side of the Earth.\n\n"
        "A second bulge forms on the far side, where the ocean is pulled less than the planet beneath it. "
        "As the Earth turns through both bulges, most coasts see two high tides a day.\n\n"
        "The sun adds its own smaller pull: when sun and moon line up, spring tides run highest.",
    ),
    (
        "four-day-week",
        "What the four-day week trials found",
        "Companies in several countries tried a four-day working week without cutting pay.\n\n"
        "Most reported similar output and lower staff turnover; a minority went back to five days, "
        "citing customer coverage and scheduling problems.\n\n"
        "Critics note that the firms volunteered, so the results may not carry over to every industry.",
    ),
    (
        "city-trees",
        "How street trees cool a city",
        "Shade from street trees can lower pavement temperatures by more than ten degrees on a summer afternoon.\n\n"
        "Trees also cool the air by evaporating water through their leaves, an effect that is strongest "
        "where canopy cover is continuous.\n\n"
        "Planting costs are modest; the larger expense is watering and caring for young trees.",
    ),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a fake SearxNG / Brave search API until Ctrl-C.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--api-key", default=None, help="require this X-Subscription-Token on Brave searches")
    args = parser.parse_args(argv)
    server = FakeSearchServer(host=args.host, port=args.port, api_key=args.api_key)
    for slug, title, text in DEMO_PAGES:
        server.add_page(slug, title, text)
    with server:
        print(f"fake search server at {server.base_url}  (Ctrl-C to stop)", flush=True)
        print(f"  SearxNG: {server.base_url}/search?q=tides&format=json", flush=True)
        print(f"  Brave:   {server.brave_base_url}/web/search?q=tides&count=3", flush=True)
        print(f"  a page:  {server.page_url('tides')}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
