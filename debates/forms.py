"""The start form: one place that says what a valid debate is, for the web page and the CLI.

Everything that depends on the format (its seats, modes, rounds, options, what it can check before
a debate exists) is asked of the format object (`debates.engine.registry`); the form only turns
fields into the format's options and its answers into errors beside the fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field

from django import forms
from django.conf import settings
from django.db import transaction
from django.forms import BoundField
from django.utils.translation import get_language, gettext
from django.utils.translation import gettext_lazy as _

from agora.text import strip_invisible
from debates import default_model, documents, documents_kept, model_choice, options
from debates.clients import effective_model, is_bundled, reasons
from debates.engine import registry
from debates.engine.format import Format, Mode
from debates.engine.options import Option
from debates.engine.spec import UnknownOptions
from debates.models import REASONING_EFFORTS, Debate, Provider, SearchProvider, Seat
from debates.providers.reasoning import EFFORTS
from debates.specs import library_spec, persona_spec
from personas.models import Library, Persona

MAX_TOPIC = 1000
SIDES = ("for", "against")


def format_choices():
    return [(fmt.name, _(fmt.label)) for fmt in registry.all_formats()]


def human_field(slug: str) -> str:
    """The checkbox on a persona's card that seats the person starting the debate there."""
    return f"human-{slug}"


def invite_field(slug: str) -> str:
    """The text field on a persona's card naming the user invited to take its seat."""
    return f"invite-{slug}"


def position_field(slug: str) -> str:
    """The form field that carries one seat's side (radio buttons on its persona card)."""
    return f"position-{slug}"


class TopicField(forms.CharField):
    """Browsers send a textarea's line breaks as CRLF but show and count each as one character:
    count as the page's counter does, so a question it accepts is not refused here."""

    def to_python(self, value):
        value = super().to_python(value)
        return value.replace("\r\n", "\n") if value else value


class PersonaSlugsField(forms.Field):
    """The chosen personas' slugs, in seat order. Not a choice field: its "not one of the
    available choices" error would name the slug; `clean_personas` says what is wrong in words."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value):
        if not value:
            return []
        return [value] if isinstance(value, str) else [str(v) for v in value]


NO_RESEARCH = ""
ENVIRONMENT_SEARCH = "env"


def search_choices():
    """Where a debate may search: nowhere, the server's own search (the environment's), or a
    Search provider row from the admin."""
    from debates import search_clients
    from debates.models import SearchProvider

    choices = [(NO_RESEARCH, _("No web research"))]
    if search_clients.environment_configured():
        choices.append(
            (ENVIRONMENT_SEARCH, _("Server search (%(backend)s)") % {"backend": search_clients.describe_environment()})
        )
    choices += [(f"p{p.pk}", p.name) for p in SearchProvider.objects.filter(enabled=True)]
    return choices


def default_search() -> str:
    choices = search_choices()
    return choices[1][0] if len(choices) > 1 else NO_RESEARCH


class ProviderChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj) -> str:
        return f"{obj.name} — {obj.default_model}" if obj.default_model else obj.name


class DebateForm(forms.Form):
    topic = TopicField(label=_("Question"), max_length=MAX_TOPIC, widget=forms.Textarea(attrs={"rows": 3}))
    format = forms.ChoiceField(
        label=_("Format"),
        choices=format_choices,
        initial=lambda: registry.names()[0],
        error_messages={"invalid_choice": _("Choose one of the formats in the list.")},
    )
    personas = PersonaSlugsField(label=_("Personas at the table"), required=False)
    # Then every format's options, made from their descriptions (`debates.options`, in __init__).
    search = forms.ChoiceField(
        label=_("Web research"),
        required=False,
        choices=search_choices,
        widget=forms.Select(attrs={"aria-describedby": "id_search_help"}),
        error_messages={"invalid_choice": _("Choose one of the search providers in the list.")},
        help_text=_(
            "The panel searches for its evidence pack (and its verifier may search in R2), the roundtable in deep "
            "mode, a moderated debate when asked; every page found becomes a numbered source."
        ),
    )
    stand_in = forms.ChoiceField(
        label=_("If I miss my turn"),
        required=False,
        initial="llm",
        choices=[("llm", _("a model speaks for me")), ("pass", _("my turn passes"))],
        help_text=_("Tick “I take this seat” on a persona to write its turns yourself, within the time limit."),
    )
    provider = ProviderChoiceField(
        label=_("Provider"),
        required=False,
        # A provider waiting for a superuser's approval is neither listed nor accepted.
        queryset=Provider.objects.filter(approved=True),
        empty_label=_("default (environment)"),
        error_messages={
            "invalid_choice": _(
                "Choose one of the providers in the list (a provider that staff add is offered once a "
                "superuser approves it)."
            )
        },
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
        help_text=_(
            "One line per seat: id = model, or id = provider/model (each card shows its persona's id). After a "
            "reasoning model, low, medium or high sets how hard it thinks: id = o4-mini high."
        ),
    )
    reasoning_effort = forms.ChoiceField(
        label=_("Reasoning effort"),
        required=False,
        choices=[("", _("the provider's setting"))] + REASONING_EFFORTS,
        help_text=_(
            "For a reasoning model (o3, o4-mini, gpt-5, deepseek-reasoner…): how hard it thinks before it "
            "answers. Thinking costs output tokens."
        ),
        error_messages={"invalid_choice": _("Choose low, medium or high, or leave it empty.")},
    )

    def __init__(self, *args, characters=(), user=None, **kwargs):
        kwargs.setdefault("label_suffix", "")  # labels read like the legends beside them: no colon
        super().__init__(*args, **kwargs)
        if self.is_bound and self.data.get(SWITCH_FIELD):  # "Start as …" under a refusal
            self.data = switched(self.data)
        # Who starts the debate: a user who is not staff names only the models a provider lists
        # (`debates.model_choice`). None: the operator's own terminal (the CLI), which names any.
        self.user = user
        # Distilled characters confirmed on this page (unsaved rows, `debates.characters`): seated
        # after the chosen personas, saved with the debate.
        self.characters = list(characters)
        self.fields["search"].initial = default_search()
        # The empty choice is the environment's model; the one chosen with "Use this model" comes
        # first, and a post (the API's, MCP's, the CLI's) that names no provider gets it too.
        self.fields["provider"].empty_label = default_model.environment_label()
        chosen = default_model.provider()
        if chosen is not None and self.is_bound and "provider" not in self.data:
            self.data = self.data.copy()
            self.data["provider"] = str(chosen.pk)
        if chosen is not None and self.initial.get("provider") is None:
            self.initial = {**self.initial, "provider": chosen.pk}
        # Every registered format's options after the personas, each as the chosen format
        # describes it where it takes it (a format registered later brings its own).
        fixed = list(self.fields.items())
        at = [name for name, _field in fixed].index("personas") + 1
        self.fields = dict(fixed[:at]) | options.form_fields(self.fmt) | dict(fixed[at:])

    @property
    def fmt(self) -> Format:
        """The format the form is about: the one posted (or asked for), else the first."""
        try:
            return registry.get(self["format"].value() or "")
        except ValueError:
            return registry.all_formats()[0]

    @property
    def format_switched(self) -> bool:
        """Posted from a page that showed another format's personas and options (a browser without
        script changed the format and submitted): those fields belong to the other format."""
        shown = self.data.get("part_format") if self.is_bound else None
        return bool(shown) and shown != self.data.get("format")

    def option_fields(self, fmt: Format, place: str = "format") -> list[str]:
        """The options of `fmt` the page draws at `place` (its modes are radio buttons of their own)."""
        return [name for name, opt in fmt.options().items() if opt.place == place and opt.kind != "modes"]

    def placed(self, place: str) -> list[OptionField]:
        """The options every format shares that the page draws at `place` (outside the format's part)."""
        return [
            OptionField(self[name], options.described(name, self.fmt))
            for name, takers in options.union().items()
            if all(opt.place == place for opt in takers.values())
        ]

    def clean_topic(self):
        topic = strip_invisible(self.cleaned_data["topic"]).strip()
        if not topic:
            raise forms.ValidationError(_("Ask a question: it cannot be empty."))
        return topic

    def _clean_documents(self, name: str) -> None:
        """Each upload read into sections now, so a file that cannot be read is refused beside
        its field before anything is created (the browser must choose it again: say so)."""
        if name in self.cleaned_data:
            try:
                self.cleaned_data[name] = self._read_documents(name, self.cleaned_data[name] or [])
            except forms.ValidationError as error:
                self.add_error(name, error)

    def _read_documents(self, name: str, files: list) -> list[dict]:
        carried = self.data.get(options.carried_field(name)) if self.is_bound else ""
        if not files and carried:
            try:
                return documents.options_from_json(carried)
            except documents.DocumentError as error:
                raise forms.ValidationError(documents.translated(error)) from None
        if len(files) > settings.AGORA_UPLOAD_MAX_FILES:
            raise forms.ValidationError(
                _("At most %(count)d files: remove some and choose again.") % {"count": settings.AGORA_UPLOAD_MAX_FILES}
            )
        read = []
        for upload in files:
            if upload.size > settings.AGORA_UPLOAD_MAX_BYTES:  # refused before it is read into memory
                raise forms.ValidationError(
                    _("%(name)s is larger than %(size)s: split it or paste its text, then choose the files again.")
                    % {"name": documents.clean_name(upload.name), "size": options.upload_limit()}
                )
            try:
                # In a child, under limits; a re-post of the same file takes what it read to.
                read.append(documents_kept.read(upload.name, upload.read()))
            except documents.DocumentError as error:
                raise forms.ValidationError(
                    _("%(problem)s Choose the files again.") % {"problem": documents.translated(error)}
                ) from None
        return read

    def clean_search(self):
        """The chosen search provider, checked now: a key variable the server refuses, or a
        backend that is not set up, is said beside the field."""
        from debates import search_clients
        from debates.models import SearchProvider

        value = self.cleaned_data.get("search") or NO_RESEARCH
        if value == NO_RESEARCH:
            return None
        provider = SearchProvider.objects.filter(pk=value[1:]).first() if value.startswith("p") else None
        try:
            search_clients.check(provider)
        except search_clients.SearchMisconfigured as error:
            raise forms.ValidationError(str(error)) from None
        return provider or ENVIRONMENT_SEARCH

    def clean_personas(self):
        slugs = [s for s in self.cleaned_data.get("personas", []) if s]
        if self.format_switched:
            return []  # chosen from another format's library; `clean` says what to do
        found = {p.slug: p for p in Persona.objects.filter(slug__in=slugs).select_related("library")}
        if any(s not in found for s in slugs):
            raise forms.ValidationError(_("A chosen persona is not in the libraries (any more): choose again."))

        def names(chosen):
            return ", ".join(p.called() for p in chosen)

        duplicates = [found[s] for s in dict.fromkeys(s for s in slugs if slugs.count(s) > 1)]
        if duplicates:
            raise forms.ValidationError(_("Each persona can sit only once: %(names)s.") % {"names": names(duplicates)})
        fmt_name = self.cleaned_data.get("format")
        elsewhere = [found[s] for s in slugs if fmt_name and found[s].library.format != fmt_name]
        if elsewhere:
            raise forms.ValidationError(
                _("Not in this format's persona library: %(names)s. Choose among this format's personas.")
                % {"names": names(elsewhere)}
            )
        hosts = [found[s] for s in slugs if found[s].kind != Persona.Kind.DEBATER]
        if hosts:
            raise forms.ValidationError(
                _("%(names)s hosts or moderates and cannot debate; choose debaters.") % {"names": names(hosts)}
            )
        return [found[s] for s in slugs] + [c for c in self.characters if c.slug not in found]

    def clean(self):
        data = super().clean()
        for name in options.union():
            if options.described(name).kind == "uploads":
                self._clean_documents(name)
        fmt_name, personas = data.get("format"), data.get("personas")
        if not fmt_name:
            return data
        if self.format_switched:
            self.add_error(None, _("You changed the format: choose its personas and options below, then start."))
            return data
        if personas is None:
            return data
        fmt = registry.get(fmt_name)
        if self._refuse_what_the_format_decides(fmt, data):
            return data
        try:
            data["options"] = fmt.Options.from_dict(self._option_values(fmt, data))
        except (UnknownOptions, TypeError, ValueError):  # cannot happen from the page: a bug, said plainly
            self.add_error(None, _("These options do not fit this format."))
            return data
        library = self.library = library_spec(fmt, personas)
        question = data.get("topic", "")  # an invalid question has its own error; seats are still checked
        if is_bundled(data.get("provider")):  # what is left empty is sized for the bundled model
            data["options"] = fmt.sized(data["options"], question, len(personas))
        problems = fmt.check(question, [persona_spec(p) for p in personas], data["options"], library)
        for field, problem in problems.items():
            self.add_error(field if field in self.fields else None, problem.render(gettext))
        mode = fmt.effective_mode(question, data["options"], len(personas))
        data["human_seats"] = [p.slug for p in personas if self.data.get(human_field(p.slug))]
        data["invites"] = self._read_invites(personas)
        chosen = {p.slug for p in personas}
        unseated = [k.removeprefix("human-") for k in self.data if k.startswith("human-") and self.data.get(k)]
        unseated = [slug for slug in unseated if slug not in chosen]
        if unseated:
            names = ", ".join(p.called() for p in Persona.objects.filter(slug__in=unseated))
            self.add_error(
                "personas", _("You chose to take %(names)s's seat: tick the persona too.") % {"names": names}
            )
        data["position_map"] = self._read_positions(mode, personas)
        data["seat_model_map"] = self._parse_seat_models(personas, data.get("seat_models", ""))
        self._check_model(data)
        self._check_offered(data)
        self._check_effort(data)
        self._check_prices(data)
        return data

    def _check_model(self, data) -> None:
        """A provider connected before a model was picked has no default: the form needs one."""
        provider = data.get("provider")
        if provider is not None and not effective_model(provider, data.get("model", "")):
            self.add_error("model", _("“%(name)s” has no default model yet: name one here.") % {"name": provider.name})

    def _check_offered(self, data) -> None:
        why = model_choice.refusal(self.user, data.get("provider"), data.get("model", ""))
        if why:
            self.add_error("model", why)

    def _check_prices(self, data) -> None:
        """A money budget on a model with no known price (the debate's or a seat's) is refused."""
        if data.get("options") is None:
            return
        chosen = [(data.get("provider"), data.get("model", ""))]
        chosen += [(provider, model) for provider, model, _effort in data.get("seat_model_map", {}).values()]
        problem = model_choice.unkept_budget(data["options"], chosen)
        if problem:
            self.add_error(*problem)

    def _check_effort(self, data) -> None:
        """A reasoning effort only for a reasoning model: a chat model would refuse it (or ignore it)."""
        if not data.get("reasoning_effort"):
            return
        provider = data.get("provider")
        model = effective_model(provider, data.get("model", ""))
        if not reasons(provider, model):
            self.add_error(
                "reasoning_effort",
                _("“%(model)s” is not a reasoning model: leave the reasoning effort empty.")
                % {"model": model or gettext("the local model")},
            )

    def _refuse_what_the_format_decides(self, fmt: Format, data: dict) -> bool:
        """A mode that is not one of the format's, or rounds for a format that sets its own (a
        stale page, the CLI, the API): said beside the field, as is any other option given a value
        that the format does not take (it would have no effect: silence would hide a mistake)."""
        refused = False
        for name in options.union():
            opt, value = options.described(name, fmt), data.get(name)
            taken = name in fmt.options() or opt.kind in ("round_count", "modes")  # these two: below
            if not taken and not options.is_empty(value):
                self.add_error(
                    name,
                    _("“%(option)s” does not apply to the %(format)s format: leave it empty.")
                    % {"option": gettext(opt.label), "format": gettext(fmt.label)},
                )
                refused = True
            elif opt.kind == "modes" and value and fmt.mode(value) is None:
                if fmt.modes:
                    labels = ", ".join(gettext(m.label) for m in fmt.modes)
                    self.add_error(name, _("Choose one of this format's modes: %(modes)s.") % {"modes": labels})
                else:
                    self.add_error(name, _("This format has no modes; leave Mode empty."))
                refused = True
            elif opt.kind == "round_count" and value is not None and name not in fmt.options():
                self.add_error(name, _("This format sets its own rounds; leave Rounds empty."))
                refused = True
        return refused

    def _option_values(self, fmt, data) -> dict:
        """The form's values for the options this format takes (others are not its business).
        Empty ones are left to the format's defaults; zero is a value (refused by its field)."""
        values = {name: data[name] for name in fmt.options() if name in data and not options.is_empty(data[name])}
        for name, opt in fmt.options().items():  # a mode by another of its names (快速) is kept by its own
            if opt.kind == "modes" and name in values and fmt.mode(values[name]):
                values[name] = fmt.mode(values[name]).name
        return values

    def _read_invites(self, personas) -> dict[str, str]:
        """Seats offered to another user, by the name typed on each card. Any name is taken:
        saving invites the user who has it, if one does (`debates.invitations`), and nothing
        here or later tells the owner whether one does."""
        names = {p.slug: str(self.data.get(invite_field(p.slug), "")).strip()[:150] for p in personas}
        return {slug: name for slug, name in names.items() if name}

    def _read_positions(self, mode, personas) -> dict[str, str]:
        """Each seat's side, from the radio buttons on its card, for a mode that assigns sides."""
        if not (mode and mode.positions) or not personas:
            return {}
        positions = {p.slug: self.data.get(position_field(p.slug), "") for p in personas}
        if any(side not in ("", *SIDES) for side in positions.values()):
            self.add_error("personas", _("Choose for or against for each persona."))
            return {}
        undecided = [p.called() for p in personas if not positions[p.slug]]
        if undecided:
            self.add_error(
                "personas", _("Choose for or against for each persona: %(names)s.") % {"names": ", ".join(undecided)}
            )
        elif not set(SIDES) <= set(positions.values()):
            self.add_error("personas", _("Position-based needs at least one persona for and one against."))
        return positions

    def _parse_seat_models(self, personas, text) -> dict[str, tuple[Provider | None, str]]:
        result = {}
        slugs = {p.slug for p in personas}
        for line in filter(None, (line.strip() for line in text.splitlines())):
            slug, _sep, spec = (x.strip() for x in line.partition("="))
            if slug not in slugs or not spec:
                self.add_error(
                    "seat_models",
                    _("“%(line)s”: write a chosen persona's id, then = and the model.") % {"line": line},
                )
                return {}
            spec, effort = _effort_of(spec)
            provider_name, _slash, model = spec.rpartition("/") if "/" in spec else ("", "", spec)
            provider = Provider.objects.filter(name=provider_name).first() if provider_name else None
            if provider_name and provider is None:
                self.add_error("seat_models", _("Unknown provider “%(name)s”.") % {"name": provider_name})
                return {}
            if provider is not None and not provider.approved:
                self.add_error("seat_models", provider.waiting_reason())
                return {}
            why = model_choice.refusal(self.user, provider, model)
            if why:
                self.add_error("seat_models", why)
                return {}
            if effort:
                shown = effective_model(provider, model) if provider else model
                if not reasons(provider, shown):
                    self.add_error(
                        "seat_models",
                        _("“%(line)s”: %(model)s is not a reasoning model, so it takes no reasoning effort.")
                        % {"line": line, "model": shown or gettext("the local model")},
                    )
                    return {}
            result[slug] = (provider, model, effort)
        return result


# -- a question the chosen format cannot take, nobody chosen --------------------------------------

# The submit button under a refusal that starts the question in another format (`formats_taking`).
SWITCH_FIELD = "switch_format"


def nobody_chosen(fmt: Format, topic: str, mode: str = ""):
    """What `fmt` would do with the question if nobody is chosen: its suggestion, and the refusal
    the submit would give (the suggestion's own, or `fmt.check`'s beside the personas), so the
    box and the submit agree."""
    chosen, modes = (fmt.mode(mode) if mode else None), _modes_option(fmt)
    values = fmt.Options.from_dict({modes: chosen.name} if chosen and modes else {})
    if is_bundled(None):  # as the start form sizes it for the default model, the bundled one
        values = fmt.sized(values, topic)
    library = library_spec(fmt)
    suggestion = fmt.suggest(topic, library, values)
    refusal = suggestion.refusal
    if refusal is None and topic.strip():
        refusal = fmt.check(topic, [], values, library).get("personas")
    return suggestion, refusal


def formats_taking(topic: str, besides: str) -> list[Format]:
    """The other formats that start this question at once with nobody chosen: offered, one click
    each, where `besides` refuses it. The form opens on the duel, which seats only questions of
    its masters' traditions; an ordinary question ("big tech or a five-person startup?") was
    refused there, the first thing a newcomer typed (#48). A format that first shows the roles it
    picked to confirm is not offered: that click would start nothing."""
    return [
        fmt
        for fmt in registry.all_formats()
        if fmt.name != besides and not fmt.confirms_choice and nobody_chosen(fmt, topic)[1] is None
    ]


def switched(data):
    """The posted form as if it had been posted in the format its "Start as …" button names: the
    question and every field both formats read kept; the personas, their seats and sides, and
    the options the new format does not take (the duel's rounds, for the panel) left out, since
    they belong to the other format. An unknown or confirming format changes nothing."""
    name = str(data.get(SWITCH_FIELD, ""))
    if name not in registry.names() or registry.get(name).confirms_choice:
        return data
    fmt, data = registry.get(name), data.copy()
    data.pop(SWITCH_FIELD)
    data["format"] = data["part_format"] = name
    seats, every_option = ("personas", "human-", "invite-", "position-"), options.union()
    for key in [k for k in data if k.startswith(seats) or (k in every_option and k not in fmt.options())]:
        data.pop(key)
    mode = _modes_option(fmt)
    if mode and data.get(mode) and fmt.mode(str(data[mode])) is None:
        data.pop(mode)
    return data


def _modes_option(fmt: Format) -> str | None:
    """The name of the option that picks `fmt`'s mode, if it has modes (declared in its Options)."""
    return next((name for name, opt in fmt.options().items() if opt.kind == "modes"), None)


def effort_hints() -> dict[str, str]:
    """What the page's script needs to offer the reasoning effort only where the chosen model
    reasons (static/js/agora.js): the families' names as a pattern, the models providers learnt
    reason, each provider's default model and the server's. Without script the field stays and
    the form refuses an effort for a model that does not reason."""
    import json

    from debates.clients import _default_learnt
    from debates.providers import reasoning

    providers = list(Provider.objects.filter(approved=True).only("pk", "default_model", "learnt_params"))
    learnt = {model for p in providers for model, params in (p.learnt_params or {}).items() if reasons(p, model)}
    learnt |= {model for model in _default_learnt if reasons(None, model)}
    pattern = "|".join(f"(?:{rule.pattern})" for rule in (reasoning._OPENAI_REASONING, reasoning._OTHER_REASONING))
    return {
        "data-reasoning-pattern": pattern,
        "data-reasoning-models": json.dumps(sorted(learnt)),
        "data-provider-defaults": json.dumps({str(p.pk): p.default_model for p in providers}),
        "data-default-model": effective_model(None, ""),
    }


def _effort_of(spec: str) -> tuple[str, str]:
    """A seat line's model and its reasoning effort: "openai/o4-mini high" → ("openai/o4-mini", "high")."""
    head, _sep, last = spec.rpartition(" ")
    last = {"低": "low", "中": "medium", "高": "high"}.get(last, last.lower())
    if head.strip() and last in EFFORTS:
        return head.strip(), last
    return spec, ""


@transaction.atomic
def save_debate(form: DebateForm, owner=None) -> Debate:
    from debates import audience, invitations

    data = form.cleaned_data
    options = data["options"].as_dict()  # with the documents as read (`CommonOptions.documents`)
    search = data.get("search")
    debate = Debate.objects.create(
        owner=owner,
        question=data["topic"],
        format=data["format"],
        options=options,
        provider=data.get("provider"),
        model=data.get("model", ""),
        reasoning_effort=data.get("reasoning_effort") or "",
        research=bool(search),
        search_provider=search if isinstance(search, SearchProvider) else None,
    )
    for order, persona in enumerate(data["personas"]):
        if persona.pk is None:  # a distilled character confirmed on the form: into the library now
            from debates.characters import save_character

            persona = save_character(persona, owner)
        provider, model, effort = data["seat_model_map"].get(persona.slug, (None, "", ""))
        Seat.objects.create(
            debate=debate,
            persona=persona,
            order=order,
            position=data["position_map"].get(persona.slug, ""),
            provider=provider,
            model=model,
            reasoning_effort=effort,
            stand_in=data.get("stand_in") or "llm",
            # Another user's name: an invitation (theirs to accept); else the owner's own seat.
            **(
                invitations.seat_for(owner, data.get("invites", {}).get(persona.slug, ""))
                or {"human": owner if persona.slug in data.get("human_seats", ()) else None}
            ),
        )
    # The sides a vote is on, fixed now with the libraries the form read: every page view of the
    # debate would otherwise read them again until one stored them (#30, #31).
    audience.fix_sides(debate, getattr(form, "library", None))
    return debate


def create_debate(values: dict, owner=None) -> tuple[Debate | None, dict]:
    """For callers without a request (the CLI): validate `values` as the form would and save.
    `positions` is a {slug: "for" | "against"} mapping, posted as each card's radio buttons are."""
    form = form_for(values)
    if not form.is_valid():
        return None, {field: [str(m) for m in msgs] for field, msgs in form.errors.items()}
    return save_debate(form, owner), {}


def form_for(values: dict, user=None) -> DebateForm:
    """The start form bound to `values` as a page would post them (the CLI's and the API's way in),
    for `user` (None: the operator's terminal)."""
    from django.utils.datastructures import MultiValueDict

    values = dict(values)
    positions = values.pop("positions", None) or {}
    # Zero stays: `rounds=0` is refused beside its field, never read as "the default".
    posted = options.as_posted(values)
    if values.get("provider") == "":  # the environment's model, named (left out: `debates.default_model`'s)
        posted["provider"] = ""
    data = MultiValueDict({k: v if isinstance(v, list) else [v] for k, v in posted.items()})
    for slug, side in positions.items():
        data[position_field(slug)] = side
    return DebateForm(data, user=user)


# -- what the page shows for the chosen format ---------------------------------------------------


@dataclass
class Card:
    """One persona the user may seat: a checkbox, the name, one line about them and, for a mode
    that assigns sides, for/against radio buttons."""

    slug: str
    name: str
    description: str
    chosen: bool = False
    side: str = ""
    human: bool = False  # the person starting the debate takes this seat
    invite: str = ""  # or another user, by name

    @property
    def position_field(self) -> str:
        return position_field(self.slug)

    @property
    def human_field(self) -> str:
        return human_field(self.slug)

    @property
    def invite_field(self) -> str:
        return invite_field(self.slug)


@dataclass
class Shelf:
    library: str
    cards: list[Card] = dataclass_field(default_factory=list)


@dataclass
class OptionField:
    """One option as the page draws it: its field, its description, and (numbers) its default
    and bounds in the format's first library."""

    field: BoundField
    option: Option
    default: object = None
    low: float | None = None
    high: float | None = None

    @property
    def kind(self) -> str:
        return self.option.kind

    @property
    def carried(self) -> str:
        """Documents: the hidden field that keeps those already read."""
        return options.carried_field(self.field.name)


@dataclass
class FormatPart:
    """The format-specific part of the start page (swapped when the format changes)."""

    fmt: Format
    shelves: list[Shelf]
    modes: list[Mode]
    chosen_mode: str  # the chosen (or default) mode's name
    seat_bounds: str  # "2", "3–5"
    agora_chooses: bool
    mode_field: BoundField | None  # the option its modes set, if it has modes
    options: list[OptionField]  # its own options (its rounds among them), as it declares them
    after_search: list[OptionField]  # options drawn below the web research choice they need
    stray_errors: list[str]  # errors of fields this format does not show
    search_ready: bool = False  # a search provider is set up (the format may research)
    sized: str = ""  # msgid: how the defaults are sized for the bundled model (the default model)

    @property
    def takes_positions(self) -> bool:
        return any(m.positions for m in self.modes)


def describe(persona: Persona) -> str:
    """The persona's one line in the viewer's language: English viewers read the English line when
    the library has one."""
    english = (get_language() or "").startswith("en")
    return strip_invisible((persona.description_en if english else "") or persona.description)


def _drawn(form: DebateForm, fmt: Format, name: str, protocol: dict) -> OptionField:
    """An option of `fmt` as its part draws it: a number with the library's own default and
    range where its protocol names them (else the option's own bounds)."""
    opt = fmt.options()[name]
    default, low, high = fmt.option_bounds(opt, protocol)
    if fmt.local is not None and name in fmt.local.options and is_bundled(None):
        default = fmt.local.options[name]  # the default model is the bundled one: its sizing
    widget = form.fields[name].widget
    if opt.kind in ("int", "float"):
        if default is not None:
            widget.attrs["placeholder"] = _("default %(value)s") % {"value": default}
        widget.attrs.update({key: bound for key, bound in (("min", low), ("max", high)) if bound is not None})
    return OptionField(form[name], opt, default, low, high)


def format_part(form: DebateForm) -> FormatPart:
    fmt = form.fmt
    fresh = form.format_switched or not form.is_bound  # nothing chosen yet for this format
    chosen = [] if fresh else [s for s in form.data.getlist("personas") if s] if hasattr(form.data, "getlist") else []
    libraries = Library.objects.filter(format=fmt.name).order_by("name", "pk")
    shelves = []
    for library in libraries.prefetch_related("personas"):
        debaters = [p for p in library.personas.all() if p.kind == Persona.Kind.DEBATER]
        debaters.sort(key=lambda p: (p.tier, p.slug))
        cards = [
            Card(
                p.slug,
                p.called(),  # in the reader's language
                describe(p),
                chosen=p.slug in chosen,
                side="" if fresh else str(form.data.get(position_field(p.slug), "")),
                human=not fresh and bool(form.data.get(human_field(p.slug))),
                invite="" if fresh else str(form.data.get(invite_field(p.slug), ""))[:150],
            )
            for p in debaters
        ]
        shelves.append(Shelf(strip_invisible(library.name), cards))
    mode_name = next((name for name, opt in fmt.options().items() if opt.kind == "modes"), None)
    mode_value = "" if fresh or not mode_name else str(form[mode_name].value() or "")
    # A format whose default is a choice of its own ("from the question") shows it checked.
    mode = None if fmt.mode_hint and not mode_value else fmt.mode(mode_value) or fmt.mode("")
    low, high = fmt.seating.count
    protocol = dict(libraries[0].protocol) if libraries else {}
    drawn = {
        place: [_drawn(form, fmt, name, protocol) for name in form.option_fields(fmt, place)]
        for place in ("format", "search")
    }
    shown = {"topic", "format", "personas", "provider", "model", "seat_models", "reasoning_effort", "stand_in"}
    shown |= {name for name, opt in fmt.options().items() if opt.place in ("material", "advanced")}
    shown |= {o.field.name for o in drawn["format"] + drawn["search"]} | ({"search"} if fmt.researches else set())
    if fmt.modes and mode_name:
        shown.add(mode_name)
    stray = [str(e) for name, errors in form.errors.items() if name != "__all__" and name not in shown for e in errors]
    return FormatPart(
        fmt=fmt,
        shelves=shelves,
        modes=list(fmt.modes),
        chosen_mode=mode.name if mode else "",
        seat_bounds=str(low) if low == high else f"{low}–{high}",
        agora_chooses=fmt.seating.agora_chooses,
        mode_field=form[mode_name] if fmt.modes and mode_name else None,
        options=drawn["format"],
        after_search=drawn["search"],
        stray_errors=stray,
        search_ready=fmt.researches and len(search_choices()) > 1,
        # Only while the page has the environment's model chosen (not a connected one).
        sized=fmt.local.summary if fmt.local is not None and not form["provider"].value() and is_bundled(None) else "",
    )
