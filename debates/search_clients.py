"""Turn search settings (environment and `SearchProvider` rows) into the engine's search client.

The environment's backend (AGORA_SEARCH_BACKEND …) is the default; a row in the admin is another
choice on the start form. Keys are read from the environment at call time, through the same
allow list as the LLM providers' (`debates.provider_keys`), and never stored.
"""

from __future__ import annotations

from django.conf import settings

from debates import provider_keys
from debates.search import backends
from debates.search.base import SearchClient

BRAVE_HOST = "https://api.search.brave.com"


class SearchMisconfigured(ValueError):
    """The setting cannot make a client: the message says what to set."""


def environment_configured() -> bool:
    return bool(settings.AGORA_SEARCH_BACKEND)


def describe_environment() -> str:
    """The environment's backend as the start form names it (its address is the operator's business)."""
    return settings.AGORA_SEARCH_BACKEND


def _key(kind: str, base_url: str, key_var: str, name: str) -> str | None:
    """The key to send, after the checks a client needs (raises SearchMisconfigured)."""
    if kind not in backends.BACKENDS:
        raise SearchMisconfigured(
            f"There is no search backend “{kind}”: use {' or '.join(sorted(backends.BACKENDS))} (AGORA_SEARCH_BACKEND)."
        )
    if kind == "searxng" and not base_url:
        raise SearchMisconfigured(f"{name}: SearxNG needs its address (AGORA_SEARCH_URL, or the provider's base URL).")
    key, refused = provider_keys.read(key_var, base_url or BRAVE_HOST)
    if refused:
        raise SearchMisconfigured(f"{name}: {refused}")
    if kind == "brave" and not key:
        raise SearchMisconfigured(
            f"{name}: Brave needs a key: set {key_var or 'BRAVE_API_KEY'} in the server's environment "
            "(AGORA_SEARCH_KEY_VAR names the variable)."
        )
    return key


def _build(kind: str, base_url: str, key_var: str, timeout: float, name: str) -> SearchClient:
    key = _key(kind, base_url, key_var, name)
    try:
        return backends.build(
            kind,
            base_url=base_url,
            api_key=key,
            timeout=timeout,
            allowed_networks=tuple(settings.AGORA_FETCH_ALLOWED_NETWORKS),
            name=name,
            key_env=key_var or None,
        )
    except ValueError as error:
        raise SearchMisconfigured(f"{name}: {error}") from error


def check(provider=None) -> None:
    """Raise SearchMisconfigured if `provider` (None: the environment's search) cannot work,
    without making a client (the start form checks this beside its field)."""
    if provider is None:
        _key(settings.AGORA_SEARCH_BACKEND, settings.AGORA_SEARCH_URL, settings.AGORA_SEARCH_KEY_VAR, "search")
    else:
        _key(provider.kind, provider.base_url, provider.api_key_env, provider.name)


def environment_client() -> SearchClient:
    return _build(
        settings.AGORA_SEARCH_BACKEND,
        settings.AGORA_SEARCH_URL,
        settings.AGORA_SEARCH_KEY_VAR,
        settings.AGORA_SEARCH_TIMEOUT,
        settings.AGORA_SEARCH_BACKEND,
    )


def provider_client(provider) -> SearchClient:
    return _build(provider.kind, provider.base_url, provider.api_key_env, float(provider.timeout), provider.name)


def client_for(debate) -> SearchClient | None:
    """The debate's search client, or None when it does not research (or nothing is set up: the
    engine then says research was skipped). A misconfigured backend raises SearchMisconfigured."""
    if not debate.research:
        return None
    if debate.search_provider is not None:
        return provider_client(debate.search_provider)
    if environment_configured():
        return environment_client()
    return None
