"""A running debate's time left, as its live stage shows it: the engine's arithmetic
(`debates.engine.estimate`) on the rows. Computed when the stage is drawn (a turn starts or ends,
a phase, a status: never per token); the page counts it down between stages."""

from __future__ import annotations

from django.db.models import Case, TextField, Value, When

from debates.engine import registry
from debates.engine.estimate import Estimate, Seen, time_left
from debates.models import Debate, Status, Turn
from debates.providers.base import estimate_tokens

HOSTS = ("host", "moderator")


def estimate(debate: Debate, drawn=None) -> Estimate | None:
    """The estimate of a running debate whose format has said its rounds; None otherwise.
    `drawn` (debates.known_turns.Drawn): the turns and seats as the running debate's sink knows
    them; without it they are read here."""
    if debate.status != Status.RUNNING or not debate.rounds_planned:
        return None
    fmt = registry.get(debate.format)
    rows, seats = (drawn.rows, drawn.seats) if drawn is not None else (turn_rows(debate), seats_of(debate))
    seen, streamed, in_rounds = [], 0, False
    for round_no, speaker, state, tokens in rows:
        running = state == Turn.State.RUNNING
        streamed += tokens if running else 0
        seen.append(Seen(round_no, speaker, tokens, running=running, closing=not round_no and in_rounds))
        in_rounds = in_rounds or bool(round_no)
    by_round: dict[int, set[str]] = {}
    for turn in seen:
        if turn.round:
            by_round.setdefault(turn.round, set()).add(turn.speaker)
    speakers = max(map(len, by_round.values()), default=0)
    planned = fmt.turns_planned(debate.rounds_planned, max(seats, speakers, fmt.seating.count[0]))
    allowance = {**fmt.tokens, **((debate.options or {}).get("max_tokens") or {})}
    return time_left(planned, allowance, seen, debate.completion_tokens + streamed, debate.running_time)


def turn_rows(debate: Debate) -> list[tuple[int, str, str, int]]:
    """(round, speaker, state, tokens) per turn in transcript order: a finished turn's completion
    tokens, a running one's streamed so far (only its text is read: a finished turn's is not)."""

    def if_running(name: str) -> Case:
        return Case(When(state=Turn.State.RUNNING, then=name), default=Value(""), output_field=TextField())

    rows = debate.turns.values_list(
        "round", "speaker_slug", "state", "completion_tokens", if_running("text"), if_running("thinking")
    )
    return [
        (
            round_no,
            speaker,
            state,
            estimate_tokens(text) + estimate_tokens(thinking) if state == Turn.State.RUNNING else completion,
        )
        for round_no, speaker, state, completion, text, thinking in rows
    ]


def seats_of(debate: Debate) -> int:
    """The seats that speak (the host or moderator does not)."""
    return debate.seats.exclude(persona__kind__in=HOSTS).count()
