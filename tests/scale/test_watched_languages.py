"""A debate's frames are drawn only in the languages someone in the process watches it in, when
the channel layer is the process's own; with a layer processes share, in every language."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import BaseChannelLayer
from django.utils import translation

from agora.channel_layers import InMemoryChannelLayer
from debates import frames
from debates.engine import events as ev
from debates.engine.i18n import Text
from debates.models import Debate
from debates.sink import DjangoSink

pytestmark = pytest.mark.django_db(transaction=True)


class SharedLayer(BaseChannelLayer):  # not this process's own
    """A stand-in for a layer other processes read too (Redis): it only records what is sent."""

    def __init__(self):
        super().__init__()
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group, message):
        self.sent.append((group, message))


async def received(layer, channel) -> list[dict]:
    got = []
    while True:
        try:
            got.append(await asyncio.wait_for(layer.receive(channel), timeout=0.01))
        except TimeoutError:
            return got


@pytest.fixture
def drawn_in(monkeypatch):
    """The language of every part drawn."""
    languages = []
    part = frames.part

    def recording(name, **context):
        languages.append(translation.get_language())
        return part(name, **context)

    monkeypatch.setattr(frames, "part", recording)
    return languages


async def sink_with(layer) -> DjangoSink:
    debate = await Debate.objects.acreate(question="Which language?", format="duel")
    sink = DjangoSink(debate.pk, frame_interval=60)
    sink.layer = layer
    await sink.open()
    return sink


async def test_frames_go_only_to_the_languages_watched_and_a_later_language_joins_in(drawn_in):
    layer = InMemoryChannelLayer(capacity=1000)
    sink = await sink_with(layer)
    chinese, english = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(sink.groups["zh-hans"], chinese)

    await sink.emit(ev.PhaseStarted(1, "duel", Text("Round %(n)d", {"n": 1})))
    assert drawn_in and set(drawn_in) == {"zh-hans"}  # nobody reads English: never drawn in it
    first = await received(layer, chinese)
    assert [m["seq"] for m in first] == [1]

    await layer.group_add(sink.groups["en"], english)  # an English viewer joins
    drawn_in.clear()
    await sink.emit(ev.TurnStarted("duel:1:a", 1, "duel", "a", "A", [{"role": "user", "content": "q"}]))
    assert set(drawn_in) == {"zh-hans", "en"}
    to_english, to_chinese = await received(layer, english), await received(layer, chinese)
    assert [m["seq"] for m in to_english] == [m["seq"] for m in to_chinese] == [2]
    assert to_english[0]["html"] != to_chinese[0]["html"]  # each in its own language

    await layer.group_discard(sink.groups["zh-hans"], chinese)  # the Chinese viewer leaves
    drawn_in.clear()
    await sink.emit(ev.TurnFinished("duel:1:a", "Done.", "summary", 1, 1))
    assert set(drawn_in) == {"en"}
    await sink.close()


async def test_nobody_watching_draws_nothing_but_the_change_is_kept(drawn_in):
    layer = InMemoryChannelLayer(capacity=1000)
    sink = await sink_with(layer)
    await sink.emit(ev.PhaseStarted(1, "duel", Text("Round %(n)d", {"n": 1})))
    assert drawn_in == []
    debate = await Debate.objects.aget(pk=sink.debate_id)
    assert debate.seq == 1 and debate.phases  # a viewer who comes later reads it from here
    await sink.close()


async def test_a_layer_processes_share_gets_every_language(drawn_in):
    layer = SharedLayer()
    sink = await sink_with(layer)
    await sink.emit(ev.PhaseStarted(1, "duel", Text("Round %(n)d", {"n": 1})))
    assert set(drawn_in) == set(frames.languages())
    assert {group for group, _message in layer.sent} == set(sink.groups.values())
    await sink.close()


async def test_text_frames_go_only_to_the_languages_watched():
    layer = InMemoryChannelLayer(capacity=1000)
    sink = await sink_with(layer)
    english = await layer.new_channel()
    await sink.emit(ev.TurnStarted("duel:1:a", 1, "duel", "a", "A", [{"role": "user", "content": "q"}]))
    sent = []
    send = layer.group_send
    layer.group_send = lambda group, message: (sent.append(group), send(group, message))[1]
    await sink.emit(ev.TextDelta("duel:1:a", "Hello, "))
    await sink.flush()
    assert sent == []  # nobody watches: no frame drawn or sent ...
    seq = sink.seq
    debate = await Debate.objects.aget(pk=sink.debate_id)
    assert debate.seq == seq == 2  # ... but the text is written under its own seq, for a later viewer
    assert (await debate.turns.aget(key="duel:1:a")).text == "Hello, "

    await layer.group_add(sink.groups["en"], english)
    await sink.emit(ev.TextDelta("duel:1:a", "world"))
    await sink.flush()
    assert sent == [sink.groups["en"]]  # nobody reads Chinese: no meter drawn for it, nothing sent
    frame = (await received(layer, english))[-1]
    assert frame["seq"] == seq + 1
    assert "world" in frame["html"] and "Cost in US dollars" in frame["html"]  # the text, the English meter
    await sink.close()
