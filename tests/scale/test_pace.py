"""The flusher records when each turn's text arrived (`Turn.pace`, the replay's timings): one point
per write, [ms since the turn started, characters so far], and a long turn stays bounded."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer

from debates.engine import events as ev
from debates.models import Debate, Turn
from debates.pace import PACE_POINTS, Pace
from debates.sink import DjangoSink

pytestmark = pytest.mark.django_db(transaction=True)
KEY = "duel:1:a"


async def _run(writes: int, *, restart: bool = False) -> tuple[DjangoSink, Turn]:
    debate = await Debate.objects.acreate(question="Pace?", format="duel")
    sink = DjangoSink(debate.pk, frame_interval=60)  # flushed by hand below
    sink.layer = InMemoryChannelLayer(capacity=100_000)
    await sink.open()
    started = ev.TurnStarted(KEY, 1, "duel", "a", "A", [{"role": "user", "content": "q"}])
    await sink.emit(started)
    for n in range(writes):
        await sink.emit(ev.TextDelta(KEY, "字" if n % 2 else "ab"))
        await sink.flush()
    if restart:  # the turn regenerated: its earlier pace goes, the new attempt counts from its start
        await sink.emit(ev.TurnFailed(KEY, "boom", partial_text=sink.texts[KEY]))
        await sink.emit(started)
        await sink.emit(ev.TextDelta(KEY, "again"))
        await sink.flush()
    await sink.emit(ev.TurnFinished(KEY, sink.texts[KEY], "", 1, 1))
    return sink, await Turn.objects.aget(debate_id=debate.pk, key=KEY)


def test_every_write_of_a_turn_adds_its_time_and_length():
    sink, turn = async_to_sync(_run)(5)
    assert turn.text == "ab字ab字ab"
    assert [chars for _, chars in turn.pace] == [2, 3, 5, 6, 8]  # characters, not bytes
    times = [ms for ms, _ in turn.pace]
    assert times == sorted(times) and 0 <= times[0] < 5000
    assert KEY not in sink.paces  # a finished turn's pace is not kept in memory


def test_a_long_turn_stays_bounded_and_spans_the_whole_turn():
    writes = 3 * PACE_POINTS
    _, turn = async_to_sync(_run)(writes)
    assert len(turn.pace) <= PACE_POINTS
    assert turn.pace[-1][1] == len(turn.text)  # the last write is always kept
    assert turn.pace[0][1] == 2  # and the first
    chars = [c for _, c in turn.pace]
    assert chars == sorted(chars) and len(set(chars)) == len(chars)


def test_a_regenerated_turn_starts_its_pace_again():
    _, turn = async_to_sync(_run)(3, restart=True)
    assert turn.text == "again"
    assert [chars for _, chars in turn.pace] == [5]
    assert turn.history and turn.history[0]["text"] == "ab字ab"


def test_thinning_keeps_the_ends_and_the_spacing():
    pace = Pace(started=1000.0)
    for n in range(5000):  # 200 s of text at one write per 40 ms
        pace.add(1000.0 + 0.5 + n * 0.04, n + 1)
    assert len(pace.points) <= PACE_POINTS
    assert pace.points[0] == [500, 1] and pace.points[-1] == [500 + 4999 * 40, 5000]
    gaps = [b[0] - a[0] for a, b in zip(pace.points, pace.points[1:], strict=False)]
    assert max(gaps) <= 2 * pace.step  # evenly spread over the whole turn, no hole
