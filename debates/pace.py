"""When a turn's text arrived: the points the replay plays back (`debates.replay`).

The flusher (`debates.flusher`) writes a running turn's text every frame interval; each write adds
one point `[ms since the turn started, characters so far]` to the turn's pace, kept in memory by the
sink and written to `Turn.pace` when the turn ends, so a turn keeps at most one point per frame (25
a second) and the flush writes nothing more. A long turn stays small: past `PACE_POINTS`
every other point is dropped (the first and the last kept) and later points are kept at twice
the spacing, so the points always span the whole turn, at most `PACE_POINTS` of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PACE_POINTS = 400  # at full resolution, 16 s of text; a 2-minute turn at about 320 ms a point
MIN_STEP_MS = 80  # the spacing after the first thinning (twice the frame interval)


@dataclass
class Pace:
    started: float  # the turn's start (Turn.started_at), in seconds since the epoch
    points: list[list[int]] = field(default_factory=list)
    step: int = 0  # the least spacing between two kept points, in ms (0: every write)

    def add(self, at: float, chars: int) -> list[list[int]]:
        """`chars` characters of the turn's text were written at `at` (seconds since the epoch)."""
        ms = max(0, round((at - self.started) * 1000))
        points = self.points
        if points and ms < points[-1][0]:
            ms = points[-1][0]  # a clock step back: time never runs backwards in a replay
        if len(points) >= 2 and ms - points[-2][0] < self.step:
            points[-1] = [ms, chars]  # within the step: the last point moves on
            return points
        points.append([ms, chars])
        if len(points) > PACE_POINTS:
            thinned = points[::2]
            if thinned[-1] is not points[-1]:
                thinned.append(points[-1])
            points[:] = thinned
            self.step = max(2 * self.step, MIN_STEP_MS)
        return points
