"""The live stage drawn by a running debate's sink reads the turns as the sink knows them
(debates/known_turns.py), not the rows: the same inputs, without the queries. Each status frame of a
run with a watched language is checked against the rows as committed at that moment."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agora.channel_layers import InMemoryChannelLayer
from debates import frames, time_left
from debates.engine import events as ev
from debates.engine.i18n import Text
from debates.models import Debate, Seat, Status, Turn
from debates.sink import DjangoSink
from personas.models import Library, Persona

pytestmark = pytest.mark.django_db(transaction=True)

UNFINISHED = (Turn.State.RUNNING, Turn.State.FAILED, Turn.State.INTERRUPTED)


def seated_debate(owner) -> Debate:
    library = Library.objects.create(slug="known", name="Known", format="duel")
    debate = Debate.objects.create(
        owner=owner, question="Should cities ban cars downtown?", format="duel", status=Status.QUEUED
    )
    for order, (slug, kind) in enumerate((("pro", "debater"), ("con", "debater"), ("chair", "host"))):
        persona = Persona.objects.create(library=library, slug=slug, name=slug, name_en=slug.title(), kind=kind)
        Seat.objects.create(debate=debate, persona=persona, order=order)
    return debate


@pytest.fixture
def compared(monkeypatch):
    """Every status frame the sink draws: its inputs as the sink knew them, beside the rows'."""
    seen = []
    status = frames.status

    def checking(debate, drawn=None):
        rows = time_left.turn_rows(debate)
        unfinished = [(t.speaker_name, t.speaker_name_en, t.state) for t in debate.turns.filter(state__in=UNFINISHED)]
        seen.append(
            {
                "drawn": drawn is not None,
                "rows": (drawn.rows, rows) if drawn else None,
                "seats": (drawn.seats, time_left.seats_of(debate)) if drawn else None,
                "unfinished": (
                    [(t.speaker_name, t.speaker_name_en, t.state) for t in drawn.turns if t.state in UNFINISHED]
                    if drawn
                    else None,
                    unfinished,
                ),
            }
        )
        return status(debate, drawn)

    monkeypatch.setattr(frames, "status", checking)
    return seen


async def test_the_stage_the_sink_draws_reads_what_the_rows_say(alice, compared):
    debate = await _seated(alice)
    layer = InMemoryChannelLayer(capacity=10_000)
    sink = DjangoSink(debate.pk, frame_interval=0.001)
    sink.layer = layer
    await sink.open()
    await layer.group_add(sink.groups["en"], await layer.new_channel())  # watched: frames are drawn

    async def speak(key: str, *pieces: str, thinking: str = "") -> None:
        if thinking:
            await sink.emit(ev.ThinkingDelta(key, thinking))
        for piece in pieces:
            await sink.emit(ev.TextDelta(key, piece))
            await sink.flush()

    await sink.emit(ev.Status("running"))
    await sink.emit(ev.Plan(rounds=2, cap=20_000))
    await sink.emit(ev.PhaseStarted(1, "duel", Text("Round %(n)d", {"n": 1})))
    await sink.emit(ev.TurnStarted("duel:1:pro", 1, "duel", "pro", "pro", [], speaker_name_en="Pro"))
    await speak("duel:1:pro", "Cars ", "choke ", "城市中心。", thinking="weighing the evidence")
    await sink.emit(ev.TurnFinished("duel:1:pro", "Cars choke 城市中心。", "s", 30, 12, thinking="weighing"))
    await sink.emit(ev.TurnStarted("duel:1:con", 1, "duel", "con", "con", [], speaker_name_en="Con"))
    await speak("duel:1:con", "Shops ", "need ", "access")
    await sink.emit(
        ev.TurnFailed("duel:1:con", "the server hung up", partial_text="Shops need access", completion_tokens=4)
    )
    # Written again: the same row, its place kept, running from nothing.
    await sink.emit(ev.TurnStarted("duel:1:con", 1, "duel", "con", "con", [], speaker_name_en="Con"))
    await speak("duel:1:con", "Deliveries ", "matter")
    await sink.emit(ev.PhaseStarted(0, "closing", Text("Closing")))
    await sink.emit(ev.TurnStarted("closing:chair", 0, "closing", "chair", "chair", [], speaker_name_en="Chair"))
    await speak("closing:chair", "逐步", "推进")
    await sink.emit(ev.Status("stopped", "stopped by the owner"))  # the running turns are cut

    assert len(compared) == 11  # each status, the plan, each phase, each turn's start and end
    assert all(frame["drawn"] for frame in compared)  # every stage the sink drew came from what it knew
    for frame in compared:
        assert frame["rows"][0] == frame["rows"][1]
        assert frame["seats"][0] == frame["seats"][1] == 2
        assert frame["unfinished"][0] == frame["unfinished"][1]
    # The comparison saw what matters: streamed tokens of running turns, a failure, the cut turns.
    assert any(state == Turn.State.RUNNING and tokens > 0 for *_, state, tokens in compared[8]["rows"][1])
    assert ("con", "Con", Turn.State.FAILED) in compared[6]["unfinished"][1]
    assert compared[-1]["unfinished"][1] == [
        ("con", "Con", Turn.State.INTERRUPTED),
        ("chair", "Chair", Turn.State.INTERRUPTED),
    ]


async def _seated(owner) -> Debate:
    from asgiref.sync import sync_to_async

    debate = await sync_to_async(seated_debate)(owner)
    await Debate.objects.filter(pk=debate.pk).aupdate(started_at=timezone.now())
    return debate
