"""Fetch a result's page and turn it into readable text, without becoming an SSRF proxy.

Every hop (the URL asked for, then each redirect's Location) goes through `addresses.vet`, and
the connection goes to the address vet approved: the request names the IP literal, with the real
name in the Host header and, for https, in TLS SNI and the certificate check (`sni_hostname`).
Resolving the name again at connect time would let a DNS server answer "public" to the check and
"127.0.0.1" to the connection. For the same reason no proxy from the environment is used (a proxy
would resolve the name itself) and no connection is kept for reuse (a pooled TLS connection to one
IP would otherwise serve another name on the same IP without a certificate check for it).

Limits keep one bad page from hurting the server: `max_bytes` of (decoded) body, `timeout` seconds
for the whole fetch, `max_redirects` hops, `max_chars` of text kept.
"""

from __future__ import annotations

import asyncio
import codecs
import html
import re
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx2

from debates.engine.optional import MissingPackage, load

from .addresses import parse_networks, vet
from .errors import FetchFailed, FetchRefused

USER_AGENT = "Agora research (+https://github.com/)"


@dataclass(frozen=True)
class Page:
    """A fetched page as readable text. `url` is what was asked for, `final_url` where redirects led."""

    url: str
    final_url: str
    title: str
    text: str


_REDIRECTS = {301, 302, 303, 307, 308}
_READABLE = {"text/html", "application/xhtml+xml", "text/plain"}
_ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class PageFetcher:
    """Fetches pages for research. See the module docstring.

    `allowed_networks`: CIDR strings the operator allows despite being private (an intranet);
    everything else that is not a public address is refused. `ssl_context`: the CAs to trust
    (default: httpx's, which honours SSL_CERT_FILE), e.g. an intranet's own CA.
    """

    def __init__(
        self,
        allowed_networks: Sequence[str] = (),
        *,
        max_bytes: int = 2_000_000,
        timeout: float = 10.0,
        max_redirects: int = 5,
        max_chars: int = 20_000,
        user_agent: str = USER_AGENT,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.allowed_networks = tuple(allowed_networks)
        parse_networks(self.allowed_networks)  # a typo in settings fails here, not on the first fetch
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.max_redirects = max(0, max_redirects)
        self.max_chars = max_chars
        self.user_agent = user_agent
        self._ssl = ssl_context

    def __repr__(self) -> str:
        return f"PageFetcher(allowed_networks={self.allowed_networks!r}, timeout={self.timeout!r})"

    async def fetch(self, url: str) -> Page:
        """The page at `url` as readable text; raises FetchRefused or FetchFailed."""
        try:
            async with asyncio.timeout(self.timeout):
                return await self._fetch(url)
        except TimeoutError as exc:
            raise self._too_slow(url) from exc

    def _too_slow(self, url: str) -> FetchFailed:
        return FetchFailed(
            f"{url} was not read: it took longer than {self.timeout:g} s; the site may be slow or down, "
            "try another result"
        )

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:  # loading the CA store is slow: once per fetcher
            self._ssl = httpx2.create_ssl_context()
        return self._ssl

    async def _fetch(self, url: str) -> Page:
        current = url
        async with httpx2.AsyncClient(
            verify=self._ssl_context(),
            trust_env=False,
            follow_redirects=False,
            timeout=self.timeout,
            limits=httpx2.Limits(max_keepalive_connections=0),
        ) as client:
            for hop in range(self.max_redirects + 1):
                try:
                    _, address = await vet(current, self.allowed_networks)
                except FetchRefused as err:
                    if hop == 0:
                        raise
                    raise FetchRefused(f"{url} redirected to a refused address: {err}") from err
                response = await self._send(client, url, current, address)
                try:
                    if response.status_code in _REDIRECTS and response.headers.get("location"):
                        current = urljoin(current, response.headers["location"])
                        continue
                    return await self._read(url, current, response)
                finally:
                    await response.aclose()
        raise FetchRefused(
            f"{url} was not fetched: it redirected more than {self.max_redirects} times (a redirect loop?); "
            "try another result"
        )

    async def _send(self, client: httpx2.AsyncClient, url: str, current: str, address: str) -> httpx2.Response:
        """GET `current` from `address` (vetted), naming the real host in Host and SNI. The socket
        goes to `address` whatever httpx's URL parser makes of the host, so a URL that urllib and
        httpx read differently cannot steer the connection past the guard."""
        try:
            target = httpx2.URL(current)
            pinned = target.copy_with(host=address, username=None, password=None, fragment=None)
        except (httpx2.InvalidURL, ValueError) as exc:
            raise FetchRefused(f"{current} was not fetched: it is not a valid URL ({exc})") from exc
        headers = {"Host": target.netloc.decode("ascii"), "User-Agent": self.user_agent, "Accept": _ACCEPT}
        extensions = {"sni_hostname": target.raw_host.decode("ascii")} if target.scheme == "https" else {}
        request = client.build_request("GET", pinned, headers=headers, extensions=extensions)
        try:
            return await client.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            raise self._too_slow(url) from exc
        except httpx2.ConnectError as exc:
            raise FetchFailed(
                f"{current} could not be reached ({exc or 'connection failed'}); try another result"
            ) from exc
        except httpx2.HTTPError as exc:
            raise FetchFailed(
                f"{current} could not be read: the connection failed ({type(exc).__name__}); try another result"
            ) from exc

    async def _read(self, url: str, final_url: str, response: httpx2.Response) -> Page:
        status = response.status_code
        if not 200 <= status < 300:
            raise FetchFailed(f"{final_url} was not read: the site answered HTTP {status}; try another result")
        mime = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if mime not in _READABLE:
            shown = mime or "of no declared type"
            raise FetchFailed(
                f"{final_url} was not read: it is {shown}, not a web page; only HTML and plain text are read"
            )
        # Before the body is read: a page that cannot be read is not downloaded.
        extractor = _extractor(final_url) if mime != "text/plain" else None
        too_large = FetchFailed(
            f"{final_url} was not read: it is larger than {self.max_bytes:,} bytes; try another result"
        )
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise too_large
        body = bytearray()
        try:
            async for chunk in response.aiter_bytes():  # decompressed: a gzip bomb counts at full size
                body += chunk
                if len(body) > self.max_bytes:
                    raise too_large
        except httpx2.TimeoutException as exc:
            raise self._too_slow(url) from exc
        except httpx2.HTTPError as exc:
            raise FetchFailed(
                f"{final_url} could not be read: the connection failed mid-page ({type(exc).__name__}); "
                "try another result"
            ) from exc
        document = _decode(bytes(body), response.charset_encoding, html_page=mime != "text/plain")
        if mime == "text/plain":
            title, text = _plain_title(document), document.strip()
        else:
            try:
                title, text = await asyncio.to_thread(_extract_html, extractor, document)
            except Exception as exc:  # trafilatura/lxml choke on some malformed pages
                raise FetchFailed(
                    f"{final_url} could not be read: its HTML is malformed ({type(exc).__name__})"
                ) from exc
        if not text:
            raise FetchFailed(
                f"{final_url} was fetched but has no readable text (only scripts or layout?); try another result"
            )
        return Page(url=url, final_url=final_url, title=title, text=text[: self.max_chars])


def _decode(body: bytes, charset: str | None, *, html_page: bool) -> str:
    """Text in the response's charset, else a <meta charset> near the top (older and Chinese sites
    often declare it only there), else UTF-8; undecodable bytes become U+FFFD."""
    if not charset and html_page:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        codecs.lookup(charset or "utf-8")
    except LookupError:
        charset = None
    return body.decode(charset or "utf-8", errors="replace")


def _extractor(url: str):
    """trafilatura, imported on the first HTML page (not at Django's setup: a server whose
    trafilatura is missing or broken loses only this); FetchFailed naming the package if it
    cannot be imported."""
    try:
        return load("trafilatura")
    except MissingPackage as missing:
        raise FetchFailed(f"{url} was not read: {missing}") from missing


def _extract_html(trafilatura, document: str) -> tuple[str, str]:
    """(title, main text) of an HTML page; CPU-bound, so run in a thread."""
    text = trafilatura.extract(document, include_comments=False, include_tables=True, favor_recall=True) or ""
    metadata = trafilatura.extract_metadata(document)
    title = (metadata.title if metadata is not None else None) or ""
    if not title:
        found = _TITLE.search(document)
        title = " ".join(html.unescape(found.group(1)).split()) if found else ""
    return title.strip(), text.strip()


def _plain_title(text: str) -> str:
    """A text file's first line, when it is short enough to be a title."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= 120 else ""
    return ""
