"""The panel's cap planned over its four rounds before R1 (taixu R8 超限硬终止; issue 48): a default
panel on a connected model that writes each reply as long as its request allows finishes every
round within its cap, and a reply past its planned share is held there. Over HTTP to the loopback
fake server, whose usage is what the ledger counts (it stops a reply at the request's max_tokens)."""

from __future__ import annotations

import pytest

from debates.engine import panel, panel_plan
from debates.engine.turns import reply_ceiling
from testkit.fake_openai import Fault, Reply

from .conftest import PANEL_ROLES, key_of, panel_spec
from .test_panel import ADMIT_OK, CONCEPTS, VERDICT

QUESTIONS = {"zh": "我们团队是否应该在明年全面转向远程办公？", "en": "Should our team go fully remote next year?"}


def padding(key: str) -> str:
    """Text longer than any allowance that never repeats itself (the repetition guard would cut it)."""
    seed = sum(map(ord, key))
    return "".join(chr(0x4E00 + (seed * 31 + i * 7919) % 20000) for i in range(3000))


def writes_to_its_allowance(lang: str):
    """A compliant strong model: every speech in its round's form, each naming the next role (so
    R3 opens a front against every role and R4 runs for all five), its last part running on to
    the request's limit; the host's turns as the host writes them."""
    names = [r.name for r in PANEL_ROLES]

    def answer(body):
        key = key_of(body) or ""
        if key == "host:admission":
            return ADMIT_OK
        if key in ("host:baseline", "host:aggregate2"):
            return "- 盲区：执行成本。"
        if key == "host:concepts":
            return CONCEPTS
        if key.startswith("host:verdict"):
            return VERDICT
        round_no, slug = key.split(":")[0], key.split(":")[1]
        other = names[([r.slug for r in PANEL_ROLES].index(slug) + 1) % len(names)]
        if round_no == "r4":
            return Reply(f"检验交锋：逐条回应开放战线。\n小结：坚持。\n终辩声明：{padding(key)}")
        rebut, silence = ("无", "无") if round_no == "r1" else (f"{other}的论点忽视了协作成本。", "无")
        return Reply(f"立场：坚持。\n反驳：{rebut}\n沉默声明：{silence}\n小结：坚持。\n核心论据：{padding(key)}")

    return answer


@pytest.mark.parametrize("lang", ["zh", "en"])
async def test_a_default_panel_on_a_model_that_writes_to_its_allowance_finishes_every_round(harness, lang):
    """Before the plan the cap (4.5 × one prompt and one speech per role) ran out in R2: the run
    stopped there with 5 of its 20 speeches. Now every speech is asked for the planned length
    (its max_tokens and the length its prompt declares), and all four rounds and the verdict fit."""
    run = await harness.run(panel_spec(QUESTIONS[lang]), writes_to_its_allowance(lang))

    assert run.outcome == "done", run.finished
    assert "stopped_by_cap_in_round" not in run.data and "token_cap" not in run.warning_codes
    ledger, planned = run.data["ledger"], run.data["token_plan"]["speech_tokens"]
    for round_no in (1, 2, 3, 4):
        assert {f"r{round_no}:{r.slug}" for r in PANEL_ROLES} <= set(ledger["turns"]), round_no
    assert ledger["counted_against_cap"] <= ledger["cap"] == run.data["token_cap"]["cap"]
    assert not ledger["estimated"] and run.data["verdict"] == VERDICT
    speeches = [r for r in run.requests if (key_of(r.body) or "").startswith("r")]
    assert speeches and all(r.body["max_tokens"] == planned for r in speeches)
    declared = f"{planned} 字" if lang == "zh" else f"at most {planned * 3 // 4} words"
    assert all(declared in r.body["messages"][-1]["content"] for r in speeches)
    assert all(ledger["turns"][key_of(r.body)]["completion"] == planned for r in speeches)  # written to the limit
    assert panel_plan.MIN_SPEECH <= planned < panel.FORMAT.tokens["speech"]


async def test_a_reply_past_its_planned_share_is_held_by_the_cap(harness):
    """A server that ignores max_tokens for one R2 speech (20,000 tokens): the reply is read no
    further than its ceiling, the run stays within the cap and still writes its verdict."""
    harness.server.inject(Fault.flood(20_000), when=lambda body: key_of(body) == "r2:hegel")
    run = await harness.run(panel_spec(), writes_to_its_allowance("zh"))

    assert run.outcome == "done", run.finished
    ledger, planned = run.data["ledger"], run.data["token_plan"]["speech_tokens"]
    # read to its ceiling (and the last delta, which crossed it), not to its 20,000 tokens
    assert planned < ledger["turns"]["r2:hegel"]["completion"] < reply_ceiling(planned) + 8
    assert ledger["counted_against_cap"] <= ledger["cap"]
    assert run.data["verdict"] == VERDICT
