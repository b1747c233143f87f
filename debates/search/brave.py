"""Brave Search's web search API (commercial; a key from https://api-dashboard.search.brave.com).

`GET /web/search?q=...&count=n` with the key in `X-Subscription-Token`. Descriptions come with
the matched words in <strong> and HTML entities, which research wants as plain text.
"""

from __future__ import annotations

import datetime
import html
import re
from typing import Any

import httpx2

from .base import Result, SearchClient, web_items
from .errors import SearchBadResponse, SearchError, SearchRateLimited, SearchUnavailable
from .fetch import PageFetcher

BRAVE_URL = "https://api.search.brave.com/res/v1"
_MAX_COUNT = 20  # the API's limit per request
_TAG = re.compile(r"<[^>]*>")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def plain(text: Any) -> str:
    """Tags stripped, entities unescaped, whitespace collapsed."""
    return " ".join(html.unescape(_TAG.sub("", str(text or ""))).split())


def _published(item: dict[str, Any]) -> str:
    """The ISO date from `page_age`, else from `age` when it is a date ("March 1, 2026");
    relative ages ("2 days ago") say too little to date a source."""
    page_age = item.get("page_age")
    if isinstance(page_age, str) and (found := _DATE.match(page_age)):
        return found.group(0)
    age = item.get("age")
    if isinstance(age, str):
        for pattern in ("%B %d, %Y", "%b %d, %Y", "%Y-%m-%d"):
            try:
                return datetime.datetime.strptime(age.strip(), pattern).date().isoformat()
            except ValueError:
                continue
    return ""


class BraveClient(SearchClient):
    """Searches the web through Brave Search. `key_env` names the setting that holds the key,
    for messages."""

    kind = "brave"

    def __init__(
        self,
        api_key: str | None,
        *,
        base_url: str = BRAVE_URL,
        name: str = "brave",
        timeout: float = 15.0,
        fetcher: PageFetcher | None = None,
        key_env: str = "BRAVE_API_KEY",
    ) -> None:
        super().__init__(base_url.strip() or BRAVE_URL, api_key=api_key, name=name, timeout=timeout, fetcher=fetcher)
        self.key_env = key_env

    def _label(self) -> str:
        return "Brave Search" if self.base_url == BRAVE_URL else f"Brave Search at {self.url}"

    def _unreachable_hint(self) -> str:
        return "check the server's internet connection (and the base URL, if you changed it)"

    def _auth_error(self, status: int, detail: str) -> SearchError:
        return SearchUnavailable(
            f"{self._label()} refused the API key (HTTP {status}): set {self.key_env} to a valid key from "
            f"https://api-dashboard.search.brave.com (and check that its plan includes web search).{detail}"
        )

    def _status_error(self, response: httpx2.Response) -> SearchError:
        error = super()._status_error(response)
        if isinstance(error, SearchRateLimited) and error.retry_after is None:
            # Brave sends X-RateLimit-Reset ("1, 1419704": seconds until each window resets)
            # rather than Retry-After; the first window is the one that bit.
            first = response.headers.get("x-ratelimit-reset", "").split(",")[0].strip()
            if first.isdigit():
                error.retry_after = float(first)
        return error

    async def search(self, query: str, n: int = 5) -> list[Result]:
        query = self._checked(query, n)
        if not self._key:
            raise SearchUnavailable(
                f"Brave Search needs an API key: set {self.key_env} to a key from "
                "https://api-dashboard.search.brave.com, or choose another search backend"
            )
        headers = {"Accept": "application/json", "X-Subscription-Token": self._key}
        data = await self._get_json("/web/search", {"q": query, "count": min(n, _MAX_COUNT)}, headers)
        if not isinstance(data, dict):
            raise SearchBadResponse(f"{self._label()} answered JSON of the wrong shape; check the base URL")
        web = data.get("web", {"results": []})  # no "web" section: nothing found
        items = web.get("results") if isinstance(web, dict) else None
        if not isinstance(items, list):
            raise SearchBadResponse(f"{self._label()} answered without a web results list; check the base URL")
        return [
            Result(
                title=plain(item.get("title")),
                url=url,
                snippet=plain(item.get("description")),
                published=_published(item),
            )
            for item, url in web_items(items, n)
        ]
