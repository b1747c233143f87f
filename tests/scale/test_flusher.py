"""The loop's flusher writes the pending text of every debate in one transaction, fenced per
debate by its runner's lease: a debate another runner took over loses only itself."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer

from debates.engine import events as ev
from debates.flusher import Flushable
from debates.models import Debate, Turn
from debates.sink import DjangoSink

pytestmark = pytest.mark.django_db(transaction=True)


async def _sink(runner_id: str) -> DjangoSink:
    debate = await Debate.objects.acreate(question="Flush?", format="duel", runner_id=runner_id)
    sink = DjangoSink(debate.pk, frame_interval=60, runner_id=runner_id)  # flushed by hand below
    sink.layer = InMemoryChannelLayer(capacity=10_000)
    await sink.open()
    await sink.emit(ev.TurnStarted("duel:1:a", 1, "duel", "a", "A", [{"role": "user", "content": "q"}]))
    return sink


async def _scenario():
    kept, taken = await _sink("runner-1"), await _sink("runner-2")
    lost = []
    taken.on_lease_lost = lambda: lost.append(taken.debate_id)
    assert kept.flusher is taken.flusher  # one flusher for the loop's debates
    for sink in (kept, taken):
        await sink.emit(ev.TextDelta("duel:1:a", "first "))
    await kept.flush()  # one flush writes both debates
    flushes = kept.flusher.stats["flushes"]
    await Debate.objects.filter(pk=taken.debate_id).aupdate(runner_id="someone-else")  # the lease moved
    for sink in (kept, taken):
        await sink.emit(ev.TextDelta("duel:1:a", "second"))
    await asyncio.sleep(0)
    await kept.flush()
    assert kept.flusher.stats["flushes"] == flushes + 1
    texts = {pk: text async for pk, text in Turn.objects.filter(key="duel:1:a").values_list("debate_id", "text")}
    seqs = {pk: seq async for pk, seq in Debate.objects.values_list("pk", "seq")}
    return kept, taken, lost, texts, seqs


def test_one_flush_writes_every_debate_and_a_lost_lease_stops_only_its_own():
    kept, taken, lost, texts, seqs = async_to_sync(_scenario)()
    assert texts[kept.debate_id] == "first second"
    assert texts[taken.debate_id] == "first "  # nothing written after the lease was lost
    assert lost == [taken.debate_id] and taken.lost and not kept.lost
    assert seqs[kept.debate_id] == kept.seq == 3  # turn started, then two flushes
    assert seqs[taken.debate_id] == taken.seq == 2


def test_a_sink_is_what_the_flusher_needs():
    """The flusher knows a sink only through `Flushable` (it imports nothing of `debates.sink`): a
    real sink has every member the protocol names."""
    sink = DjangoSink(1)
    wanted = set(Flushable.__annotations__) | {"send_deltas", "lose"}
    assert {name for name in wanted if not hasattr(sink, name)} == set()
    assert callable(sink.send_deltas) and callable(sink.lose)
