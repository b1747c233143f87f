"""The live page's audience requests (#30): vote, ask, up-vote, and the owner's moderation. Thin
shells around `debates.audience`; every viewer who may see the debate may vote and ask (a share
link's visitors too: the grant the link left in their session), only the owner and staff who see
every debate moderate. Answers are the panel's own parts, for htmx; the change itself reaches every
viewer through the debate's channel groups."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from debates import audience
from debates.access import viewable_debate
from debates.models import Debate


def _part(request, name: str, debate: Debate, **extra) -> HttpResponse:
    context = {**audience.page_context(request, debate, moderator=audience.moderates(request.user, debate)), **extra}
    html = render_to_string(f"{audience.PARTS}#{name}", context, request=request)
    return audience.remember(request, HttpResponse(html))


def _answer(request, name: str, debate: Debate, **extra) -> HttpResponse:
    if not request.htmx:
        return audience.remember(request, redirect(debate))
    return _part(request, name, debate, **extra)


def _moderated(request, pk) -> Debate:
    debate = viewable_debate(request, pk)
    if not audience.moderates(request.user, debate):
        raise Http404(_("No such debate."))
    return debate


def _user(request):
    return request.user if request.user.is_authenticated else None


def _address(request) -> str:
    """The peer as Django gives it (forwarded headers are honoured only from the configured
    proxies, upstream of this view): what an anonymous viewer's budget per address counts. A
    request without one shares the budget of every other such request."""
    return request.META.get("REMOTE_ADDR") or "unknown"


@require_POST
def vote(request, pk):
    debate = viewable_debate(request, pk)
    voter = audience.voter_of(request, create=True)
    error = ""
    try:
        audience.vote(debate, voter, request.POST.get("choice", ""), user=_user(request), address=_address(request))
    except audience.Refused as refusal:
        error = str(refusal)
    return _answer(request, "mine", debate, error=error)


@require_POST
def ask(request, pk):
    debate = viewable_debate(request, pk)
    voter = audience.voter_of(request, create=True)
    text = request.POST.get("text", "")
    try:
        audience.ask(debate, voter, text, user=_user(request), address=_address(request))
    except audience.Refused as refusal:
        return _answer(request, "ask", debate, error=str(refusal), asked=text[: audience.MAX_QUESTION])
    return _answer(request, "ask", debate, sent=True)


@require_POST
def upvote(request, pk, question_pk):
    debate = viewable_debate(request, pk)
    voter = audience.voter_of(request, create=True)
    try:
        audience.upvote(debate, voter, question_pk, address=_address(request))
    except audience.Refused:
        pass  # hidden or taken meanwhile (the panel already says so), or past the budget: not counted
    return audience.remember(request, HttpResponse(status=204) if request.htmx else redirect(debate))


@require_POST
def take(request, pk):
    debate = _moderated(request, pk)
    chosen = request.POST.get("question")
    try:
        audience.take(debate, int(chosen) if chosen and chosen.isdigit() else None)
    except audience.Refused as refusal:
        return _answer(request, "moderation", debate, error=str(refusal), open=True)
    return _answer(request, "moderation", debate, open=True)


@require_POST
def hide(request, pk, question_pk):
    debate = _moderated(request, pk)
    audience.hide(debate, question_pk, request.POST.get("hidden", "1") == "1")
    return _answer(request, "moderation", debate, open=True)


@require_POST
def remove(request, pk):
    debate = _moderated(request, pk)
    voter = request.POST.get("voter", "")
    if voter:
        audience.remove_viewer(debate, voter)
    return _answer(request, "moderation", debate, open=True)


@require_POST
def settle(request, pk):
    debate = _moderated(request, pk)
    audience.settle(
        debate,
        voting_closed=request.POST.get("voting_closed") == "1",
        chair_takes=request.POST.get("chair_takes") == "1",
    )
    return _answer(request, "moderation", debate, open=True)
