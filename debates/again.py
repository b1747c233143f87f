"""“Start again with this question”: the start form refilled from a debate (`?from=<id>`).

A refused debate (any format: admission, the panel's evidence rule, a recommender that found
nobody) offers it on its page, so the question need not be typed again. Its owner gets the whole
start as it was: question, format, options (material and documents as read included), personas
and their sides, provider, model and web research, to change what the refusal asked for. Anyone
else who may see the debate gets its question and format only (its options may hold the owner's
private material). The form comes bound, so the page shows what it would refuse before Start.
"""

from __future__ import annotations

from debates.access import can_control, can_view
from debates.forms import ENVIRONMENT_SEARCH, NO_RESEARCH, DebateForm, form_for
from debates.models import Debate


def values_from(debate: Debate, *, everything: bool) -> dict:
    """The start form's values that would start `debate` again, as a program posts them."""
    values = {"topic": debate.question, "format": debate.format}
    if not everything:
        return values
    values.update(debate.options or {})
    seats = list(debate.seats.order_by("order").select_related("persona"))
    values["personas"] = [seat.persona.slug for seat in seats]
    values["positions"] = {seat.persona.slug: seat.position for seat in seats if seat.position}
    if seats and seats[0].stand_in:
        values["stand_in"] = seats[0].stand_in
    # "" names the environment's model: left out, the model chosen on the Connect page would run.
    values["provider"] = str(debate.provider_id) if debate.provider_id else ""
    if debate.model:
        values["model"] = debate.model
    if debate.reasoning_effort:
        values["reasoning_effort"] = debate.reasoning_effort
    if debate.research:
        values["search"] = f"p{debate.search_provider_id}" if debate.search_provider_id else ENVIRONMENT_SEARCH
    else:
        values["search"] = NO_RESEARCH
    return values


def refilled(request) -> DebateForm | None:
    """The start form refilled from the debate `?from=` names, if this user may see it."""
    ref = request.GET.get("from", "")
    if not ref.isdigit():
        return None
    debate = Debate.objects.filter(pk=int(ref)).first()
    if debate is None or not can_view(request.user, debate):
        return None
    return form_for(values_from(debate, everything=can_control(request.user, debate)))
