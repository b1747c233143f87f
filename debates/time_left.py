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


def estimate(debate: Debate) -> Estimate | None:
    """The estimate of a running debate whose format has said its rounds; None otherwise."""
    if debate.status != Status.RUNNING or not debate.rounds_planned:
        return None
    fmt = registry.get(debate.format)

    # What the running turns have streamed so far, in the same read (only theirs: a finished
    # turn's text is not read; this runs at every turn's start and end).
    def if_running(name: str) -> Case:
        return Case(When(state=Turn.State.RUNNING, then=name), default=Value(""), output_field=TextField())

    rows = debate.turns.values_list(
        "round", "speaker_slug", "state", "completion_tokens", if_running("text"), if_running("thinking")
    )
    seen, streamed, in_rounds = [], 0, False
    for round_no, speaker, state, completion, text, thinking in rows:
        running = state == Turn.State.RUNNING
        tokens = estimate_tokens(text) + estimate_tokens(thinking) if running else completion
        streamed += tokens if running else 0
        seen.append(Seen(round_no, speaker, tokens, running=running, closing=not round_no and in_rounds))
        in_rounds = in_rounds or bool(round_no)
    by_round: dict[int, set[str]] = {}
    for turn in seen:
        if turn.round:
            by_round.setdefault(turn.round, set()).add(turn.speaker)
    speakers = max(map(len, by_round.values()), default=0)
    seats = debate.seats.exclude(persona__kind__in=HOSTS).count()
    planned = fmt.turns_planned(debate.rounds_planned, max(seats, speakers, fmt.seating.count[0]))
    allowance = {**fmt.tokens, **((debate.options or {}).get("max_tokens") or {})}
    return time_left(planned, allowance, seen, debate.completion_tokens + streamed, debate.running_time)
