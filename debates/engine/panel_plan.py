"""The panel's rounds planned under its token cap before R1 (taixu R8: 超限硬终止, and the rounds are
always four): each round's speeches get one allowance, the longest at which every round, the host's
aggregate and the verdict's reserve fit in the cap together, so a model that writes as long as it
is allowed finishes its rounds instead of running the cap out in R2.

The arithmetic only: what a speech's prompt carries grows with the speeches before it (R2 reads
its own R1 and the others' four, R3 its own two and the others' four R2, R4 its fronts and all
five R3), so a round's cost is its prompts without material, plus that many earlier speeches of
the planned length, plus the replies' own allowance."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Earlier speeches a round's prompt carries, per speaker: R2 its own R1 and four others'; R3 its
# own R1 and R2 and four others' R2; R4 the others' R3 lines that open its fronts (at most four
# speeches' worth) and all five R3.
CARRIED = {1: 0, 2: 5, 3: 6, 4: 9}
# A speech read back in a later prompt is booked at our estimate of its text, not at the
# server's count of its reply: a margin for the difference, and for its heading.
READ_BACK = 1.25
HEADING = 20
# Below this a speech cannot hold its five parts: a cap that leaves less is not planned over
# the rounds (the speeches keep the format's allowance, and the cap stops the run where it must).
MIN_SPEECH = 120


@dataclass(frozen=True)
class Shape:
    """What the plan is computed from, measured on the debate's own prompts before R1."""

    bases: dict[int, int]  # round → the prompt tokens of its speeches, without material, summed
    speakers: int  # roles that may speak in each round
    completion: Callable[[int], int]  # a speech's allowance → the completion its request may be charged
    host: int  # the blind-spot aggregate's prompt without material, and its completion limit
    extra: Callable[[int], dict[int, int]]  # a speech's allowance → tokens some round adds (the verifier's searches)
    reserve: Callable[[int], int]  # a speech's allowance → the verdict's reserve


@dataclass(frozen=True)
class RoundsPlan:
    speech: int  # the allowance of every speech (max_tokens), as its prompt declares it
    shares: dict[int, int]  # round → tokens booked for it at most (round 2 with its aggregate)
    reserve: int  # the verdict's, planned at this speech length

    def after(self, round_no: int) -> int:
        """What the rounds after `round_no` and the verdict need kept while it runs."""
        return self.reserve + sum(share for r, share in self.shares.items() if r > round_no)

    def as_dict(self) -> dict:
        return {"speech_tokens": self.speech, "round_shares": dict(self.shares), "verdict_reserve": self.reserve}


def material(speech: int, round_no: int) -> int:
    """The tokens of earlier speeches one round-`round_no` prompt carries, at `speech` tokens each."""
    carried = CARRIED[round_no]
    return int(carried * (speech * READ_BACK + HEADING))


def shares(shape: Shape, speech: int) -> dict[int, int]:
    """Each round's cost at `speech` tokens a speech: every speaker's prompt, what it carries and
    its reply; R2 also pays the host's blind spots (five R2 speeches read)."""
    reply = shape.completion(speech)
    extra = shape.extra(speech)
    out = {
        r: base + shape.speakers * (material(speech, r) + reply) + extra.get(r, 0) for r, base in shape.bases.items()
    }
    out[2] = out.get(2, 0) + shape.host + int(shape.speakers * (speech * READ_BACK + HEADING))
    return out


def plan_rounds(shape: Shape, room: int, longest: int) -> RoundsPlan | None:
    """The longest speech allowance, at most `longest`, whose rounds and verdict reserve fit in
    `room` (what the cap leaves before R1); None when not even `MIN_SPEECH` does."""

    def need(speech: int) -> int:
        return sum(shares(shape, speech).values()) + shape.reserve(speech)

    if longest < MIN_SPEECH or need(MIN_SPEECH) > room:
        return None
    low, high = MIN_SPEECH, longest
    while low < high:  # the cost grows with the allowance: the largest that fits
        middle = (low + high + 1) // 2
        low, high = (middle, high) if need(middle) <= room else (low, middle - 1)
    return RoundsPlan(low, shares(shape, low), shape.reserve(low))
