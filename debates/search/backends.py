"""Which search backends exist, and one place that builds a client from settings."""

from __future__ import annotations

from collections.abc import Sequence

from .base import SearchClient
from .brave import BraveClient
from .fetch import PageFetcher
from .searxng import SearxngClient

BACKENDS: dict[str, type[SearchClient]] = {"searxng": SearxngClient, "brave": BraveClient}


def build(
    kind: str,
    *,
    base_url: str,
    api_key: str | None,
    timeout: float,
    allowed_networks: Sequence[str],
    name: str,
    key_env: str | None = None,
) -> SearchClient:
    """A client of `kind` ("searxng" or "brave"). `base_url` "" means the backend's default
    (SearxNG has none: it is wherever the operator runs it). `allowed_networks` are the private
    networks result pages may be fetched from (normally none). `key_env`, the name of the variable
    the key came from, makes "set ... to a valid key" messages name the right one."""
    if kind not in BACKENDS:
        raise ValueError(f"unknown search backend {kind!r}: choose one of {', '.join(sorted(BACKENDS))}")
    fetcher = PageFetcher(allowed_networks)
    named = {"key_env": key_env} if key_env else {}
    if kind == "searxng":
        if not base_url.strip():
            raise ValueError(
                "the searxng search backend needs a base URL (where your SearxNG runs, e.g. http://127.0.0.1:8888)"
            )
        return SearxngClient(base_url, api_key=api_key, name=name, timeout=timeout, fetcher=fetcher, **named)
    return BraveClient(api_key, base_url=base_url, name=name, timeout=timeout, fetcher=fetcher, **named)
