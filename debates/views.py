"""Function-based views: thin shells around forms, the runner and the frames.

Views create, stop and resume debates; they never call a provider and never run the engine.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRefresh

from debates import (
    admission,
    again,
    audience,
    branches,
    characters,
    charts,
    comparisons,
    control,
    exports,
    frames,
    human_turns,
    invitations,
    sharing,
    table_change,
)
from debates.access import can_control, shows_internals, viewable_debate, visible_debates
from debates.engine import registry
from debates.engine.i18n import for_reader
from debates.engine.report import RESEARCH_LINE
from debates.forms import (
    MAX_TOPIC,
    DebateForm,
    effort_hints,
    format_part,
    formats_taking,
    nobody_chosen,
    save_debate,
)
from debates.models import (
    ACTIVE_STATUSES,
    FINAL_STATUSES,
    Comparison,
    Debate,
    Provider,
    Status,
    Turn,
)
from debates.running_limit import RunningLimitReached
from debates.specs import library_spec
from personas.models import Library, is_english


@require_GET
def home(request):
    everything = visible_debates(request.user)
    q = request.GET.get("q", "").strip()
    fmt = request.GET.get("format", "")
    status = request.GET.get("status", "")
    filters = {}
    debates = everything
    if q:
        debates, filters["q"] = debates.filter(question__icontains=q), q
    if fmt in registry.names():
        debates, filters["format"] = debates.filter(format=fmt), fmt
    if status in Status.values:
        debates, filters["status"] = debates.filter(status=status), status
    page = Paginator(debates, 20).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "q": q,
        "format": fmt,
        "status": status,
        "filtered": bool(filters),
        # "Nothing matches" only means something when there is something to match.
        "none_at_all": not page.object_list and (not filters or not everything.exists()),
        "filters_query": urlencode(filters),
        "formats": [(f.name, _(f.label)) for f in registry.all_formats()],
        "statuses": Status.choices,
        "libraries": Library.objects.prefetch_related("personas"),
        "invitations": invitations.for_home(request.user),
    }
    # A history restore (back button, cache gone) wants the whole page, not the list.
    if request.htmx and not request.htmx.history_restore_request:
        response = render(request, "home.html#history", context)
        # The address bar shows the filters (reload and sharing keep them), without empty ones.
        response["HX-Push-Url"] = reverse("debates:home") + (f"?{context['filters_query']}" if filters else "")
    else:
        response = render(request, "home.html", context)
    # The list alone and the whole page live at one address: caches must keep them apart.
    patch_vary_headers(response, ("HX-Request",))
    return response


def _start_page(request, form: DebateForm) -> dict:
    topic = str(form["topic"].value() or "")
    part = format_part(form)
    mode = str(form["mode"].value() or "") if form.is_bound else ""
    # Documents read on this post stay with the page (a file input cannot be refilled).
    read = getattr(form, "cleaned_data", {}).get("documents") if form.is_bound else None
    form.fields["reasoning_effort"].widget.attrs.update(effort_hints())  # where the page offers it
    advanced = [
        form["provider"],
        form["model"],
        form["reasoning_effort"],
        form["seat_models"],
        *(o.field for o in form.placed("advanced")),
    ]
    return {
        "carried_documents": [d["name"] for d in read or []],
        "carried_json": json.dumps(read, ensure_ascii=False) if read else "",
        "form": form,
        "part": part,
        "suggestion": _suggestion_html(request, part.fmt, topic, mode) if topic.strip() else "",
        "material": form.placed("material"),  # what every format reads, as the options declare it
        "advanced": advanced,
        "advanced_open": any(field.errors for field in advanced),
        # Only approved providers' models: a list fetched from a provider that staff added is
        # the reply of whatever server they named, shown once a superuser approves it.
        "providers": [p for p in Provider.objects.filter(approved=True) if p.offered_models],
        "max_topic": MAX_TOPIC,
        # Counted as the page's script counts: code points, a line break as one.
        "topic_length": len(topic.replace("\r\n", "\n")),
    }


def _initial_format(request) -> str:
    name = request.GET.get("format", "")
    return name if name in registry.names() else registry.names()[0]


@login_required
def new(request):
    notice, cast = "", None
    if request.method == "POST":
        # Real people named (the question's 「和 XX、XX 讨论」, "Add a character"): L3 characters.
        cast = characters.Cast.read(request.POST)
        form = DebateForm(request.POST, request.FILES, characters=cast.seated(), user=request.user)
        cast.check(form)
        if form.is_valid() and cast.new:  # looked up or distilled, then shown to confirm
            form, notice, cast = cast.confirm(request, form, _confirm_choice)
        elif form.is_valid() and form.fmt.confirms_choice and not form.cleaned_data["personas"]:
            form, notice = _confirm_choice(request, form)
        elif form.is_valid():
            try:
                debate = control.start_new(lambda: save_debate(form, owner=request.user), door="new")
            except RunningLimitReached as refusal:
                form.add_error(None, str(refusal))
            else:
                return redirect(debate)
    else:
        # "Start again with this question" (a refused debate's page): the form refilled from it.
        form = again.refilled(request) or DebateForm(
            initial={
                "topic": request.GET.get("topic", ""),
                "format": _initial_format(request),
                # Back from "Connect a model": the provider just connected is chosen.
                "provider": request.GET.get("provider") or None,
            }
        )
    return render(request, "debates/new.html", {**_start_page(request, form), "notice": notice, "cast": cast})


def _confirm_choice(request, form: DebateForm) -> tuple[DebateForm, str]:
    """Nobody chosen, for a format that asks: the same page with the roles it picks for this
    question checked, to keep or change before starting. Nothing is created yet."""
    fmt, data = form.fmt, form.cleaned_data
    suggestion = fmt.suggest(data["topic"], library_spec(fmt), data["options"])
    posted = request.POST.copy()
    posted.setlist("personas", [persona.slug for persona, _ in suggestion.personas])
    if data.get("documents"):  # a file input cannot be filled again: the text read travels instead
        posted["documents_read"] = json.dumps(data["documents"], ensure_ascii=False)
    return DebateForm(posted, user=request.user), _(
        "Agora picked these roles for your question (checked below): confirm or change them, then click Start "
        "again. Nothing has started yet."
    )


@login_required
@require_GET
def new_part(request):
    """The start page's format-specific part for another format (htmx swaps it in), with that
    format's suggestion for the question. The address follows, so a reload shows the same format."""
    fmt_name = _initial_format(request)
    form = DebateForm(initial={"format": fmt_name})
    context = {
        "form": form,
        "part": format_part(form),
        "suggestion": _suggestion_html(request, registry.get(fmt_name), request.GET.get("topic", "")),
    }
    response = render(request, "debates/new.html#format_part", context)
    # The help of the fields every format reads, as this format declares it (out of band).
    help_html = render_to_string("debates/new.html#material_help", {"material": form.placed("material")}, request)
    response.content += help_html.encode()
    response["HX-Replace-Url"] = f"{reverse('debates:new')}?{urlencode({'format': fmt_name})}"
    return response


def _suggestion_html(request, fmt, topic: str, mode: str = "") -> str:
    """What the format would do with the question if nobody is chosen. Where the submit would
    refuse that (`fmt.check`), the box says so instead of suggesting: both must agree."""
    topic = topic[:MAX_TOPIC]
    suggestion, refusal = nobody_chosen(fmt, topic, mode)
    context = {
        # Where this format refuses it, the formats that take it, one click each (a submit button).
        "switches": formats_taking(topic, fmt.name) if refusal else [],
        "personas": [] if refusal else suggestion.personas,
        # Names inside the note as this reader knows them, whatever the question's language.
        "note": for_reader(suggestion.note, is_english()).render(_) if suggestion.note and not refusal else "",
        "refusal": refusal.render(_) if refusal else "",
    }
    # Stripped, so that an empty box is :empty and takes no room.
    return mark_safe(render_to_string("debates/_suggest.html", context, request).strip())  # noqa: S308 - our template


@require_GET
def suggest(request):
    """What the format would do with the question, as the user types (htmx partial)."""
    try:
        fmt = registry.get(request.GET.get("format", ""))
    except ValueError:
        fmt = registry.all_formats()[0]
    return HttpResponse(_suggestion_html(request, fmt, request.GET.get("topic", ""), request.GET.get("mode", "")))


@require_GET
def live(request, pk):
    share = request.GET.get("share")
    debate = viewable_debate(request, pk, share)
    snap = frames.snapshot(debate.pk)
    panel = audience.panel(request, snap.debate)  # votes and questions (#30)
    context = snap.context(
        live=snap.debate.status not in FINAL_STATUSES or panel["socket"],
        can_control=can_control(request.user, snap.debate),
        share=share if share == debate.share_token else "",
        show_internals=shows_internals(request.user),
        people=invitations.people(request.user, snap.debate),
        audience=panel,
    )
    return render(request, "debates/live.html", context)


@require_GET
def report(request, pk):
    debate = viewable_debate(request, pk, request.GET.get("share"))
    snap = frames.snapshot(debate.pk)
    share = request.GET.get("share", "")
    data = snap.report.data if snap.report and isinstance(snap.report.data, dict) else {}
    context = snap.context(
        share=share if share == debate.share_token else "",
        show_internals=shows_internals(request.user),
        positions_chart=charts.positions(data),
        ledger_chart=charts.ledger(data, snap.debate.token_cap),
        votes=(votes := audience.results(snap.debate)["sides"]),  # the room's vote (#30)
        votes_chart=charts.votes(votes),
        research=_research_line(data),
        branch=_branch_context(request, snap.debate),
    )
    return render(request, "debates/report.html", context)


def _branch_context(request, debate: Debate) -> dict:
    """What the report page offers its owner to take the debate further, and its relatives."""
    turns = [t for t in debate.turns.all() if t.state == Turn.State.DONE and t.phase != "search"]
    swaps = list(debate.swaps.all()) + ([debate.swap_of] if debate.swap_of else [])
    return {
        "controls": can_control(request.user, debate) and not debate.is_active and bool(turns),
        "turns": turns,
        "swappable": branches.swappable(debate),
        "forked_from": debate.forked_from,
        "forks": list(debate.forks.all()),
        "swaps": swaps,
        "comparison": swap_comparison(debate, swaps[0]) if swaps else None,
    }


def swap_comparison(debate: Debate, other: Debate) -> list[dict]:
    """The two runs of a swap side by side: each persona's side and last summary in both, and
    whether its conclusion moved with its side (it followed the side, not the argument)."""
    from debates.engine.text import similarity

    def last(d: Debate) -> dict[str, tuple[str, str]]:
        sides = {s.persona.slug: s.position or f"#{s.order + 1}" for s in d.seats.select_related("persona")}
        said = {}
        for t in d.turns.filter(state=Turn.State.DONE).exclude(summary=""):
            if t.speaker_slug in sides:
                said[t.speaker_slug] = (t.speaker_in(), t.summary)
        return {slug: (*said.get(slug, ("", "")), side) for slug, side in sides.items()}

    mine, theirs = last(debate), last(other)
    rows = []
    for slug, (name, summary, side) in mine.items():
        other_name, other_summary, other_side = theirs.get(slug, ("", "", ""))
        moved = bool(summary and other_summary) and similarity(summary, other_summary) < 0.35
        rows.append(
            {
                "name": name or other_name or slug,
                "side": side,
                "summary": summary,
                "other_side": other_side,
                "other_summary": other_summary,
                "moved": moved,
            }
        )
    return rows


def _research_line(data: dict) -> str:
    """What the debate's research cost, in the reader's language ("" when it searched nothing)."""
    research = (data.get("ledger") or {}).get("research")
    return _(RESEARCH_LINE) % research if research else ""


@require_GET
def export_md(request, pk, part: str = "both"):
    """The report as Markdown, in the reader's language: the verdict and the transcript together
    (`export.md`), or one of them (`report.md`, `transcript.md`, named as the panel's archive is)."""
    debate = viewable_debate(request, pk, request.GET.get("share"))
    thinking = request.GET.get("thinking") == "1"  # the models' thinking, only when asked
    body = exports.export_markdown(debate, request.user, part, thinking=thinking)
    if body is None:
        return HttpResponseBadRequest(_("This debate has no report yet."))
    response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    kind = part if part in exports.EXPORT_PARTS else "debate"  # report and transcript together
    return exports.attachment(response, debate, "md", kind)


@require_GET
def export_json(request, pk):
    debate = viewable_debate(request, pk, request.GET.get("share"))
    payload = exports.export_payload(debate, request.user)
    response = JsonResponse(payload, json_dumps_params={"ensure_ascii": False, "indent": 2})
    return exports.attachment(response, debate, "json")


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
        control.stop(debate)
    return _back(request, debate)


@require_POST
def resume(request, pk):
    debate = _controlled(request, pk)
    if debate.status in (Status.FAILED, Status.STOPPED):
        _start_within_limit(request, debate, door="resume")
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
        _start_within_limit(request, debate, door="retry")
    return _back(request, debate)


def _start_within_limit(request, debate, *, door: str, **changes) -> None:
    try:
        control.start(debate, door=door, **changes)
    except RunningLimitReached as refusal:
        messages.error(request, str(refusal))


@require_POST
def checkpoint(request, pk):
    """Continue from the checkpoint with the facts added and, where the format allows, the table
    changed (roles kept, roles joining)."""
    debate = _controlled(request, pk)
    if debate.status == Status.WAITING:
        changes, seat_newcomers, error = {}, None, ""
        if request.POST.get("table"):  # the form showed the table: what is unticked leaves
            changes, seat_newcomers, error = table_change.plan_change(
                debate, request.POST.getlist("keep"), request.POST.getlist("add")
            )
        if error:
            messages.error(request, error)
        else:
            addition = request.POST.get("addition", "")[:5000]
            _start_within_limit(
                request, debate, door="checkpoint", prepare=seat_newcomers, checkpoint_reply=addition, **changes
            )
    return _back(request, debate)


@require_POST
def regenerate(request, pk):
    """Write one finished turn again; the turns after it kept (marked) or written again too."""
    debate = _controlled(request, pk)
    turn = Turn.objects.filter(debate=debate, pk=request.POST.get("turn") or 0).first()
    if turn is None:
        raise Http404(_("No such turn."))
    try:
        branches.regenerate(
            debate,
            turn,
            model=request.POST.get("model", "")[:200],
            instruction=request.POST.get("instruction", ""),
            rerun_after=request.POST.get("after") == "rerun",
            user=request.user,
        )
    except branches.BranchError as error:
        messages.error(request, str(error))
    except RunningLimitReached as refusal:
        messages.error(request, str(refusal))
    return redirect(debate)


@require_POST
def fork(request, pk):
    """A new debate with this one's turns up to the chosen one, then its own continuation."""
    debate = _controlled(request, pk)
    turn = Turn.objects.filter(debate=debate, pk=request.POST.get("turn") or 0).first()
    if turn is None:
        raise Http404(_("No such turn."))
    model, facts = request.POST.get("model", "")[:200], request.POST.get("facts", "")
    return _branch_off(request, debate, lambda: branches.fork(debate, turn, request.user, model=model, facts=facts))


@require_POST
def swap(request, pk):
    """The same debate again with the sides exchanged."""
    debate = _controlled(request, pk)
    return _branch_off(request, debate, lambda: branches.swap(debate, request.user))


def _branch_off(request, debate: Debate, make):
    """The new debate `make()` starts, or the report again with the reason it could not."""
    try:
        new = make()
    except (branches.BranchError, RunningLimitReached) as error:
        messages.error(request, str(error))
        return redirect("debates:report", pk=debate.pk)
    return redirect(new)


@require_POST
def compare(request, pk):
    """Start a blind comparison of the debate's conclusion with a single answer at equal cost."""
    debate = _controlled(request, pk)
    if debate.status != Status.DONE or not hasattr(debate, "report"):
        messages.error(request, _("Only a finished debate with a report can be compared."))
        return redirect("debates:report", pk=debate.pk)
    try:
        made = comparisons.start(debate, request.user, vote=request.POST.get("vote") == "1")
    except admission.Refused as refusal:  # the running limit, the debate's budgets
        messages.error(request, str(refusal))
        return redirect("debates:report", pk=debate.pk)
    return redirect("debates:comparison", pk=debate.pk, cid=made.pk)


def comparison(request, pk, cid):
    """The two answers as A and B, their names hidden until the reader has voted."""
    debate = _controlled(request, pk)
    made = Comparison.objects.filter(debate=debate, pk=cid).first()
    if made is None:
        raise Http404(_("No such comparison."))
    if request.method == "POST":
        if not comparisons.vote(made, request.POST.get("vote", ""), request.POST.get("reason", "")):
            messages.error(request, _("Choose A, B or a tie (once)."))
        return redirect("debates:comparison", pk=debate.pk, cid=made.pk)
    labels = "ABC"[: len(made.order)]
    shown = [
        {"label": label, "arm": arm, **made.arms.get(arm, {})} for label, arm in zip(labels, made.order, strict=True)
    ]
    context = {"debate": debate, "comparison": made, "shown": shown, "revealed": bool(made.vote)}
    if request.htmx:
        return render(request, "debates/comparison.html#answers", context)
    return render(request, "debates/comparison.html", context)


@require_GET
def tally(request):
    """Every vote the reader can see, by format, model and question type; as JSON with ?format=json."""
    votes = Comparison.objects.filter(debate__in=visible_debates(request.user)).exclude(vote="")
    votes = votes.select_related("debate__report")
    rows = comparisons.tally(votes)
    if request.GET.get("format") == "json":
        listed = [
            {
                "debate": c.debate_id,
                "format": c.debate.format,
                "model": c.model,
                "order": c.order,
                "vote": c.vote,
                "winner": c.winner or "tie",
                "reason": c.reason,
                "voted_at": c.voted_at.isoformat() if c.voted_at else None,
            }
            for c in votes
        ]
        return JsonResponse({"tally": rows, "votes": listed}, json_dumps_params={"ensure_ascii": False, "indent": 2})
    return render(request, "debates/tally.html", {"rows": rows, "total": sum(r["total"] for r in rows)})


@require_POST
def speak(request, pk):
    """A person's turn, written on the live page: checked part by part, stored once, and the debate
    runs on from it. Only the person in the seat may write it."""
    debate = viewable_debate(request, pk)
    awaiting = debate.awaiting or {}
    if debate.status != Status.WAITING or not awaiting:
        messages.error(request, _("No turn is waiting for you here."))
        return _back(request, debate)
    if awaiting.get("human") != request.user.pk:
        raise Http404(_("No such debate."))
    text, errors = human_turns.compose(awaiting, request.POST)
    if errors:  # the composer again, with what was written and each error beside its part
        context = {"debate": debate, "composer": human_turns.fields(awaiting, request.POST, errors)}
        return render(request, "debates/_live.html#composer", context)
    try:
        control.submit_human_turn(debate, awaiting["key"], {"text": text, "by": request.user.get_username()})
    except control.TooLate as late:
        if late.stand_in == "pass":
            messages.error(request, _("Your turn came after its deadline and was not used: the turn passed."))
        else:
            messages.error(request, _("Your turn came after its deadline and was not used: a model speaks for you."))
    except control.NotAwaited:
        messages.error(request, _("This turn was already written, or its deadline passed."))
    except RunningLimitReached as refusal:
        messages.error(request, str(refusal))
    return _back(request, debate)


@require_POST
def share(request, pk):
    """Share under a new unguessable link, or revoke: the old link stops working at once, and the
    sockets opened through it are closed."""
    debate = _controlled(request, pk)
    if debate.owner_id is None:
        raise Http404(_("No such debate."))
    if request.POST.get("shared") == "1":
        sharing.share(debate)
    else:
        sharing.revoke(debate)
    return redirect(debate)


@require_GET
def healthz(request):
    """For load balancers and supervisors: the database answers and the channel layer works."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer
    from django.db import connection

    from agora.event_loop import kind_of
    from debates.runner import debate_loop

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
    # Which event loop the server runs on (agora/event_loop.py): not a check, a fact to see.
    loop = debate_loop.server_loop
    about = {"event_loop": kind_of(loop)} if loop is not None else {}
    return JsonResponse({"ok": healthy, **checks, **about}, status=200 if healthy else 503)
