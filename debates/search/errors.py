"""How a search or a page fetch fails.

Every failure is a `SearchError` whose `str()` is written for the user (what happened, what to do)
and never contains an API key; `retryable` says whether the same request may succeed later. This
module imports nothing of the package: the fetcher, its address guard and the backends all raise
these.
"""

from __future__ import annotations


class SearchError(Exception):
    """A failed search or fetch; `str(error)` tells the user what happened and what to do."""

    retryable = False

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SearchRateLimited(SearchError):
    """HTTP 429; `retry_after` is the server's Retry-After in seconds, when it sent one."""

    retryable = True


class SearchTimeout(SearchError):
    retryable = True


class SearchUnavailable(SearchError):
    """Misconfigured or down (bad key, nothing listening, 5xx): retrying will not help until
    someone fixes something."""


class SearchBadResponse(SearchError):
    """The backend answered, but not with the JSON it should have (wrong URL? a login page?)."""


class FetchRefused(SearchError):
    """A URL refused before any connection was made: not http(s), an address on a private,
    loopback, link-local or otherwise non-public network, or too many redirects."""


class FetchFailed(SearchError):
    """A page was fetched (or tried) but is unusable: an HTTP error, too large, too slow, not
    HTML or text, or nothing readable in it."""
