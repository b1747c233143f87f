"""The JSON API's operations: what the start form and the live page do, for programs.

The access rules are the web's (`debates.access`): a debate the token's user may not see is a 404,
exactly as on the pages; one they may see but not control answers 403 to stop and resume.
"""

from __future__ import annotations

from typing import Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from django.utils import translation
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from ninja import NinjaAPI, Query
from ninja import Status as Answer  # (status, body): debates.models has a Status too
from ninja.errors import AuthenticationError, HttpError, ValidationError

from agora import body_limit
from agora.text import strip_invisible
from debates import access, control, exports, live_counts
from debates.api import openapi, starting
from debates.api import stream as sse
from debates.api.auth import BearerToken
from debates.api.schemas import DebateDetail, DebatePage, DebateStart, DebateSummary, Error, InvalidInput
from debates.models import ACTIVE_STATUSES, Debate, Status
from debates.rendering import strip_invisible_deep
from debates.running_limit import RunningLimitReached
from debates.templatetags.agora import error_for, tr
from personas.models import names_by_language

api = NinjaAPI(
    title="Agora API",
    version="1",
    description="Start, follow and export debates. Every operation needs an API token: see docs/api.md.",
    auth=BearerToken(),
    urls_namespace="api",
)


@api.exception_handler(AuthenticationError)
def no_token(request, exc):
    reply = api.create_response(
        request,
        {"detail": _("This needs a valid API token, sent as “Authorization: Bearer <token>”.")},
        status=401,
    )
    reply["WWW-Authenticate"] = "Bearer"
    return reply


@api.exception_handler(ValidationError)
def invalid(request, exc):
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        # ("body", "payload", "rounds") → "rounds"; a query or path parameter by its own name.
        names = [str(part) for part in error.get("loc", ())[1:] if part != "payload"]
        errors.setdefault(".".join(names) or "__all__", []).append(error.get("msg", ""))
    return _invalid(request, errors)


@api.exception_handler(RequestDataTooBig)
def too_large(request, exc):
    """A body Django will not read whole (past DATA_UPLOAD_MAX_MEMORY_SIZE, e.g. under a server
    without agora/body_limit.py's hook): 413 as JSON, not Django's HTML 400 page."""
    return api.create_response(
        request, {"detail": body_limit.too_large(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)}, status=413
    )


def _invalid(request, errors: dict[str, list[str]]):
    detail = _("The request is not valid: see the errors by field.")
    return api.create_response(request, {"detail": detail, "errors": errors}, status=422)


# -- helpers -------------------------------------------------------------------------------------


def _viewable(user, pk: int) -> Debate:
    debate = Debate.objects.filter(pk=pk).first()
    if debate is None or not access.can_view(user, debate):
        raise HttpError(404, _("No such debate."))
    return debate


def _controlled(user, pk: int) -> Debate:
    debate = _viewable(user, pk)
    if not access.can_control(user, debate):
        raise HttpError(403, _("You may follow this debate but not stop or resume it."))
    return debate


def _links(request, debate: Debate) -> dict:
    def url(name: str) -> str:
        return request.build_absolute_uri(reverse(f"api:{name}", kwargs={"pk": debate.pk}))

    return {
        "page": request.build_absolute_uri(debate.get_absolute_url()),
        "api": url("debate"),
        "stream": url("stream"),
        "export_md": url("export_md"),
        "export_json": url("export_json"),
    }


def _summary(request, debate: Debate) -> dict:
    return {
        "id": debate.pk,
        "topic": strip_invisible(debate.question),
        "format": debate.format,
        "status": debate.status,
        "seq": debate.seq,
        "created_at": debate.created_at,
        "finished_at": debate.finished_at,
        "links": _links(request, debate),
    }


def _detail(request, debate: Debate) -> dict:
    internals = access.shows_internals(request.user)
    report = getattr(debate, "report", None) if hasattr(debate, "report") else None
    return {
        **_summary(request, debate),
        "status_detail": error_for(tr(debate.status_text or debate.status_detail), internals),
        "options": strip_invisible_deep(debate.options),
        "tokens": debate.usage(),
        "can_control": access.can_control(request.user, debate),
        "turns": [
            {
                "id": t.pk,
                "key": t.key,
                "position": t.position,
                "round": t.round,
                "phase": t.phase,
                "speaker": t.speaker_slug,
                "speaker_name": t.speaker_in(),  # in the answer's language
                "speaker_names": names_by_language(t.speaker_name, t.speaker_name_en),
                "model": t.model if internals else "",
                "state": t.state,
                "attempt": len(t.history),
                # As the stream sends it: without invisible controls.
                "text": strip_invisible(t.text),
                "thinking": strip_invisible(t.thinking),  # a reasoning model's, never part of the text
                "error": error_for(t.error, internals),
                "prompt_tokens": t.prompt_tokens,
                "completion_tokens": t.completion_tokens,
                "reasoning_tokens": t.reasoning_tokens,
            }
            for t in debate.turns.all()
        ],
        "report": {"verdict_markdown": exports.verdict_markdown(report), "data": strip_invisible_deep(report.data)}
        if report
        else None,
    }


# -- operations ----------------------------------------------------------------------------------


@api.post(
    "/debates",
    response={201: DebateSummary, 422: InvalidInput, 429: Error},
    summary="Start a debate",
    description="The start form's fields and checks. 429: you already run as many debates as allowed.",
)
def start(request, payload: DebateStart):
    try:
        debate = starting.start_checked(payload, request.user, door="api.start")
    except starting.Invalid as invalid:
        return _invalid(request, invalid.errors)
    except RunningLimitReached as refusal:
        return Answer(429, {"detail": str(refusal)})
    return Answer(201, _summary(request, debate))


@api.get("/debates", response=DebatePage, summary="Your debates, newest first")
def list_debates(
    request,
    page: int = Query(1, ge=1),
    page_size: int = Query(20, ge=1, le=100),
    status: Status | None = None,
):
    debates = access.visible_debates(request.user)
    if status:
        debates = debates.filter(status=status)
    shown = Paginator(debates, page_size).get_page(page)
    return {
        "count": shown.paginator.count,
        "page": shown.number,
        "pages": shown.paginator.num_pages,
        "items": [_summary(request, d) for d in shown.object_list],
    }


@api.get("/debates/{pk}", response={200: DebateDetail, 404: Error}, url_name="debate", summary="A debate")
def debate(request, pk: int):
    return _detail(request, _viewable(request.user, pk))


@api.post(
    "/debates/{pk}/stop",
    response={200: DebateSummary, 403: Error, 404: Error, 409: Error},
    summary="Stop a running debate",
    description="The runner stops at once or at its next heartbeat: follow the status until it says stopped.",
)
def stop(request, pk: int):
    debate = _controlled(request.user, pk)
    if debate.status not in ACTIVE_STATUSES:
        raise HttpError(409, _("This debate is not running: there is nothing to stop."))
    control.stop(debate)
    debate.refresh_from_db()
    return _summary(request, debate)


@api.post(
    "/debates/{pk}/resume",
    response={200: DebateSummary, 403: Error, 404: Error, 409: Error, 429: Error},
    summary="Resume a stopped or failed debate",
)
def resume(request, pk: int):
    debate = _controlled(request.user, pk)
    if debate.status not in (Status.FAILED, Status.STOPPED):
        raise HttpError(409, _("Only a stopped or failed debate can be resumed."))
    try:
        control.start(debate, door="api.resume")
    except RunningLimitReached as refusal:
        raise HttpError(refusal.status, str(refusal)) from None
    debate.refresh_from_db()
    return _summary(request, debate)


@api.get(
    "/debates/{pk}/export.md",
    response={404: Error, 409: Error},
    url_name="export_md",
    summary="The report as Markdown",
    openapi_extra=openapi.content(
        "text/markdown", {"type": "string"}, "The web export's Markdown. 409: no report yet."
    ),
)
def export_md(request, pk: int, part: Literal["both", "report", "transcript"] = "both", thinking: bool = False):
    debate = _viewable(request.user, pk)
    body = exports.export_markdown(debate, request.user, part, thinking=thinking)
    if body is None:
        raise HttpError(409, _("This debate has no report yet."))
    reply = HttpResponse(body, content_type="text/markdown; charset=utf-8")
    kind = part if part in exports.EXPORT_PARTS else "debate"
    return exports.attachment(reply, debate, "md", kind)


@api.get(
    "/debates/{pk}/export.json",
    response={404: Error},
    url_name="export_json",
    summary="Everything about the debate as JSON",
    openapi_extra=openapi.content(
        "application/json", {"type": "object"}, "The web export: every turn with its messages and attempts."
    ),
)
def export_json(request, pk: int):
    debate = _viewable(request.user, pk)
    reply = JsonResponse(exports.export_payload(debate, request.user), json_dumps_params={"ensure_ascii": False})
    return exports.attachment(reply, debate, "json")


@api.get(
    "/debates/{pk}/stream",
    response={404: Error, 429: Error},
    url_name="stream",
    summary="Follow a debate live (Server-Sent Events)",
    openapi_extra=openapi.content("text/event-stream", {"type": "string"}, openapi.STREAM),
)
async def stream(
    request,
    pk: int,
    last_event_id: str | None = Query(
        None, description="Resume after this event (the Last-Event-ID header, which wins, says the same)."
    ),
):
    await sync_to_async(_viewable)(request.user, pk)
    # Authentication ran in a thread of its own: the token owner's language is on the request.
    language = getattr(request, "api_language", None) or get_language()
    # One of the user's live-view slots, shared with the live page's WebSockets.
    slot = live_counts.counts.slot(live_counts.user_key(request.user), pk)
    if slot is None:
        with translation.override(language):
            return Answer(429, {"detail": live_counts.too_many()})
    resume_from = request.headers.get("Last-Event-ID") or last_event_id
    # A revoked token ends the stream at the ASGI layer (debates/api/live_tokens.py).
    return sse.response(pk, resume_from, language=language, internals=access.shows_internals(request.user), slot=slot)
