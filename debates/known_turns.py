"""A running debate's turns as its sink knows them, for the live stage.

The stage (who speaks, a failed turn, the time left: `frames.stage_of`) is drawn at every turn's
start and end, every phase and every status. Read from the database it cost three queries and
their ORM work each time, 8% of the web process's CPU with 100 debates streaming (bench/README.md).
But the sink writes every change of its debate's turns itself (debates/sink.py: the only writer of
a running debate), so it keeps what the stage reads in memory: loaded once when it opens, changed
where it writes the rows, and handed to the frames it draws. Anything that draws without a sink
(the page, the catch-up) still reads the rows. tests/scale/test_known_turns.py checks that both
give the stage the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from debates.models import Turn


@dataclass
class KnownTurn:
    round: int
    speaker_slug: str
    speaker_name: str
    speaker_name_en: str
    state: str
    completion_tokens: int = 0

    speaker_in = Turn.speaker_in  # the name in the reader's language, as the row gives it


@dataclass
class Drawn:
    """What a frame of the stage is drawn from, instead of queries: the turns (as
    `frames.stage_of` reads them), their rows as `time_left.turn_rows` gives them, the seats."""

    turns: list[KnownTurn]
    rows: list[tuple[int, str, str, int]]
    seats: int


@dataclass
class KnownTurns:
    """The debate's turns in transcript order (key → turn) and the seats that speak."""

    turns: dict[str, KnownTurn] = field(default_factory=dict)
    seats: int = 0

    def drawn(self, streamed: dict[str, int]) -> Drawn:
        """`streamed`: the running turns' tokens so far (key → tokens, text and thinking)."""
        rows = [
            (
                t.round,
                t.speaker_slug,
                t.state,
                streamed.get(key, 0) if t.state == Turn.State.RUNNING else t.completion_tokens,
            )
            for key, t in self.turns.items()
        ]
        return Drawn(list(self.turns.values()), rows, self.seats)
