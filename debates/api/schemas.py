"""The API's request and response bodies (pydantic, via ninja): what the OpenAPI schema shows."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from debates import options


class Error(Schema):
    detail: str = Field(description="What went wrong, for a person to read (in the request's language).")


class InvalidInput(Error):
    errors: dict[str, list[str]] = Field(
        description="Messages by field (the start form's names; `__all__`: not about one field)."
    )


class OpenBody(BaseModel):
    """A request body that keeps the fields it does not declare. A plain pydantic model: ninja's
    `Schema` reads its input through attribute access, which drops them."""

    model_config = ConfigDict(extra="allow")

    def dict(self, **kwargs) -> dict[str, Any]:
        """As ninja's `Schema.dict`: every field given, declared or not."""
        return self.model_dump(**kwargs)


class SeatModel(BaseModel):
    model: str = Field(description="A model, or provider/model.")
    reasoning_effort: Literal["", "low", "medium", "high"] = ""


class DebateStart(OpenBody):
    """The start form's fields (see the New debate page for what each does), and every
    registered format's options, made from their descriptions (`debates.options`): they travel
    as further fields, so a format registered after start-up brings its own."""

    topic: str = Field(description="The question.", max_length=10_000)
    format: str | None = Field(None, description="A format's name; default: the first in the list.")
    personas: list[str] = Field(default_factory=list, description="Persona ids in seat order; empty: Agora chooses.")
    positions: dict[str, Literal["for", "against"]] = Field(
        default_factory=dict, description="Each seat's side, by persona id, for a mode that assigns sides."
    )
    take_seats: list[str] = Field(default_factory=list, description="Persona ids whose turns you write yourself.")
    invites: dict[str, str] = Field(
        default_factory=dict, description="Seats given to other users: persona id → user name."
    )
    stand_in: Literal["llm", "pass"] | None = Field(None, description="When a person misses their turn.")
    search: str = Field("", description='Web research: "" none, "env" the server\'s, or "p<id>" a search provider.')
    provider: str | None = Field(
        None,
        description='A provider\'s name, or "" for the environment\'s model; default: the one chosen with "Use this '
        "model\" on the Connect page, else the environment's.",
    )
    model: str = ""
    reasoning_effort: Literal["", "low", "medium", "high"] = Field(
        "", description="The debate's reasoning model's effort; empty: the provider's setting (a reasoning model only)."
    )
    seat_models: dict[str, str | SeatModel] = Field(
        default_factory=dict,
        description="Per-seat models: persona id → model, or provider/model, optionally followed by a reasoning "
        'effort ("openai/o4-mini high"); or {"model", "reasoning_effort"}.',
    )

    @model_validator(mode="before")
    @classmethod
    def _options_known(cls, data: Any) -> Any:
        """A field that is neither the start form's nor a format's option is refused by name (a
        typo is never dropped silently); option values are checked by the start form."""
        if isinstance(data, dict):
            problems = options.api_problems(data, set(cls.model_fields))
            if problems:
                raise ValidationError.from_exception_data(
                    cls.__name__,
                    [
                        InitErrorDetails(type=PydanticCustomError("option", message), loc=(name,), input=data[name])
                        for name, message in problems.items()
                    ],
                )
        return data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema, handler):
        """The options of the formats registered now, in the OpenAPI document."""
        schema = handler.resolve_ref_schema(handler(core_schema))
        schema["properties"].update(options.api_properties())
        schema["additionalProperties"] = False
        return schema


class Links(Schema):
    page: str = Field(description="The live page.")
    api: str
    stream: str = Field(description="Server-Sent Events.")
    export_md: str
    export_json: str


class Tokens(Schema):
    prompt: int
    completion: int
    reasoning: int = Field(0, description="Of `completion`, the tokens reasoning models spent thinking.")
    estimated: bool
    cap: int | None
    cost_usd: float
    cost_unknown: bool


class DebateSummary(Schema):
    id: int
    topic: str
    format: str
    status: str
    seq: int = Field(description="The number of the debate's last visible change.")
    created_at: datetime
    finished_at: datetime | None
    links: Links


class DebatePage(Schema):
    count: int
    page: int
    pages: int
    items: list[DebateSummary]


class TurnOut(Schema):
    id: int
    key: str
    position: int
    round: int
    phase: str
    speaker: str
    speaker_name: str = Field(description="The speaker's name in the answer's language.")
    speaker_names: dict[str, str] = Field(
        default_factory=dict, description="The speaker's name in each language the site speaks, by language code."
    )
    model: str
    state: Literal["running", "done", "failed", "interrupted"]
    attempt: int = Field(description="0, or how often the turn was started again (retried, regenerated).")
    text: str
    thinking: str = Field("", description="A reasoning model's thinking, kept apart: never part of `text`.")
    error: str
    prompt_tokens: int
    completion_tokens: int = Field(description="Output tokens, the thinking's included.")
    reasoning_tokens: int = Field(0, description="Of `completion_tokens`, those the thinking used.")


class ReportOut(Schema):
    verdict_markdown: str
    data: dict[str, Any]


class DebateDetail(DebateSummary):
    status_detail: str
    options: dict[str, Any]
    tokens: Tokens
    can_control: bool
    turns: list[TurnOut]
    report: ReportOut | None
