"""Events the engine emits. A sink receives them in order; the engine never waits on a viewer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Event:
    pass


@dataclass(frozen=True)
class Status(Event):
    """Debate-level status: loading_model, running, waiting (checkpoint), done, failed, stopped."""

    status: str
    detail: str = ""


@dataclass(frozen=True)
class PhaseStarted(Event):
    round: int
    phase: str
    title: str
    parallel: bool = False  # its turns run at once (the page shows them side by side)
    note: str = ""  # text that belongs to the phase itself (e.g. the facts added at a checkpoint)


@dataclass(frozen=True)
class Plan(Event):
    """What the format now knows about the whole run: its rounds, its token cap (None: unknown)."""

    rounds: int | None = None
    cap: int | None = None


@dataclass(frozen=True)
class TurnStarted(Event):
    key: str
    round: int
    phase: str
    speaker: str  # persona slug
    speaker_name: str
    messages: list[dict[str, str]]
    model: str = ""
    attempt: int = 1
    speaker_name_en: str = ""  # the English name, if the persona has one (pages show it to English readers)


@dataclass(frozen=True)
class TextDelta(Event):
    key: str
    text: str


@dataclass(frozen=True)
class ThinkingDelta(Event):
    """A piece of a reasoning model's thinking: shown apart from the turn's text, never part of it."""

    key: str
    text: str


@dataclass(frozen=True)
class TurnFinished(Event):
    key: str
    text: str
    summary: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool = False
    latency: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)  # parsed structure (stance, citations, …)
    replayed: bool = False  # True when taken from an earlier run on resume
    cost: float | None = 0.0  # USD of this call; None: its model's price is unknown
    thinking: str = ""  # the model's thinking, kept apart (never in `text`, `summary` or `data`)
    reasoning_tokens: int = 0  # of completion_tokens, those the thinking used


@dataclass(frozen=True)
class TurnFailed(Event):
    key: str
    error: str
    partial_text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    partial_thinking: str = ""


@dataclass(frozen=True)
class Warning(Event):  # noqa: A001 - the protocol's word
    code: str
    text: str


@dataclass(frozen=True)
class Checkpoint(Event):
    """The roundtable pauses after R1: the user may add facts or continue."""

    prompt: str


@dataclass(frozen=True)
class AwaitingHuman(Event):
    """A person's turn: the run waits for what they write. `parts` are the labelled parts asked
    for ({"label", "chars", "lines", "choices"}); `prompt` is what a model would have read."""

    key: str
    round: int
    phase: str
    speaker: str  # persona slug
    speaker_name: str
    parts: list[dict[str, Any]]
    prompt: str
    chars: int = 0  # a turn without parts: the limit of its one free text (0: the composer's own)
    speaker_name_en: str = ""


@dataclass(frozen=True)
class Report(Event):
    verdict_markdown: str
    transcript_markdown: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Finished(Event):
    outcome: str  # done | waiting | failed | refused
    reason: str = ""


class Sink(Protocol):
    async def emit(self, event: Event) -> None: ...


class ListSink:
    """Collects events in memory: the CLI's and the tests' sink."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]
