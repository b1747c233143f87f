"""Search providers for research: find pages on the web and read them as plain text.

`base` holds the interface (`SearchClient`, `Result`) and `errors` how it fails; `searxng` and
`brave` are the backends; `fetch` turns a URL into a readable `Page` without letting a URL reach
the server's own network (`addresses` is that guard); `backends.build` makes a client from
settings. Each module imports only those below it: errors ← addresses ← fetch ← base ← backends.
Plain async Python: no Django imports, settings arrive as constructor arguments.
"""

from __future__ import annotations

from .base import Result, SearchClient
from .errors import (
    FetchFailed,
    FetchRefused,
    SearchBadResponse,
    SearchError,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from .fetch import Page

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
