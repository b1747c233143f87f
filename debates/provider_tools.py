"""What the admin and `make run` do with providers: test a connection, fetch the models a server
offers, and find a local Ollama. Each answer is a sentence for the person who asked: the status and
the kind of a failure, never what the server said. A check someone asks for (`user`) goes only
where that person may point a provider (debates/provider_reach.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.utils import timezone
from django.utils.translation import gettext as _

from debates import clients, provider_reach
from debates.models import Provider
from debates.providers.base import ProviderError

OLLAMA_DEFAULT = "127.0.0.1:11434"


@dataclass
class Outcome:
    ok: bool
    message: str
    models: list[str]


def fetch_models(provider: Provider, *, save: bool = True, user=None) -> Outcome:
    """Ask the provider's server which models it offers (the SDK's `models.list()`). `user`: who
    asked (None: the server itself, e.g. `make run` looking for Ollama)."""
    why = provider_reach.refusal(provider.base_url, user) if user is not None else ""
    if why:
        return Outcome(False, f"{provider.name}: {why}", [])
    client = clients.provider_client(provider, unapproved=True)
    list_models = getattr(client, "list_models", None)
    if list_models is None:  # a refused key variable: say why, send nothing
        return Outcome(False, f"{provider.name}: {getattr(client, 'reason', '')}", [])
    try:
        models = async_to_sync(_list_and_close)(client)
    except ProviderError as error:
        return Outcome(False, f"{provider.name}: {error}", [])
    if save:
        provider.offered_models, provider.models_fetched_at = models, timezone.now()
        provider.save(update_fields=["offered_models", "models_fetched_at"])
    shown = ", ".join(models[:8]) + (" …" if len(models) > 8 else "")
    message = _("%(name)s answers: %(count)d models (%(models)s).") % {
        "name": provider.name,
        "count": len(models),
        "models": shown or "—",
    }
    if models and provider.default_model and provider.default_model not in models:
        message += " " + _("Its default model “%(model)s” is not among them.") % {"model": provider.default_model}
    return Outcome(True, message, models)


def check_connection(provider: Provider, *, user=None) -> Outcome:
    """Can Agora talk to this provider? Listing its models says so; a server that lists none is
    asked for a one-token reply from its default model instead."""
    listed = fetch_models(provider, save=False, user=user)
    if listed.ok or (user is not None and provider_reach.refusal(provider.base_url, user)):
        return listed
    client = clients.provider_client(provider, unapproved=True)
    if not hasattr(client, "list_models") or not provider.default_model:
        return listed  # no model to ask: the list's failure is the answer
    try:
        async_to_sync(_one_token)(client)
    except ProviderError as error:
        return Outcome(False, f"{provider.name}: {error}", [])
    return Outcome(True, _("%(name)s answers (it lists no models).") % {"name": provider.name}, [])


async def _one_token(client) -> None:
    try:
        stream = client.stream([{"role": "user", "content": "ping"}], max_tokens=1)
        async for _delta in stream:
            pass
    finally:
        await client.aclose()


async def _list_and_close(client) -> list[str]:
    try:
        return await client.list_models()
    finally:
        await client.aclose()


def ollama_base_url() -> str:
    host = os.environ.get("OLLAMA_HOST", "") or OLLAMA_DEFAULT
    if "://" not in host:
        host = f"http://{host}"
    return host.rstrip("/") + "/v1"


def detect_ollama() -> Provider | None:
    """An Ollama server at OLLAMA_HOST (default 127.0.0.1:11434) becomes a provider named
    "ollama" with the models it has pulled; nothing happens when none answers (or one exists)."""
    base_url = ollama_base_url()
    existing = Provider.objects.filter(base_url=base_url).first()
    probe = existing or Provider(name="ollama", base_url=base_url, default_model="", timeout=2, concurrency=1)
    outcome = fetch_models(probe, save=existing is not None)
    if not outcome.ok or not outcome.models:
        return existing
    if existing is None:
        name = "ollama" if not Provider.objects.filter(name="ollama").exists() else "ollama-local"
        existing = Provider.objects.create(
            name=name,
            base_url=base_url,
            default_model=outcome.models[0],
            concurrency=1,  # Ollama decodes one request at a time unless told otherwise
            timeout=300,
            offered_models=outcome.models,
            models_fetched_at=timezone.now(),
        )
    return existing


def check_search(provider) -> Outcome:
    """Does this search provider answer? One search for a plain word, its result count said."""
    from debates import search_clients
    from debates.search.errors import SearchError

    try:
        client = search_clients.provider_client(provider)
    except search_clients.SearchMisconfigured as error:
        return Outcome(False, str(error), [])

    async def one_search():
        try:
            return await client.search("agora", 3)
        finally:
            await client.aclose()

    try:
        results = async_to_sync(one_search)()
    except SearchError as error:
        return Outcome(False, f"{provider.name}: {error}", [])
    return Outcome(
        True, _("%(name)s answers: %(count)d results for “agora”.") % {"name": provider.name, "count": len(results)}, []
    )
