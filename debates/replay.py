"""A finished debate played back: turn by turn, character by character, at the pace it was written.

Each turn's `Turn.pace` (`debates.pace`, recorded by the flusher) says when its text arrived. Here
it becomes a schedule the page's script plays (static/js/replay.js): for every turn, when it
appears, when it ends, and segments `[from ms, to ms, from character, to character]` on the
replay's clock, over the turn's stored text (the text the reader sees, as the live page streams
it). The script only interpolates: the timing is decided here, where it is tested.

- A point `[ms, n]` means the turn's text had `n` characters `ms` after it started; the characters
  since the point before arrived during the frame interval before it, so each is revealed over at
  most `window` ms before its point (the first right at its point: the first word comes at once).
- The stored text is the turn's final text, which a format may have tidied after the stream (a
  label removed, a trailing space): character counts are scaled to it, the last point to its end.
- Silences in which no turn receives text (waiting for a model, between turns, a debate resumed
  a day later) are shortened to at most `MAX_GAP_MS`; the page says so. Time with text arriving
  is kept as it was, parallel turns side by side.
- Turns from before the pace was kept (`pace` is None) play at an even pace from their start to
  their end (the page says so); a turn whose text came whole (a person's, `pace == []`) appears
  at once when it ended.
"""

from __future__ import annotations

import bisect
import statistics

from django.http import Http404
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from agora.text import strip_invisible
from debates import frames
from debates.access import viewable_debate
from debates.models import Debate, Status, Turn
from debates.templatetags.agora import unlabelled

MAX_GAP_MS = 1500  # the longest silence a replay keeps
MIN_WINDOW_MS = 200  # a point's characters are revealed over at most this long before it (or two spacings)
EVEN_CHARS_PER_S = 30  # an old turn without a start or an end: this many characters a second
REPLAYABLE = (Status.DONE, Status.FAILED, Status.STOPPED)


def shown_text(turn: Turn) -> str:
    """A turn's text as the replay streams it: as the live page streams it (no invisible controls,
    no label of the form before the speech)."""
    return unlabelled(strip_invisible(turn.text or ""))


def _ms(moment) -> float:
    return moment.timestamp() * 1000.0


def real_segments(turn: Turn, length: int) -> tuple[float, float, list[list[float]]]:
    """(start, end, segments) of one turn on the wall clock, in ms since the epoch; each segment
    `[from ms, to ms, from character, to character]` over a text of `length` characters."""
    start = _ms(turn.started_at)
    finished = _ms(turn.finished_at) if turn.finished_at else None
    if turn.phase == "search" or not length:
        return start, finished or start, []
    pace = turn.pace
    if pace is None:  # recorded before the pace was kept: an even pace over its whole time
        end = finished if finished and finished > start else start + 1000.0 * length / EVEN_CHARS_PER_S
        return start, end, [[start, end, 0, length]]
    if not pace:  # its text came whole (a person's turn, a reply without a stream)
        at = max(finished or start, start)
        return start, at, [[at, at, 0, length]]
    written = pace[-1][1] or 1
    gaps = [b[0] - a[0] for a, b in zip(pace, pace[1:], strict=False)]
    window = max(MIN_WINDOW_MS, 2 * statistics.median(gaps)) if gaps else MIN_WINDOW_MS
    segments, before_ms, before_chars = [], None, 0
    for index, (ms, chars) in enumerate(pace):
        upto = length if index == len(pace) - 1 else min(length, round(chars * length / written))
        at = start + ms
        since = at if before_ms is None else max(before_ms, at - window)
        if upto > before_chars:
            segments.append([since, at, before_chars, upto])
            before_chars = upto
        before_ms = at
    end = segments[-1][1] if segments else start
    return start, end, segments


class Clock:
    """Wall-clock ms → replay ms: time in which some turn receives text runs as it ran; every
    silence between is shortened to at most `MAX_GAP_MS`."""

    def __init__(self, origin: float, busy: list[tuple[float, float]]) -> None:
        merged: list[list[float]] = []
        for start, end in sorted(b for b in busy if b[1] > b[0]):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        # Break points of the piecewise-linear map: (wall ms, replay ms).
        self.wall, self.replay = [origin], [0.0]
        for start, end in merged:
            if end <= self.wall[-1]:
                continue
            start = max(start, self.wall[-1])
            if start > self.wall[-1]:
                self._add(start, min(start - self.wall[-1], MAX_GAP_MS))
            self._add(end, end - start)

    def _add(self, wall: float, spent: float) -> None:
        self.wall.append(wall)
        self.replay.append(self.replay[-1] + spent)

    def __call__(self, wall: float) -> int:
        i = bisect.bisect_right(self.wall, wall) - 1
        if i < 0:
            return 0
        if i == len(self.wall) - 1:  # after the last text: a silence, shortened like the others
            return round(self.replay[-1] + min(wall - self.wall[-1], MAX_GAP_MS))
        w0, w1, r0, r1 = self.wall[i], self.wall[i + 1], self.replay[i], self.replay[i + 1]
        return round(r0 + (r1 - r0) * (wall - w0) / (w1 - w0)) if w1 > w0 else round(r0)


def schedule(turns: list[Turn]) -> dict:
    """The replay of `turns` (in transcript order): {"turns": [{"id", "at", "end", "segments",
    "text", "round"}], "duration", "even"} on the replay's clock, in ms from the first turn."""
    placed = []
    for turn in turns:
        text = shown_text(turn)
        length = len(text)  # code points, as the script counts them (Array.from)
        start, end, segments = real_segments(turn, length)
        placed.append((turn, text, start, max(end, start), segments))
    if not placed:
        return {"turns": [], "duration": 0, "even": False}
    origin = min(start for _, _, start, _, _ in placed)
    clock = Clock(origin, [(s[0], s[1]) for *_, segments in placed for s in segments])
    out = []
    for turn, text, start, end, segments in placed:
        moved = [[clock(a), clock(b), c0, c1] for a, b, c0, c1 in segments]
        at = clock(start)
        out.append(
            {
                "id": turn.pk,
                "round": turn.round,
                "at": at,
                "end": max(at, clock(end), *(s[1] for s in moved)),
                "segments": moved,
                "text": text,
            }
        )
    return {
        "turns": out,
        "duration": max(t["end"] for t in out),
        "even": any(t.pace is None and t.text for t in turns),
    }


def rounds(planned: dict) -> list[dict]:
    """The scrubber's marks: where each round starts (its first turn), in the reader's language."""
    marks: dict[int, int] = {}
    for turn in planned["turns"]:
        if turn["round"] and turn["round"] not in marks:
            marks[turn["round"]] = turn["at"]
    label = _("Round %(n)d")
    return [{"round": n, "at": at, "t": seconds(at), "label": label % {"n": n}} for n, at in sorted(marks.items())]


def seconds(ms: int) -> str:
    """A position as `?t=` gives it: seconds, to a tenth."""
    return f"{ms / 1000:.1f}".removesuffix(".0")


@require_GET
def replay(request, pk):
    """The replay page of a finished debate, for anyone who may read it (share links included)."""
    share = request.GET.get("share")
    debate = viewable_debate(request, pk, share)
    if debate.status not in REPLAYABLE:
        raise Http404(_("This debate has not finished: watch it live."))
    snap = frames.snapshot(debate.pk)
    sections = [s for s in frames.sections_of(snap.entries) if s["turns"]]
    turns = [turn for section in sections for turn in section["turns"]]
    planned = schedule(turns)
    start = _start_at(request.GET.get("t"), planned["duration"])
    context = snap.context(
        sections=sections,
        share=share if share == debate.share_token else "",
        replay=planned,
        marks=rounds(planned),
        start=start,
        start_t=seconds(start),
        max_gap=MAX_GAP_MS / 1000,
    )
    return render(request, "debates/replay.html", context)


def _start_at(value: str | None, duration: int) -> int:
    """`?t=` (seconds, from a shared link) as ms within the replay."""
    try:
        seconds = float(value or 0)
    except ValueError:
        return 0
    if seconds != seconds or seconds < 0:  # NaN, negative
        return 0
    return int(min(seconds * 1000, duration))


def replayable(debate: Debate) -> bool:
    """Whether the debate's pages offer its replay."""
    return debate.status in REPLAYABLE
