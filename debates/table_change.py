"""Changing who sits at the table at a checkpoint (the roundtable seed: the user may replace, add
or remove roles). Offered by formats whose options record the change (`joined`, `left`); the
engine has the newcomers state their round-1 thesis blind and the leavers take no further part."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from agora.text import strip_invisible
from debates.engine import registry
from debates.models import Debate, Seat, Status
from debates.specs import library_spec, options_of
from personas.models import Library, Persona, name_in

CHANGE_FIELDS = {"joined", "left"}


@dataclass
class Table:
    seated: list[tuple[str, str]]  # (slug, name) of who stated a thesis and still sits
    bench: list[tuple[str, str]]  # (slug, name) of the library's debaters who could join
    bounds: tuple[int, int]


def changeable(debate: Debate) -> bool:
    fmt = registry.get(debate.format)
    return debate.status == Status.WAITING and CHANGE_FIELDS <= fmt.Options.names()


def table_at_checkpoint(debate: Debate) -> Table | None:
    if not changeable(debate):
        return None
    fmt = registry.get(debate.format)
    options = options_of(debate)
    spoken = debate.turns.filter(key__startswith="r1:").values_list("speaker_slug", "speaker_name", "speaker_name_en")
    speakers = {slug: name_in(None, name, name_en) for slug, name, name_en in spoken}  # the reader's language
    seated = [(slug, strip_invisible(name)) for slug, name in speakers.items() if slug not in options.left]
    personas = _debaters(fmt.name)
    bench = [(p.slug, p.called()) for p in personas if p.slug not in speakers]
    original = debate.seats.exclude(persona__slug__in=options.joined).count()
    mode = fmt.effective_mode(debate.question, options, original)
    return Table(seated, bench, fmt.seat_bounds(mode.name if mode else ""))


def _refused_table(debate: Debate, slugs: list[str]) -> str:
    """What the format's own check says of the table the change would leave (the roundtable's
    2–3 stances, 每场必选 2-3 个 L1, hold at the checkpoint as at the start), or ""."""
    fmt = registry.get(debate.format)
    seated = [seat.persona for seat in debate.seats.select_related("persona__library")]
    library = library_spec(fmt, seated)
    by_slug = {p.slug: p for p in library.pool}
    table = [by_slug[slug] for slug in slugs if slug in by_slug]
    problem = fmt.check(debate.question, table, options_of(debate), library).get("personas")
    return problem.render(_) if problem else ""


def _debaters(format_name: str):
    libraries = Library.objects.filter(format=format_name)
    return Persona.objects.filter(library__in=libraries, kind=Persona.Kind.DEBATER).order_by("tier", "slug")


def plan_change(debate: Debate, keep: list[str], add: list[str]):
    """(option changes, a callable that seats the newcomers, an error for the user or "")."""
    table = table_at_checkpoint(debate)
    if table is None:
        return {}, None, ""
    seated = {slug for slug, _name in table.seated}
    bench = {slug for slug, _name in table.bench}
    kept = [slug for slug in keep if slug in seated]
    joining = [slug for slug in dict.fromkeys(add) if slug in bench]
    leaving = [slug for slug in seated if slug not in kept]
    low, high = table.bounds
    if not low <= len(kept) + len(joining) <= high:
        bounds = str(low) if low == high else f"{low}–{high}"
        return (
            {},
            None,
            _("This table seats %(bounds)s roles; the change would leave %(count)d.")
            % {
                "bounds": bounds,
                "count": len(kept) + len(joining),
            },
        )
    if not joining and not leaving:
        return {}, None, ""
    problem = _refused_table(debate, [*kept, *joining])
    if problem:
        return {}, None, problem
    options = options_of(debate)
    options.joined = [*options.joined, *joining]
    options.left = [*options.left, *leaving]

    def seat_newcomers() -> None:
        start = (debate.seats.order_by("-order").values_list("order", flat=True).first() or 0) + 1
        for offset, persona in enumerate(_debaters(debate.format).filter(slug__in=joining)):
            Seat.objects.create(debate=debate, persona=persona, order=start + offset)

    return {"options": options.as_dict()}, seat_newcomers, ""
