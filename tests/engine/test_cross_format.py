"""Rules that hold across formats, on the in-process fake: parallel rounds really overlap (and do not
on a one-at-a-time provider), summaries stay within their limits, a resent turn is charged twice,
every turn's key reaches the client, and a provider that cannot start fails the debate. The same
engine over the HTTP client: test_provider_path.py."""

from __future__ import annotations

import itertools

import pytest

from debates.engine import events as ev
from debates.engine.spec import DebateSpec, PersonaSpec, SeatSpec
from debates.providers.base import ProviderUnavailable
from testkit.fake_llm import FakeLLM
from testkit.fake_openai import max_overlap
from testkit.prose import prose

from . import test_duel, test_moderated, test_panel, test_roundtable
from .conftest import HUINENG, YINGUANG, debate, duel_spec, moderated_spec, panel_spec, table_spec

# -- overlap --------------------------------------------------------------------------------------


SHORT_R1 = {
    (slug, 1): "立场：一句短话。\n核心论据：一条。\n反驳：无\n沉默声明：无\n小结：短。" for slug in test_panel.ALL
}


def slow_panel(concurrency: int) -> FakeLLM:
    """Every reply streams in 10 ms steps; R1 replies are short so the round's timing is theirs."""
    return test_panel.panel_fake(speeches=SHORT_R1, delay=0.01, chunk=8, concurrency=concurrency)


async def through_r1():
    """A panel whose cap ends it after R1."""
    return panel_spec(token_budget=await test_panel.budget_through(1, SHORT_R1))


async def test_panel_r1_calls_overlap_in_time():
    run = await debate(await through_r1(), slow_panel(concurrency=5))  # the cap stops after R1

    r1 = run.calls_for("r1:*")
    assert len(r1) == 5
    assert max_overlap(r1) == 5
    assert max(c.started for c in r1) < min(c.finished for c in r1)  # all five in flight together
    assert run.data["execution_mode"] == "isolated_parallel"


async def test_one_at_a_time_provider_never_overlaps():
    run = await debate(await through_r1(), slow_panel(concurrency=1))

    r1 = run.calls_for("r1:*")
    assert len(r1) == 5
    assert max_overlap(run.calls) == 1
    ordered = sorted(r1, key=lambda c: c.started)
    assert all(a.finished <= b.started for a, b in itertools.pairwise(ordered))
    assert run.data["execution_mode"] == "isolated_sequential"


async def test_concurrency_between_one_and_five_bounds_the_overlap():
    run = await debate(await through_r1(), slow_panel(concurrency=2))
    assert max_overlap(run.calls_for("r1:*")) == 2


# -- summaries ------------------------------------------------------------------------------------

# ~134 characters with no sentence end to cut back to, and no loop (a phrase written six times
# would be cut by the repetition cut before the summary's limit could act)
RAMBLE = "这一轮我想说的是" + prose(126, stops=False)


def rambling(fake: FakeLLM) -> FakeLLM:
    """Make every scripted reply end with a ~134-character summary line."""

    def longer(reply):
        return lambda call: f"{reply(call) if callable(reply) else reply}\n小结：{RAMBLE}"

    # The panel's baseline is asked for one token; a longer reply would only be cut at its ceiling.
    fake.queued = {
        key: replies if key == "host:baseline" else [longer(r) for r in replies] for key, replies in fake.queued.items()
    }
    return fake


CASES = {
    "duel": (lambda: duel_spec(seats=(HUINENG, YINGUANG)), test_duel.duel_fake, 80),
    "panel": (panel_spec, test_panel.panel_fake, 60),
    "roundtable": (
        lambda: table_spec(no_interrupt=True),
        lambda: test_roundtable.table_fake(test_roundtable.STANDARD),
        80,
    ),
    "moderated": (lambda: moderated_spec(rounds=2, max_chars=2000), test_moderated.mod_fake, 80),
}


def case_spec(fmt: str) -> DebateSpec:
    spec = CASES[fmt][0]()
    if fmt == "duel":
        spec.options.rounds = 2
    return spec


@pytest.mark.parametrize("fmt", list(CASES))
async def test_summaries_never_exceed_their_limit(fmt):
    _, make_fake, limit = CASES[fmt]
    run = await debate(case_spec(fmt), rambling(make_fake()))

    assert run.outcome == "done"
    finished = run.sink.of(ev.TurnFinished)
    assert len(finished) >= 4
    for turn in finished:
        assert len(turn.summary) <= limit, (turn.key, len(turn.summary))
    clipped = [t for t in finished if t.summary.startswith("这一轮我想说的是")]
    assert clipped and all(len(t.summary) == limit and t.summary.endswith("…") for t in clipped)
    assert all(len(t["summary"]) <= limit for t in run.data["turns"])
    if fmt == "duel":
        assert all(len(s["summary"]) <= 80 for s in run.data["round_summaries"])


# -- the ledger -----------------------------------------------------------------------------------


async def test_ledger_counts_both_calls_of_a_resent_turn():
    fake = test_roundtable.table_fake(test_roundtable.STANDARD, speeches={("optimist", "r2"): test_roundtable.AGREE})
    run = await debate(table_spec(no_interrupt=True), fake)

    assert len(run.calls) == 1 + 4 + 4 + 1 + 4 + 1  # suitability, R1, R2, the resend, R3, synthesis
    finished = run.turns()
    assert len(finished) == len(run.calls)  # the resend is a turn of its own, with its own key
    ledger = run.data["ledger"]
    assert ledger["total"] == sum(t.prompt_tokens + t.completion_tokens for t in finished.values())
    for key in ("r2:optimist", "r2:optimist:resend"):
        turn = finished[key]
        assert ledger["turns"][key] == {
            "prompt": turn.prompt_tokens,
            "completion": turn.completion_tokens,
            "estimated": False,
        }
        assert turn.prompt_tokens > 0 and turn.completion_tokens > 0


# -- keys and messages reach the client ----------------------------------------------------------


async def test_engine_runs_on_the_in_process_fake_and_records_every_prompt():
    run = await debate(duel_spec(seats=(HUINENG, YINGUANG)))

    assert run.outcome == "done"
    started = run.sink.of(ev.TurnStarted)
    assert [s.messages for s in started] == [c.messages for c in run.calls]
    assert run.started_keys() == run.keys  # the client is told the turn each call serves
    # FakeLLM's default reply says "立场变化：无": both sides stand still, so round 2 ends the duel
    assert run.keys == ["duel:1:huineng", "duel:1:yinguang", "duel:2:huineng", "duel:2:yinguang", "duel:close"]
    assert [e.status for e in run.sink.of(ev.Status)] == ["running", "done"]


async def test_a_provider_that_cannot_start_fails_the_debate_with_its_reason():
    class Broken(FakeLLM):
        async def ensure_ready(self, on_status=None):
            await on_status("loading model")
            raise ProviderUnavailable("the local model server did not start: out of memory")

    spec = DebateSpec(
        question="念佛与参禅？",
        format="duel",
        seats=[SeatSpec(PersonaSpec("a", "甲")), SeatSpec(PersonaSpec("b", "乙"))],
    )
    run = await debate(spec, Broken())
    assert run.outcome == "failed"
    assert run.finished.reason == "the local model server did not start: out of memory"
    assert [(s.status, s.detail) for s in run.sink.of(ev.Status)][0] == ("loading_model", "loading model")
    assert run.calls == []
