"""SearxNG, the self-hosted metasearch engine, through its JSON API.

SearxNG answers `GET /search?q=...&format=json` only when `json` is listed in `search.formats` of
its settings.yml; the stock configuration lists just `html` and answers 403, so the messages say
how to enable it. The endpoint is the operator's own (often on localhost), so it is not subject to
the fetch guard; only the result pages are.
"""

from __future__ import annotations

import re
from typing import Any

from .base import Result, SearchClient, web_items
from .errors import SearchBadResponse, SearchError, SearchUnavailable
from .fetch import PageFetcher

_ENABLE_JSON = "search.formats: [html, json] in settings.yml"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


class SearxngClient(SearchClient):
    """Searches one SearxNG instance. `api_key`, when given, goes out as a bearer token for the
    reverse proxy some deployments put in front of SearxNG (SearxNG itself has no keys);
    `key_env` names the setting that holds it, for messages."""

    kind = "searxng"

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        name: str = "searxng",
        timeout: float = 15.0,
        fetcher: PageFetcher | None = None,
        key_env: str = "SEARXNG_API_KEY",
    ) -> None:
        if not base_url.strip():
            raise ValueError("SearxNG needs a base URL, e.g. http://127.0.0.1:8888")
        super().__init__(base_url.strip(), api_key=api_key, name=name, timeout=timeout, fetcher=fetcher)
        self.key_env = key_env

    def _label(self) -> str:
        return f"SearxNG at {self.url}"

    def _unreachable_hint(self) -> str:
        return f"is SearxNG running and its JSON format enabled ({_ENABLE_JSON})?"

    def _auth_error(self, status: int, detail: str) -> SearchError:
        if status == 403:
            return SearchUnavailable(
                f"{self._label()} refused the search (HTTP 403); this usually means its JSON format is "
                f"disabled: add json to the formats ({_ENABLE_JSON}) and restart SearxNG. If a proxy "
                f"guards it, check the key in {self.key_env}.{detail}"
            )
        sent = "the key in" if self._key else "no key; set"
        return SearchUnavailable(
            f"{self._label()} asks for credentials (HTTP 401) and we sent {sent} {self.key_env}: set it to "
            f"the key its proxy accepts.{detail}"
        )

    async def search(self, query: str, n: int = 5) -> list[Result]:
        query = self._checked(query, n)
        headers = {"Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = await self._get_json("/search", {"q": query, "format": "json", "pageno": 1}, headers)
        items = data.get("results") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise SearchBadResponse(
                f"{self._label()} answered JSON without a results list; is the base URL a SearxNG instance?"
            )
        return _results(items, n)


def _results(items: list[Any], n: int) -> list[Result]:
    results = []
    for item, url in web_items(items, n):
        published = item.get("publishedDate")
        found = _DATE.match(published) if isinstance(published, str) else None
        results.append(
            Result(
                title=" ".join(str(item.get("title") or "").split()),
                url=url,
                snippet=" ".join(str(item.get("content") or "").split()),
                published=found.group(0) if found else "",
            )
        )
    return results
