"""The "Connect a model" page: the owner picks a service (or any OpenAI-compatible address),
pastes a key, tests it with a real call (the server's model list), picks a model, and debates can
use it at once (a Provider row; no restart).

A key entered here is sealed at once (`debates.key_vault`, with the origin it belongs to), used for
the test and stored only sealed; no page ever shows it again (at most its last four characters).
Views are function views; htmx posts get the form part back (or a client redirect).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from django_htmx.http import HttpResponseClientRedirect

from debates import default_model, key_vault, provider_reach, provider_tools
from debates.models import Provider


@dataclass(frozen=True)
class Service:
    slug: str
    label: str
    base_url: str  # "" : the person types it
    needs_key: bool = True
    where: str = ""  # where to get a key


SERVICES = (
    Service("openai", "OpenAI", "https://api.openai.com/v1", where="platform.openai.com/api-keys"),
    Service("deepseek", "DeepSeek", "https://api.deepseek.com/v1", where="platform.deepseek.com/api_keys"),
    Service(
        "qwen",
        gettext_lazy("Qwen (DashScope)"),
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        where="bailian.console.aliyun.com",
    ),
    Service("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", where="openrouter.ai/keys"),
    Service("ollama", gettext_lazy("Ollama on this machine"), "", needs_key=False),
    Service("other", gettext_lazy("Another OpenAI-compatible server"), "", needs_key=False),
)
BY_SLUG = {s.slug: s for s in SERVICES}
TEST_TIMEOUT = 30  # seconds for the test call (the row keeps the usual timeout)


def may_connect(user) -> bool:
    """The installation's owner (a superuser), or staff allowed to add and change providers (what
    they connect waits for a superuser's approval, as in the admin)."""
    return (
        user.is_active
        and user.is_staff
        and (user.is_superuser or (user.has_perm("debates.add_provider") and user.has_perm("debates.change_provider")))
    )


def _owner_only(request) -> None:
    if not may_connect(request.user):
        raise PermissionDenied


class ConnectForm(forms.Form):
    service = forms.ChoiceField(
        label=gettext_lazy("Service"),
        widget=forms.RadioSelect,
        choices=[(s.slug, s.label) for s in SERVICES],
        initial="openai",
    )
    base_url = forms.URLField(
        label=gettext_lazy("Address (base URL)"),
        required=False,
        assume_scheme="https",
        help_text=gettext_lazy("The OpenAI-compatible API's base URL, e.g. https://api.example.com/v1"),
        widget=forms.URLInput(attrs={"placeholder": "https://…/v1", "autocomplete": "off", "spellcheck": "false"}),
    )
    api_key = forms.CharField(
        label=gettext_lazy("API key"),
        required=False,
        max_length=500,
        strip=True,
        help_text=gettext_lazy(
            "Stored encrypted and sent only to this service's address; never shown again (at most its last "
            "four characters)."
        ),
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "spellcheck": "false"}),
    )

    def __init__(self, *args, ollama_url: str = "", user=None, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.ollama_url, self.user = ollama_url, user

    @sensitive_variables("key")
    def clean(self):
        data = super().clean()
        service = BY_SLUG.get(data.get("service") or "")
        if service is None:
            return data
        if service.slug == "other":
            if not data.get("base_url") and "base_url" not in self.errors:
                self.add_error("base_url", _("Give the server's address."))
            data["url"] = data.get("base_url", "")
        elif service.slug == "ollama":
            data["url"] = self.ollama_url or provider_tools.ollama_base_url()
        else:
            data["url"] = service.base_url
        # Before any request: where this person may not point a provider, the page tests nothing
        # (it would be a port scanner of this machine and its network otherwise).
        why = provider_reach.refusal(data["url"], self.user) if data["url"] else ""
        if why:
            self.add_error("base_url" if service.slug == "other" else None, why)
        key = data.get("api_key", "")
        if service.needs_key and not key:
            self.add_error("api_key", _("Paste the key %(service)s gave you.") % {"service": service.label})
        if key and any(c.isspace() for c in key):
            self.add_error("api_key", _("A key has no spaces: paste the key alone."))
        return data


class ModelForm(forms.Form):
    model = forms.ChoiceField(label=gettext_lazy("Model"), choices=())
    typed = forms.CharField(
        label=gettext_lazy("or another model id"),
        required=False,
        max_length=120,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )

    def __init__(self, *args, offered: list[str], **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fields["model"].choices = [(m, m) for m in offered]
        self.fields["model"].required = bool(offered)

    def chosen(self) -> str:
        return self.cleaned_data.get("typed") or self.cleaned_data.get("model") or ""

    def clean(self):
        data = super().clean()
        if not (data.get("typed") or data.get("model")) and not self.errors:
            raise forms.ValidationError(_("Name the model debates should use."))
        return data


def _name_for(service: Service, url: str) -> str:
    """A unique short name: the service's, else the host's (per-seat models write provider/model)."""
    base = service.slug if service.slug != "other" else slugify((urlsplit(url).hostname or "server").replace(".", "-"))
    name, n = base[:40] or "server", 2
    while Provider.objects.filter(name=name).exists():
        name, n = f"{base[:36]}-{n}", n + 1
    return name


def _ollama(user) -> tuple[str, list[str]]:
    """Ollama's address here, and the models it has pulled ([] when none answers, or when this
    person may not use this machine's addresses)."""
    url = provider_tools.ollama_base_url()
    if provider_reach.refusal(url, user):
        return url, []
    probe = Provider(name="ollama", base_url=url, default_model="", timeout=2, concurrency=1)
    outcome = provider_tools.fetch_models(probe, save=False)
    return url, outcome.models if outcome.ok else []


def _page(request, form: ConnectForm, ollama_models: list[str], status: int = 200):
    context = {
        "form": form,
        "services": [(s, form["service"][i]) for i, s in enumerate(SERVICES)],
        "ollama_found": bool(ollama_models),
        "ollama_models": ollama_models,
        "connected": Provider.objects.order_by("name"),
    }
    if request.htmx:  # htmx swaps only a 2xx answer: the form comes back with its errors
        return render(request, "debates/connect.html#connect_form", context)
    return render(request, "debates/connect.html", context, status=status)


@sensitive_post_parameters("api_key")
@sensitive_variables("key", "sealed")
@login_required
def connect(request):
    _owner_only(request)
    ollama_url, ollama_models = _ollama(request.user)
    if request.method != "POST":
        wanted = request.GET.get("service", "")
        form = ConnectForm(
            initial={"service": wanted if wanted in BY_SLUG else ("ollama" if ollama_models else "openai")},
            ollama_url=ollama_url,
        )
        return _page(request, form, ollama_models)
    form = ConnectForm(request.POST, ollama_url=ollama_url, user=request.user)
    if not form.is_valid():
        return _page(request, form, ollama_models, status=422)
    service = BY_SLUG[form.cleaned_data["service"]]
    url, key = form.cleaned_data["url"], form.cleaned_data["api_key"]
    existing = Provider.objects.filter(base_url=url).first()
    sealed = key_vault.seal(key, key_vault.origin(url)) if key else ""
    probe = Provider(
        name=existing.name if existing else service.slug,
        base_url=url,
        api_key_sealed=sealed,
        default_model="",
        timeout=TEST_TIMEOUT,
        concurrency=1,
    )
    outcome = provider_tools.fetch_models(probe, save=False)  # the real call, with the key
    if not outcome.ok:
        form.add_error(None, _("The test failed: %(why)s") % {"why": outcome.message})
        form.add_error("api_key", _("The key was not kept: paste it again once the problem is fixed."))
        return _page(request, form, ollama_models, status=422)
    provider = _save(request, existing, service, url, sealed, outcome.models)
    messages.success(
        request,
        ngettext(
            "%(service)s answered: %(count)d model. Pick the one debates should use.",
            "%(service)s answered: %(count)d models. Pick the one debates should use.",
            len(outcome.models),
        )
        % {"service": service.label, "count": len(outcome.models)},
    )
    target = reverse("debates:connect_model", args=[provider.pk])
    return HttpResponseClientRedirect(target) if request.htmx else redirect(target)


def _save(request, existing: Provider | None, service: Service, url: str, sealed: str, models: list[str]) -> Provider:
    with transaction.atomic():
        provider = existing or Provider(name=_name_for(service, url), base_url=url)
        provider.api_key_sealed, provider.api_key_env = sealed, ""
        provider.offered_models, provider.models_fetched_at = models, timezone.now()
        if provider.default_model and provider.default_model not in models:
            provider.default_model = ""
        if service.slug == "ollama" and existing is None:
            provider.concurrency, provider.timeout = 1, 300  # Ollama decodes one request at a time
        # What the owner connects is offered at once; staff's waits for a superuser (as in the admin).
        superuser = request.user.is_superuser
        provider.approved, provider.approved_by = superuser, request.user if superuser else None
        provider.save()
    return provider


@login_required
def choose_model(request, pk: int):
    _owner_only(request)
    provider = get_object_or_404(Provider, pk=pk)
    if request.method == "POST" and "refresh" in request.POST:
        outcome = provider_tools.fetch_models(provider, user=request.user)
        (messages.success if outcome.ok else messages.error)(request, outcome.message)
        target = reverse("debates:connect_model", args=[provider.pk])
        return HttpResponseClientRedirect(target) if request.htmx else redirect(target)
    form = ModelForm(
        request.POST or None,
        offered=list(provider.offered_models),
        initial={"model": provider.default_model or _suggested(provider.offered_models)},
    )
    if request.method == "POST" and form.is_valid():
        provider.default_model = form.chosen()
        provider.save(update_fields=["default_model"])
        # "Use this model": new debates run on it wherever they name no other (the form's first
        # choice, the API, MCP, the CLI, the banners); one staff connected counts once approved.
        default_model.choose(provider)
        if provider.approved:
            messages.success(
                request,
                _("Connected: debates can use %(name)s — %(model)s. It is chosen below.")
                % {"name": provider.name, "model": provider.default_model},
            )
        else:
            messages.warning(request, provider.waiting_reason())
        target = reverse("debates:new") + f"?provider={provider.pk}"
        return HttpResponseClientRedirect(target) if request.htmx else redirect(target)
    context = {"provider": provider, "form": form, "key_tail": provider.key_tail()}
    if request.htmx:  # htmx swaps only a 2xx answer
        return render(request, "debates/connect_model.html#model_form", context)
    return render(request, "debates/connect_model.html", context, status=422 if form.errors else 200)


# Sensible first picks, in order, when a server offers them (else the first listed).
PREFERRED = ("deepseek-chat", "gpt-4o-mini", "qwen-plus", "gpt-4.1-mini", "openai/gpt-4o-mini")


def _suggested(offered: list[str]) -> str:
    for model in PREFERRED:
        if model in offered:
            return model
    return offered[0] if offered else ""
