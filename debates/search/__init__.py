"""Search providers for research: find pages on the web and read them as plain text.

`base` holds the interface (`SearchClient`, `Result`, `Page`, the errors); `searxng` and `brave`
are the backends; `fetch` turns a URL into readable text without letting a URL reach the server's
own network (`addresses` is that guard); `backends.build` makes a client from settings.
Plain async Python: no Django imports, settings arrive as constructor arguments.
"""

from __future__ import annotations

from .base import (
    FetchFailed,
    FetchRefused,
    Page,
    Result,
    SearchBadResponse,
    SearchClient,
    SearchError,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)

__all__ = [
    "FetchFailed",
    "FetchRefused",
    "Page",
    "Result",
    "SearchBadResponse",
    "SearchClient",
    "SearchError",
    "SearchRateLimited",
    "SearchTimeout",
    "SearchUnavailable",
]
