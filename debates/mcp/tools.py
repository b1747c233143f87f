"""What the MCP server's tools and resources do, for one caller (a token's user): plain Django,
run in a worker thread by `debates.mcp.server`.

Everything goes through what the JSON API uses: the start form's checks and the admission
(`debates.api.starting`), the access rules (`debates.access`: a debate the caller may not see is
"No such debate", exactly as the API's 404, so a private debate's existence is not revealed), and
the exports (`debates.exports`). The tools' input schemas are the API's: `start_debate` takes
`DebateStart`, whose properties include every registered format's options, made from their one
declaration (`debates.options`).
"""

from __future__ import annotations

from typing import Literal

from django.utils import translation
from django.utils.translation import gettext as _
from pydantic import BaseModel, Field, ValidationError

from agora.text import strip_invisible
from debates import access, control, exports, options
from debates.admission import Refused
from debates.api import starting, tokens
from debates.api.schemas import DebateStart
from debates.engine import registry
from debates.models import ACTIVE_STATUSES, FINAL_STATUSES, Debate
from debates.rendering import strip_invisible_deep
from debates.templatetags.agora import error_for, tr
from personas.models import Persona

REPORT_URI = "agora://debates/{id}/report"


class Failure(Exception):
    """A tool call refused: said to the agent as a tool error (`str()`), with the start form's
    messages by field in `errors` when there are some."""

    def __init__(self, message: str, errors: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.errors = errors or {}


Caller = tokens.Caller  # who a tool call acts as (the chat door's too)


def caller_for(token: str, site: str = "") -> Caller | None:
    """The caller a token opens the door to, or None (unknown, revoked, its user inactive)."""
    return tokens.caller_for(token, site=site)


# -- the tools' arguments (their JSON Schemas are the tools' input schemas) -----------------------


class NoArguments(BaseModel):
    pass


class FormatChoice(BaseModel):
    format: str | None = Field(None, description="A format's name (list_formats); empty: every format.")


class DebateRef(BaseModel):
    debate_id: int = Field(description="The debate's id (start_debate's answer).")


class WaitFor(DebateRef):
    timeout_seconds: float = Field(
        300, ge=1, le=3600, description="Give up waiting after this long (the debate runs on either way)."
    )


class ExportOf(DebateRef):
    format: Literal["markdown", "json"] = Field("markdown", description="Markdown to read, or JSON: every turn.")
    part: Literal["both", "report", "transcript"] = Field("both", description="Markdown only: what to include.")


def arguments(model: type[BaseModel], given: dict) -> BaseModel:
    """The tool's arguments checked against its schema; a mistake named by field."""
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        raise invalid(starting.schema_errors(exc)) from None


def invalid(errors: dict[str, list[str]]) -> Failure:
    lines = [f"{field}: {message}" if field != "__all__" else message for field, ms in errors.items() for message in ms]
    return Failure("\n".join([_("The request is not valid: see the errors by field."), *lines]), errors)


def start_schema() -> dict:
    """start_debate's input: the API's start body, every format registered now with its options."""
    return DebateStart.model_json_schema()


# -- reading ------------------------------------------------------------------------------------


def _viewable(caller: Caller, pk: int) -> Debate:
    debate = Debate.objects.filter(pk=pk).first()
    if debate is None or not access.can_view(caller.user, debate):
        raise Failure(_("No such debate."))
    return debate


def viewable(caller: Caller, pk: int) -> None:
    """Raise `Failure` unless the caller may see the debate (before following it)."""
    with translation.override(caller.language):
        _viewable(caller, pk)


def _page(caller: Caller, debate: Debate) -> str:
    return caller.site + debate.get_absolute_url()


def _summary(caller: Caller, debate: Debate) -> dict:
    return {
        "id": debate.pk,
        "topic": strip_invisible(debate.question),
        "format": debate.format,
        "status": debate.status,
        "page": _page(caller, debate),
        "report_uri": REPORT_URI.format(id=debate.pk),
    }


def list_formats(caller: Caller) -> dict:
    """Every registered format: what it is, how many seats, its modes and its options (each as
    the API's start schema describes it, from the format's own declaration)."""
    with translation.override(caller.language):
        found = []
        for fmt in registry.all_formats():
            low, high = fmt.seating.count
            found.append(
                {
                    "name": fmt.name,
                    "label": _(fmt.label),
                    "description": _(fmt.description) if fmt.description else "",
                    "seats": {"min": low, "max": high},
                    "modes": [{"name": m.name, "label": _(m.label)} for m in fmt.modes],
                    "options": {
                        name: options.api_property(name, {fmt.name: opt}) for name, opt in fmt.options().items()
                    },
                }
            )
        return {"formats": found}


def list_personas(caller: Caller, fmt_name: str | None) -> dict:
    """The personas each format may seat (its libraries' debaters), named and described in the
    caller's language."""
    with translation.override(caller.language):
        names = registry.names()
        if fmt_name and fmt_name not in names:
            raise invalid({"format": [_("Choose one of the formats in the list.") + f" ({', '.join(names)})"]})
        found: dict[str, list[dict]] = {}
        for name in [fmt_name] if fmt_name else names:
            personas = Persona.objects.filter(library__format=name, kind=Persona.Kind.DEBATER).select_related("library")
            found[name] = [
                {
                    "id": p.slug,
                    "name": p.called(),
                    "description": p.described(),
                    "library": strip_invisible(p.library.name),
                }
                for p in personas.order_by("library__name", "library__pk", "tier", "slug")
            ]
        return {"personas": found}


def get_debate(caller: Caller, pk: int) -> dict:
    """The debate's status, round and turns so far, and its report once there is one."""
    with translation.override(caller.language):
        debate = _viewable(caller, pk)
        internals = access.shows_internals(caller.user)
        turns = list(debate.turns.all())
        report = getattr(debate, "report", None) if hasattr(debate, "report") else None
        return {
            **_summary(caller, debate),
            "status_detail": error_for(tr(debate.status_text or debate.status_detail), internals),
            "finished": debate.status in FINAL_STATUSES,
            "round": max((t.round for t in turns), default=0),
            "rounds_planned": debate.rounds_planned,
            "options": strip_invisible_deep(debate.options),
            "tokens": debate.usage(),
            "can_control": access.can_control(caller.user, debate),
            "turns": [
                {
                    "round": t.round,
                    "phase": t.phase,
                    "speaker": t.speaker_slug,
                    "speaker_name": t.speaker_in(),
                    "state": t.state,
                    "characters": len(t.text),
                }
                for t in turns
            ],
            "report": exports.verdict_markdown(report) if report else None,
        }


def export_debate(caller: Caller, pk: int, fmt: str, part: str) -> str | dict:
    """The web export: Markdown (None: no report yet, refused) or the JSON payload."""
    with translation.override(caller.language):
        debate = _viewable(caller, pk)
        if fmt == "json":
            return exports.export_payload(debate, caller.user)
        body = exports.export_markdown(debate, caller.user, part)
        if body is None:
            raise Failure(_("This debate has no report yet."))
        return body


def report_markdown(caller: Caller, pk: int) -> str:
    """The `agora://debates/{id}/report` resource: the report as Markdown."""
    return export_debate(caller, pk, "markdown", "report")


def reports(caller: Caller, limit: int = 100) -> list[dict]:
    """The newest finished reports the caller may read, as resources."""
    with translation.override(caller.language):
        found = access.visible_debates(caller.user).filter(report__isnull=False).order_by("-pk")[:limit]
        return [
            {"uri": REPORT_URI.format(id=d.pk), "id": d.pk, "topic": strip_invisible(d.question)[:200]} for d in found
        ]


# -- acting -------------------------------------------------------------------------------------


def start_debate(caller: Caller, given: dict) -> dict:
    """Start a debate for the caller as the start form would (its checks, its messages), admitted
    under the caller's running limit."""
    with translation.override(caller.language):
        try:
            debate = starting.start(given, caller.user, door="mcp.start", unattended=True)  # debates.admission.DOORS
        except starting.Invalid as refusal:
            raise invalid(refusal.errors) from None
        except Refused as refusal:
            raise Failure(str(refusal)) from None
        return _summary(caller, debate)


def stop_debate(caller: Caller, pk: int) -> dict:
    with translation.override(caller.language):
        debate = _viewable(caller, pk)
        if not access.can_control(caller.user, debate):
            raise Failure(_("You may follow this debate but not stop or resume it."))
        if debate.status not in ACTIVE_STATUSES:
            raise Failure(_("This debate is not running: there is nothing to stop."))
        control.stop(debate)
        debate.refresh_from_db()
        return _summary(caller, debate)
