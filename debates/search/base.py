"""The search interface: what a backend returns and the HTTP plumbing backends share.

Research sees this module and `errors` (how a search or a fetch fails). A backend
(`SearxngClient`, `BraveClient`) implements `search`; reading a result's page goes through the
client's `PageFetcher` (`fetch`, which makes the `Page`), which refuses addresses on the server's
own network. No Django imports: settings arrive as constructor arguments.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import email.utils
import logging
import time
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2

from .errors import SearchBadResponse, SearchError, SearchRateLimited, SearchTimeout, SearchUnavailable
from .fetch import USER_AGENT, Page, PageFetcher

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Result:
    """One search hit. `published` is an ISO date ("YYYY-MM-DD") when the backend gives one."""

    title: str
    url: str
    snippet: str
    published: str = ""


def web_items(items: list[Any], n: int):
    """The first `n` result items (dicts) with a distinct http(s) address, as (item, url): results
    from other engines (magnet links, `data:` thumbnails…) are nothing a fetch can read."""
    seen: set[str] = set()
    for item in items:
        url = item.get("url") if isinstance(item, dict) else None
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")) or url in seen:
            continue
        seen.add(url)
        yield item, url
        if len(seen) == n:
            return


def display_url(url: str) -> str:
    """The URL without any `user:password@` part, for messages."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        parts = parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host)
    return urlunsplit(parts).rstrip("/")


def retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds from `Retry-After` (seconds or an HTTP date), if present and readable."""
    raw = headers.get("retry-after")
    if not raw:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(raw))
    with contextlib.suppress(TypeError, ValueError):
        return max(0.0, email.utils.parsedate_to_datetime(raw).timestamp() - time.time())
    return None


class SearchClient(abc.ABC):
    """Base class for search backends.

    Attributes: `name` (shown to users, e.g. a settings row's name), `kind` ("searxng", "brave"),
    `base_url`, `timeout` (seconds, the whole search request), `fetcher` (reads result pages).

    Subclasses implement `search` with `_get_json`, which maps transport failures and HTTP
    statuses to `SearchError`s; they override `_label`, `_unreachable_hint` and `_auth_error` to
    name their own fix.
    """

    name: str = "search"
    kind: str = ""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        name: str | None = None,
        timeout: float = 15.0,
        fetcher: PageFetcher | None = None,
    ) -> None:
        if fetcher is None:
            fetcher = PageFetcher()
        self.base_url = base_url.rstrip("/")
        if name is not None:
            self.name = name
        self.timeout = timeout
        self.fetcher = fetcher
        self._key = api_key or ""
        # One HTTP client per event loop: httpx connection pools belong to the loop that made them.
        self._http_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx2.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, base_url={self.url!r})"

    @property
    def url(self) -> str:
        """The base URL as shown to users (credentials stripped)."""
        return display_url(self.base_url)

    def describe(self) -> str:
        """E.g. "searxng · http://127.0.0.1:8888"; never the key."""
        return f"{self.kind} · {self.url}"

    @abc.abstractmethod
    async def search(self, query: str, n: int = 5) -> list[Result]:
        """The first `n` results for `query`, best first; raises SearchError."""

    async def fetch(self, url: str) -> Page:
        """A result's page as readable text; raises FetchRefused or FetchFailed."""
        return await self.fetcher.fetch(url)

    async def aclose(self) -> None:
        """Close this loop's HTTP connections (optional; they also close with the loop)."""
        with contextlib.suppress(RuntimeError):
            client = self._http_clients.pop(asyncio.get_running_loop(), None)
            if client is not None:
                await client.aclose()

    # -- shared plumbing for subclasses ----------------------------------------------------------

    @staticmethod
    def _checked(query: str, n: int) -> str:
        if n < 1:
            raise ValueError(f"n must be at least 1, not {n}")
        query = " ".join(query.split())
        if not query:
            raise SearchError("the search query is empty: say what to search for")
        return query

    def _label(self) -> str:
        """How messages name this backend, e.g. "SearxNG at http://127.0.0.1:8888"."""
        return f"{self.kind} at {self.url}"

    def _unreachable_hint(self) -> str:
        return "is it running, and is the base URL right?"

    def _auth_error(self, status: int, detail: str) -> SearchError:
        return SearchUnavailable(f"{self._label()} refused the request (HTTP {status}): check its API key.{detail}")

    def _http(self) -> httpx2.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._http_clients.get(loop)
        if client is None:
            # No redirects: a search API that redirects is misconfigured, and following one would
            # carry key headers (which httpx strips only for Authorization) to another host.
            client = httpx2.AsyncClient(
                timeout=self.timeout, follow_redirects=False, headers={"User-Agent": USER_AGENT}
            )
            self._http_clients[loop] = client
        return client

    async def _get_json(self, path: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        """GET `base_url + path` and return the decoded JSON, or raise a SearchError."""
        label = self._label()
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._http().get(self.base_url + path, params=params, headers=headers)
        except (TimeoutError, httpx2.TimeoutException) as exc:
            raise SearchTimeout(
                f"{label} did not answer within {self.timeout:g} s: it may be overloaded or its sources slow; "
                "try again, or raise the search timeout"
            ) from exc
        except httpx2.ConnectError as exc:
            raise SearchUnavailable(f"could not reach {label}; {self._unreachable_hint()}") from exc
        except httpx2.HTTPError as exc:
            raise SearchUnavailable(
                f"the connection to {label} failed ({type(exc).__name__}); try again, or check that it is healthy"
            ) from exc
        if response.status_code >= 300:
            raise self._status_error(response)
        try:
            return response.json()
        except ValueError as exc:
            kind = response.headers.get("content-type", "no content type").split(";")[0]
            raise SearchBadResponse(
                f"{label} answered with something that is not JSON ({kind}); check that the base URL points "
                "at the search API itself"
            ) from exc

    def _status_error(self, response: httpx2.Response) -> SearchError:
        """The status and what to change. What the server said (and where it redirected to) goes
        to the log only: whoever sets the base URL could point it at any service and read its
        replies in the admin or on a page."""
        status, label = response.status_code, self._label()
        detail = self._detail(response)
        if detail or status < 400:
            where = display_url(response.headers.get("location", "")) if status < 400 else ""
            log.warning("%s answered HTTP %d: %s", label, status, detail or f"to {where}")
        said = ""
        if status == 429:
            wait = retry_after(response.headers)
            when = f"after {wait:g} s" if wait is not None else "in a moment"
            return SearchRateLimited(
                f"{label} is rate-limiting searches (HTTP 429); try again {when}, or search less often.{said}",
                retry_after=wait,
            )
        if status in (401, 403):
            return self._auth_error(status, said)
        if status < 400:
            return SearchUnavailable(
                f"{label} redirected the search (HTTP {status}): set the base URL to the search API's own "
                "address (Agora's log names where it pointed)"
            )
        if status >= 500:
            return SearchUnavailable(
                f"{label} had an internal error (HTTP {status}); try again later or check its logs.{said}"
            )
        return SearchUnavailable(
            f"{label} rejected the search (HTTP {status}): the query may be too long, or the base URL wrong.{said}"
        )

    def _detail(self, response: httpx2.Response) -> str:
        """The server's own error text, short and with the key removed; empty for HTML pages."""
        kind = response.headers.get("content-type", "")
        text = ""
        if "json" in kind:
            with contextlib.suppress(ValueError):
                body = response.json()
                if isinstance(body, dict):
                    inner = body.get("error", body.get("message", ""))
                    if isinstance(inner, dict):
                        inner = inner.get("detail") or inner.get("message") or ""
                    text = str(inner)
        elif kind.startswith("text/plain"):
            text = response.text
        text = " ".join(text.split())[:200]
        if self._key and len(self._key) >= 4:
            text = text.replace(self._key, "***")
        return text
