"""The panel's token cap holds (taixu R8, 超限硬终止; issue 28.1): every turn is paid for before it
starts (its prompt and the completion limit its request carries), a parallel round's turns are
booked together, the verdict's reserve pays for its call and one resend, and the report says how
close the run came. Over HTTP to the loopback fake server, whose usage is what the ledger counts;
the speeches there use their whole allowance (the server stops them at `max_tokens`)."""

from __future__ import annotations

import re

from debates.engine import panel
from debates.engine.budget import Ledger
from debates.engine.debate import run_debate
from debates.engine.events import ListSink
from debates.engine.spec import SeatSpec
from debates.engine.turns import ClientPool
from debates.providers.reasoning import with_headroom
from testkit.fake_llm import Counted, FakeLLM
from testkit.fake_openai import FakeOpenAIServer, Reply
from testkit.libraries import bundled

from .conftest import KeyedClient, debate, key_of, moderated_spec, options, panel_spec, unscripted
from .test_panel import ADMIT_OK, CONCEPTS, VERDICT, panel_fake

VERDICT_LACKING = "## 辩论精华\n- 引文。\n## 三区\n共识区：需要数据。\n## 综合判断\n中性综合。"  # no 结论产出


def long_speech(body) -> str:
    """A speech longer than any allowance, in the panel's form, that never repeats itself (the
    repetition guard would cut it): the server stops it at the request's limit."""
    seed = sum(map(ord, key_of(body) or ""))
    words = "".join(chr(0x4E00 + (seed * 31 + i * 7919) % 20000) for i in range(3000))
    return f"立场：坚持。\n小结：本轮小结。\n核心论据：{words}"


def script(verdicts=(VERDICT,)):
    """Every panel turn by key: the admission, concepts and verdict(s) as the host writes them,
    each speech as long as its request allows."""
    queue = list(verdicts)

    def answer(body):
        key = key_of(body) or ""
        if key == "host:admission":
            return ADMIT_OK
        if key == "host:baseline":
            return "基线"
        if key == "host:concepts":
            return CONCEPTS
        if key == "host:aggregate2":
            return "- 盲区：执行成本。"
        if key.startswith("host:verdict"):
            return queue.pop(0) if len(queue) > 1 else queue[0]
        return Reply(long_speech(body))

    return answer


async def test_five_calls_at_once_and_a_10000_cap_end_at_most_at_10000_with_the_verdict(harness):
    """The issue's measurement: with the old check (made before each turn against what was
    spent) all five R2 turns started under the cap and the run ended at 17,055 of 10,000."""
    harness.server.token_delay = 0.001  # each reply takes a while: the five R1 turns overlap
    run = await harness.run(panel_spec(token_budget=10_000), script([VERDICT_LACKING, VERDICT]))

    assert run.outcome == "done", run.finished
    r1 = [k for k in run.data["ledger"]["turns"] if k.startswith("r1:")]
    assert harness.server.peak_in_flight == len(r1) >= 4  # the R1 turns that fit ran at once
    ledger = run.data["ledger"]
    assert ledger["cap"] == 10_000 and not ledger["estimated"]  # every count is the server's
    assert ledger["counted_against_cap"] <= 10_000
    # The verdict was sent back once (it lacked its conclusion): both calls came from the reserve.
    assert {"host:verdict", "host:verdict-again"} <= set(ledger["turns"])
    assert run.data["verdict"] == VERDICT
    assert run.data["stopped_by_cap_in_round"] and "token_cap" in run.warning_codes
    counted = f"{ledger['counted_against_cap']:,}"
    assert f"Counted against the cap: {counted} of 10,000 tokens." in run.report.transcript_markdown


async def test_a_default_panel_stays_under_its_cap(harness):
    """No budget: the seed's multiple of the baseline, and a run that ends within it."""
    run = await harness.run(panel_spec(), script())

    assert run.outcome == "done", run.finished
    ledger, cap = run.data["ledger"], run.data["token_cap"]
    assert ledger["cap"] == cap["cap"] == int(cap["baseline_tokens"] * cap["multiplier"])
    assert ledger["counted_against_cap"] <= ledger["cap"]
    assert run.data["verdict"] == VERDICT and "token_plan" in run.data


async def test_a_budget_lowers_the_seeds_cap_but_never_raises_it():
    seed = (await debate(panel_spec(), panel_fake(roomy=False))).data["token_cap"]["cap"]

    raised = await debate(panel_spec(token_budget=10**8), panel_fake(roomy=False))
    assert raised.data["ledger"]["cap"] == seed  # held to the seed's cap
    assert raised.data["token_cap"]["asked"] == 10**8 and not raised.data["token_cap"]["explicit"]
    warning = raised.warning("token_budget_clamped").text
    assert "100000000" in warning and str(seed) in warning
    assert f"a budget may lower the panel's cap, never raise it, so the cap stays at {seed}" in (
        raised.report.transcript_markdown
    )
    assert raised.data["ledger"]["counted_against_cap"] <= seed

    lowered = await debate(panel_spec(token_budget=seed - 1000), panel_fake(roomy=False))
    assert lowered.data["ledger"]["cap"] == seed - 1000 and lowered.data["token_cap"]["explicit"]
    assert "token_budget_clamped" not in lowered.warning_codes


def test_the_budget_field_says_it_may_only_lower_the_cap():
    help_text = panel.FORMAT.options()["token_budget"].help
    assert "lower that cap, never raise it" in help_text and "4.3–5" in help_text


async def test_a_reasoning_model_is_booked_its_thinking_room():
    """A reasoning model's request carries `max_completion_tokens` with headroom for its thinking:
    that is what a turn may be charged, so that is what is booked. Its speeches think 2,800 tokens
    each: booked as their bare `max_tokens`, five would start and spend far past the cap."""
    thinking = " ".join(f"step{i}" for i in range(2800))

    def answer(body):
        key = key_of(body) or ""
        if key.startswith("r"):  # a short answer after long thinking
            return Reply("立场：坚持。\n小结：本轮小结。\n核心论据：" + long_speech(body)[-200:], thinking=thinking)
        return script()(body)

    async with FakeOpenAIServer(answer, openai_reasoning=True, thinking_as="hidden", token_delay=0.0005) as server:
        client = KeyedClient(server.base_url, "sk-test", "o3-mini", concurrency=5, max_retries=0, timeout=10.0)
        ledger = Ledger()
        await run_debate(panel_spec(token_budget=30_000), ClientPool(client), ListSink(), ledger)
        speeches = [r for r in server.chat_requests if (key_of(r.body) or "").startswith("r")]
        await client.aclose()

    speech = panel.FORMAT.tokens["speech"]
    assert speeches and all(r.body["max_completion_tokens"] == with_headroom(speech) for r in speeches)
    assert ledger.cap == 30_000 and ledger.counted <= 30_000 and not ledger.estimated
    assert ledger.entries["r1:osborn"].reasoning_tokens == 2800  # the thinking was paid for
    assert "host:verdict" in ledger.entries


async def test_the_bundled_models_sizing_ends_after_r1_with_its_verdict_within_its_cap(harness):
    """`Panel.local`: a cap on the one local slot, shorter allowances: the five R1 speeches run
    (each booked when it gets the slot), then the verdict; the run ends within the cap. (At 7,000,
    the figure before the cap held, two R1 speeches fit beside the verdict's reserve.)"""
    library = bundled("panel")
    sized = panel.FORMAT.sized(options("panel"))
    cap = sized.token_budget
    spec = panel_spec("我们团队是否应该在明年全面转向远程办公？", roles=library.pool)
    spec.library, spec.options = library, sized
    spec.seats = [SeatSpec(p) for p in library.pool]

    run = await harness.run(spec, script(), concurrency=1)

    assert run.outcome == "done", run.finished
    ledger = run.data["ledger"]
    assert ledger["cap"] == cap and ledger["counted_against_cap"] <= cap
    # Every role's R1 speech (a form-breaking one may be sent back once where the cap has room).
    assert sorted(k for k in ledger["turns"] if re.match(r"r1:[^:]+$", k)) == sorted(
        f"r1:{p.slug}" for p in library.pool
    )
    assert not [k for k in ledger["turns"] if re.match(r"r[234]:", k)]
    assert run.data["verdict"] == VERDICT


async def test_a_verdict_with_no_room_left_is_not_called_and_the_report_says_why():
    """A server that charges a speech far past its booking (here a million completion tokens)
    leaves the verdict no room: it is not called (the cap is hard), and the report says why."""
    speech = Counted("立场：坚持。\n小结：本轮小结。", completion_tokens=10**6)
    run = await debate(panel_spec(), panel_fake(speeches={("osborn", 1): speech}, roomy=False))

    assert run.outcome == "done"
    assert "host:verdict" not in run.keys
    assert run.data["verdict"] == panel.VERDICT_NO_ROOM
    assert "token_cap" in run.warning_codes


async def test_a_format_stopped_by_its_token_cap_says_so_not_that_money_ran_out():
    """A moderated synthesis the cap has no room for (a speech charged a million tokens past its
    booking): the run stops with the token cap's reason (it crashed on the money message)."""
    fake = FakeLLM(default=unscripted).reply("speech:*", Counted("先做产品。", completion_tokens=10**6))
    run = await debate(moderated_spec(token_budget=20_000), fake)

    assert run.outcome == "stopped"
    assert "token_cap" in run.warning_codes and "money_budget" not in run.warning_codes
    assert "The token cap of 20000 had no room left" in run.finished.reason
