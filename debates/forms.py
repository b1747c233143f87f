"""The start form: one place that says what a valid debate is, for the web page and the CLI."""

from __future__ import annotations

from collections import OrderedDict

from django import forms
from django.db import transaction
from django.utils.translation import gettext_lazy as _

from agora.text import strip_invisible
from debates.models import Debate, Provider, Seat
from personas.models import MAX_ROUNDS, Format, Library, Persona

MAX_TOPIC = 1000
MAX_EVIDENCE = 20000
MODES = {
    "roundtable": [
        ("standard", _("standard (4–5 roles, 3 rounds)")),
        ("quick", _("quick (3 roles, 1 round)")),
        ("deep", _("deep (5–7 roles, 3 rounds + research)")),
    ],
    "moderated": [
        ("round-robin", _("round-robin")),
        ("position-based", _("position-based")),
        ("free-form", _("free-form")),
    ],
}
ROLE_COUNTS = {"quick": (3, 3), "standard": (4, 5), "deep": (5, 7)}
SEATS = {"duel": (2, 2), "panel": (3, 5), "moderated": (2, 8)}
MODERATED_MAX_ROUNDS = 6


def persona_choices():
    groups = OrderedDict()
    for persona in Persona.objects.select_related("library").order_by("library__name", "kind", "tier", "slug"):
        # Shown as option text: without direction overrides or zero-width characters (see `visible`).
        label = f"{strip_invisible(persona.name)} · {persona.slug}"
        groups.setdefault(strip_invisible(persona.library.name), []).append((persona.slug, label))
    return list(groups.items())


class DebateForm(forms.Form):
    topic = forms.CharField(label=_("Question"), max_length=MAX_TOPIC, widget=forms.Textarea(attrs={"rows": 3}))
    format = forms.ChoiceField(label=_("Format"), choices=Format.choices, initial=Format.DUEL)
    personas = forms.MultipleChoiceField(
        label=_("Personas at the table"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 12}),
        help_text=_("Leave empty to let Agora choose (duel pairing, the five panel roles, recommended roles)."),
    )
    rounds = forms.IntegerField(label=_("Rounds"), required=False, min_value=1, max_value=MAX_ROUNDS)
    mode = forms.ChoiceField(
        label=_("Mode"), required=False, choices=[("", "—")] + MODES["roundtable"] + MODES["moderated"]
    )
    positions = forms.CharField(
        label=_("Positions"),
        required=False,
        max_length=2000,
        help_text=_("Position-based debates: slug=for, slug=against (comma-separated)."),
    )
    research_budget = forms.ChoiceField(
        label=_("Research budget"),
        initial="standard",
        required=False,
        choices=[("light", _("light")), ("standard", _("standard")), ("deep", _("deep"))],
    )
    no_interrupt = forms.BooleanField(label=_("No interrupt (run through the roundtable checkpoint)"), required=False)
    evidence = forms.CharField(
        label=_("Material for the evidence pack"),
        required=False,
        max_length=MAX_EVIDENCE,
        widget=forms.Textarea(attrs={"rows": 4}),
    )
    provider = forms.ModelChoiceField(
        label=_("Provider"), required=False, queryset=Provider.objects.all(), empty_label=_("default (environment)")
    )
    model = forms.CharField(label=_("Model"), required=False, max_length=120)
    seat_models = forms.CharField(
        label=_("Per-seat models"),
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=_("One per line: slug = model, or slug = provider/model."),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["personas"].choices = persona_choices()

    def clean_topic(self):
        topic = strip_invisible(self.cleaned_data["topic"]).strip()
        if not topic:
            raise forms.ValidationError(_("Ask a question: it cannot be empty."))
        return topic

    def clean_research_budget(self):
        return self.cleaned_data.get("research_budget") or "standard"

    def clean_evidence(self):
        return strip_invisible(self.cleaned_data.get("evidence", ""))

    def clean_personas(self):
        slugs = self.data.getlist("personas") if hasattr(self.data, "getlist") else self.data.get("personas", [])
        slugs = [s for s in slugs if s]
        duplicates = sorted({s for s in slugs if slugs.count(s) > 1})
        if duplicates:
            raise forms.ValidationError(
                _("Each persona can sit only once: %(dups)s.") % {"dups": ", ".join(duplicates)}
            )
        found = {p.slug: p for p in Persona.objects.filter(slug__in=slugs).select_related("library")}
        unknown = [s for s in slugs if s not in found]
        if unknown:
            raise forms.ValidationError(_("Unknown persona: %(slugs)s.") % {"slugs": ", ".join(unknown)})
        hosts = [found[s].name for s in slugs if found[s].kind != Persona.Kind.DEBATER]
        if hosts:
            raise forms.ValidationError(
                _("%(names)s hosts or moderates and cannot debate; choose debaters.") % {"names": ", ".join(hosts)}
            )
        return [found[s] for s in slugs]

    def clean(self):
        data = super().clean()
        fmt = data.get("format")
        personas = data.get("personas")
        if not fmt or personas is None:
            return data
        mode = data.get("mode") or ""
        allowed_modes = [m for m, _label in MODES.get(fmt, [])]
        if mode and mode not in allowed_modes:
            self.add_error("mode", _("This format has no mode “%(mode)s”.") % {"mode": mode})
            return data
        self._check_seats(fmt, mode, personas)
        self._check_rounds(fmt, data.get("rounds"), personas)
        data["position_map"] = self._check_positions(fmt, mode, personas, data.get("positions", ""))
        data["seat_model_map"] = self._parse_seat_models(personas, data.get("seat_models", ""))
        return data

    def _check_seats(self, fmt, mode, personas):
        count = len(personas)
        if fmt == "roundtable":
            low, high = ROLE_COUNTS[mode or "standard"]
        else:
            low, high = SEATS[fmt]
        if count == 0 and fmt != "moderated":
            return  # the engine chooses: pairing, the bundled five roles, recommended roles
        if not low <= count <= high:
            bounds = str(low) if low == high else f"{low}–{high}"
            self.add_error(
                "personas",
                _("%(fmt)s needs %(bounds)s personas; you chose %(count)d.")
                % {"fmt": fmt, "bounds": bounds, "count": count},
            )

    def _check_rounds(self, fmt, rounds, personas):
        if rounds is None:
            return
        if fmt in ("panel", "roundtable"):
            self.add_error("rounds", _("This format sets its own rounds; leave Rounds empty."))
        elif fmt == "duel":
            # The seated masters' own library decides (the engine runs on its protocol); with
            # nobody chosen, the strictest duel library does, since any of them may be paired.
            libraries = {p.library for p in personas} or set(Library.objects.filter(format="duel"))
            maximum = min((lib.max_rounds for lib in libraries), default=MAX_ROUNDS)
            if rounds > maximum:
                self.add_error("rounds", _("A duel in this library has at most %(max)d rounds.") % {"max": maximum})
        elif fmt == "moderated" and rounds > MODERATED_MAX_ROUNDS:
            self.add_error(
                "rounds", _("A moderated debate has at most %(max)d rounds.") % {"max": MODERATED_MAX_ROUNDS}
            )

    def _check_positions(self, fmt, mode, personas, text) -> dict[str, str]:
        positions = {}
        slugs = {p.slug for p in personas}
        for item in filter(None, (part.strip() for part in text.replace("\n", ",").split(","))):
            slug, _sep, side = (x.strip() for x in item.partition("="))
            if slug not in slugs or side not in ("for", "against"):
                self.add_error(
                    "positions", _("“%(item)s” is not slug=for or slug=against for a chosen persona.") % {"item": item}
                )
                return {}
            positions[slug] = side
        if fmt == "moderated" and mode == "position-based":
            sides = set(positions.values())
            if not {"for", "against"} <= sides:
                self.add_error("positions", _("Position-based needs at least one persona for and one against."))
        return positions

    def _parse_seat_models(self, personas, text) -> dict[str, tuple[Provider | None, str]]:
        result = {}
        slugs = {p.slug for p in personas}
        for line in filter(None, (line.strip() for line in text.splitlines())):
            slug, _sep, spec = (x.strip() for x in line.partition("="))
            if slug not in slugs or not spec:
                self.add_error("seat_models", _("“%(line)s”: use slug = model for a chosen persona.") % {"line": line})
                return {}
            provider_name, _slash, model = spec.rpartition("/") if "/" in spec else ("", "", spec)
            provider = Provider.objects.filter(name=provider_name).first() if provider_name else None
            if provider_name and provider is None:
                self.add_error("seat_models", _("Unknown provider “%(name)s”.") % {"name": provider_name})
                return {}
            result[slug] = (provider, model)
        return result


OPTION_FIELDS = ("rounds", "mode", "research_budget", "no_interrupt", "evidence")


@transaction.atomic
def save_debate(form: DebateForm, owner=None) -> Debate:
    data = form.cleaned_data
    options = {k: data[k] for k in OPTION_FIELDS if data.get(k) not in (None, "", False)}
    debate = Debate.objects.create(
        owner=owner,
        question=data["topic"],
        format=data["format"],
        options=options,
        provider=data.get("provider"),
        model=data.get("model", ""),
    )
    for order, persona in enumerate(data["personas"]):
        provider, model = data["seat_model_map"].get(persona.slug, (None, ""))
        Seat.objects.create(
            debate=debate,
            persona=persona,
            order=order,
            position=data["position_map"].get(persona.slug, ""),
            provider=provider,
            model=model,
        )
    return debate


def create_debate(values: dict, owner=None) -> tuple[Debate | None, dict]:
    """For callers without a request (the CLI): validate `values` as the form would and save."""
    from django.utils.datastructures import MultiValueDict

    data = MultiValueDict({k: v if isinstance(v, list) else [v] for k, v in values.items() if v not in (None, "")})
    if values.get("no_interrupt"):
        data["no_interrupt"] = "on"
    form = DebateForm(data)
    if not form.is_valid():
        return None, {field: [str(m) for m in msgs] for field, msgs in form.errors.items()}
    return save_debate(form, owner), {}
