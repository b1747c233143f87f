"""Cross-critique coverage: how much ammunition each side of a pair holds against the other.

The admin's coverage view shows it for every pairing rule and for any two personas picked by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count
from django.utils.translation import gettext as _

from personas.models import CrossCritique, Library, PairingRule, Persona, pair_key

STATUSES = ("both", "one-sided", "none")


def critique_counts() -> dict[tuple[int, int], int]:
    """Entries per directed (source id, target id), in one query."""
    rows = CrossCritique.objects.values("source_id", "target_id").annotate(n=Count("id")).order_by()
    return {(r["source_id"], r["target_id"]): r["n"] for r in rows}


@dataclass
class CoverageRow:
    a: Persona
    b: Persona
    a_to_b: int
    b_to_a: int
    rule: PairingRule | None = None

    @classmethod
    def build(cls, a, b, counts, rule=None) -> CoverageRow:
        return cls(a, b, counts.get((a.pk, b.pk), 0), counts.get((b.pk, a.pk), 0), rule)

    @property
    def key(self) -> str:
        return pair_key(self.a.slug, self.b.slug)

    @property
    def status(self) -> str:
        # A duel whose ammunition runs one way opens with a warning (PROTOCOLS.md §1): flag it.
        if self.a_to_b and self.b_to_a:
            return "both"
        return "one-sided" if self.a_to_b or self.b_to_a else "none"

    def entries(self, source: Persona, target: Persona):
        return CrossCritique.objects.filter(source=source, target=target).order_by("order", "id")

    @property
    def a_entries(self):
        return self.entries(self.a, self.b)

    @property
    def b_entries(self):
        return self.entries(self.b, self.a)


def picked_pair(a_slug: str, b_slug: str, counts) -> tuple[CoverageRow | None, list[str]]:
    """The pair asked for with ?a=&b=, or the reasons it cannot be shown."""
    a_slug, b_slug = a_slug.strip(), b_slug.strip()
    if not a_slug and not b_slug:
        return None, []
    found = Persona.objects.in_bulk([s for s in (a_slug, b_slug) if s], field_name="slug")
    errors = [_('Unknown persona "%(slug)s".') % {"slug": s} for s in (a_slug, b_slug) if s and s not in found]
    if not a_slug or not b_slug:
        errors.append(_("Pick two personas."))
    elif a_slug == b_slug:
        errors.append(_("Pick two different personas."))
    if errors:
        return None, errors
    return CoverageRow.build(found[a_slug], found[b_slug], counts), []


def coverage(library: str, a_slug: str, b_slug: str) -> dict:
    """The coverage page's content: every pairing rule's pair (of one library if given) and the picked pair."""
    counts = critique_counts()
    rules = PairingRule.objects.select_related("library", "persona_a", "persona_b").order_by(
        "library__slug", "order", "id"
    )
    if library:
        rules = rules.filter(library__slug=library)
    rows = [CoverageRow.build(r.persona_a, r.persona_b, counts, rule=r) for r in rules]
    picked, pick_errors = picked_pair(a_slug, b_slug, counts)
    return {
        "rows": rows,
        "totals": {status.replace("-", "_"): sum(r.status == status for r in rows) for status in STATUSES},
        "picked": picked,
        "pick_errors": pick_errors,
        "picks": [("a", a_slug), ("b", b_slug)],
        "library": library,
        "libraries": Library.objects.filter(pairing_rules__isnull=False).distinct(),
        "persona_choices": Persona.objects.order_by("library__name", "name").values_list("slug", "name"),
    }
