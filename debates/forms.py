"""The start form: one place that says what a valid debate is, for the web page and the CLI.

Everything that depends on the format (its seats, modes, rounds, options, what it can check before
a debate exists) is asked of the format object (`debates.engine.registry`); the form only turns
fields into the format's options and its answers into errors beside the fields.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict

from django import forms
from django.db import transaction
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agora.text import strip_invisible
from debates.engine import registry
from debates.engine.spec import UnknownOptions
from debates.models import Debate, Provider, Seat
from debates.specs import library_spec, persona_spec
from personas.models import Persona

MAX_TOPIC = 1000
MAX_EVIDENCE = 20000


def persona_choices():
    groups = OrderedDict()
    for persona in Persona.objects.select_related("library").order_by("library__name", "kind", "tier", "slug"):
        # Shown as option text: without direction overrides or zero-width characters (see `visible`).
        label = f"{strip_invisible(persona.name)} · {persona.slug}"
        groups.setdefault(strip_invisible(persona.library.name), []).append((persona.slug, label))
    return list(groups.items())


def format_choices():
    return [(fmt.name, _(fmt.label)) for fmt in registry.all_formats()]


def mode_choices():
    modes = [(m.name, _(m.label)) for fmt in registry.all_formats() for m in fmt.modes]
    return [("", "—"), *modes]


class DebateForm(forms.Form):
    topic = forms.CharField(label=_("Question"), max_length=MAX_TOPIC, widget=forms.Textarea(attrs={"rows": 3}))
    format = forms.ChoiceField(label=_("Format"), choices=format_choices, initial=lambda: registry.names()[0])
    personas = forms.MultipleChoiceField(
        label=_("Personas at the table"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 12}),
        help_text=_("Leave empty to let Agora choose (duel pairing, the five panel roles, recommended roles)."),
    )
    rounds = forms.IntegerField(label=_("Rounds"), required=False, min_value=1)
    mode = forms.ChoiceField(label=_("Mode"), required=False, choices=mode_choices)
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
    model = forms.CharField(
        label=_("Model"),
        required=False,
        max_length=120,
        widget=forms.TextInput(attrs={"list": "provider-models", "autocomplete": "off"}),
        help_text=_("Empty: the provider's default model. The list shows the models each provider offers."),
    )
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
        fmt_name, personas = data.get("format"), data.get("personas")
        if not fmt_name or personas is None:
            return data
        fmt = registry.get(fmt_name)
        if data.get("mode") and fmt.mode(data["mode"]) is None:
            self.add_error("mode", _("This format has no mode “%(mode)s”.") % {"mode": data["mode"]})
            return data
        if data.get("rounds") is not None and not fmt.rounds.user_sets:
            self.add_error("rounds", _("This format sets its own rounds; leave Rounds empty."))
            return data
        try:
            data["options"] = fmt.Options.from_dict(self._option_values(fmt, data))
        except (UnknownOptions, TypeError, ValueError) as error:  # a field the format does not take
            self.add_error(None, str(error))
            return data
        library = library_spec(fmt, personas)
        question = data.get("topic", "")  # an invalid question has its own error; seats are still checked
        problems = fmt.check(question, [persona_spec(p) for p in personas], data["options"], library)
        for field, problem in problems.items():
            self.add_error(field if field in self.fields else None, problem.render(gettext))
        mode = fmt.mode(getattr(data["options"], "mode", ""))
        data["position_map"] = self._check_positions(mode, personas, data.get("positions", ""))
        data["seat_model_map"] = self._parse_seat_models(personas, data.get("seat_models", ""))
        return data

    def _option_values(self, fmt, data) -> dict:
        """The form's values for the options this format takes (others are not its business)."""
        names = {f.name for f in dataclasses.fields(fmt.Options)} & set(self.fields)
        return {name: data[name] for name in names if data.get(name) not in (None, "", False)}

    def _check_positions(self, mode, personas, text) -> dict[str, str]:
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
        if mode and mode.positions and personas and not {"for", "against"} <= set(positions.values()):
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


@transaction.atomic
def save_debate(form: DebateForm, owner=None) -> Debate:
    data = form.cleaned_data
    debate = Debate.objects.create(
        owner=owner,
        question=data["topic"],
        format=data["format"],
        options=data["options"].as_dict(),
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

    data = MultiValueDict(
        {k: v if isinstance(v, list) else [v] for k, v in values.items() if v not in (None, "", False)}
    )
    if values.get("no_interrupt"):
        data["no_interrupt"] = "on"
    form = DebateForm(data)
    if not form.is_valid():
        return None, {field: [str(m) for m in msgs] for field, msgs in form.errors.items()}
    return save_debate(form, owner), {}
