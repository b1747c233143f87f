"""Which provider and model a new debate runs on when it names none: the one the owner chose with
"Use this model" on the Connect page (a Provider row marked `is_default`), else the environment's
(OPENAI_BASE_URL's model, or the local one).

One answer for every door: the start form's first choice (and a post that names no provider), the
JSON API and MCP when their body names none, `manage.py debate` without --provider, and the banners
on Home and the start page. A debate keeps the provider it was started with, so choosing another
later changes only new debates; naming the environment's model stays possible everywhere (the
form's first option, `"provider": ""`, `--provider env`).

The choice is the installation's, not a person's: whoever may connect a model (the owner, or staff
with the provider permissions) connected it for everyone, and a provider staff connected counts
only once a superuser approves it, as everything about it does.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from debates.models import Provider

BUNDLED_MODEL = "Qwen2.5-Coder 1.5B"


def provider() -> Provider | None:
    """The provider chosen with "Use this model", while it may run (approved, with a model)."""
    return Provider.objects.filter(is_default=True, approved=True).exclude(default_model="").first()


def choose(chosen: Provider) -> None:
    """`chosen` becomes the default for new debates (the one before stops being it)."""
    with transaction.atomic():
        Provider.objects.filter(is_default=True).exclude(pk=chosen.pk).update(is_default=False)
        if not chosen.is_default:
            chosen.is_default = True
            chosen.save(update_fields=["is_default"])


def environment_label() -> str:
    """The environment's model, as the start form's option for it and the banners name it."""
    if settings.OPENAI_BASE_URL:
        return _("this server's model — %(model)s") % {"model": settings.AGORA_MODEL or "gpt-4o-mini"}
    if settings.AGORA_LOCAL_MODEL:
        return _("local model — %(name)s") % {"name": settings.AGORA_LOCAL_MODEL.rsplit("/", 1)[-1]}
    return _("bundled local model — %(name)s, a demo") % {"name": BUNDLED_MODEL}


@dataclass(frozen=True)
class Running:
    """What a new debate runs on when it names none, for the banners."""

    label: str  # "deepseek — deepseek-chat", or the environment's label
    connected: bool  # chosen on the Connect page
    bundled: bool  # the bundled demo model


def running() -> Running:
    chosen = provider()
    if chosen is not None:
        return Running(f"{chosen.name} — {chosen.default_model}", connected=True, bundled=False)
    bundled = not settings.OPENAI_BASE_URL and not settings.AGORA_LOCAL_MODEL
    return Running(environment_label(), connected=False, bundled=bundled)
