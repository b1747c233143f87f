"""A reply that repeats itself is cut where the loop starts, its repetition removed, the turn
marked, and the debate goes on (issue 27: one turn repeated one sentence for nine minutes). No
false cuts on ordinary speeches, in Chinese or English, nor on lists and tables whose lines share
their structure."""

from __future__ import annotations

import pytest

from debates.engine import events as ev
from debates.engine.repetition import RepetitionGuard, find
from debates.engine.text import REPEATED_MARK
from testkit.fake_llm import default_reply
from testkit.fake_openai import Reply

from .conftest import call_of, key_of, moderated_spec

ZH_LOOP_SENTENCE = "念佛法门简单易行，适合现代人每天的修行。"
EN_LOOP_SENTENCE = "The team should keep the monolith until the product finds its market. "

LOOPS = {
    "zh sentence": ("综合来看，我倾向于念佛。" + ZH_LOOP_SENTENCE * 40, "综合来看，我倾向于念佛。" + ZH_LOOP_SENTENCE),
    "en sentence": (
        "Microservices cost a small team more than they save. " + EN_LOOP_SENTENCE * 30,
        "Microservices cost a small team more than they save. " + EN_LOOP_SENTENCE.strip(),
    ),
    "numbered": (
        "理由：" + "".join(f"第{i}点，这一点非常重要，需要认真考虑。" for i in range(1, 30)),
        "理由：第1点，这一点非常重要，需要认真考虑。",
    ),
    "two sentences": (
        "先说结论。" + "成本是第一位的。团队规模决定了架构。" * 10,
        "先说结论。成本是第一位的。团队规模决定了架构。",
    ),
}

# Real-looking speeches and lists: none of them is cut.
ORDINARY = {
    "zh speech": (
        "作为印光大师，我认为念佛法门三根普被，利钝全收。参禅需要上根利器，而现代人工作繁忙，难以长时间静坐，"
        "也难以遇到明眼的善知识印证。念佛则不同：一句阿弥陀佛，行住坐卧皆可持念，不受时间与环境的限制。"
        "其次，净土法门仗佛愿力，自力与他力相合，如乘大船渡海，较之单凭自力更为稳当。最后，念佛并不排斥参究，"
        "古德亦有念佛是谁的话头，禅净本可双修。因此，对今天的在家人而言，念佛是更稳妥的下手处。"
    ),
    "en speech": (
        "As the site reliability engineer, I would not split the system now. A ten-person team runs one "
        "deployment pipeline today; with twelve services it would run twelve, each with its own alerts, its own "
        "on-call rota and its own failure modes. The cost is not the code, it is the operations. We should keep "
        "the monolith, draw clear module boundaries inside it, and measure which module actually needs to scale. "
        "When one does, we extract that one, and only that one. We should measure first, and we should decide "
        "second; we should never split because a conference talk told us to."
    ),
    "zh list": "\n".join(
        f"- 方案{n}：优点是{a}，缺点是{b}。"
        for n, a, b in [
            ("一", "成本低", "风险高"),
            ("二", "速度快", "维护难"),
            ("三", "易上手", "难扩展"),
            ("四", "生态好", "许可贵"),
            ("五", "性能强", "门槛高"),
        ]
    ),
    "en list": "\n".join(
        f"{i}. {name}: cost {cost}, risk {risk}, owner {owner}."
        for i, (name, cost, risk, owner) in enumerate(
            [
                ("Keep the monolith", "low", "low", "platform"),
                ("Split billing out", "medium", "medium", "payments"),
                ("Split search out", "high", "medium", "search"),
                ("Rewrite in services", "very high", "high", "everyone"),
                ("Buy a platform", "high", "low", "vendor"),
            ],
            1,
        )
    ),
    "table": "| 维度 | 单体 | 微服务 |\n|---|---|---|\n| 成本 | 低 | 高 |\n"
    + "| 运维 | 简单 | 复杂 |\n| 扩展 | 整体 | 按需 |\n"
    + "|------|------|------|------|------|------|------|------|------|------|------|------|\n",
    "refrain": (
        "We shall fight on the beaches, we shall fight on the landing grounds, we shall fight in the fields and in "
        "the streets, we shall fight in the hills; we shall never surrender."
    ),
    "repeated word": "很好，很好，很好。" + "哈" * 60 + "。" + "—" * 80,
    "form": "正文：作为慧能大师，我以为自性本自清净。\n立场变化：无\n小结：依慧能大师之见，顿悟在当下。\n",
}


@pytest.mark.parametrize("name", LOOPS)
def test_a_loop_is_found_and_its_repetition_removed(name):
    text, kept = LOOPS[name]
    found = find(text)
    assert found is not None and found.kept == kept and found.copies >= 3


@pytest.mark.parametrize("name", LOOPS)
def test_the_guard_stops_a_loop_while_it_streams(name):
    text, kept = LOOPS[name]
    guard = RepetitionGuard()
    read = 0
    for at in range(0, len(text), 3):  # a few characters per delta, as a server streams
        read = at + 3
        if guard.add(text[at : at + 3]):
            break
    assert guard.found is not None and guard.found.kept == kept
    assert read < len(text)  # stopped before the reply's end: the rest is never read


@pytest.mark.parametrize("name", ORDINARY)
def test_ordinary_text_is_never_cut(name):
    text = ORDINARY[name]
    assert find(text) is None
    guard = RepetitionGuard()
    assert not any(guard.add(text[at : at + 2]) for at in range(0, len(text), 2))


@pytest.mark.parametrize(
    ("question", "opening", "sentence", "mark", "other_language"),
    [
        (
            "小公司应该先做产品还是先做销售？",
            "我先说结论。",
            ZH_LOOP_SENTENCE,
            "……【截断：模型在重复自己】",
            "repeated",
        ),
        (
            "Should a small company build the product first or sell first?",
            "My answer first. ",
            EN_LOOP_SENTENCE,
            " … [cut: the model repeated itself]",
            "重复",
        ),
    ],
    ids=["zh", "en"],
)
async def test_a_looping_turn_is_cut_marked_and_the_debate_goes_on(
    harness, question, opening, sentence, mark, other_language
):
    """Over HTTP, as the local server streams: the looping speech is cut, stored without its
    repetition and marked in the debate's language (the mark is part of the speech, which the
    next speakers read too); the other speeches and the verdict still run."""
    looping = []

    def script(body):
        key = key_of(body) or ""
        if key.startswith("speech:") and not looping:
            looping.append(key)
            return Reply(opening + sentence * 200)
        return default_reply(call_of(body))

    spec = moderated_spec(question, rounds=1)
    run = await harness.run(spec, script)

    assert run.outcome == "done"
    turn = run.turns()[looping[0]]
    assert turn.text.count(sentence.strip()) == 1 and turn.text.endswith(mark)
    assert REPEATED_MARK[spec.language] == mark and other_language not in turn.text
    assert turn.data["repetition_cut"]["copies"] >= 3
    assert "repetition_cut" in run.warning_codes
    later = [k for k in run.started_keys() if k != looping[0]]
    assert any(k.startswith("speech:") for k in later) and run.sink.of(ev.Report)
    assert turn.usage_estimated  # cut before the server's account: estimated from what was read


async def test_thinking_that_loops_is_stopped_and_its_turn_fails_with_the_reason(harness):
    """A reasoning model that thinks one passage over and over (a small Qwen3 does) is stopped as
    the loop shows, not at its deadline: the turn fails with the reason, its thinking kept for the
    record, and nothing of the loop becomes the speech (the debate can be resumed: a failed turn)."""
    looping = []

    def script(body):
        key = key_of(body) or ""
        if key.startswith("speech:") and not looping:
            looping.append(key)
            return Reply("这段回答不会被读到。", thinking="先想一想。" + ZH_LOOP_SENTENCE * 300)
        return default_reply(call_of(body))

    run = await harness.run(moderated_spec(rounds=1), script)

    assert run.outcome == "failed"
    failed = [f for f in run.sink.of(ev.TurnFailed) if f.key == looping[0]]
    assert len(failed) == 1 and "thinking went round in a loop" in failed[0].error, failed
    assert failed[0].partial_text == ""  # no answer had begun
    assert ZH_LOOP_SENTENCE in failed[0].partial_thinking
    assert looping[0] not in run.turns()
    # Stopped as the loop showed, a few copies in, not after all 300 (6,000 characters).
    assert len(failed[0].partial_thinking) < 1000, len(failed[0].partial_thinking)
