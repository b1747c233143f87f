"""The models a chat client is offered: one per format (`agora-duel`, …: the server's default
provider and model), and one per format × approved provider's default model
(`agora-panel:deepseek-chat`; `agora-panel:<provider>/<model>` where two providers share a model
name). Any other model a provider serves can still be asked for by name, unlisted: a provider
may offer hundreds, and a client's model picker is no place for all of them × four formats."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from debates.engine import registry
from debates.models import Provider

PREFIX = "agora-"
OWNER = "agora"


@dataclass(frozen=True)
class Choice:
    format: str
    provider: str = ""  # a Provider's name; "": the server's default
    model: str = ""  # "": the provider's default


def _provider_models() -> list[tuple[str, str]]:
    """(provider, model) for each approved provider with a default model."""
    rows = Provider.objects.filter(approved=True).exclude(default_model="").order_by("name")
    return [(p.name, p.default_model) for p in rows]


def _suffixes() -> list[tuple[str, str, str]]:
    pairs = _provider_models()
    counts: dict[str, int] = {}
    for _provider, model in pairs:
        counts[model] = counts.get(model, 0) + 1
    return [(model if counts[model] == 1 else f"{provider}/{model}", provider, model) for provider, model in pairs]


def listed(created: int) -> list[dict]:
    rows = []
    suffixes = _suffixes()
    for fmt in registry.all_formats():
        about = _(fmt.description or fmt.label)
        rows.append(_row(f"{PREFIX}{fmt.name}", created, f"{_(fmt.label)}: {about}"))
        for suffix, provider, model in suffixes:
            line = _("%(format)s on %(provider)s’s %(model)s") % {
                "format": _(fmt.label),
                "provider": provider,
                "model": model,
            }
            rows.append(_row(f"{PREFIX}{fmt.name}:{suffix}", created, f"{line}: {about}"))
    return rows


def _row(model_id: str, created: int, description: str) -> dict:
    return {"id": model_id, "object": "model", "created": created, "owned_by": OWNER, "description": description}


def resolve(model_id: str) -> Choice | None:
    """The format, provider and model a model id asks for; None: no such format."""
    if not model_id.startswith(PREFIX):
        return None
    name, _sep, suffix = model_id[len(PREFIX) :].partition(":")
    if name not in registry.names():
        return None
    if not suffix:
        return Choice(name)
    head, slash, tail = suffix.partition("/")
    if slash and Provider.objects.filter(approved=True, name=head).exists():
        return Choice(name, head, tail)
    for provider in Provider.objects.filter(approved=True).order_by("name"):
        if suffix == provider.default_model or suffix in (provider.offered_models or []):
            return Choice(name, provider.name, suffix)
    # A model the server's default provider may serve (an Ollama tag, a model nobody fetched).
    return Choice(name, "", suffix)
