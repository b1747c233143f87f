"""The engine's suggestion for a question, shown live on the start page as the user types."""

from __future__ import annotations

from dataclasses import dataclass, field

from debates.engine import duel, moderated, roundtable
from debates.engine.spec import DomainTemplateSpec, PairingRuleSpec
from debates.engine.turns import DebateAborted
from debates.runner import persona_spec
from personas.models import DomainTemplate, Library, PairingRule, Persona


@dataclass
class Suggestion:
    personas: list = field(default_factory=list)  # [(PersonaSpec, note)]
    note: str = ""


def _pool(fmt: str):
    libraries = Library.objects.filter(format=fmt)
    return libraries, [persona_spec(p) for p in Persona.objects.filter(library__in=libraries, kind="debater")]


def for_question(topic: str, fmt: str) -> Suggestion:
    topic = topic.strip()
    if not topic:
        return Suggestion(note="")
    libraries, pool = _pool(fmt)
    if fmt == "duel":
        rules = [
            PairingRuleSpec((r.persona_a.slug, r.persona_b.slug), tuple(r.keywords), r.default_rounds, r.label)
            for r in PairingRule.objects.filter(library__in=libraries).select_related("persona_a", "persona_b")
        ]
        try:
            pairing = duel.choose_pair(topic, [], rules, pool)
        except DebateAborted as refusal:
            return Suggestion(note=str(refusal))
        how = {"rule": f"pairing rule: {pairing.rule.label}" if pairing.rule else "", "keywords": "keyword match"}
        return Suggestion([(pairing.a, ""), (pairing.b, "")], f"{pairing.key} · {how.get(pairing.how, '')}")
    if fmt == "roundtable":
        ok, reason = roundtable.suitability(topic)
        templates = [
            DomainTemplateSpec(t.slug, t.name, tuple(t.keywords), tuple(t.roles.values_list("slug", flat=True)))
            for t in DomainTemplate.objects.filter(library__in=libraries)
        ]
        roles, template = roundtable.recommend_roles(topic, templates, pool)
        note = template.name if template else "keyword match"
        if not ok:
            note = f"answered directly ({reason}) · " + note
        return Suggestion([(r, r.tier.upper()) for r in roles], note)
    if fmt == "moderated":
        return Suggestion([(p, f"{score:.2f}") for p, score in moderated.recommend(topic, pool)], "score ≥ 0.5")
    return Suggestion([(p, p.role) for p in pool], "")
