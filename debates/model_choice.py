"""Which models a debate may name, and whether its money budget can be kept.

Every provider runs on the operator's key (a Provider row set up by staff, or the environment's
OPENAI_* server): a user who is not staff names only the models the provider lists (a row's
fetched models and its default; the environment's AGORA_MODEL and AGORA_DEFAULT_MODELS), so
nobody picks the dearest model on someone else's bill. The local model serves one file whatever
the name, so any name is harmless there.

A money budget stops a debate once the money spent reaches it; with no known price the money
is unknown and never does, so such a budget is refused at start instead of being ignored.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.translation import gettext as _

from debates import prices
from debates.clients import effective_model


def offered(provider) -> set[str] | None:
    """The models a user who is not staff may name on `provider` (None: the environment's);
    None: any (the local model)."""
    if provider is None:
        if not settings.OPENAI_BASE_URL:
            return None
        return {effective_model(None, ""), *settings.AGORA_DEFAULT_MODELS}
    return {m for m in (provider.default_model, *(provider.offered_models or [])) if m}


def refusal(user, provider, model: str) -> str:
    """Why `user` may not name `model` on `provider` ("" when they may). No user: the operator's
    own terminal (the CLI, evaluations), which names any."""
    if not model or user is None or user.is_staff:
        return ""
    allowed = offered(provider)
    if allowed is None or model in allowed:
        return ""
    return _("%(model)s is not one of the models offered on %(provider)s: choose one of %(models)s.") % {
        "model": model,
        "provider": provider.name if provider is not None else _("this server"),
        "models": ", ".join(sorted(allowed)),
    }


def price(provider, model: str):
    """The price a debate would pay for `model` on `provider` (None: the environment's); None: unknown."""
    if provider is not None:
        return prices.for_provider(provider, model)
    return prices.for_default(effective_model(None, model))


def unkept_budget(options, chosen) -> tuple[str, str] | None:
    """(the option's name, why) when the debate's money budget could not be kept on one of the
    `chosen` (provider, model) pairs it calls; None when it can, or there is none."""
    if options.money_budget is None:
        return None
    for provider, model in dict.fromkeys(chosen):
        if price(provider, model) is None:
            why = _("No price is known for model %(model)s: set one on its provider, or use a token budget.")
            return "money_budget", why % {"model": effective_model(provider, model)}
    return None
