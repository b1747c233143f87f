"""Turn provider settings (environment and `Provider` rows) into the engine's LLM clients.

The default provider comes from the environment: OPENAI_BASE_URL (+ OPENAI_API_KEY, AGORA_MODEL)
for any OpenAI-compatible server, else the bundled local model. Keys are read from the environment
at call time, or opened from a Provider row's sealed key (debates/key_vault.py) for its own origin.

Reasoning models: a client is built with its reasoning effort (the seat's or the debate's, else the
provider's; none is sent when blank) and with what its server refused for that model before
(`Provider.learnt_params`); what a server teaches later (a 400 naming an unsupported parameter) is
written back to the provider's row (`remember`), so the next debate does not pay the error.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from debates import prices, provider_keys
from debates.engine.turns import ClientPool
from debates.providers.base import LLMClient, ProviderUnavailable
from debates.providers.human import HumanClient
from debates.providers.openai_compat import OpenAICompatibleClient
from debates.providers.reasoning import is_reasoning_model

DEFAULT_REMOTE_MODEL = "gpt-4o-mini"
_local_lock = threading.Lock()
_local: list[LLMClient] = []
log = logging.getLogger(__name__)
# What the environment's server (no Provider row to keep it on) refused, by model: for this process.
_default_learnt: dict[str, dict] = {}
_writes: set[asyncio.Task] = set()  # learnt parameters being saved (kept referenced until done)


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


def is_bundled(provider) -> bool:
    """A debate with this provider (None: the environment's) runs on the local model: the
    bundled one unless AGORA_LOCAL_MODEL names another GGUF. Its formats' defaults are sized for
    it (`Format.local`)."""
    return provider is None and not settings.OPENAI_BASE_URL


def _priced(client: LLMClient, price) -> LLMClient:
    client.price = price.pair if price is not None else None
    return client


def default_client(model: str = "", effort: str = "") -> LLMClient:
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
            reasoning_effort=effort or None,
            learnt=_default_learnt.get(model),
            on_learn=lambda learnt: _default_learnt.__setitem__(model, dict(learnt)),
        )
        return _priced(made, prices.for_default(model))
    return local_client()


def _save_learnt(provider_id: int, model: str, learnt: dict) -> None:
    """What the provider's server refused for `model`, kept on its row (read, merged and written
    under the row's lock: two debates may learn at once)."""
    from debates.models import Provider

    with transaction.atomic():
        row = Provider.objects.select_for_update().filter(pk=provider_id).first()
        if row is None:
            return
        known = dict(row.learnt_params or {})
        known[model] = {**(known.get(model) or {}), **learnt}
        if known != row.learnt_params:
            row.learnt_params = known
            row.save(update_fields=["learnt_params"])


def remember(provider_id: int, model: str):
    """The `on_learn` of a provider's client: called synchronously by the client, usually on the
    event loop mid-turn, so the row is written in the database thread, never on the loop."""

    def on_learn(learnt: dict) -> None:
        learnt = dict(learnt)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # called outside any loop (a management command's own thread)
            _save_learnt(provider_id, model, learnt)
            return
        task = loop.create_task(database_sync_to_async(_save_learnt)(provider_id, model, learnt))
        _writes.add(task)
        task.add_done_callback(_written)

    return on_learn


def _written(task: asyncio.Task) -> None:
    _writes.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("could not keep what a provider refused: %s", task.exception())


async def learnt_saved() -> None:
    """Wait for every learnt parameter being saved (tests, and a runner that ends its loop)."""
    while _writes:
        await asyncio.gather(*list(_writes), return_exceptions=True)


def effective_model(provider, model: str = "") -> str:
    """The model a debate (or a seat) calls: the one chosen, else the provider's default, else the
    environment's ("" for the bundled local model)."""
    if model:
        return model
    if provider is not None:
        return provider.default_model
    return (settings.AGORA_MODEL or DEFAULT_REMOTE_MODEL) if settings.OPENAI_BASE_URL else ""


def reasons(provider, model: str) -> bool:
    """Whether `model` thinks before it answers: known by its name, or taught by its server (it
    asked for `max_completion_tokens`, which only reasoning models do)."""
    learnt = ((provider.learnt_params or {}) if provider is not None else _default_learnt).get(model) or {}
    return is_reasoning_model(model) or learnt.get("max_tokens") == "max_completion_tokens"


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


def provider_key(provider) -> tuple[str | None, str]:
    """(the provider's key, "") or (None, why it may not be sent). A key entered on the Connect
    page goes only to the origin (scheme, host and port) it was entered for, sealed with it;
    otherwise the key variable."""
    if provider.api_key_sealed:
        from debates import key_vault

        try:
            key, bound_to = key_vault.open_sealed(provider.api_key_sealed)
        except key_vault.VaultError as error:
            return None, str(error)
        if key_vault.origin(provider.base_url) != bound_to:
            return None, gettext(
                "its stored key was entered for %(host)s and is sent nowhere else: enter it again for the new "
                "address (Connect a model)."
            ) % {"host": bound_to}
        return key, ""
    return provider_keys.read(provider.api_key_env, provider.base_url)


def provider_client(provider, model: str = "", *, unapproved: bool = False, effort: str = "") -> LLMClient:
    """The provider's client; one awaiting a superuser's approval refuses every call, unless
    `unapproved` (the admin's own test of the connection). `effort`: the seat's or the debate's
    reasoning effort, else the provider's."""
    if not provider.approved and not unapproved:
        return RefusedClient(provider.name, not_approved())
    key, refused = provider_key(provider)
    if refused:
        return RefusedClient(provider.name, refused)
    model_id = model or provider.default_model
    made = OpenAICompatibleClient(
        provider.base_url,
        key,
        model_id,
        name=provider.name,
        concurrency=provider.concurrency,
        timeout=provider.timeout,
        max_retries=settings.AGORA_PROVIDER_RETRIES,
        backoff_base=settings.AGORA_PROVIDER_BACKOFF,
        key_env=provider.api_key_env or ("its stored key" if provider.api_key_sealed else "OPENAI_API_KEY"),
        reasoning_effort=effort or provider.reasoning_effort or None,
        learnt=(provider.learnt_params or {}).get(model_id),
        on_learn=remember(provider.pk, model_id) if provider.pk else None,
    )
    return _priced(made, prices.for_provider(provider, model))


def seat_key(provider, model: str, effort: str = "") -> str | None:
    """The client key of a seat's (or a regenerated turn's) own model; None: the debate's."""
    if provider is None and not model and not effort:
        return None
    key = f"{provider.name if provider else 'default'}:{model}"
    return f"{key}@{effort}" if effort else key


def client_for(provider, model: str, effort: str = "") -> LLMClient:
    return provider_client(provider, model, effort=effort) if provider else default_client(model, effort)


def human_key(seat) -> str:
    """The client key of a seat a person took (or was invited to)."""
    return f"human:{seat.persona.slug}"


def clients_for(debate) -> ClientPool:
    """The debate's default client plus one per distinct seat override, and one per person at the
    table (with its own model client to stand in when the person misses the deadline)."""
    default = client_for(debate.provider, debate.model, debate.reasoning_effort)
    others = {}
    for seat in debate.seats.select_related("provider", "persona", "human"):
        if seat.for_a_person:
            stand_in = client_for(seat.provider, seat.model, seat.reasoning_effort)
            absent = (seat.stand_in if seat.stand_in == "pass" else "llm") if seat.vacated else ""
            others[human_key(seat)] = HumanClient(seat.person_name, debate.human_inputs, stand_in, absent)
            continue
        key = seat_key(seat.provider, seat.model, seat.reasoning_effort)
        if key and key not in others:
            others[key] = client_for(seat.provider, seat.model, seat.reasoning_effort)
    for override in debate.overrides.values():  # turns regenerated with another model
        provider, model = override_provider(override), override.get("model", "")
        key = seat_key(provider, model)
        if key and key not in others:
            others[key] = client_for(provider, model)
    return ClientPool(default, others)


def override_provider(override: dict):
    from debates.models import Provider

    name = override.get("provider") or ""
    return Provider.objects.filter(name=name).first() if name else None


def override_key(override: dict) -> str | None:
    """The client key a regenerated turn uses (None: its seat's own)."""
    return seat_key(override_provider(override), override.get("model", ""))


async def close(pool: ClientPool | None) -> None:
    """Close a debate's HTTP connections; the process-wide local model client stays open. What
    its servers taught (`remember`) is saved first: a worker may end its loop after the debate."""
    await learnt_saved()
    if pool is None:
        return
    for client in pool.all():
        client = getattr(client, "stand_in", None) or client  # a person's seat: its model's connections
        if client not in _local and hasattr(client, "aclose"):
            await client.aclose()
