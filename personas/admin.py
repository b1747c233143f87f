"""The curators' admin: libraries, personas with their outgoing critiques, pairing rules, domain
templates, the critique coverage view, and manifest import / export (docs/manifest.md)."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _

from agora.text import strip_invisible
from personas.coverage import coverage
from personas.manifest.errors import ManifestInvalid
from personas.manifest.io import export_library, import_manifest
from personas.manifest.text import MAX_MANIFEST_BYTES, dump_manifest, parse_manifest
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona, pair_key

# Importing a manifest writes all of these; the view asks for every one rather than guess.
IMPORT_PERMISSIONS = (
    "personas.add_library",
    "personas.change_library",
    "personas.add_persona",
    "personas.change_persona",
    "personas.delete_persona",
)


# --- libraries -----------------------------------------------------------------------------------


class ManifestImportForm(forms.Form):
    file = forms.FileField(label=_("Manifest file (.json)"), required=False)
    text = forms.CharField(
        label=_("…or paste the manifest"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "cols": 100, "spellcheck": "false"}),
    )
    replace = forms.BooleanField(
        label=_("Update the library in place if it already exists"),
        required=False,
        initial=True,
    )

    def clean(self):
        data = super().clean()
        upload, text = data.get("file"), data.get("text", "")
        if upload and text.strip():
            raise forms.ValidationError(_("Give a file or pasted text, not both."))
        if not upload and not text.strip():
            raise forms.ValidationError(_("Upload a manifest file or paste one."))
        if upload and upload.size > MAX_MANIFEST_BYTES:
            raise forms.ValidationError(
                _("The file is %(size)s bytes; the limit is %(limit)s.")
                % {"size": upload.size, "limit": MAX_MANIFEST_BYTES}
            )
        return data

    def manifest_bytes(self) -> bytes:
        upload = self.cleaned_data.get("file")
        return upload.read() if upload else self.cleaned_data["text"].encode("utf-8", "surrogatepass")


@admin.register(Library)
class LibraryAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "format", "persona_count", "updated_at", "export_link")
    ordering = ("slug",)  # annotated querysets drop Meta.ordering
    list_filter = ("format",)
    search_fields = ("slug", "name", "description")
    actions = ("export_selected",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(persona_count=Count("personas"))

    @admin.display(description=_("personas"), ordering="persona_count")
    def persona_count(self, obj):
        return obj.persona_count

    @admin.display(description=_("manifest"))
    def export_link(self, obj):
        return format_html('<a href="{}">{}</a>', reverse("admin:personas_library_export", args=[obj.pk]), _("Export"))

    @admin.action(description=_("Export the selected library as JSON"))
    def export_selected(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, _("Select exactly one library to export."), messages.WARNING)
            return None
        return self.download(queryset.get())

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("import/", view(self.import_view), name="personas_library_import"),
            path("<int:pk>/export/", view(self.export_view), name="personas_library_export"),
            *super().get_urls(),
        ]

    def export_view(self, request, pk):
        library = get_object_or_404(Library, pk=pk)
        if not self.has_view_permission(request, library):
            raise PermissionDenied
        return self.download(library)

    def download(self, library: Library) -> HttpResponse:
        text = dump_manifest(export_library(library))
        response = HttpResponse(text, content_type="application/json; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{library.slug}.json"'
        return response

    def import_view(self, request):
        if not request.user.has_perms(IMPORT_PERMISSIONS):
            raise PermissionDenied
        form = ManifestImportForm(request.POST, request.FILES) if request.method == "POST" else ManifestImportForm()
        errors = []
        if request.method == "POST" and form.is_valid():
            try:
                data = parse_manifest(form.manifest_bytes())
                # Recorded as imported, whatever the file says (the roundtable seed's external-import).
                result = import_manifest(data, replace=form.cleaned_data["replace"], source=Persona.Source.EXTERNAL)
            except ManifestInvalid as exc:
                errors = exc.errors
            else:
                self.message_user(request, result.summary(), messages.SUCCESS)
                return redirect("admin:personas_library_change", result.library.pk)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Import a library manifest"),
            "opts": self.model._meta,
            "form": form,
            "manifest_errors": errors,
            "max_megabytes": MAX_MANIFEST_BYTES // (1024 * 1024),
        }
        return TemplateResponse(request, "admin/personas/library/import.html", context)


# --- personas ------------------------------------------------------------------------------------


class CrossCritiqueInline(admin.StackedInline):
    """The persona's outgoing entries: what it holds against others (A→B only; B→A is B's page).
    Stacked, each language's point and citation on lines of their own: as a table's columns, both
    languages made the page scroll sideways at 1280 px beside the admin's sidebar."""

    model = CrossCritique
    fk_name = "source"
    fields = (("target", "order"), "point", "point_en", "citation", "citation_en")
    autocomplete_fields = ("target",)
    extra = 0
    verbose_name = _("outgoing cross-critique entry")
    verbose_name_plural = _("outgoing cross-critique entries")
    formfield_overrides = {
        CrossCritique._meta.get_field("point").__class__: {"widget": forms.Textarea(attrs={"rows": 3, "cols": 60})},
    }


@admin.register(Persona)
class PersonaAdmin(admin.ModelAdmin):
    list_display = (
        "slug",
        "name",
        "name_en",
        "library",
        "kind",
        "tier",
        "tradition",
        "source",
        "critiques_out",
        "critiques_in",
    )
    list_filter = ("library", "tier", "source", "tradition", "kind")
    ordering = ("library__slug", "slug")  # annotated querysets drop Meta.ordering
    list_select_related = ("library",)
    # keywords are searched in get_search_results (a JSON column).
    search_fields = ("slug", "name", "name_en", "tradition", "description", "description_en")
    inlines = (CrossCritiqueInline,)
    readonly_fields = ("incoming_critiques", "updated_at", "distilled_by", "distilled_at")
    fieldsets = (
        (None, {"fields": ("library", "slug", "name", "name_en", "kind", "tier", "role", "tradition", "keywords")}),
        (_("Description"), {"fields": ("description", "description_en")}),
        (_("Persona text"), {"fields": Persona.TEXT_FIELDS}),
        (_("Persona text in English"), {"fields": Persona.TEXT_FIELDS_EN}),
        (
            _("Format-specific"),
            {"fields": ("veto_right", "preferred_model", "schema_type", "density_score", "source")},
        ),
        # A distilled character (the roundtable's L3): who had it made, when, and what it rests on.
        (_("Provenance"), {"fields": ("distilled_by", "distilled_at", "sources")}),
        (_("Received"), {"fields": ("incoming_critiques", "updated_at")}),
    )

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                n_out=Count("critiques_given", distinct=True),
                n_in=Count("critiques_received", distinct=True),
            )
        )

    def get_search_results(self, request, queryset, search_term):
        # Search the plain rows, then keep the changelist's annotated queryset.
        matched, _duplicates = super().get_search_results(request, Persona.objects.all(), search_term)
        term = search_term.strip().casefold()
        if not term:
            return queryset, False
        # JSON columns store non-ASCII escaped (\uXXXX), so a Chinese keyword never matches the
        # column text; compare against the decoded lists instead.
        by_keyword = [
            pk
            for pk, keywords in Persona.objects.values_list("pk", "keywords")
            if any(term in str(k).casefold() for k in keywords or [])
        ]
        return queryset.filter(Q(pk__in=matched.values("pk")) | Q(pk__in=by_keyword)), False

    @admin.display(description=_("critiques given"), ordering="n_out")
    def critiques_out(self, obj):
        return obj.n_out

    @admin.display(description=_("critiques received"), ordering="n_in")
    def critiques_in(self, obj):
        return obj.n_in

    @admin.display(description=_("incoming cross-critique entries"))
    def incoming_critiques(self, obj):
        if obj.pk is None:
            return "—"
        sources = (
            obj.critiques_received.values("source__slug", "source__name")
            .annotate(n=Count("id"))
            .order_by("source__slug")
        )
        if not sources:
            return _("none")
        coverage = reverse("admin:personas_persona_coverage")
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                '<li><a href="{}?a={}&amp;b={}">{} ({}) → {}: {}</a></li>',
                [
                    (
                        coverage,
                        s["source__slug"],
                        obj.slug,
                        strip_invisible(s["source__name"]),
                        s["source__slug"],
                        obj.slug,
                        s["n"],
                    )
                    for s in sources
                ],
            ),
        )

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("coverage/", view(self.coverage_view), name="personas_persona_coverage"),
            *super().get_urls(),
        ]

    def coverage_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        context = {
            **self.admin_site.each_context(request),
            "title": _("Cross-critique coverage"),
            "opts": self.model._meta,
            **coverage(request.GET.get("library", ""), request.GET.get("a", ""), request.GET.get("b", "")),
        }
        return TemplateResponse(request, "admin/personas/persona/coverage.html", context)


# --- critiques, pairing rules, templates -----------------------------------------------------------


@admin.register(CrossCritique)
class CrossCritiqueAdmin(admin.ModelAdmin):
    list_display = ("source", "target", "short_point", "citation", "order")
    list_filter = ("source__library", "target__library", "source__tier")
    list_select_related = ("source", "target")
    search_fields = ("source__slug", "source__name", "target__slug", "target__name", "point", "citation")
    autocomplete_fields = ("source", "target")

    @admin.display(description=_("point"))
    def short_point(self, obj):
        return obj.point if len(obj.point) <= 80 else obj.point[:79] + "…"


class PairingRuleForm(forms.ModelForm):
    class Meta:
        model = PairingRule
        fields = ("library", "label", "keywords", "persona_a", "persona_b", "default_rounds", "order")

    def clean(self):
        data = super().clean()
        first, second, library = data.get("persona_a"), data.get("persona_b"), data.get("library")
        if first and second:
            # pair_key is derived in save() and is no form field, so the form's constraint checks
            # skip the unique (library, pair_key); check it here rather than fail at save time.
            self.instance.pair_key = pair_key(first.slug, second.slug)
            clash = PairingRule.objects.filter(library=library, pair_key=self.instance.pair_key)
            if library and clash.exclude(pk=self.instance.pk).exists():
                raise forms.ValidationError(
                    _("%(library)s already has a rule for the pair %(key)s.")
                    % {"library": library, "key": self.instance.pair_key}
                )
        return data


@admin.register(PairingRule)
class PairingRuleAdmin(admin.ModelAdmin):
    form = PairingRuleForm
    list_display = ("pair_key", "label", "library", "default_rounds", "order")
    list_filter = ("library",)
    list_select_related = ("library",)
    search_fields = ("label", "pair_key", "persona_a__slug", "persona_b__slug")
    autocomplete_fields = ("persona_a", "persona_b")
    readonly_fields = ("pair_key",)


@admin.register(DomainTemplate)
class DomainTemplateAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "name_en", "library", "role_count")
    ordering = ("library__slug", "slug")  # annotated querysets drop Meta.ordering
    list_filter = ("library",)
    search_fields = ("slug", "name", "name_en")
    filter_horizontal = ("roles",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(role_count=Count("roles"))

    @admin.display(description=_("roles"), ordering="role_count")
    def role_count(self, obj):
        return obj.role_count
