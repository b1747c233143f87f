"""Roundtable on the in-process fake, scripted by turn key: suitability, modes, checkpoint and
resume, 'agree and add' sent back once, the veto rule, and the four output sections."""

from __future__ import annotations

import pytest

from debates.engine import events as ev
from debates.engine.roundtable import one_voice, recommend_roles, split_sections, suitability, without_arguments
from debates.engine.spec import CompletedTurn
from testkit.fake_llm import FakeLLM

from .conftest import (
    AI_PM,
    DEVIL,
    LLM_ARCH,
    OPTIMIST,
    RAG,
    TABLE_POOL,
    TEMPLATES,
    USER_ADVOCATE,
    debate,
    table_spec,
    unscripted,
)

HOST = "圆桌主持"
NAME = {p.slug: p.name for p in TABLE_POOL}
DIRECT = "RAG（检索增强生成）是先检索相关文档、再让模型据此作答的方法。DIRECT-ANSWER"
RESEARCH = "- 事实：现有知识库 3000 篇文档 RESEARCH-FACT（待核实）"
SYNTHESIS = (
    "## 共识\n- 先做小范围试点。\n## 分歧\n- 乐观者主张全面铺开，魔鬼代言人反对（置信度中）。\n"
    "## 行动指南\n1. 建立评测集。\n2. 两周试点。\n## 风险提示\n- 知识库过期导致答错。"
)


def phase_and_slug(key: str) -> tuple[str, str]:
    """`r1:optimist` → ("r1", "optimist"); the sent-back R2 `r2:optimist:resend` → ("resend", "optimist")."""
    phase, slug, *resend = key.split(":")
    return ("resend" if resend else phase), slug


SUITABLE = "类别：适合\n理由：这是多维的产品决策。"
SIMPLE_FACT = "类别：简单事实\n理由：这是一个定义问题，查得到答案。"


def table_fake(roles, speeches=None, synthesis=SYNTHESIS, suitable=SUITABLE) -> FakeLLM:
    """Every roundtable turn scripted by key; `speeches[(slug, phase)]` overrides one, where phase
    is r1, r2, resend or r3. Each R2 challenges the next role at the table."""
    slugs = [r.slug for r in roles]

    def speak(call):
        phase, slug = phase_and_slug(call.key)
        who = NAME[slug]
        target = NAME[slugs[(slugs.index(slug) + 1) % len(slugs)]]
        if phase == "r1":
            return (
                f"核心论点：{who}主张小步试点。MARK-{slug}-R1\n论据：\n1. 成本可控。\n2. 可以量化效果。\n"
                f"置信度：高\n小结：{who}主张试点。"
            )
        if phase in ("r2", "resend"):
            return (
                f"质询对象：{target}\n针对论点：{target}主张小步试点。\n"
                f"漏洞：{target}的核心论点忽略了知识库维护成本。MARK-{slug}-{phase}\n"
                f"你的立场：先评测再上线。\n小结：{who}质询{target}。"
            )
        veto = "\n否决：否" if slug == "devil-advocate" else ""
        return f"决定：坚持\n理由：质疑不成立。\n最终立场：试点。\n置信度：中{veto}\n小结：{who}坚持试点。"

    fake = FakeLLM(default=unscripted)
    fake.reply("host:direct", DIRECT).reply("host:synthesis", synthesis).reply("host:research", RESEARCH)
    fake.reply("host:suitability", suitable)
    for (slug, phase), text in (speeches or {}).items():
        fake.reply(f"r2:{slug}:resend" if phase == "resend" else f"{phase}:{slug}", text)
    fake.reply("r?:*", speak)
    return fake


def of_phase(run, phase: str, slug: str | None = None):
    """The calls of one phase (r1, r2, resend, r3), optionally of one role."""
    speeches = [(c, *phase_and_slug(c.key)) for c in run.calls if not c.key.startswith("host:")]
    return [c for c, p, s in speeches if p == phase and slug in (None, s)]


STANDARD = [DEVIL, OPTIMIST, RAG, LLM_ARCH]


# -- suitability --------------------------------------------------------------------------------


async def test_a_simple_fact_is_answered_directly():
    run = await debate(table_spec("什么是 RAG？"), table_fake(STANDARD, suitable=SIMPLE_FACT))

    assert run.outcome == "done"
    assert run.keys == ["host:suitability", "host:direct"]
    assert run.call("host:direct").speaker == HOST and "直接、准确地回答" in run.call("host:direct").user
    assert run.data["suitability"] == "simple fact"
    assert "unsuitable" in run.warning_codes
    assert [s["key"] for s in run.data["sections"]] == ["direct", "suitability"]
    assert run.data["sections"][0]["body"] == DIRECT
    assert "这是一个定义问题" in run.data["sections"][1]["body"]
    assert not run.sink.of(ev.Checkpoint)


async def test_force_debates_even_an_unsuitable_question():
    spec = table_spec("什么是 RAG？", force=True)
    run = await debate(spec, table_fake(STANDARD, suitable=SIMPLE_FACT))
    assert run.outcome == "waiting"
    assert len(of_phase(run, "r1")) == 4 and "unsuitable" not in run.warning_codes


@pytest.mark.parametrize(
    "question, ok, reason",
    [
        ("什么是 RAG？", False, "simple fact"),
        ("What is a vector database?", False, "simple fact"),
        ("线上报错 NullPointerException 怎么修复", False, "single bug fix"),
        ("今天之内必须上线，怎么办", False, "urgent"),
        ("我们已经决定用微服务了，帮我排个计划", False, "already decided"),
        ("我们的客服产品要不要引入 RAG 知识库？", True, ""),
    ],
)
def test_suitability_hint(question, ok, reason):
    assert suitability(question) == (ok, reason)


# -- modes and roles ------------------------------------------------------------------------------


async def test_quick_mode_is_three_roles_one_round_no_checkpoint():
    roles = [DEVIL, OPTIMIST, RAG]
    run = await debate(table_spec(roles=roles, mode="quick"), table_fake(roles))

    assert run.outcome == "done"
    assert run.data["mode"] == "quick" and run.data["rounds"] == 1
    assert sorted(c.speaker for c in of_phase(run, "r1")) == sorted(r.name for r in roles)
    assert of_phase(run, "r2") == [] and of_phase(run, "r3") == []
    assert not run.sink.of(ev.Checkpoint)
    assert (
        len(run.calls) == 5
        and run.keys[0] == "host:suitability"
        and run.keys[-1] == "host:synthesis"
        and "整合输出" in run.calls[-1].user
    )


@pytest.mark.parametrize(
    "mode, roles",
    [
        ("quick", [DEVIL, OPTIMIST, RAG, LLM_ARCH]),
        ("standard", [DEVIL, OPTIMIST, RAG]),
        ("standard", [DEVIL, OPTIMIST, USER_ADVOCATE, RAG, LLM_ARCH, AI_PM]),
        ("deep", [DEVIL, OPTIMIST, RAG, LLM_ARCH]),
        ("marathon", [DEVIL, OPTIMIST, RAG]),
    ],
)
async def test_wrong_role_count_or_mode_is_refused_before_any_call(mode, roles):
    run = await debate(table_spec(roles=roles, mode=mode), table_fake(roles))
    assert run.outcome == "refused" and run.calls == []


async def test_deep_mode_researches_first_and_shares_the_facts():
    roles = [DEVIL, OPTIMIST, USER_ADVOCATE, RAG, LLM_ARCH]
    run = await debate(table_spec(roles=roles, mode="deep", no_interrupt=True), table_fake(roles))

    assert run.outcome == "done" and run.data["rounds"] == 3
    assert run.keys[:2] == ["host:suitability", "host:research"] and "深度模式的检索准备" in run.calls[1].user
    assert all("RESEARCH-FACT" in c.text for c in of_phase(run, "r1"))
    assert len(of_phase(run, "r1")) == len(of_phase(run, "r2")) == len(of_phase(run, "r3")) == 5


def test_recommended_table_is_two_stances_and_three_experts():
    roles, template = recommend_roles("客服要不要上 RAG？", TEMPLATES, TABLE_POOL)
    assert template is TEMPLATES[0]
    # the optimist–devil's-advocate tension always, then the template's experts, the one the
    # question names first (the template itself seats the user advocate, a stance)
    assert [r.slug for r in roles] == [
        "devil-advocate",
        "optimist",
        "rag-specialist",
        "ai-product-manager",
        "llm-architect",
    ]
    assert [r.tier for r in roles] == ["l1", "l1", "l2", "l2", "l2"]
    # no template matches: the tension, the experts the question is about (none it is not about),
    # and the stance it concerns most to fill the seats
    roles, template = recommend_roles("用户留存怎么提升增长？", TEMPLATES, TABLE_POOL)
    assert template is None
    assert [r.slug for r in roles] == ["devil-advocate", "optimist", "user-advocate", "growth-pm"]
    quick, _ = recommend_roles("客服要不要上 RAG？", TEMPLATES, TABLE_POOL, mode="quick")
    assert [r.slug for r in quick] == ["devil-advocate", "optimist", "rag-specialist"]


async def test_without_seats_the_table_is_recommended():
    spec = table_spec("客服要不要上 RAG？", roles=[])
    seated = [DEVIL, OPTIMIST, RAG, AI_PM, LLM_ARCH]
    run = await debate(spec, table_fake(seated))
    assert run.outcome == "waiting"
    assert sorted(c.key.split(":")[1] for c in of_phase(run, "r1")) == sorted(r.slug for r in seated)
    assert sorted(c.speaker for c in of_phase(run, "r1")) == sorted(r.name for r in seated)


# -- checkpoint and resume ------------------------------------------------------------------------


async def test_checkpoint_after_r1_then_resume_without_recalling_r1():
    fake = table_fake(STANDARD)
    first = await debate(table_spec(), fake)

    assert first.outcome == "waiting"
    assert first.finished.outcome == "waiting"
    assert len(first.sink.of(ev.Checkpoint)) == 1
    assert len(first.calls) == 1 + 4 and len(of_phase(first, "r1")) == 4
    assert not first.sink.of(ev.Report)

    spec = table_spec()
    spec.completed = first.completed()
    spec.checkpoint_reply = "预算只有十万元 CHECKPOINT-FACT"
    resumed = await debate(spec, fake)

    assert resumed.outcome == "done"
    assert of_phase(resumed, "r1") == []  # R1 was not called again
    replayed = [t for t in resumed.sink.of(ev.TurnFinished) if t.replayed]
    assert sorted(t.key for t in replayed) == sorted(["host:suitability", *(f"r1:{r.slug}" for r in STANDARD)])
    assert not any(t.key.startswith("r1:") for t in resumed.sink.of(ev.TurnStarted))
    assert len(resumed.calls) == 4 + 4 + 1  # R2, R3, synthesis
    injected = "用户在检查点补充：预算只有十万元 CHECKPOINT-FACT"
    assert all(injected in c.text for c in resumed.calls)
    assert all(f"MARK-{s.slug}-R1" in c.text for c in of_phase(resumed, "r2") for s in STANDARD)
    assert resumed.data["checkpoint_addition"] == "预算只有十万元 CHECKPOINT-FACT"
    # the replayed turns are still on the ledger with their original counts
    ledger = resumed.data["ledger"]["turns"]
    for t in replayed:
        assert ledger[t.key] == {"prompt": t.prompt_tokens, "completion": t.completion_tokens, "estimated": False}


async def test_an_empty_checkpoint_reply_just_continues():
    fake = table_fake(STANDARD)
    first = await debate(table_spec(), fake)
    spec = table_spec()
    spec.completed = {t.key: CompletedTurn(t.key, t.text, t.summary) for t in first.sink.of(ev.TurnFinished)}
    spec.checkpoint_reply = ""
    resumed = await debate(spec, fake)
    assert resumed.outcome == "done"
    assert len(resumed.calls) == 4 + 4 + 1
    assert not any("用户在检查点补充" in c.text for c in resumed.calls)
    assert "checkpoint_addition" not in resumed.data


async def test_no_interrupt_runs_through_the_checkpoint():
    run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD))
    assert run.outcome == "done"
    assert not run.sink.of(ev.Checkpoint)
    assert len(of_phase(run, "r2")) == 4


# -- R2 and R3 rules ------------------------------------------------------------------------------


AGREE = "我同意魔鬼代言人的看法，并补充一点：还要关注客服体验。AGREE-TEXT\n小结：同意并补充。"


async def test_agree_and_add_is_sent_back_exactly_once():
    fake = table_fake(STANDARD, speeches={("optimist", "r2"): AGREE})
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.outcome == "done"
    assert [k for k in run.started_keys() if k.endswith(":resend")] == ["r2:optimist:resend"]
    assert len(of_phase(run, "r2", "optimist")) == 1 and len(of_phase(run, "resend", "optimist")) == 1
    resend = run.call("r2:optimist:resend")
    assert "AGREE-TEXT" in resend.user and "被主持人退回" in resend.user
    assert run.warning_codes.count("agree_and_add") == 1
    assert "agree_and_add_kept" not in run.warning_codes
    # R3 sees the rewritten challenge, not the rejected one
    assert len(of_phase(run, "r3")) == 4
    for call in of_phase(run, "r3"):
        assert "MARK-optimist-resend" in call.text and "AGREE-TEXT" not in call.text


async def test_agree_and_add_again_after_resend_is_kept_with_a_warning_not_resent_twice():
    fake = table_fake(STANDARD, speeches={("optimist", "r2"): AGREE, ("optimist", "resend"): AGREE})
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.outcome == "done"
    assert [c.key for c in run.calls_for("r2:optimist*")] == ["r2:optimist", "r2:optimist:resend"]
    assert "agree_and_add_kept" in run.warning_codes
    assert [k for k in run.started_keys() if "resend" in k] == ["r2:optimist:resend"]


async def test_the_synthesis_headings_lose_the_hints_copied_from_the_format():
    """The bundled model wrote "## 共识（所有角色都同意、置信度高的结论）": the transcript showed the
    format's hint as the heading. Only the format's own heading and hint go; other brackets stay."""
    copied = (
        "## 共识（所有角色都同意、置信度高的结论）\n- 先试点。\n"
        "## 分歧（各方立场 + 理由 + 置信度）\n- 乐观者主张铺开（置信度高）。\n"
        "## 行动指南（具体、可执行、按优先级编号）\n1. 建立评测集。\n## 风险提示（两周内）\n- 知识库过期。"
    )
    run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD, synthesis=copied))

    text = run.turns()["host:synthesis"].text
    assert text.startswith("## 共识\n- 先试点。\n## 分歧\n- 乐观者主张铺开（置信度高）。\n## 行动指南\n1.")
    assert "## 风险提示（两周内）" in text  # a hint the format did not give is the host's own
    assert run.data["action_guide"] == "1. 建立评测集。"


# The bundled model's quick roundtable on 我们公司要不要取消年终绩效考核？ (2026-12-05): the optimist's
# thesis, and the host's consensus that copied it as every role's.
OPTIMIST_THESIS = "取消年终绩效考核可能会降低员工的积极性和创新动力，从而影响公司的增长和竞争力。"
ONE_VOICE = (
    f"## 共识\n所有角色都同意，{OPTIMIST_THESIS}\n## 分歧\n- 魔鬼代言人反对。\n"
    "## 行动指南\n1. 建立评测集。\n## 风险提示\n- 知识库过期导致答错。"
)


async def test_a_consensus_that_copies_one_roles_thesis_is_flagged_as_one_voice():
    r1 = f"核心论点：{OPTIMIST_THESIS}\n论据：\n1. 成本可控。\n2. 可以量化效果。\n置信度：中\n小结：要谨慎。"
    fake = table_fake(STANDARD, speeches={("optimist", "r1"): r1}, synthesis=ONE_VOICE)
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.outcome == "done"
    [warning] = [w for w in run.sink.of(ev.Warning) if w.code == "consensus_one_voice"]
    assert NAME["optimist"] in str(warning.text) and "word for word" in str(warning.text)
    # a consensus in the host's own words, or one that two roles' theses share, is not flagged
    for synthesis, speeches in (
        (SYNTHESIS, {("optimist", "r1"): r1}),
        (ONE_VOICE, {("optimist", "r1"): r1, ("devil-advocate", "r1"): r1}),
    ):
        run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD, speeches=speeches, synthesis=synthesis))
        assert "consensus_one_voice" not in run.warning_codes


def test_one_voice_needs_a_word_for_word_copy():
    roles = [OPTIMIST, DEVIL]
    thesis = "A four-day work week should be adopted because it raises output per hour."
    theses = dict(zip(roles, [thesis, "A four-day work week should be avoided: fatigue and rework."], strict=True))
    assert one_voice(f"All roles agree that {thesis.lower()}", theses) == OPTIMIST
    assert one_voice("All roles agree that a four-day week should be adopted.", theses) is None  # paraphrased
    assert one_voice(f"All agree: {thesis}", {OPTIMIST: thesis}) is None  # one role: nothing to set it against


async def test_the_synthesis_summary_is_its_consensus_not_a_copied_role_summary():
    # the bundled model's English roundtable (debate 65) copied each role's "Summary:" line into
    # the disagreements, and the last one became the synthesis's summary
    copied = SYNTHESIS.replace("## 行动指南", "小结：乐观者认为应该全面铺开。\n## 行动指南")
    run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD, synthesis=copied))
    [synthesis] = [t for t in run.sink.of(ev.TurnFinished) if t.key == "host:synthesis"]
    assert synthesis.summary == "先做小范围试点。"


# The bundled model's optimist (我们团队要不要实行四天工作制？): its confidence in the arguments' place.
NO_ARGUMENTS = "核心论点：四天工作制可以显著提高工作效率。\n论据：高\n置信度：高\n小结：值得尝试。"


async def test_a_statement_without_arguments_is_asked_once_more():
    fake = table_fake(STANDARD, speeches={("optimist", "r1"): NO_ARGUMENTS})
    fake.reply(
        "r1:optimist:again",
        "核心论点：先试点。\n论据：\n1. 成本可控。MARK-again\n2. 可以量化效果。\n置信度：中\n小结：先试点。",
    )
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.outcome == "done"
    assert [c.key for c in run.calls_for("r1:optimist*")] == ["r1:optimist", "r1:optimist:again"]
    assert "被主持人退回" in run.call("r1:optimist:again").user
    assert run.warning_codes.count("arguments_missing") == 1 and "arguments_missing_kept" not in run.warning_codes
    # the rounds after it read the second statement, not the first
    assert all("MARK-again" in c.text and "论据：高" not in c.text for c in of_phase(run, "r2"))
    # the others, with their arguments, were asked once
    assert [c.key for c in run.calls_for("r1:devil-advocate*")] == ["r1:devil-advocate"]


async def test_statements_without_arguments_are_asked_again_together():
    fake = table_fake(STANDARD, speeches={("optimist", "r1"): NO_ARGUMENTS, ("devil-advocate", "r1"): NO_ARGUMENTS})
    fake.delay = 0.001  # each chunk yields: turns run at once where the engine lets them
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.outcome == "done" and run.warning_codes.count("arguments_missing") == 2
    again = [c for c in run.calls if c.key.endswith(":again")]
    assert sorted(c.key for c in again) == ["r1:devil-advocate:again", "r1:optimist:again"]
    # one step, as the round was: both started before either finished
    order = [(type(e).__name__, e.key) for e in run.events if isinstance(e, ev.TurnStarted | ev.TurnFinished)]
    started = [i for i, (kind, key) in enumerate(order) if kind == "TurnStarted" and key.endswith(":again")]
    finished = [i for i, (kind, key) in enumerate(order) if kind == "TurnFinished" and key.endswith(":again")]
    assert len(started) == 2 and max(started) < min(finished)


async def test_arguments_missing_twice_are_kept_with_a_warning():
    fake = table_fake(STANDARD, speeches={("optimist", "r1"): NO_ARGUMENTS})
    fake.reply("r1:optimist:again", NO_ARGUMENTS)
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.outcome == "done" and len(run.calls_for("r1:optimist*")) == 2
    assert "arguments_missing_kept" in run.warning_codes


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        (NO_ARGUMENTS, True),
        ("核心论点：试点。\n论据：\n置信度：高\n小结：试点。", True),
        ("Thesis: pilot.\nArguments: high\nConfidence: high\nSummary: pilot.", True),
        # prose, not a list: arguments all the same
        ("Thesis: pilot.\nArguments: Costs stay small and the effect can be measured.\nConfidence: high", False),
        ("核心论点：试点。\n论据：\n1. 成本可控。\n置信度：高", False),
        # a model that ignores the form and argues in prose has arguments (the benchmark's fake did so)
        ("A pilot first: costs stay small, the effect can be measured, and nothing is locked in.", False),
        ("Pilot first.", True),  # … unless there is no room for any
    ],
)
def test_what_counts_as_no_arguments(text, missing):
    assert without_arguments(text) is missing


VALID_SCENARIO = "上线三个月后知识库过期，答错率升到三成，大客户集体投诉，续约率下降。"


@pytest.mark.parametrize(
    "r3, expected_veto, code",
    [
        (f"决定：坚持\n否决：是\n失败场景：{VALID_SCENARIO}\n小结：否决。", VALID_SCENARIO, "veto"),
        (f"Decision: hold\nVeto: Yes\nFailure scenario: {VALID_SCENARIO}\nSummary: veto.", VALID_SCENARIO, "veto"),
        ("决定：坚持\n否决：是\n失败场景：太贵\n小结：否决。", None, "veto_ignored"),
        ("决定：坚持\n否决：是\n小结：否决。", None, "veto_ignored"),
    ],
)
async def test_veto_counts_only_with_a_concrete_failure_scenario(r3, expected_veto, code):
    fake = table_fake(STANDARD, speeches={("devil-advocate", "r3"): r3})
    run = await debate(table_spec(no_interrupt=True), fake)

    assert code in run.warning_codes
    assert ({"veto", "veto_ignored"} - {code}).isdisjoint(run.warning_codes)
    if expected_veto:
        assert run.data["veto"] == {"by": "devil-advocate", "failure_scenario": expected_veto, "answered": False}
        assert run.data["risks"].splitlines()[-2] == f"- Devil's advocate: Veto: {expected_veto}"
    else:
        assert run.data["veto"] is None


async def test_only_the_devils_advocate_has_a_veto():
    r3 = f"决定：坚持\n否决：是\n失败场景：{VALID_SCENARIO}\n小结：我也想否决。"
    run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD, speeches={("optimist", "r3"): r3}))
    assert run.data["veto"] is None
    assert "veto" not in run.warning_codes and "veto_ignored" not in run.warning_codes
    assert "否决：是 / 否" in run.call("r3:devil-advocate").user
    assert "否决：是 / 否" not in run.call("r3:optimist").user


async def test_output_has_consensus_disagreements_action_guide_and_risks():
    run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD))

    assert run.outcome == "done"
    data = run.data
    assert data["consensus"] == "- 先做小范围试点。"
    assert data["disagreements"] == "- 乐观者主张全面铺开，魔鬼代言人反对（置信度中）。"
    assert data["action_guide"] == "1. 建立评测集。\n2. 两周试点。"
    assert data["risks"] == "- 知识库过期导致答错。\n- Devil's advocate: 魔鬼代言人坚持试点。"
    verdict = [s for s in data["sections"] if s["part"] == "verdict"]
    assert [s["key"] for s in verdict] == ["consensus", "disagreements", "action_guide", "risks"]
    assert [s["title"]["msgid"] for s in verdict] == ["Consensus", "Disagreements", "Action guide", "Risks"]


def test_split_sections_tolerates_heading_styles():
    text = "**1. 共识：**\n甲\n### 二、分歧\n乙\n行动指南：\n丙\n## Risks\n丁"
    assert split_sections(text) == {"consensus": "甲", "disagreements": "乙", "action_guide": "丙", "risks": "丁"}
