from django import forms
from django.contrib import admin, messages
from django.db import models
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from debates import clients, default_model, provider_keys, provider_reach, provider_tools
from debates.api import tokens
from debates.models import ApiToken, Debate, Provider, Report, SearchProvider, Seat, Turn


class ProviderForm(forms.ModelForm):
    """The name may be typed as a label ("DeepSeek chat"): it is kept as its slug (deepseek-chat),
    the short id per-seat models write as provider/model."""

    name = forms.CharField(
        label=_("name"),
        max_length=50,
        help_text=_(
            "Any label, e.g. “DeepSeek chat”: it is saved as a short id (deepseek-chat), which per-seat "
            "models write as id/model."
        ),
    )

    class Meta:
        model = Provider
        fields = ("name", "default_model")  # the admin's fieldsets name the rest
        widgets = {"default_model": forms.TextInput(attrs={"list": "offered-models", "autocomplete": "off"})}

    user = None  # who edits (ProviderAdmin.get_form)

    def clean_base_url(self):
        """A new address goes only where this user may point a provider (debates/provider_reach.py)."""
        url = self.cleaned_data["base_url"]
        if "base_url" in self.changed_data:
            why = provider_reach.refusal(url, self.user)
            if why:
                raise forms.ValidationError(why)
        return url

    def clean_name(self):
        slug = slugify(self.cleaned_data["name"])
        if not slug:
            raise forms.ValidationError(_("Use some Latin letters or digits: the short id is made of them."))
        taken = Provider.objects.filter(name=slug).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError(_("“%(name)s” is taken by another provider.") % {"name": slug})
        return slug


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderForm
    # Test connection / Fetch models on the provider's own page (they save the form first).
    change_form_template = "admin/debates/provider/change_form.html"
    # A base URL typed without a scheme is an https one (Django 6's default; say it now).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = (
        "name",
        "is_default",  # beside the name: the list is wider than a laptop's screen
        "base_url",
        "default_model",
        "api_key_env",
        "model_count",
        "models_fetched_at",
        "approved",
    )
    list_filter = ("approved",)
    search_fields = ("name", "base_url", "default_model")
    actions = ("test_connection", "fetch_models", "approve", "withdraw_approval", "make_default", "drop_default")
    readonly_fields = ("offered_models", "models_fetched_at", "approved", "approved_by", "learnt", "stored_key")
    # What decides where requests (and the key) go: staff who are not superusers changing any of
    # these put the provider back in the queue for a superuser's approval.
    REVIEWED = ("base_url", "api_key_env")
    fieldsets = (
        (None, {"fields": ("name", "base_url", "default_model")}),
        (
            _("Approval"),
            {
                "fields": ("approved", "approved_by"),
                "description": _(
                    "Users are offered a provider, and debates call it, only once a superuser approves "
                    "it (the actions in the list). A provider that staff who are not superusers add, or "
                    "whose address or key variable they change, waits for that approval again."
                ),
            },
        ),
        (_("Models the server offers"), {"fields": ("offered_models", "models_fetched_at")}),
        (
            _("Key and limits"),
            {
                "fields": ("stored_key", "api_key_env", "concurrency", "timeout"),
                "description": _(
                    "Either a key entered on the Connect a model page (stored encrypted, sent only to its "
                    "host, never shown), or the name of the environment variable that holds it."
                ),
            },
        ),
        (
            _("Reasoning models"),
            {
                "fields": ("reasoning_effort", "learnt"),
                "description": _(
                    "Reasoning models (o3, o4-mini, gpt-5, deepseek-reasoner…) think before they answer. "
                    "Below, what this server refused, learnt from its errors: each model's request is sent "
                    "without it (or renamed) from then on."
                ),
            },
        ),
        (
            _("Prices"),
            {
                "fields": ("input_price", "output_price"),
                "description": _(
                    "USD per million tokens. Empty: the built-in price table's, where it knows the model "
                    "(genai-prices); otherwise the money is shown as unknown."
                ),
            },
        ),
    )

    @admin.display(description=_("what this server refused, learnt from its errors"))
    def learnt(self, obj):
        """Per model: each parameter the server refused and what is sent instead."""
        lines = []
        for model, params in sorted((obj.learnt_params or {}).items()):
            said = [
                _("%(param)s → %(instead)s") % {"param": param, "instead": instead}
                if instead
                else _("%(param)s: not sent") % {"param": param}
                for param, instead in sorted((params or {}).items())
            ]
            lines.append(f"{model}: {'; '.join(said)}")
        return "\n".join(lines) or _("nothing yet")

    @admin.display(description=_("stored key"))
    def stored_key(self, obj):
        """At most the last four characters of a key entered on the Connect a model page."""
        if not obj.api_key_sealed:
            return _("none (Connect a model stores one)")
        tail = obj.key_tail()
        return _("set, ends in …%(tail)s") % {"tail": tail} if tail else _("set")

    def response_add(self, request, obj, post_url_continue=None):
        return self._then_test_or_fetch(request, obj) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request, obj):
        return self._then_test_or_fetch(request, obj) or super().response_change(request, obj)

    def _then_test_or_fetch(self, request, obj):
        """The page's "Test connection" and "Fetch models" buttons: the form was saved, then this."""
        if "_test" in request.POST:
            outcome = provider_tools.check_connection(obj, user=request.user)
        elif "_fetch" in request.POST:
            outcome = provider_tools.fetch_models(obj, user=request.user)
        else:
            return None
        self.message_user(request, _waiting(obj, outcome), messages.SUCCESS if outcome.ok else messages.ERROR)
        return HttpResponseRedirect(reverse("admin:debates_provider_change", args=[obj.pk]))

    @admin.display(description=_("models"))
    def model_count(self, obj):
        return len(obj.offered_models)

    @admin.action(description=_("Test connection"))
    def test_connection(self, request, queryset):
        for provider in queryset:
            outcome = provider_tools.check_connection(provider, user=request.user)
            self.message_user(request, _waiting(provider, outcome), messages.SUCCESS if outcome.ok else messages.ERROR)

    @admin.action(description=_("Fetch models (the start form offers them)"))
    def fetch_models(self, request, queryset):
        for provider in queryset:
            outcome = provider_tools.fetch_models(provider, user=request.user)
            self.message_user(request, _waiting(provider, outcome), messages.SUCCESS if outcome.ok else messages.ERROR)

    @admin.action(description=_("Approve: offer to users"), permissions=["approve"])
    def approve(self, request, queryset):
        count = queryset.update(approved=True, approved_by=request.user)
        self.message_user(
            request,
            ngettext("%(count)d provider approved.", "%(count)d providers approved.", count) % {"count": count},
            messages.SUCCESS,
        )

    @admin.action(description=_("Withdraw approval"), permissions=["approve"])
    def withdraw_approval(self, request, queryset):
        count = queryset.update(approved=False, approved_by=None)
        self.message_user(
            request,
            ngettext("%(count)d provider no longer offered.", "%(count)d providers no longer offered.", count)
            % {"count": count},
            messages.SUCCESS,
        )

    @admin.action(description=_("Make it the default for new debates"), permissions=["change"])
    def make_default(self, request, queryset):
        """What "Use this model" on the Connect page does, from the list (exactly one row)."""
        if queryset.count() != 1:
            self.message_user(request, _("Choose exactly one provider to make the default."), messages.ERROR)
            return
        default_model.choose(queryset.get())
        self.message_user(request, _("New debates run on %(running)s.") % {"running": default_model.running().label})

    @admin.action(
        description=_("Stop being the default (new debates use the environment's model)"), permissions=["change"]
    )
    def drop_default(self, request, queryset):
        """The way back from "Use this model": new debates run on the environment's model again."""
        queryset.filter(is_default=True).update(is_default=False)
        self.message_user(request, _("New debates run on %(running)s.") % {"running": default_model.running().label})

    def has_approve_permission(self, request):
        return request.user.is_superuser

    def save_model(self, request, obj, form, change):
        if request.user.is_superuser:
            if not change:
                obj.approved, obj.approved_by = True, request.user
        elif not change or set(self.REVIEWED) & set(form.changed_data):
            obj.approved, obj.approved_by = False, None
        super().save_model(request, obj, form, change)
        if obj.api_key_sealed and "base_url" in form.changed_data:
            # The stored key stays bound to the origin it was entered for: say so now, not at the
            # first debate (moving it back finds the key again).
            _key, why = clients.provider_key(obj)
            if why:
                self.message_user(request, f"{obj.name}: {why}", messages.WARNING)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        form.user = request.user  # where this user may point it (ProviderForm.clean_base_url)
        form.base_fields["api_key_env"].help_text = _(
            "Name of the environment variable holding the key, never the key. This server allows: "
            "%(allowed)s (set by AGORA_PROVIDER_KEY_VARS). Never allowed: SECRET_KEY, DATABASE_URL, "
            "REDIS_URL or any other secret of this server, since the key is sent to the base URL above."
        ) % {"allowed": provider_keys.describe_allowed()}
        return form


def _waiting(provider, outcome) -> str:
    if outcome.ok and not provider.approved:
        return outcome.message + " " + _("Users are offered it once a superuser approves it.")
    return outcome.message


@admin.register(SearchProvider)
class SearchProviderAdmin(admin.ModelAdmin):
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ("name", "kind", "base_url", "api_key_env", "enabled")
    list_filter = ("kind", "enabled")
    actions = ("test_search",)
    fieldsets = (
        (None, {"fields": ("name", "kind", "base_url", "enabled")}),
        (
            _("Key and limits"),
            {
                "fields": ("api_key_env", "timeout"),
                "description": _("The key itself stays in the server's environment; name the variable that holds it."),
            },
        ),
    )

    @admin.action(description=_("Test search"))
    def test_search(self, request, queryset):
        for provider in queryset:
            outcome = provider_tools.check_search(provider)
            self.message_user(request, outcome.message, messages.SUCCESS if outcome.ok else messages.ERROR)


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    autocomplete_fields = ("persona",)


class TurnInline(admin.TabularInline):
    model = Turn
    extra = 0
    can_delete = False
    fields = ("position", "key", "speaker_name", "state", "summary", "prompt_tokens", "completion_tokens", "error")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Debate)
class DebateAdmin(admin.ModelAdmin):
    list_display = ("id", "question_short", "format", "status", "owner", "total_tokens", "created_at")
    list_filter = ("format", "status", "shared")
    search_fields = ("question", "topic_slug")
    readonly_fields = (
        "seq",
        "share_token",
        "created_at",
        "started_at",
        "finished_at",
        "prompt_tokens",
        "completion_tokens",
        "tokens_estimated",
        "token_cap",
    )
    inlines = [SeatInline, TurnInline]

    @admin.display(description=_("question"))
    def question_short(self, obj):
        return obj.question[:80]


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = ("debate", "key", "speaker_name", "state", "prompt_tokens", "completion_tokens")
    list_filter = ("state", "phase")
    search_fields = ("key", "speaker_name", "text")
    readonly_fields = [f.name for f in Turn._meta.fields]

    def has_add_permission(self, request):
        return False


admin.site.register(Report)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens for the JSON API. A new one's token is shown once, in the message after saving;
    only its fingerprint is kept. A token acts as its user, so only a superuser may make one for
    someone else; whose it is and when it was revoked never change after it is made (revoking is
    the action, and a revoked token stays revoked)."""

    list_display = ("name", "user", "prefix", "read_only", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at", "read_only")
    search_fields = ("name", "user__username", "prefix")
    autocomplete_fields = ("user",)
    actions = ("revoke",)

    def get_fields(self, request, obj=None):
        if obj is not None:
            return ("user", "name", "prefix", "read_only", "created_at", "last_used_at", "revoked_at")
        return ("user", "name", "read_only") if request.user.is_superuser else ("name", "read_only")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        # The scope is chosen when the token is made, as its user is: a new token for another scope.
        return ("user", "prefix", "read_only", "created_at", "last_used_at", "revoked_at")

    def save_model(self, request, obj, form, change):
        token = None
        if not change:
            if not request.user.is_superuser:
                obj.user = request.user  # a token acts as its user: staff make their own only
            token = tokens.fill(obj)
        super().save_model(request, obj, form, change)
        if token:
            self.message_user(
                request,
                _("The new token, shown only this once (copy it now): %(token)s") % {"token": token},
                messages.WARNING,
            )

    @admin.action(description=_("Revoke selected tokens"), permissions=["change"])
    def revoke(self, request, queryset):
        count = tokens.revoke_all(queryset)
        self.message_user(
            request,
            ngettext(
                "%(count)d token revoked; its open event streams end within seconds.",
                "%(count)d tokens revoked; their open event streams end within seconds.",
                count,
            )
            % {"count": count},
            messages.SUCCESS,
        )
