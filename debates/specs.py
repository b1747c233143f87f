"""ORM rows → the engine's dataclasses. The only place that does this: the runner builds a whole
debate's spec here, the start form and the suggestion box the library part of it."""

from __future__ import annotations

import re

from django.conf import settings
from django.utils import translation

from debates import clients
from debates.engine import registry
from debates.engine.format import Format
from debates.engine.spec import (
    CommonOptions,
    CompletedTurn,
    CritiqueSpec,
    DebateSpec,
    DomainTemplateSpec,
    LibrarySpec,
    PairingRuleSpec,
    PersonaSpec,
    SeatSpec,
)
from debates.models import Debate, Turn
from personas.models import CrossCritique, DomainTemplate, Library, PairingRule, Persona


def persona_spec(p: Persona) -> PersonaSpec:
    return PersonaSpec(
        slug=p.slug,
        name=p.name,
        kind=p.kind,
        tier=p.tier,
        role=p.role,
        tradition=p.tradition,
        keywords=tuple(p.keywords),
        description=p.description,
        name_en=p.name_en,
        description_en=p.description_en,
        # Each language's headings; a part missing in one language is the other's (the prompt says so).
        text=p.persona_text("zh"),
        text_en=p.persona_text("en"),
        partly_other=tuple(lang for lang in ("zh", "en") if not p.has_text_in(lang)),
        veto_right=p.veto_right,
        schema_type=p.schema_type,
        density_score=p.density_score,
    )


def library_spec(fmt: Format, seated: list[Persona] = ()) -> LibrarySpec:
    """The format's libraries as the engine sees them. The protocol (rounds, limits) is the seated
    personas' library's, else the format's first library's."""
    libraries = Library.objects.filter(format=fmt.name)
    pool_rows = list(Persona.objects.filter(library__in=libraries))
    # By slug: a distilled character being confirmed is not saved yet (no pk).
    everyone = {p.slug: p for p in [*pool_rows, *seated]}
    slugs = [p.slug for p in everyone.values()]
    # Columns, not model rows: a critique row with its two personas built three models (every
    # persona column of both), the most of this function's time, read at every start.
    critiques = CrossCritique.objects.filter(source__slug__in=slugs, target__slug__in=slugs).values_list(
        "source__slug", "target__slug", "point", "citation", "point_en", "citation_en"
    )
    rules = PairingRule.objects.filter(library__in=libraries).values_list(
        "persona_a__slug", "persona_b__slug", "keywords", "default_rounds", "label"
    )
    host_kind = fmt.seating.host_kind
    host = next((p for p in pool_rows if host_kind and p.kind == host_kind), None)
    library = seated[0].library if seated else libraries.first()
    return LibrarySpec(
        pool=[persona_spec(p) for p in everyone.values() if p.kind == "debater"],
        host=persona_spec(host) if host else None,
        critiques=[CritiqueSpec(*row) for row in critiques],
        pairing_rules=[PairingRuleSpec((a, b), tuple(words), rounds, label) for a, b, words, rounds, label in rules],
        domain_templates=[
            # roles.all(), the prefetched rows: values_list() would ask again per template
            DomainTemplateSpec(t.slug, t.name, tuple(t.keywords), tuple(r.slug for r in t.roles.all()), t.name_en)
            for t in DomainTemplate.objects.filter(library__in=libraries).prefetch_related("roles")
        ],
        protocol=dict(library.protocol) if library else {},
    )


def options_of(debate: Debate) -> CommonOptions:
    return registry.get(debate.format).Options.from_dict(debate.options)


def debate_spec(debate: Debate) -> DebateSpec:
    fmt = registry.get(debate.format)
    seats = list(debate.seats.select_related("persona__library", "provider"))

    def client_key(seat):
        if seat.for_a_person:
            return clients.human_key(seat)
        return clients.seat_key(seat.provider, seat.model, seat.reasoning_effort)

    completed = {
        t.key: CompletedTurn(
            t.key, t.text, t.summary, t.prompt_tokens, t.completion_tokens, t.data, reasoning_tokens=t.reasoning_tokens
        )
        for t in debate.turns.filter(state=Turn.State.DONE)
    }
    return DebateSpec(
        question=debate.question,
        format=fmt.name,
        seats=[SeatSpec(persona_spec(s.persona), s.position, client_key(s)) for s in seats],
        options=options_of(debate),
        library=library_spec(fmt, [s.persona for s in seats]),
        completed=completed,
        checkpoint_reply=debate.checkpoint_reply,
        overrides={
            key: {"client": clients.override_key(o), "instruction": o.get("instruction", "")}
            for key, o in debate.overrides.items()
        },
        turn_deadline=settings.AGORA_TURN_DEADLINE,
        translate=translator(question_language(debate.question)),
    )


def question_language(question: str) -> str:
    """The language a debate's own texts are in: Chinese if the question has Chinese in it."""
    return "zh-hans" if re.search("[\u3400-\u9fff]", question) else "en"


def translator(language: str):
    def translate(msgid: str) -> str:
        with translation.override(language):
            return translation.gettext(msgid)

    return translate
