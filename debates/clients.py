"""Turn provider settings (environment and `Provider` rows) into the engine's LLM clients.

The default provider comes from the environment: OPENAI_BASE_URL (+ OPENAI_API_KEY, AGORA_MODEL)
for any OpenAI-compatible server, else the bundled local model. Keys are read from the environment
at call time and never stored.
"""

from __future__ import annotations

import os
import threading

from django.conf import settings
from django.utils.translation import gettext

from debates import prices, provider_keys
from debates.engine.turns import ClientPool
from debates.providers.base import LLMClient, ProviderUnavailable
from debates.providers.human import HumanClient
from debates.providers.openai_compat import OpenAICompatibleClient

DEFAULT_REMOTE_MODEL = "gpt-4o-mini"
_local_lock = threading.Lock()
_local: list[LLMClient] = []


def local_client() -> LLMClient:
    """One local-model client per process: it owns the llama.cpp child process, which serves one
    GGUF (AGORA_LOCAL_MODEL or the bundled weights), so a per-seat model name does not apply."""
    from debates.providers.local import LocalModelClient

    with _local_lock:
        if not _local:
            made = LocalModelClient(cache_dir=settings.AGORA_CACHE_DIR)
            made.price = prices.FREE  # runs here: no money per token
            _local.append(made)
        return _local[0]


def is_local(client: LLMClient) -> bool:
    """The process's own local-model client (it outlives any one debate)."""
    return client in _local


def _priced(client: LLMClient, price) -> LLMClient:
    client.price = price.pair if price is not None else None
    return client


def default_client(model: str = "") -> LLMClient:
    if settings.OPENAI_BASE_URL:
        model = model or settings.AGORA_MODEL or DEFAULT_REMOTE_MODEL
        made = OpenAICompatibleClient(
            settings.OPENAI_BASE_URL,
            os.environ.get("OPENAI_API_KEY"),
            model,
            name="default",
            concurrency=settings.AGORA_PROVIDER_CONCURRENCY,
            timeout=settings.AGORA_PROVIDER_TIMEOUT,
            max_retries=settings.AGORA_PROVIDER_RETRIES,
            backoff_base=settings.AGORA_PROVIDER_BACKOFF,
        )
        return _priced(made, prices.for_default(model))
    return local_client()


def not_approved() -> str:
    return gettext(
        "this provider waits for a superuser's approval (it was added or changed by staff who are not superusers)."
    )


class RefusedClient(LLMClient):
    """Stands in for a provider that may not be called (its key variable is refused): the debate
    fails before any request with the reason, and no key is ever read."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__()
        self.name, self.reason = name, reason

    async def ensure_ready(self, on_status=None) -> None:
        raise ProviderUnavailable(f"{self.name}: {self.reason}")

    def stream(self, messages, **kwargs):
        raise ProviderUnavailable(f"{self.name}: {self.reason}")


def provider_client(provider, model: str = "", *, unapproved: bool = False) -> LLMClient:
    """The provider's client; one awaiting a superuser's approval refuses every call, unless
    `unapproved` (the admin's own test of the connection)."""
    if not provider.approved and not unapproved:
        return RefusedClient(provider.name, not_approved())
    key, refused = provider_keys.read(provider.api_key_env, provider.base_url)
    if refused:
        return RefusedClient(provider.name, refused)
    made = OpenAICompatibleClient(
        provider.base_url,
        key,
        model or provider.default_model,
        name=provider.name,
        concurrency=provider.concurrency,
        timeout=provider.timeout,
        max_retries=settings.AGORA_PROVIDER_RETRIES,
        backoff_base=settings.AGORA_PROVIDER_BACKOFF,
        key_env=provider.api_key_env or "OPENAI_API_KEY",
    )
    return _priced(made, prices.for_provider(provider, model))


def seat_key(provider, model: str) -> str | None:
    if provider is None and not model:
        return None
    return f"{provider.name if provider else 'default'}:{model}"


def human_key(seat) -> str:
    """The client key of a seat a person took (or was invited to)."""
    return f"human:{seat.persona.slug}"


def clients_for(debate) -> ClientPool:
    """The debate's default client plus one per distinct seat override, and one per person at the
    table (with its own model client to stand in when the person misses the deadline)."""
    default = provider_client(debate.provider, debate.model) if debate.provider else default_client(debate.model)
    others = {}
    for seat in debate.seats.select_related("provider", "persona", "human"):
        if seat.for_a_person:
            stand_in = provider_client(seat.provider, seat.model) if seat.provider else default_client(seat.model)
            absent = (seat.stand_in if seat.stand_in == "pass" else "llm") if seat.vacated else ""
            others[human_key(seat)] = HumanClient(seat.person_name, debate.human_inputs, stand_in, absent)
            continue
        key = seat_key(seat.provider, seat.model)
        if key and key not in others:
            others[key] = provider_client(seat.provider, seat.model) if seat.provider else default_client(seat.model)
    for override in debate.overrides.values():  # turns regenerated with another model
        provider, model = override_provider(override), override.get("model", "")
        key = seat_key(provider, model)
        if key and key not in others:
            others[key] = provider_client(provider, model) if provider else default_client(model)
    return ClientPool(default, others)


def override_provider(override: dict):
    from debates.models import Provider

    name = override.get("provider") or ""
    return Provider.objects.filter(name=name).first() if name else None


def override_key(override: dict) -> str | None:
    """The client key a regenerated turn uses (None: its seat's own)."""
    return seat_key(override_provider(override), override.get("model", ""))


async def close(pool: ClientPool | None) -> None:
    """Close a debate's HTTP connections; the process-wide local model client stays open."""
    if pool is None:
        return
    for client in pool.all():
        client = getattr(client, "stand_in", None) or client  # a person's seat: its model's connections
        if client not in _local and hasattr(client, "aclose"):
            await client.aclose()
