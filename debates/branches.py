"""A finished debate taken further: one turn regenerated, a fork at a turn, the sides swapped.

Each is a change of rows and then an ordinary run: a regenerated turn is marked interrupted (as a
failed turn waiting for "Retry" is), so the run moves its attempt to the turn's history and writes
it again while every other finished turn is replayed; a fork and a swap are new debates. The
engine's guarantees therefore hold unchanged: each turn exactly once, resumable, the ledger
counting every attempt once.
"""

from __future__ import annotations

from django.utils.translation import gettext as _

from debates import control, invitations, model_choice
from debates.engine import registry
from debates.models import Debate, Provider, Seat, Turn

REGENERATED = "regenerated"


class BranchError(ValueError):
    """What the user asked cannot be done: the message says why."""


def parse_model(text: str, user=None, debate: Debate | None = None) -> dict:
    """ "" (the seat's own), "model", or "provider/model" → {"provider", "model"}. A model `user`
    may not name on its provider (the named one, else `debate`'s) is refused as at the start form
    (`model_choice`): a regenerated or forked turn runs on the same operator's key."""
    text = text.strip()
    if not text:
        return {}
    provider, _slash, model = text.rpartition("/") if "/" in text else ("", "", text)
    row = Provider.objects.filter(name=provider).first() if provider else None
    if provider and row is None:
        raise BranchError(_("Unknown provider “%(name)s”.") % {"name": provider})
    if row is not None and not row.approved:
        raise BranchError(row.waiting_reason())
    why = model_choice.refusal(user, row if provider else getattr(debate, "provider", None), model)
    if why:
        raise BranchError(why)
    return {"provider": provider, "model": model}


def regenerate(
    debate: Debate, turn: Turn, *, model: str = "", instruction: str = "", rerun_after: bool = False, user=None
):
    """Write `turn` again (with another model or an added instruction, if given). The turns after
    it are kept, marked as following its earlier attempt, or written again too (`rerun_after`)."""
    if debate.is_active:
        raise BranchError(_("Stop the debate first: a running debate cannot regenerate a turn."))
    if turn.state != Turn.State.DONE or turn.phase == "search":
        raise BranchError(_("Only a finished speech can be regenerated."))
    override = {**parse_model(model, user, debate), "instruction": instruction.strip()[:1000]}

    def prepare():
        later = debate.turns.filter(position__gt=turn.position, state=Turn.State.DONE)
        attempt = len(turn.history) + 1  # the attempt now shown becomes this one in the history
        if rerun_after:
            later.update(state=Turn.State.INTERRUPTED, error=REGENERATED)
        else:
            for kept in later:
                kept.data = {**kept.data, "follows_earlier": {"key": turn.key, "attempt": attempt}}
                kept.save(update_fields=["data"])
        Turn.objects.filter(pk=turn.pk).update(state=Turn.State.INTERRUPTED, error=REGENERATED)
        fresh = Debate.objects.get(pk=debate.pk)
        overrides = {**fresh.overrides, turn.key: override} if any(override.values()) else fresh.overrides
        human_inputs = {k: v for k, v in fresh.human_inputs.items() if k != turn.key}  # a person writes again
        Debate.objects.filter(pk=debate.pk).update(overrides=overrides, human_inputs=human_inputs)

    control.start(debate, door="regenerate", prepare=prepare)


def _copy_debate(source: Debate, owner, **fields) -> Debate:
    return Debate.objects.create(
        owner=owner,
        question=source.question,
        format=source.format,
        options=fields.pop("options", dict(source.options)),
        provider=fields.pop("provider", source.provider),
        model=fields.pop("model", source.model),
        research=source.research,
        search_provider=source.search_provider,
        **fields,
    )


def _copy_seats(source: Debate, target: Debate, *, swap: bool = False) -> None:
    seats = list(source.seats.all())
    if swap and not any(s.position for s in seats):
        seats.reverse()  # a duel's sides are its order: the other opens
    other = {"for": "against", "against": "for"}
    for order, seat in enumerate(seats):
        Seat.objects.create(
            debate=target,
            persona=seat.persona,
            order=order,
            position=other.get(seat.position, "") if swap else seat.position,
            provider=seat.provider,
            model=seat.model,
            stand_in=seat.stand_in,
            **invitations.copied(seat, target.owner),  # nobody is seated in a copy without asking
        )


def fork(debate: Debate, turn: Turn, owner, *, model: str = "", facts: str = "") -> Debate:
    """A new debate owning a copy of the turns up to `turn` (its phases too), then its own
    continuation: another default model, and facts added to its evidence, if given."""
    if turn.state != Turn.State.DONE:
        raise BranchError(_("A debate can be forked only at a finished turn."))
    chosen = parse_model(model, owner, debate)
    options = dict(debate.options)
    if facts.strip():
        options["evidence"] = "\n\n".join(filter(None, [options.get("evidence", ""), facts.strip()[:5000]]))

    def create() -> Debate:
        provider = Provider.objects.filter(name=chosen["provider"]).first() if chosen.get("provider") else None
        extra = {"provider": provider, "model": chosen.get("model", "")} if chosen else {}
        new = _copy_debate(
            debate,
            owner,
            options=options,
            forked_from=debate,
            forked_at=turn.key,
            phases=[p for p in debate.phases if p["position"] <= turn.position],
            human_inputs={k: v for k, v in debate.human_inputs.items()},
            **extra,
        )
        _copy_seats(debate, new)
        for kept in debate.turns.filter(position__lte=turn.position, state=Turn.State.DONE):
            kept.pk, kept.debate = None, new
            kept.history = []  # the fork starts from what the original showed
            kept.save()
        return new

    return control.start_new(create, door="fork")


def swappable(debate: Debate) -> bool:
    """Sides to exchange: who opens (a format whose sides are its order, with its seats named), or
    for and against (every seat given one)."""
    seats = list(debate.seats.all())
    sides = registry.get(debate.format).sides
    if sides == "order":
        return len(seats) == 2
    return sides == "positions" and len(seats) >= 2 and all(s.position for s in seats)


def swap(debate: Debate, owner) -> Debate:
    """The same question, models and budget with the sides exchanged, as a new debate."""
    if not swappable(debate):
        raise BranchError(
            _("Only a duel with both personas named, or a debate whose seats are for and against, has sides to swap.")
        )

    def create() -> Debate:
        new = _copy_debate(debate, owner, swap_of=debate)
        _copy_seats(debate, new, swap=True)
        return new

    return control.start_new(create, door="swap")
