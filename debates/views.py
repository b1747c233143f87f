"""Function-based views: thin shells around forms, the runner and the frames.

Views create, stop and resume debates; they never call a provider and never run the engine.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from debates import frames, runner, suggestions
from debates.access import can_control, viewable_debate
from debates.forms import DebateForm, running_limit_error, save_debate
from debates.models import ACTIVE_STATUSES, FINAL_STATUSES, Debate, Status, Turn
from personas.models import Format, Library


def _visible_debates(request):
    debates = Debate.objects.all()
    if request.user.is_authenticated and request.user.is_staff:
        return debates
    if request.user.is_authenticated:
        return debates.filter(Q(owner=request.user) | Q(owner__isnull=True))
    return debates.filter(owner__isnull=True)


@require_GET
def home(request):
    debates = _visible_debates(request)
    q = request.GET.get("q", "").strip()
    fmt = request.GET.get("format", "")
    status = request.GET.get("status", "")
    if q:
        debates = debates.filter(question__icontains=q)
    if fmt in Format.values:
        debates = debates.filter(format=fmt)
    if status in Status.values:
        debates = debates.filter(status=status)
    page = Paginator(debates, 20).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "q": q,
        "format": fmt,
        "status": status,
        "formats": Format.choices,
        "statuses": Status.choices,
        "libraries": Library.objects.prefetch_related("personas"),
    }
    if request.htmx:
        return render(request, "home.html#history", context)
    return render(request, "home.html", context)


@login_required
def new(request):
    if request.method == "POST":
        form = DebateForm(request.POST, user=request.user)
        if form.is_valid():
            debate = save_debate(form, owner=request.user)
            runner.start(debate)
            return redirect(debate)
    else:
        form = DebateForm(initial={"topic": request.GET.get("topic", "")})
    return render(request, "debates/new.html", {"form": form})


@require_GET
def suggest(request):
    """The engine's suggestion for the question as the user types (htmx partial)."""
    topic = request.GET.get("topic", "")[:1000]
    fmt = request.GET.get("format", "duel")
    return render(request, "debates/_suggest.html", {"s": suggestions.for_question(topic, fmt), "format": fmt})


@require_GET
def live(request, pk):
    share = request.GET.get("share")
    debate = viewable_debate(request, pk, share)
    snap = frames.snapshot(debate.pk)
    context = snap.context(
        live=snap.debate.status not in FINAL_STATUSES,
        can_control=can_control(request.user, snap.debate),
        share=share if share == debate.share_token else "",
    )
    return render(request, "debates/live.html", context)


@require_GET
def report(request, pk):
    debate = viewable_debate(request, pk, request.GET.get("share"))
    snap = frames.snapshot(debate.pk)
    share = request.GET.get("share", "")
    return render(request, "debates/report.html", snap.context(share=share if share == debate.share_token else ""))


def archive_name(debate: Debate, ext: str) -> str:
    slug = debate.topic_slug or f"debate-{debate.pk}"
    day = (debate.finished_at or debate.created_at or timezone.now()).date().isoformat()
    return f"{slug}-{debate.format}-report-{day}.{ext}"


@require_GET
def export_md(request, pk):
    debate = viewable_debate(request, pk, request.GET.get("share"))
    rep = getattr(debate, "report", None) if hasattr(debate, "report") else None
    if rep is None:
        return HttpResponseBadRequest(_("This debate has no report yet."))
    body = rep.verdict_markdown + "\n\n---\n\n" + rep.transcript_markdown
    response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{archive_name(debate, "md")}"'
    return response


@require_GET
def export_json(request, pk):
    debate = viewable_debate(request, pk, request.GET.get("share"))
    rep = getattr(debate, "report", None) if hasattr(debate, "report") else None
    payload = {
        "id": debate.pk,
        "question": debate.question,
        "format": debate.format,
        "status": debate.status,
        "options": debate.options,
        "topic_slug": debate.topic_slug,
        "warnings": debate.warnings,
        "created_at": debate.created_at.isoformat(),
        "finished_at": debate.finished_at.isoformat() if debate.finished_at else None,
        "tokens": {
            "prompt": debate.prompt_tokens,
            "completion": debate.completion_tokens,
            "estimated": debate.tokens_estimated,
            "cap": debate.token_cap,
        },
        "seats": [
            {"persona": s.persona.slug, "name": s.persona.name, "position": s.position, "model": s.model}
            for s in debate.seats.select_related("persona")
        ],
        "turns": [
            {
                "key": t.key,
                "round": t.round,
                "phase": t.phase,
                "speaker": t.speaker_slug,
                "speaker_name": t.speaker_name,
                "state": t.state,
                "text": t.text,
                "summary": t.summary,
                "error": t.error,
                "prompt_tokens": t.prompt_tokens,
                "completion_tokens": t.completion_tokens,
                "usage_estimated": t.usage_estimated,
                "model": t.model,
                "messages": t.messages,
                "data": t.data,
                "history": t.history,
            }
            for t in debate.turns.all()
        ],
        "report": {
            "verdict_markdown": rep.verdict_markdown,
            "transcript_markdown": rep.transcript_markdown,
            "data": rep.data,
        }
        if rep
        else None,
    }
    response = JsonResponse(payload, json_dumps_params={"ensure_ascii": False, "indent": 2})
    response["Content-Disposition"] = f'attachment; filename="{archive_name(debate, "json")}"'
    return response


def _controlled(request, pk) -> Debate:
    debate = viewable_debate(request, pk)
    if not can_control(request.user, debate):
        raise Http404(_("No such debate."))
    return debate


def _back(request, debate):
    if request.htmx:
        return HttpResponseClientRefresh()
    return redirect(debate)


@require_POST
def stop(request, pk):
    debate = _controlled(request, pk)
    if debate.status in ACTIVE_STATUSES:
        runner.stop(debate)
    return _back(request, debate)


@require_POST
def resume(request, pk):
    debate = _controlled(request, pk)
    if debate.status in (Status.FAILED, Status.STOPPED):
        _start_within_limit(request, debate)
    return _back(request, debate)


@require_POST
def retry_turn(request, pk, turn_pk):
    """Regenerate one failed turn: the debate resumes from there; the failed text is kept in the
    turn's history."""
    debate = _controlled(request, pk)
    turn = Turn.objects.filter(debate=debate, pk=turn_pk).first()
    if turn is None:
        raise Http404(_("No such debate."))
    if turn.state in (Turn.State.FAILED, Turn.State.INTERRUPTED) and debate.status in (Status.FAILED, Status.STOPPED):
        _start_within_limit(request, debate)
    return _back(request, debate)


def _start_within_limit(request, debate) -> None:
    error = running_limit_error(request.user)
    if error:
        messages.error(request, error)
        return
    runner.start(debate)


@require_POST
def checkpoint(request, pk):
    debate = _controlled(request, pk)
    if debate.status == Status.WAITING:
        debate.checkpoint_reply = request.POST.get("addition", "")[:5000]
        debate.save(update_fields=["checkpoint_reply"])
        runner.start(debate)
    return _back(request, debate)


@require_POST
def share(request, pk):
    """Toggle the read-only share link (its token is unguessable and never changes)."""
    debate = _controlled(request, pk)
    debate.shared = request.POST.get("shared") == "1"
    debate.save(update_fields=["shared"])
    return redirect(debate)


@require_GET
def healthz(request):
    """For load balancers and supervisors: the database answers and the channel layer works."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer
    from django.db import connection

    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as error:  # report, don't raise: this page exists to say what is wrong
        checks["database"] = f"error: {type(error).__name__}"
    try:
        layer = get_channel_layer()
        channel = async_to_sync(layer.new_channel)()
        async_to_sync(layer.send)(channel, {"type": "health.ping"})
        async_to_sync(layer.receive)(channel)
        checks["channel_layer"] = "ok"
    except Exception as error:
        checks["channel_layer"] = f"error: {type(error).__name__}"
    healthy = all(v == "ok" for v in checks.values())
    return JsonResponse({"ok": healthy, **checks}, status=200 if healthy else 503)
