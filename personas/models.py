"""Persona libraries: who speaks, what they hold against each other, and which pairs meet.

A persona holds only *who it is* (the purity rule of PROTOCOLS.md); the question reaches it at run
time through the task decorator, so nothing here may name a particular debate question.
"""

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils.translation import get_language
from django.utils.translation import gettext_lazy as _

from agora.text import strip_invisible
from personas.purity import purity_errors

SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
slug_validator = RegexValidator(SLUG_PATTERN, _("Lowercase letters, digits and single hyphens."))

# The protocol maximum for duel rounds when a library sets none (README: "Formats").
DEFAULT_ROUNDS = 4
MAX_ROUNDS = 8


def validate_density(value: float) -> None:
    if value != -1 and not 0 <= value <= 10:
        raise ValidationError(_("Leave empty, or use -1 or a number from 0 to 10."), code="density")


def is_english(lang: str | None = None) -> bool:
    """Is `lang` (a language code; default: the active language) English?"""
    return (lang or get_language() or "").lower().startswith("en")


def name_in(lang: str | None, name: str, name_en: str) -> str:
    """`name_en` for an English reader (`lang`; default: the active language) when it is set, else `name`."""
    return name_en if name_en and is_english(lang) else name


def names_by_language(name: str, name_en: str) -> dict[str, str]:
    """A name in every language the site speaks, by language code ({"zh-hans": …, "en": …}): what
    the JSON doors give beside the name in the reader's language."""
    return {code: strip_invisible(name_in(code, name, name_en)) for code, _label in settings.LANGUAGES}


def pair_key(slug_a: str, slug_b: str) -> str:
    """The seed's pair key: sort first, then join. Slugs may contain '-', so never split a key."""
    first, second = sorted((slug_a, slug_b))
    return f"{first}-vs-{second}"


# The formats a library may be for are the engine's (`debates.engine.registry`), but this app
# imports nothing of `debates`: personas sits below debates (debates imports personas, its
# libraries and personas), and a module-level or function-level import upwards would close a
# circle. The debates app hands its registry's `choices` over when it is ready
# (`DebatesConfig.ready` calls `offer_formats`), before any model is validated or any form drawn;
# the function itself is handed over, not its result, so a format registered later (a plug-in's,
# a test's) is offered too. Until then, and without the debates app, no format is offered.
_format_source: Callable[[], list[tuple[str, str]]] = list


def offer_formats(source: Callable[[], list[tuple[str, str]]]) -> None:
    """Where the formats come from: a callable giving (name, label msgid) pairs."""
    global _format_source
    _format_source = source


def format_choices():
    """The debate formats the engine knows (the four built in, and any registered later; see
    `offer_formats`), labelled in the viewer's language. A callable, so a new format needs no
    migration and no change here."""
    return [(name, _(label)) for name, label in _format_source()]


class Library(models.Model):
    slug = models.SlugField(unique=True, validators=[slug_validator])
    name = models.CharField(_("name"), max_length=200)
    format = models.CharField(_("format"), max_length=20, choices=format_choices)
    description = models.TextField(_("description"), blank=True)
    # Format-level defaults, e.g. {"default_rounds": 4, "max_rounds": 8} for duels.
    protocol = models.JSONField(_("protocol"), default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("library")
        verbose_name_plural = _("libraries")
        ordering = ["slug"]

    def __str__(self):
        # Shown by the admin as title and option text: no direction overrides or zero-width characters.
        return strip_invisible(self.name)

    @property
    def default_rounds(self) -> int:
        return int(self.protocol.get("default_rounds", DEFAULT_ROUNDS))

    @property
    def max_rounds(self) -> int:
        return int(self.protocol.get("max_rounds", MAX_ROUNDS))


class Persona(models.Model):
    class Kind(models.TextChoices):
        DEBATER = "debater", _("Debater")
        HOST = "host", _("Host")
        MODERATOR = "moderator", _("Moderator")

    class Tier(models.TextChoices):
        NONE = "", _("—")
        STANCE = "l1", _("L1 stance")
        EXPERT = "l2", _("L2 expert")
        CHARACTER = "l3", _("L3 character")
        MASTER = "master", _("Master")
        PANEL_ROLE = "panel", _("Panel role")

    class Source(models.TextChoices):
        BUNDLED = "bundled", _("Bundled")
        EXTERNAL = "external-import", _("External import")
        # An L3 character distilled from a real person the user named (debates.characters).
        DISTILLED = "distilled", _("Distilled")

    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="personas", verbose_name=_("library"))
    slug = models.CharField(_("slug"), max_length=80, unique=True, validators=[slug_validator])
    name = models.CharField(_("display name"), max_length=120)
    # The name an English debate and an English reader use; empty: `name` serves both.
    name_en = models.CharField(_("English display name"), max_length=120, blank=True)
    kind = models.CharField(_("kind"), max_length=12, choices=Kind.choices, default=Kind.DEBATER)
    tier = models.CharField(_("tier"), max_length=8, choices=Tier.choices, blank=True)
    # The panel's English role id (divergent, convergent, …) or a stance id; free otherwise.
    role = models.CharField(_("role"), max_length=40, blank=True)
    tradition = models.CharField(_("tradition"), max_length=80, blank=True)
    keywords = models.JSONField(_("keywords"), default=list, blank=True)
    description = models.CharField(_("short description"), max_length=300, blank=True)
    description_en = models.CharField(_("English one-line description"), max_length=300, blank=True)
    cognitive_frame = models.TextField(_("cognitive frame"), blank=True)
    knowledge_domain = models.TextField(_("knowledge domain"), blank=True)
    decision_preferences = models.TextField(_("decision preferences"), blank=True)
    adversarial_rules = models.TextField(_("adversarial rules"), blank=True)
    expression_style = models.TextField(_("expression style"), blank=True)
    # The same five parts in English, for an English debate's prompts (a model reads its instructions
    # in the debate's language); empty: the other language's text serves, and the prompt says so.
    cognitive_frame_en = models.TextField(_("cognitive frame (English)"), blank=True)
    knowledge_domain_en = models.TextField(_("knowledge domain (English)"), blank=True)
    decision_preferences_en = models.TextField(_("decision preferences (English)"), blank=True)
    adversarial_rules_en = models.TextField(_("adversarial rules (English)"), blank=True)
    expression_style_en = models.TextField(_("expression style (English)"), blank=True)
    veto_right = models.BooleanField(_("veto right"), default=False)
    preferred_model = models.CharField(_("preferred model"), max_length=120, blank=True)
    # Moderated-format manifest fields (debate-moderator seed): schema type and density score.
    schema_type = models.CharField(_("schema type"), max_length=40, blank=True)
    density_score = models.FloatField(_("density score"), null=True, blank=True, validators=[validate_density])
    source = models.CharField(_("source"), max_length=40, choices=Source.choices, default=Source.BUNDLED)
    # A distilled character: who had it made, when, and what the distillation rests on (books,
    # letters, speeches the model named; pages research found), one per line.
    distilled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("distilled by"),
    )
    distilled_at = models.DateTimeField(_("distilled at"), null=True, blank=True)
    sources = models.TextField(_("sources"), blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    TEXT_FIELDS = (
        "cognitive_frame",
        "knowledge_domain",
        "decision_preferences",
        "adversarial_rules",
        "expression_style",
    )
    TEXT_FIELDS_EN = tuple(f"{f}_en" for f in TEXT_FIELDS)

    class Meta:
        verbose_name = _("persona")
        verbose_name_plural = _("personas")
        ordering = ["library__slug", "slug"]
        constraints = [
            models.CheckConstraint(condition=Q(slug__regex=SLUG_PATTERN), name="persona_slug_format"),
            models.CheckConstraint(condition=Q(kind__in=["debater", "host", "moderator"]), name="persona_kind_known"),
            models.CheckConstraint(
                condition=Q(tier__in=["", "l1", "l2", "l3", "master", "panel"]),
                name="persona_tier_known",
            ),
            # Hosts and moderators hold procedural power only: no tier, no veto.
            models.CheckConstraint(
                condition=Q(kind="debater") | (Q(tier="") & Q(veto_right=False)),
                name="persona_host_does_not_debate",
            ),
            models.CheckConstraint(
                condition=Q(density_score__isnull=True)
                | Q(density_score=-1)
                | Q(density_score__gte=0, density_score__lte=10),
                name="persona_density_range",
            ),
        ]

    def __str__(self):
        return f"{strip_invisible(self.name)} ({self.slug})"

    def called(self, lang: str | None = None) -> str:
        """The name a reader of `lang` ("zh"/"en"; default: the active language) knows this
        persona by: the English name for English when it has one, else `name`."""
        return strip_invisible(name_in(lang, self.name, self.name_en))

    def described(self, lang: str | None = None) -> str:
        return strip_invisible(name_in(lang, self.description, self.description_en))

    def clean(self):
        errors = purity_errors(vars(self))
        # Hosts and moderators hold procedural power only (the constraint persona_host_does_not_debate).
        if self.kind in (self.Kind.HOST, self.Kind.MODERATOR):
            if self.tier:
                errors.setdefault("tier", []).append(_("A host or moderator has no tier."))
            if self.veto_right:
                errors.setdefault("veto_right", []).append(_("A host or moderator has no veto right."))
        if errors:
            raise ValidationError(errors)

    def persona_text(self, lang: str = "zh") -> str:
        """The persona proper, in the five headed parts every format's prompt carries, in `lang`
        ("zh"/"en"): headings and text in that language. A part written in the other language
        only (a user's persona in one language) is sent as written, and the prompt builder says
        so (`has_text_in`, carried as `PersonaSpec.partly_other`)."""
        english = is_english(lang)
        parts = []
        for field in self.TEXT_FIELDS:
            zh, en = getattr(self, field).strip(), getattr(self, f"{field}_en").strip()
            text = (en or zh) if english else (zh or en)
            if text:
                parts.append(f"## {PART_HEADINGS[field][english]}\n{text}")
        return "\n\n".join(parts)

    def has_text_in(self, lang: str) -> bool:
        """Is every part this persona has written in `lang`? (False: some part is in the other
        language only.)"""
        english = is_english(lang)
        for field in self.TEXT_FIELDS:
            zh, en = getattr(self, field).strip(), getattr(self, f"{field}_en").strip()
            if (zh or en) and not (en if english else zh):
                return False
        return True


# The five parts' headings in a prompt, (Chinese, English): one language per prompt.
PART_HEADINGS = {
    "cognitive_frame": ("认知框架", "Cognitive frame"),
    "knowledge_domain": ("知识域", "Knowledge domain"),
    "decision_preferences": ("决策偏好", "Decision preferences"),
    "adversarial_rules": ("对抗规则", "Adversarial rules"),
    "expression_style": ("表达风格", "Expression style"),
}


class CrossCritique(models.Model):
    """What `source` holds against `target`. Directed: A→B and B→A are separate entries."""

    source = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="critiques_given")
    target = models.ForeignKey(
        Persona, on_delete=models.CASCADE, related_name="critiques_received", verbose_name=_("target")
    )
    point = models.TextField(_("point"))
    citation = models.CharField(_("source / citation"), max_length=300)
    # In English, for an English duel's ammunition; empty: the point and citation as written.
    point_en = models.TextField(_("point (English)"), blank=True)
    citation_en = models.CharField(_("source / citation (English)"), max_length=300, blank=True)
    order = models.PositiveIntegerField(_("order"), default=0)

    class Meta:
        verbose_name = _("cross-critique entry")
        verbose_name_plural = _("cross-critique entries")
        ordering = ["source__slug", "target__slug", "order", "id"]
        constraints = [
            models.CheckConstraint(condition=~Q(source=F("target")), name="critique_not_self"),
            models.CheckConstraint(condition=~Q(point=""), name="critique_point_required"),
            models.CheckConstraint(condition=~Q(citation=""), name="critique_citation_required"),
        ]

    def __str__(self):
        return f"{self.source.slug} → {self.target.slug}"


class PairingRule(models.Model):
    """Topic keywords that call two personas to a duel, optionally with their own round count."""

    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="pairing_rules")
    label = models.CharField(_("label"), max_length=200, blank=True)
    keywords = models.JSONField(_("topic keywords"), default=list, blank=True)
    persona_a = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    persona_b = models.ForeignKey(Persona, on_delete=models.CASCADE, related_name="+")
    pair_key = models.CharField(_("pair key"), max_length=170, editable=False)
    # Bounded by the library's max_rounds (clean), not by a constant: libraries set their own maximum.
    default_rounds = models.PositiveSmallIntegerField(_("rounds for this pair"), null=True, blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = _("pairing rule")
        verbose_name_plural = _("pairing rules")
        ordering = ["library__slug", "order", "id"]
        constraints = [
            models.CheckConstraint(condition=~Q(persona_a=F("persona_b")), name="pairing_two_personas"),
            models.UniqueConstraint(fields=["library", "pair_key"], name="pairing_unique_pair"),
            models.CheckConstraint(
                condition=Q(default_rounds__isnull=True) | Q(default_rounds__gte=1),
                name="pairing_rounds_positive",
            ),
        ]

    def __str__(self):
        return self.label or self.pair_key

    def save(self, *args, **kwargs):
        self.pair_key = pair_key(self.persona_a.slug, self.persona_b.slug)
        super().save(*args, **kwargs)

    def clean(self):
        try:
            maximum = self.library.max_rounds
        except Library.DoesNotExist:  # the form reports the missing library
            maximum = MAX_ROUNDS
        if self.default_rounds is not None and not 1 <= self.default_rounds <= maximum:
            message = _("A whole number from 1 to %(maximum)s, the library's maximum rounds.")
            raise ValidationError({"default_rounds": ValidationError(message, params={"maximum": maximum})})


class DomainTemplate(models.Model):
    """A roundtable scene template: domain keywords that recommend a set of roles."""

    library = models.ForeignKey(Library, on_delete=models.CASCADE, related_name="domain_templates")
    slug = models.SlugField(validators=[slug_validator])
    name = models.CharField(_("name"), max_length=200)
    name_en = models.CharField(_("English name"), max_length=200, blank=True)
    keywords = models.JSONField(_("domain keywords"), default=list, blank=True)
    roles = models.ManyToManyField(Persona, related_name="domain_templates", verbose_name=_("roles"))

    class Meta:
        verbose_name = _("domain template")
        verbose_name_plural = _("domain templates")
        ordering = ["library__slug", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["library", "slug"], name="template_unique_slug"),
        ]

    def __str__(self):
        return self.name
