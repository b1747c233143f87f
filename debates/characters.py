"""L3 characters on the start form (the roundtable seed's 人物蒸馏与持久化; issue 28, item 6).

The question's 「和 XX、XX 讨论」 ("with X and Y") or the form's "Add a character" field names real
people. A person already in a library as an L3 character is seated from there (the seed: look in
characters/ first); anyone else is distilled with the debate's model, one call each
(`debates.engine.distill`), checked for purity, and shown on the start form to read, edit or untick
before anything starts. On Start the confirmed ones are saved to the library (source
"distilled", who, when, what it rests on) and seated as L3. Where no model can distil a person
(the call fails, the answer holds no persona, the purity check fails) the character is refused
beside the field with the reason: no degraded substitute is made.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

from asgiref.sync import async_to_sync
from django import forms
from django.conf import settings
from django.core.validators import MaxLengthValidator
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from debates import admission, clients
from debates.engine import distill, registry
from debates.engine.i18n import Text, gettext_noop, language_of, text
from debates.engine.text import normalise
from debates.models import Distillation
from debates.providers.base import ProviderError
from personas.models import SLUG_PATTERN, Library, Persona
from personas.purity import purity_errors

LIBRARY_SLUG = "distilled-characters"
PREFIX = "character"
MAX_TYPED = 300
TEXT_LIMIT = 2000  # characters in each of a character's texts (the distillation asks for ~220)


def takes_characters(fmt_name: str) -> bool:
    """Does this format's table seat the L3 characters a person names (its `seats_characters`)?"""
    try:
        return registry.get(fmt_name).seats_characters
    except ValueError:  # a format no longer registered
        return False


def library_for(fmt_name: str) -> Library:
    """The library distilled characters are saved to: their own, so that reloading the bundled
    libraries (which removes what their files do not list) never deletes one. Its protocol is the
    format's first library's, so a table led by a character keeps the format's limits."""
    library = Library.objects.filter(slug=LIBRARY_SLUG).first()
    if library is None:
        first = Library.objects.filter(format=fmt_name).order_by("name", "pk").first()
        library = Library.objects.create(
            slug=LIBRARY_SLUG,
            name="蒸馏人物 Distilled characters",
            format=fmt_name,
            description="L3 人物：用户点名的真实人物，由辩论所用的模型蒸馏、经用户确认后保存。"
            " L3 characters: real people users named, distilled with the debate's model and confirmed.",
            protocol=dict(first.protocol) if first else {},
        )
    return library


# -- who is already in the library ---------------------------------------------------------------------


def _key(name: str) -> str:
    return re.sub(r"[\s·・.\-'’]+", "", name).casefold()


def _answers_to(persona: Persona, asked: str) -> bool:
    """Is `asked` this persona's name, in either language, or one whole part of it ("巴菲特" for
    沃伦·巴菲特, "Hopper" for Grace Hopper)?"""
    wanted = _key(asked)
    for name in (persona.name, persona.name_en):
        if not name or not wanted:
            continue
        if _key(name) == wanted:
            return True
        if len(wanted) >= 2 and any(_key(part) == wanted for part in re.split(r"[\s·・.]+", name)):
            return True
    return False


def known_character(fmt_name: str, asked: str) -> Persona | None:
    """The L3 character of this format's libraries the name asks for, if one is there."""
    rows = Persona.objects.filter(library__format=fmt_name, tier=Persona.Tier.CHARACTER, kind=Persona.Kind.DEBATER)
    return next((p for p in rows.order_by("pk") if _answers_to(p, asked)), None)


# -- distilling --------------------------------------------------------------------------------------


@dataclass
class Outcome:
    asked: str
    draft: distill.Draft | None = None
    refusal: Text | None = None


def _echoes(persona_text: str, question: str, names: list[str]) -> bool:
    """Does the persona carry the question itself (a stretch of it, the names asked left out)?"""
    rest = question
    for name in names:
        rest = rest.replace(name, " ")
    wanted = normalise(rest)
    window = 8 if language_of(question) == "zh" else 16
    haystack = normalise(persona_text)
    return len(wanted) >= window and any(wanted[i : i + window] in haystack for i in range(len(wanted) - window + 1))


def purity_refusal(draft: distill.Draft, question: str, names: list[str]) -> Text | None:
    """The purity rule (personas/purity.py) on the draft, and the question not copied into it."""
    errors = purity_errors(draft.persona_fields())
    if errors:
        marker = next(e.params["marker"] for errs in errors.values() for e in errs)
        return text(
            gettext_noop(
                "its text reads like a debate question (“%(marker)s”); a character holds only who the person is"
            ),
            marker=marker,
        )
    every = "\n".join(str(v) for v in draft.persona_fields().values())
    if _echoes(every, question, names):
        return text(gettext_noop("its text repeats the question; a character holds only who the person is"))
    return None


async def _ask(client, messages: list[dict], lang: str) -> str:
    """The one distillation call, within the turn deadline (`admission.distillation_deadline`
    counts on it). Only from `Cast.confirm`, after the "distill" door admitted it."""
    deadline = settings.AGORA_TURN_DEADLINE
    try:
        async with asyncio.timeout(deadline):
            await client.ensure_ready()
            extra = {"grammar": distill.form(lang).grammar()} if client.supports_grammar else None
            stream = client.stream(messages, max_tokens=distill.MAX_TOKENS, extra=extra, key=f"distill:{lang}")
            return "".join([delta async for delta in stream])
    except TimeoutError:
        raise ProviderError(f"no answer within {deadline:g} s") from None
    finally:
        if not clients.is_local(client):
            await client.aclose()


def _research(asked: str, lang: str, search) -> list[dict]:
    """Pages about the person from the debate's web research, when it is set up (else none)."""
    from debates import search_clients
    from debates.search.errors import SearchError

    try:
        client = search_clients.environment_client() if search == "env" else search_clients.provider_client(search)
    except search_clients.SearchMisconfigured:
        return []

    async def one():
        try:
            query = f"{asked} 生平 思想 观点" if lang == "zh" else f"{asked} biography thinking views"
            return await client.search(query, 4)
        finally:
            await client.aclose()

    try:
        results = async_to_sync(one)()
    except SearchError:
        return []
    return [{"title": r.title, "url": r.url, "text": r.snippet[:400]} for r in results]


def distil_one(
    asked: str, question: str, names: list[str], *, provider=None, model="", effort="", search=None
) -> Outcome:
    """One call to the debate's model for `asked`: a draft to confirm, or the reason there is none."""
    lang = language_of(question)
    found = _research(asked, lang, search) if search else []
    try:
        client = clients.client_for(provider, model, effort)
        answer = async_to_sync(_ask)(client, distill.messages(asked, lang, found), lang)
    except ProviderError as error:
        return Outcome(
            asked, refusal=text(gettext_noop("no model could distil it (%(error)s)"), error=str(error)[:200])
        )
    try:
        draft = distill.parse(answer, asked)
    except distill.Refused as refused:
        return Outcome(asked, refusal=refused.reason)
    draft.sources += [f"{page['title']} — {page['url']}" for page in found]
    refusal = purity_refusal(draft, question, names)
    return Outcome(asked, refusal=refusal) if refusal else Outcome(asked, draft=draft)


# -- the confirm form ----------------------------------------------------------------------------------


def unique_slug(name_en: str, name: str, taken: set[str] = frozenset()) -> str:
    from pypinyin import lazy_pinyin  # 0.3 s to load: imported where used (debates/engine/text.py)

    base = slugify(name_en) or slugify(" ".join(lazy_pinyin(name))) or "character"
    base = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "", base)).strip("-")[:70] or "character"
    slug, n = base, 1
    while slug in taken or Persona.objects.filter(slug=slug).exists() or not re.fullmatch(SLUG_PATTERN, slug):
        n += 1
        slug = f"{base}-{n}"
    return slug


class CharacterForm(forms.ModelForm):
    """One distilled character as the start form shows it: every field editable, checked to seat."""

    asked = forms.CharField(widget=forms.HiddenInput, required=False)
    seat = forms.BooleanField(label=_("Seat this character"), required=False, initial=True)
    keywords = forms.CharField(label=_("keywords"), required=False, max_length=400, help_text=_("Separated by commas."))

    class Meta:
        model = Persona
        fields = ("name", "name_en", "description", "description_en", "keywords", *Persona.TEXT_FIELDS, "sources")
        widgets = {
            **{name: forms.Textarea(attrs={"rows": 3}) for name in Persona.TEXT_FIELDS},
            "sources": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args, fmt_name: str, question: str = "", names=(), taken=None, **kwargs):
        kwargs.setdefault("instance", Persona(kind=Persona.Kind.DEBATER, tier=Persona.Tier.CHARACTER))
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.fmt_name, self.question, self.names = fmt_name, question, list(names)
        self.taken = taken if taken is not None else set()
        for name in ("name", *Persona.TEXT_FIELDS):
            self.fields[name].required = True
        # Any signed-in user writes these into the shared library: bounded like a model's answer.
        for name in (*Persona.TEXT_FIELDS, "sources"):
            self.fields[name].max_length = TEXT_LIMIT
            self.fields[name].validators.append(MaxLengthValidator(TEXT_LIMIT))

    @property
    def shown_name(self) -> str:
        return str(self["name"].value() or self["asked"].value() or "")

    def clean_keywords(self):
        return [
            k for k in (w.strip() for w in re.split(r"[、，,；;\n]", self.cleaned_data.get("keywords") or "")) if k
        ][:12]

    def clean(self):
        data = super().clean()
        persona_text = "\n".join(
            str(data.get(k) or "") for k in ("description", "description_en", *Persona.TEXT_FIELDS)
        )
        if self.question and _echoes(persona_text, self.question, self.names):
            raise forms.ValidationError(
                _("This character's text repeats the question: a character holds only who the person is.")
            )
        return data

    def _post_clean(self):
        # The row it will be: in the characters' library, under a slug of its own (then the
        # model's own checks, the purity rule among them, run beside the fields).
        self.instance.library = library_for(self.fmt_name)
        self.instance.source = Persona.Source.DISTILLED
        if not self.instance.slug:
            data = getattr(self, "cleaned_data", {})
            self.instance.slug = unique_slug(data.get("name_en", ""), data.get("name", ""), self.taken)
            self.taken.add(self.instance.slug)
        super()._post_clean()

    @property
    def seated(self) -> bool:
        return self.is_valid() and self.cleaned_data["seat"]


def save_character(persona: Persona, owner) -> Persona:
    """A confirmed character into the library (save_debate calls this for each unsaved seat)."""
    persona.source = Persona.Source.DISTILLED
    persona.distilled_by = owner if getattr(owner, "pk", None) else None
    persona.distilled_at = timezone.now()
    if Persona.objects.filter(slug=persona.slug).exists():  # taken since the form was checked
        persona.slug = unique_slug(persona.name_en, persona.name)
    persona.save()
    return persona


# -- the start form's part in it ------------------------------------------------------------------------


def _draft_data(prefix: str, draft: distill.Draft) -> dict[str, str]:
    values = {**draft.persona_fields(), "keywords": "、".join(draft.keywords), "sources": "\n".join(draft.sources)}
    return {f"{prefix}-{k}": v for k, v in values.items()} | {f"{prefix}-asked": draft.asked, f"{prefix}-seat": "on"}


@dataclass
class Cast:
    """The characters a start-form post asks for and what became of each."""

    fmt_name: str
    question: str
    typed: str  # the "Add a character" field as typed
    asked: list[str]  # everyone the question and the field name, in order
    handled: list[str]  # names an earlier page already dealt with (distilled, found or refused)
    forms: list[CharacterForm] = field(default_factory=list)
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (name, reason) for this page
    found: list[Persona] = field(default_factory=list)  # already in a library, seated from there

    @classmethod
    def read(cls, data) -> Cast:
        fmt_name = str(data.get("format", ""))
        question = str(data.get("topic", ""))
        typed = str(data.get("add_characters", ""))[:MAX_TYPED]
        on = takes_characters(fmt_name)
        asked = distill.asked_characters(question) if on else []
        for name in distill.split_names(typed) if on else []:
            if name.casefold() not in {a.casefold() for a in asked}:
                asked.append(name)
        handled = [str(h) for h in data.getlist("characters_handled")] if hasattr(data, "getlist") else []
        cast = cls(fmt_name, question, typed, asked, handled)
        if on:
            try:
                count = min(int(data.get("character_count") or 0), distill.MAX_CHARACTERS)
            except ValueError:
                count = 0
            taken: set[str] = set()
            cast.forms = [cast._form(data, n, taken) for n in range(count)]
        return cast

    def _form(self, data, n: int, taken: set[str]) -> CharacterForm:
        return CharacterForm(
            data, prefix=f"{PREFIX}-{n}", fmt_name=self.fmt_name, question=self.question, names=self.asked, taken=taken
        )

    @property
    def new(self) -> list[str]:
        """Names no page has dealt with yet: they are looked up or distilled before anything starts."""
        done = {h.casefold() for h in self.handled}
        return [name for name in self.asked if name.casefold() not in done]

    def seated(self) -> list[Persona]:
        """The confirmed characters to seat (unsaved rows; `save_debate` saves them)."""
        return [f.instance for f in self.forms if f.seated]

    def check(self, form) -> None:
        """A character ticked to sit whose fields do not hold (empty, impure): the debate waits."""
        if any(f.is_bound and f.data.get(f.add_prefix("seat")) and not f.is_valid() for f in self.forms):
            form.add_error(
                None, gettext("A distilled character needs attention: see its fields under “Add a character”.")
            )

    def confirm(self, request, form, pick_roles) -> tuple[object, str, Cast]:
        """Look up or distil every new name, then the same page again to confirm: the characters
        under "Add a character", the roles Agora picks (when nobody is chosen) with room left
        for them, nothing created. `pick_roles(request, form)` is the roles' own confirm step.
        The model's calls pass the "distill" door first: past the running limit nothing is
        distilled and the page says why (the form, its refusal added, and this cast)."""
        names = self.new
        known = {name: known_character(self.fmt_name, name) for name in names}
        calls = sum(
            1
            for n, name in enumerate(names)
            if known[name] is None and n < distill.MAX_CHARACTERS and len(self.forms) < distill.MAX_CHARACTERS
        )
        try:
            lease = self._admitted(request.user, calls) if calls else None
        except admission.Refused as refusal:
            form.add_error(None, str(refusal))
            return form, "", self
        try:
            return self._confirm(request, form, pick_roles, names, known)
        finally:
            if lease is not None:
                lease.delete()

    @staticmethod
    def _admitted(owner, people: int) -> Distillation:
        """The "distill" door: admitted like any other way of spending tokens, the distillation is
        then counted against the owner's running limit until it ends (`admission`)."""
        with transaction.atomic():
            admission.admit("distill", owner.pk)
            return Distillation.objects.create(owner=owner, people=people)

    def _confirm(self, request, form, pick_roles, names: list[str], known: dict) -> tuple[object, str, Cast]:
        data = form.cleaned_data
        notice = ""
        if form.fmt.confirms_choice and not data["personas"]:
            picked, notice = pick_roles(request, form)
            posted = picked.data
        else:
            posted = request.POST.copy()
            if data.get("documents"):
                import json

                posted["documents_read"] = json.dumps(data["documents"], ensure_ascii=False)
        chosen = [s for s in posted.getlist("personas") if s]
        found, drafted = [], []
        for n, name in enumerate(names):
            persona = known[name]
            if persona is not None:
                if persona.slug not in chosen:
                    found.append(persona)
                continue
            if len(self.forms) + len(drafted) >= distill.MAX_CHARACTERS or n >= distill.MAX_CHARACTERS:
                reason = text(gettext_noop("a table seats at most %(count)d characters"), count=distill.MAX_CHARACTERS)
                self.refusals.append((name, reason.render(gettext)))
                continue
            outcome = distil_one(
                name,
                self.question,
                self.asked,
                provider=data.get("provider"),
                model=data.get("model", ""),
                effort=data.get("reasoning_effort") or "",
                search=data.get("search"),
            )
            if outcome.draft is None:
                self.refusals.append((name, outcome.refusal.render(gettext)))
            else:
                drafted.append(outcome.draft)
        if notice:  # Agora picked the roles: leave room for the characters (experts give way first)
            chosen = self._room(form, chosen, len(self.seated()) + len(found) + len(drafted))
        posted.setlist("personas", chosen + [p.slug for p in found])
        posted.setlist("characters_handled", [*self.handled, *names])
        start = len(self.forms)
        for n, draft in enumerate(drafted, start):
            for key, value in _draft_data(f"{PREFIX}-{n}", draft).items():
                posted[key] = value
        posted["character_count"] = str(start + len(drafted))
        shown = Cast.read(posted)  # the page as it will be posted back, drafts included
        shown.refusals, shown.found = self.refusals, found
        # The start form again (its class: this module sits below the forms, which save characters).
        return type(form)(posted, characters=shown.seated()), self._notice(notice, found, drafted), shown

    def _room(self, form, roles: list[str], characters: int) -> list[str]:
        """Agora's picked roles, experts (L2) dropped from the end while the table with the
        characters is larger than the mode seats."""
        data = form.cleaned_data
        mode = form.fmt.effective_mode(data["topic"], data["options"])
        _low, high = form.fmt.seat_bounds(mode.name if mode else "")
        tiers = dict(Persona.objects.filter(slug__in=roles).values_list("slug", "tier"))
        roles = list(roles)
        while len(roles) + characters > high and any(tiers.get(s) == Persona.Tier.EXPERT for s in roles):
            last = max(i for i, s in enumerate(roles) if tiers.get(s) == Persona.Tier.EXPERT)
            roles.pop(last)
        return roles

    def _notice(self, roles_notice: str, found: list[Persona], drafted: list) -> str:
        parts = [roles_notice] if roles_notice else []
        if found:
            names = ", ".join(p.called() for p in found)
            parts.append(
                gettext("Already in the library, seated as L3 characters (checked below): %(names)s.")
                % {"names": names}
            )
        if drafted:
            parts.append(
                gettext(
                    "Agora distilled the people you named with the debate's model (under “Add a character”): read, "
                    "edit or untick them, then click Start again. Each one seated is saved to the library as a "
                    "distilled character."
                )
            )
        if self.refusals and not parts:
            parts.append(
                gettext(
                    "Some people you named cannot be distilled (said under “Add a character”). Start again to go "
                    "on without them."
                )
            )
        if not roles_notice:
            parts.append(gettext("Nothing has started yet."))
        return " ".join(parts)
