"""The API's request and response bodies (pydantic, via ninja): what the OpenAPI schema shows."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema


class Error(Schema):
    detail: str = Field(description="What went wrong, for a person to read (in the request's language).")


class InvalidInput(Error):
    errors: dict[str, list[str]] = Field(
        description="Messages by field (the start form's names; `__all__`: not about one field)."
    )


class DebateStart(Schema):
    """The start form's fields (see the New debate page for what each does)."""

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
    rounds: int | None = None
    mode: str = ""
    research_budget: Literal["light", "standard", "deep"] | None = None
    no_interrupt: bool = False
    max_chars: int | None = None
    token_budget: int | None = None
    money_budget: float | None = Field(None, description="USD; empty: no limit.")
    force: bool = Field(False, description="Debate even a question the host would answer directly.")
    evidence: str = ""
    user_context: str = ""
    search: str = Field("", description='Web research: "" none, "env" the server\'s, or "p<id>" a search provider.')
    research: bool = False
    provider: str | None = Field(None, description="A provider's name; default: the environment's.")
    model: str = ""
    seat_models: dict[str, str] = Field(
        default_factory=dict, description="Per-seat models: persona id → model, or provider/model."
    )


class Links(Schema):
    page: str = Field(description="The live page.")
    api: str
    stream: str = Field(description="Server-Sent Events.")
    export_md: str
    export_json: str


class Tokens(Schema):
    prompt: int
    completion: int
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
    speaker_name: str
    model: str
    state: Literal["running", "done", "failed", "interrupted"]
    attempt: int = Field(description="0, or how often the turn was started again (retried, regenerated).")
    text: str
    error: str
    prompt_tokens: int
    completion_tokens: int


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
