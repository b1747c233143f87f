"""Invitations to a seat at the table.

The owner may give a seat to another user by name. That is an invitation, not a fact:

- It is pending until the invitee accepts. Until then they see it on their home page as an
  invitation (who asks, the question, the seat), with Accept and Decline; the debate is not in
  their list and its page is not theirs to open.
- Accepted, the debate is in their list and they write the seat's turns (a turn already waiting
  for the seat becomes theirs to write). They can leave the seat whenever they like.
- Declined, left, or withdrawn by the owner, the seat's person is gone: every turn of it goes as a
  missed turn does (`control.expire_human_turns`), at once: a model speaks for the seat, or the
  turn passes, as the owner chose on the start form.
- Any name is accepted on the start form, and only a user who has it (and is active) is invited.
  The owner's page shows the name they typed, "no answer yet", and the seat's turns wait for the
  deadline either way, so it never tells an existing account from a missing one; only the invitee
  answering (accept or decline) does, and that is their choice.
"""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from debates import control
from debates.access import PRESENT, can_control
from debates.models import Debate, Invitation, Seat, Status

log = logging.getLogger(__name__)

SHOWN = 20  # invitations listed on the home page (the rest: "and N more", and Decline all)


def seat_for(owner, name: str) -> dict:
    """The Seat fields for a seat the owner gives to `name`: the owner's own seat when it is their
    name, else a pending invitation, to the active user of that name if there is one, else to
    nobody (never said: the seat looks and waits the same either way)."""
    from django.contrib.auth import get_user_model

    name = name.strip()[:150]
    if not name:
        return {}
    if owner is not None and name == owner.get_username():
        return {"human": owner, "invitation": Invitation.NONE, "invited_name": ""}
    user = get_user_model().objects.filter(username=name, is_active=True).first()
    return {"human": user, "invitation": Invitation.PENDING, "invited_name": name}


def pending_for(user) -> QuerySet:
    """The user's pending invitations, newest debate first."""
    if not (user and user.is_authenticated):
        return Seat.objects.none()
    seats = Seat.objects.filter(human=user, invitation=Invitation.PENDING)
    return seats.select_related("debate__owner", "persona").order_by("-debate__created_at", "order")


def for_home(user) -> dict:
    """The home page's invitations: the newest SHOWN, and how many more there are."""
    pending = pending_for(user)
    shown = list(pending[:SHOWN])
    more = pending.count() - len(shown) if len(shown) == SHOWN else 0
    return {"shown": shown, "more": more, "total": len(shown) + more}


def copied(seat: Seat, owner) -> dict:
    """A seat's person in a copy of its debate owned by `owner` (a fork, a swap): the owner's own
    seat stays theirs; anyone else is asked again (a copy must not put a debate in someone's list);
    a seat whose person had gone stays vacated."""
    if seat.vacated:
        return {"human": seat.human, "invitation": seat.invitation, "invited_name": seat.invited_name}
    if seat.human_id is not None and owner is not None and seat.human_id == owner.pk:
        return {"human": seat.human, "invitation": Invitation.NONE, "invited_name": ""}
    if not seat.for_a_person:
        return {}
    return {"human": seat.human, "invitation": Invitation.PENDING, "invited_name": seat.person_name}


def accept(seat: Seat) -> bool:
    """The invitee takes the seat; a turn of it already waiting is now theirs to write."""
    with transaction.atomic():
        debate = Debate.objects.select_for_update().get(pk=seat.debate_id)
        if not Seat.objects.filter(pk=seat.pk, invitation=Invitation.PENDING).update(invitation=Invitation.ACCEPTED):
            return False
        awaiting = debate.awaiting or {}
        if debate.status == Status.WAITING and awaiting.get("speaker") == seat.persona.slug:
            Debate.objects.filter(pk=debate.pk).update(awaiting={**awaiting, "human": seat.human_id})
    return True


def vacate(seat: Seat, outcome: str, allowed_from) -> bool:
    """The seat's person is gone (declined, left, withdrawn): a turn of it waiting now is due at
    once, handed on as a missed turn is; later turns go the same way without waiting."""
    with transaction.atomic():
        debate = Debate.objects.select_for_update().get(pk=seat.debate_id)
        if not Seat.objects.filter(pk=seat.pk, invitation__in=allowed_from).update(invitation=outcome):
            return False
        awaiting = debate.awaiting or {}
        if debate.status == Status.WAITING and awaiting.get("speaker") == seat.persona.slug:
            due = {**awaiting, "human": None, "deadline_at": timezone.now().isoformat()}
            Debate.objects.filter(pk=debate.pk).update(awaiting=due)
    control.expire_human_turns()  # now, not at the next watch (which retries if this could not)
    return True


# -- views -------------------------------------------------------------------------------------------


def _own_seat(request, seat_id: int) -> Seat:
    seat = Seat.objects.select_related("debate", "persona").filter(pk=seat_id, human_id=request.user.pk).first()
    if seat is None:
        raise Http404(_("No such invitation."))
    return seat


@login_required
@require_POST
def answer(request, seat_id: int):
    """Accept (then the debate's page) or decline (then home) a pending invitation."""
    seat = _own_seat(request, seat_id)
    if request.POST.get("answer") == "accept":
        if accept(seat):
            return redirect(seat.debate)
        messages.error(request, _("This invitation is no longer open."))
    elif vacate(seat, Invitation.DECLINED, [Invitation.PENDING]):
        messages.success(request, _("Invitation declined."))
    return redirect("debates:home")


@login_required
@require_POST
def decline_all(request):
    for seat in list(pending_for(request.user)):
        vacate(seat, Invitation.DECLINED, [Invitation.PENDING])
    messages.success(request, _("All invitations declined."))
    return redirect("debates:home")


@login_required
@require_POST
def leave(request, seat_id: int):
    """The seat's person leaves it: the debate leaves their list, and the seat falls back."""
    seat = _own_seat(request, seat_id)
    if vacate(seat, Invitation.LEFT, PRESENT):
        messages.success(request, _("You left the seat: from now on its turns go as missed turns do."))
    return redirect("debates:home")


@require_POST
def withdraw(request, seat_id: int):
    """The owner takes a seat back from the person they invited (answered or not)."""
    seat = Seat.objects.select_related("debate", "persona").filter(pk=seat_id).first()
    if seat is None or not can_control(request.user, seat.debate) or seat.debate.owner_id is None:
        raise Http404(_("No such debate."))
    vacate(seat, Invitation.WITHDRAWN, [Invitation.PENDING, Invitation.ACCEPTED])
    return redirect(seat.debate)


def people(user, debate: Debate) -> list[dict]:
    """The live page's "at the table" rows: for the owner every person seat with its state (and
    Withdraw); for anyone else at the table only their own seats (and Leave)."""
    owner = can_control(user, debate) and debate.owner_id is not None
    if not owner and not user.is_authenticated:
        return []  # no seat is an anonymous viewer's: skip the read on every shared page load
    rows = []
    for seat in debate.seats.select_related("persona", "human"):
        mine = user.is_authenticated and seat.human_id == user.pk and seat.invitation in PRESENT
        if not seat.for_a_person or not (owner or mine):
            continue
        withdraw = owner and seat.invitation in (Invitation.PENDING, Invitation.ACCEPTED)
        rows.append({"seat": seat, "mine": mine, "withdraw": withdraw})
    return rows
