"""A running debate's time left, as its live stage shows it: the engine's arithmetic
(`debates.engine.estimate`) on the rows. Computed when the stage is drawn (a turn starts or ends,
a phase, a status: never per token); the page counts it down between stages."""

from __future__ import annotations

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
    rows = debate.turns.values_list("pk", "round", "speaker_slug", "state", "completion_tokens")
    # What the running turns have streamed so far (only theirs: a finished turn's text is not read).
    running_texts = debate.turns.filter(state=Turn.State.RUNNING).values_list("pk", "text", "thinking")
    written = {pk: estimate_tokens(text) + estimate_tokens(thinking) for pk, text, thinking in running_texts}
    seen, streamed, in_rounds = [], 0, False
    for pk, round_no, speaker, state, completion in rows:
        running = state == Turn.State.RUNNING
        tokens = written.get(pk, 0) if running else completion
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
