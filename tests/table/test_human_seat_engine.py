"""A person in a seat, in the engine: the run stops at their turn (stored, so it survives any
restart), and a resumed run streams what they wrote through the same path as a model's reply;
a missed deadline hands the turn to a model or passes it."""

from __future__ import annotations

from debates.engine import events as ev
from debates.engine.budget import Ledger
from debates.engine.debate import run_debate
from debates.engine.spec import SeatSpec
from debates.engine.turns import ClientPool
from debates.providers.human import HumanClient
from testkit.fake_llm import FakeLLM
from tests.engine.conftest import HUINENG, YINGUANG, Run, duel_spec

WRITTEN = "正文：念佛一门，三根普被，在家人最易行。\n立场变化：无\n小结：持名念佛最契在家人根机。"


def spec_with_me(completed=None, rounds=2):
    spec = duel_spec()
    spec.seats = [SeatSpec(HUINENG), SeatSpec(YINGUANG, client="human:yinguang")]
    spec.options.rounds = rounds
    spec.completed = completed or {}
    return spec


async def run(spec, fake: FakeLLM, inputs: dict) -> Run:
    sink, ledger = ev.ListSink(), Ledger()
    me = HumanClient("alice", inputs, stand_in=fake)
    outcome = await run_debate(spec, ClientPool(fake, {"human:yinguang": me}), sink, ledger)
    return Run(outcome, sink, ledger, calls=list(fake.calls))


async def test_the_run_waits_for_the_person_then_treats_their_turn_as_a_models():
    fake = FakeLLM()
    first = await run(spec_with_me(), fake, {})
    assert first.outcome == "waiting"
    waiting = first.sink.of(ev.AwaitingHuman)
    assert [w.key for w in waiting] == ["duel:1:yinguang"]
    assert [p["label"] for p in waiting[0].parts] == ["正文", "立场变化", "小结"]
    assert waiting[0].parts[1]["choices"] == ["无"]  # the person's opening: no position yet to have moved from
    assert "对手当前立场摘要" in waiting[0].prompt  # the person reads what the model would have
    assert not fake.calls_for("duel:1:yinguang")
    assert first.finished.outcome == "waiting"

    inputs = {"duel:1:yinguang": {"text": WRITTEN}}
    second = await run(spec_with_me(first.completed()), fake, inputs)
    assert second.outcome == "waiting"
    mine = second.turns()["duel:1:yinguang"]
    assert mine.text == WRITTEN and mine.summary == "持名念佛最契在家人根机。"
    assert (mine.prompt_tokens, mine.completion_tokens) == (0, 0)
    streamed = "".join(d.text for d in second.sink.of(ev.TextDelta) if d.key == "duel:1:yinguang")
    assert streamed == WRITTEN  # it arrives on other pages as a model's text does
    # The opponent's next turn reads the person's summary, as it would a model's.
    assert "持名念佛最契在家人根机" in fake.calls_for("duel:2:huineng")[0].user
    assert [w.key for w in second.sink.of(ev.AwaitingHuman)] == ["duel:2:yinguang"]
    assert second.sink.of(ev.AwaitingHuman)[0].parts[1]["choices"] == ["无", "松动", "转向"]  # a position to move
    assert not fake.calls_for("duel:*:yinguang")  # no model spoke for the person


async def test_a_missed_deadline_lets_a_model_speak_or_the_turn_pass():
    fake = FakeLLM()
    first = await run(spec_with_me(rounds=1), fake, {})
    stood_in = await run(spec_with_me(first.completed(), rounds=1), fake, {"duel:1:yinguang": {"stand_in": "llm"}})
    assert stood_in.outcome == "done"
    assert len(fake.calls_for("duel:1:yinguang")) == 1  # the model, once, with the same prompt

    fake = FakeLLM()
    first = await run(spec_with_me(rounds=1), fake, {})
    passed = await run(spec_with_me(first.completed(), rounds=1), fake, {"duel:1:yinguang": {"stand_in": "pass"}})
    assert passed.outcome == "done" and not fake.calls_for("duel:1:yinguang")
    assert "本轮弃权" in passed.turns()["duel:1:yinguang"].text


async def test_a_person_who_argues_the_other_side_is_not_asked_again():
    fake = FakeLLM()
    first = await run(spec_with_me(rounds=1), fake, {})
    flipped = "正文：参禅才是正路，慧能之见为上。\n立场变化：转向\n小结：我认为参禅更适合在家人。"
    again = await run(spec_with_me(first.completed(), rounds=1), fake, {"duel:1:yinguang": {"text": flipped}})
    assert again.outcome == "done"
    assert "duel:1:yinguang:again" not in again.turns()  # a model would be; a person means it
