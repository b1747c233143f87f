"""The debate spec: plain dataclasses the engine runs on.

`debates.runner` is the only place that turns ORM rows into these; tests build them directly.
Each format declares its own `Options` (a subclass of `CommonOptions`) in its module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from debates.engine.i18n import Text, gettext_noop, language_of, named
from debates.engine.options import option


@dataclass(frozen=True)
class PersonaSpec:
    slug: str
    name: str
    kind: str = "debater"  # debater | host | moderator
    tier: str = ""
    role: str = ""
    tradition: str = ""
    keywords: tuple[str, ...] = ()
    description: str = ""
    text: str = ""  # the persona proper: frame, domain, preferences, rules, style
    veto_right: bool = False
    schema_type: str = ""
    density_score: float | None = None
    name_en: str = ""  # the English display name (the English debate's prompts and pages)
    description_en: str = ""
    text_en: str = ""  # the persona proper in English; empty: `text` serves both languages
    # The debate languages in which some part of the text is the other language's (its author
    # wrote it in one language only): the prompt says so (`prompts.system_prompt`).
    partly_other: tuple[str, ...] = ()

    def told(self, lang: str) -> str:
        """The persona proper as a debate in `lang` sends it: its own language's text, else the
        other's (a user's persona written in one language only)."""
        return (self.text_en or self.text) if lang == "en" else (self.text or self.text_en)

    def called(self, lang: str) -> str:
        """The name this persona goes by in a debate (or on a page) in `lang` ("zh"/"en")."""
        return self.name_en if lang == "en" and self.name_en else self.name

    def described(self, lang: str) -> str:
        return self.description_en if lang == "en" and self.description_en else self.description

    def named(self, lang: str) -> Text:
        """The name inside a message: `called(lang)` where the engine renders it, the reader's own
        where a page does (`i18n.named`)."""
        return named(self.name, self.name_en, lang)


@dataclass(frozen=True)
class CritiqueSpec:
    source: str
    target: str
    point: str
    citation: str
    point_en: str = ""  # the point and its source in English (an English duel's ammunition); empty: as written
    citation_en: str = ""

    def pointed(self, lang: str) -> tuple[str, str]:
        """(point, citation) as a debate in `lang` sends them."""
        if lang == "en" and self.point_en:
            return self.point_en, self.citation_en or self.citation
        return self.point, self.citation


@dataclass(frozen=True)
class PairingRuleSpec:
    personas: tuple[str, str]
    keywords: tuple[str, ...] = ()
    default_rounds: int | None = None
    label: str = ""


@dataclass(frozen=True)
class DomainTemplateSpec:
    slug: str
    name: str
    keywords: tuple[str, ...]
    roles: tuple[str, ...]
    name_en: str = ""  # the English name (an English question's suggestion)

    def called(self, lang: str) -> str:
        return self.name_en if lang == "en" and self.name_en else self.name


@dataclass(frozen=True)
class SeatSpec:
    persona: PersonaSpec
    position: str = ""  # position-based debates: "for" | "against"
    client: str | None = None  # key of the LLM client for this seat; None = the debate's default


@dataclass(frozen=True)
class CompletedTurn:
    """A turn already finished in an earlier run: replayed on resume, never regenerated."""

    key: str
    text: str
    summary: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    data: dict[str, Any] = field(default_factory=dict)
    reasoning_tokens: int = 0  # of completion_tokens, the thinking's


@dataclass
class LibrarySpec:
    """What the format's libraries offer: the persona pool it may choose from (duel pairing,
    roundtable and moderated recommendations), the host, cross-critique, pairing rules, domain
    templates and the protocol (rounds and limits)."""

    pool: list[PersonaSpec] = field(default_factory=list)
    host: PersonaSpec | None = None
    critiques: list[CritiqueSpec] = field(default_factory=list)
    pairing_rules: list[PairingRuleSpec] = field(default_factory=list)
    domain_templates: list[DomainTemplateSpec] = field(default_factory=list)
    protocol: dict[str, Any] = field(default_factory=dict)


class UnknownOptions(ValueError):
    pass


@dataclass
class CommonOptions:
    """Options every format takes. A format's own `Options` adds its fields; `from_dict` refuses
    keys the format does not know, so a typo or another format's option never passes silently."""

    # Each field describes itself for the doors (`debates.engine.options`).
    evidence: str = option(  # user-supplied material for the evidence pack
        "",
        kind="long_text",
        label=gettext_noop("Material for the evidence pack"),
        help=gettext_noop("Figures, notes, excerpts: each part becomes a numbered source the speakers may cite."),
        max_length=20000,
        lines=4,
        place="material",
        cli_file=True,
        from_chat="earlier",
        example="去年云成本上涨 30%，团队有 12 名工程师。",
    )
    # Uploaded documents, as read on the form: [{"name", "kind", "sections": [{"label", "text"}]}]
    documents: list[dict[str, Any]] = option(
        [],
        kind="uploads",
        label=gettext_noop("Documents"),
        help=gettext_noop("Up to %(count)d files (%(kinds)s), %(size)s each: each part becomes a source."),
        place="material",
        aliases=("--document",),
    )
    user_context: str = option(  # what the user says about themselves and their constraints
        "",
        kind="long_text",
        label=gettext_noop("About you (optional)"),
        help=gettext_noop("Your situation and constraints (team, budget, deadline): every persona reads them."),
        max_length=2000,
        lines=2,
        place="material",
        aliases=("--context",),
        from_chat="system",
        example="我在家修行，每天只有半小时。",
    )
    # Per turn kind overrides of `Format.tokens`: for the engine's own callers (benchmarks, tests).
    max_tokens: dict[str, int] = option({}, kind="per_turn", label=gettext_noop("Tokens per turn"), internal=True)
    money_budget: float | None = option(  # USD: past it no turn starts but a verdict
        None,
        kind="float",
        label=gettext_noop("Money budget (USD)"),
        help=gettext_noop(
            "Empty: no limit. Once the debate has cost this much no new turn starts (a verdict still does). "
            "Prices come from the provider's settings or a built-in table; the local model is free."
        ),
        minimum=0.0001,
        place="advanced",
        example=0.5,
    )
    # The sampling temperature: for the engine's own callers (the local-model tests), not offered.
    temperature: float | None = option(None, kind="float", label=gettext_noop("Temperature"), internal=True)

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> CommonOptions:
        data = dict(data or {})
        unknown = sorted(set(data) - cls.names())
        if unknown:
            raise UnknownOptions(f"unknown option(s) for this format: {', '.join(unknown)}")
        return cls(**data)

    def as_dict(self) -> dict[str, Any]:
        """Only what differs from the defaults (what a debate row stores)."""
        defaults = type(self)()
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(defaults, f.name)
        }


@dataclass
class DebateSpec:
    question: str
    format: str
    seats: list[SeatSpec] = field(default_factory=list)
    options: CommonOptions = field(default_factory=CommonOptions)
    library: LibrarySpec = field(default_factory=LibrarySpec)
    # Resume state: finished turns by key, and the user's answer at the roundtable checkpoint.
    completed: dict[str, CompletedTurn] = field(default_factory=dict)
    checkpoint_reply: str | None = None
    # Turns the user regenerates differently: {turn key: {"client": key or None, "instruction": str}}
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The longest one turn may take, start to end (seconds; None: no limit). Set by the operator.
    turn_deadline: float | None = None
    # Renders the engine's msgids in the debate's own language (the report's Markdown; its
    # sections are data the web layer renders again per reader). English when nobody says.
    translate: Callable[[str], str] = gettext_noop
    # The audience's questions taken into the debate (#30): any object with
    # `async taken() -> list[str]` and `async chair_take() -> str | None` (the moderated chair's
    # own pick, None unless the owner lets it); None: no audience.
    floor: Any = None

    @property
    def language(self) -> str:
        """ "zh" or "en": the language of the question, which the whole debate is held in."""
        return language_of(self.question)
