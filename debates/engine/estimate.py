"""How long a running debate has left: the tokens its remaining turns will write, over the rate
this debate has written tokens so far.

The rate is the debate's throughput: every completion token it has had written (thinking
included: a reasoning model's thinking takes the same time to stream), over the seconds it has
been running (`Debate.running_seconds` and the span now running). Running time rather than the
turns' streaming time alone, because what the reader waits for is wall time: on the bundled model
reading a long prompt before the first token is a large share of each turn, and parallel turns
(a panel round) write several tokens per second of wall time. It exists once a turn has finished;
before that there is no rate ("estimating…").

What is left comes from the format's plan (`Format.turns_planned`: the turns of each round and
the closing turns, from the planned rounds and the seats) less the turns started, each at its
expected length. Expected lengths come from the turns done so far rather than from the turns'
allowances (`max_tokens` by kind): an allowance is only an upper bound, and how full turns run
differs by model (a remote model stops well short of it, a small local one often runs to it). So
a speech is expected at the mean length of this debate's finished speeches, and a kind not seen
yet (the closing synthesis) at its allowance times how full the speeches ran; with no finished
speech yet, at its allowance. A running turn counts what its expected length has left.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# No rate from less running time than this (a first turn that finished at once says nothing yet).
MIN_SECONDS = 2.0
# How far past their allowance turns may be expected to run (a reasoning model's thinking is
# counted in its completion tokens, above `max_tokens`); bounds a rate taught by odd turns.
MAX_FILL = 4.0


@dataclass(frozen=True)
class Seen:
    """A turn as the estimate reads it."""

    round: int  # 0: outside the rounds (before them: the preamble; after them: the closing turns)
    speaker: str
    tokens: int  # completion tokens: as charged when finished, as streamed so far when running
    running: bool = False
    closing: bool = False  # a round-0 turn after a round's turn: part of the closing


@dataclass(frozen=True)
class Estimate:
    seconds: int | None  # None: no rate yet
    rate: float | None  # tokens per second of running time
    tokens_left: int


def rate(produced: int, running_seconds: float, finished: int) -> float | None:
    """Tokens per second of running time, once `finished` turns (at least one) wrote `produced`."""
    if finished < 1 or produced <= 0 or running_seconds < MIN_SECONDS:
        return None
    return produced / running_seconds


def tokens_left(planned: Sequence[tuple[int, str]], allowance: Mapping[str, int], seen: Sequence[Seen]) -> int:
    """The completion tokens the turns still to come will write, and what the running ones have
    left. `planned`: (round, kind) of every turn the format plans, in order (round 0: closing);
    `allowance`: max_tokens by kind; `seen`: the turns so far, in order."""
    speeches = [t.tokens for t in seen if t.round and not t.running]
    speech_allowance = allowance.get("speech") or 1
    fill = min(MAX_FILL, sum(speeches) / len(speeches) / speech_allowance) if speeches else 1.0

    def expected(kind: str) -> float:
        if kind == "speech" and speeches:
            return sum(speeches) / len(speeches)
        return allowance.get(kind, speech_allowance) * fill

    closing_kinds = [kind for r, kind in planned if r == 0]
    closing_kind = closing_kinds[0] if closing_kinds else "host"
    left = 0.0
    for turn in seen:
        if turn.running:
            kind = "speech" if turn.round else closing_kind
            left += max(0.0, expected(kind) - turn.tokens)
    closing_started = sum(1 for t in seen if t.closing)
    now = max((t.round for t in seen), default=0)
    started: dict[int, set[str]] = {}
    for turn in seen:
        if turn.round:
            started.setdefault(turn.round, set()).add(turn.speaker)  # a turn written again: one speaker
    per_round: dict[int, list[str]] = {}
    for r, kind in planned:
        if r:
            per_round.setdefault(r, []).append(kind)
    for r, kinds in per_round.items():
        if closing_started or r < now:
            continue  # a round the debate has left does not come back
        left += sum(expected(kind) for kind in kinds[len(started.get(r, ())) :])
    left += sum(expected(kind) for kind in closing_kinds[closing_started:])
    return math.ceil(left)


def time_left(
    planned: Sequence[tuple[int, str]],
    allowance: Mapping[str, int],
    seen: Sequence[Seen],
    produced: int,
    running_seconds: float,
) -> Estimate:
    """Seconds left (None before a rate exists), the rate and the tokens left. `produced`: every
    completion token the debate has had written, those of running turns included."""
    finished = sum(1 for t in seen if not t.running)
    per_second = rate(produced, running_seconds, finished)
    left = tokens_left(planned, allowance, seen)
    seconds = None if per_second is None else math.ceil(left / per_second)
    return Estimate(seconds, per_second, left)
