"""Starting a debate from a program's JSON: the start form's fields and every format's options,
checked by the start form itself. The JSON API, the OpenAI-compatible door and the MCP server
all start debates through here, so each gives the page's messages for the same mistakes."""

from __future__ import annotations

from pydantic import ValidationError

from debates import control
from debates.api.schemas import DebateStart
from debates.engine import registry
from debates.forms import form_for, human_field, invite_field, save_debate
from debates.models import Debate, Provider
from debates.options import unattended_values


class Invalid(Exception):
    """The request is not one the start form accepts: `errors` by field name."""

    def __init__(self, errors: dict[str, list[str]]):
        super().__init__(errors)
        self.errors = errors


def form_values(payload: DebateStart) -> dict:
    """The JSON body as the start page would post it (`debates.forms.form_for`)."""
    values = payload.dict(exclude={"take_seats", "invites", "seat_models", "provider", "format"})
    values["format"] = payload.format or registry.names()[0]
    for slug in payload.take_seats:
        values[human_field(slug)] = "on"
    for slug, name in payload.invites.items():
        values[invite_field(slug)] = name
    lines = []
    for slug, choice in payload.seat_models.items():  # "model", or {"model", "reasoning_effort"}
        spec = choice if isinstance(choice, str) else f"{choice.model} {choice.reasoning_effort}".rstrip()
        lines.append(f"{slug} = {spec}")
    values["seat_models"] = "\n".join(lines)
    if payload.provider:
        provider = Provider.objects.filter(name=payload.provider).first()
        values["provider"] = provider.pk if provider else payload.provider  # the form refuses an unknown one
    elif payload.provider == "":  # the environment's model, named; left out: the default (debates.default_model)
        values["provider"] = ""
    return values


def schema_errors(exc: ValidationError) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    for error in exc.errors():
        names = [str(part) for part in error.get("loc", ())]
        errors.setdefault(".".join(names) or "__all__", []).append(error.get("msg", ""))
    return errors


def start(body: dict, owner, *, door: str, unattended: bool = False) -> Debate:
    """Check `body` (DebateStart's fields) as the start form does and start the debate for
    `owner` through `door` (`debates.admission.DOORS`). `unattended`: nobody at this door can
    answer the debate mid-way (a chat client, an agent), so the options that say what to do then
    are set where the body does not set them. Raises `Invalid`, or the admission's `Refused`
    (the running limit, a budget)."""
    if unattended:
        body = {**unattended_values(body.get("format")), **body}
    try:
        payload = DebateStart.model_validate(body)
    except ValidationError as exc:
        raise Invalid(schema_errors(exc)) from None
    return start_checked(payload, owner, door=door)


def start_checked(payload: DebateStart, owner, *, door: str) -> Debate:
    """`start` for a body already read into its schema (the JSON API's, by django-ninja)."""
    form = form_for(form_values(payload), user=owner)
    if not form.is_valid():
        raise Invalid({field: [str(m) for m in messages] for field, messages in form.errors.items()})
    return control.start_new(lambda: save_debate(form, owner=owner), door=door)
