"""The seed rules that misfired, one test (or a few) per rule; the numbers are the issue's.
Read against the four design documents; each of these failed before its fix."""

from __future__ import annotations

import re

import pytest

from debates.engine import events as ev
from debates.engine import panel
from debates.engine.budget import Ledger
from debates.engine.duel import choose_pair, duel_citations, school
from debates.engine.moderated import VERDICT_FORM, enforce_verdict_form
from debates.engine.spec import PairingRuleSpec
from debates.engine.text import field_value, summary_of
from testkit.fake_llm import FakeLLM

from .conftest import AI_PM, HUINENG, TABLE_POOL, YINGUANG, debate, duel_spec, panel_spec, persona, table_spec
from .test_panel import ADMIT_OK, CONCEPTS, UNCAPPED, budget_through, panel_fake
from .test_panel import ALL as PANEL_ALL
from .test_panel import VERDICT as PANEL_VERDICT
from .test_roundtable import DIRECT, SIMPLE_FACT, STANDARD, SYNTHESIS, of_phase, table_fake

# -- the bundled library's pairing table, as the seed lists it ---------------------------------------


def master(slug, name, tradition, keywords):
    return persona(slug, name, tradition=tradition, keywords=tuple(keywords))


MASTERS = [
    master("huineng", "慧能大师", "禅宗", ["禅宗", "顿悟", "直指", "自性", "参禅", "禅净", "顿渐", "Chan", "Zen"]),
    master("yinguang", "印光大师", "净土宗", ["净土", "念佛", "禅净", "往生", "Pure Land", "nianfo"]),
    master("kumarajiva", "鸠摩罗什", "三论/中观", ["中观", "空有", "般若", "Madhyamaka", "emptiness"]),
    master("xuanzang", "玄奘法师", "唯识/法相宗", ["唯识", "空有", "法相", "Yogacara"]),
    master("zhiyi", "智顗大师", "天台宗", ["天台", "止观", "顿渐", "次第", "Tiantai", "gradual"]),
    master("tsongkhapa", "宗喀巴大师", "藏传格鲁派", ["应成", "中观", "中观分判", "次第", "Prasangika"]),
    master("ajahn-chah", "阿姜查", "上座部·泰国森林传统", ["戒律", "戒律行持", "森林", "Vinaya"]),
    master("mahasi-sayadaw", "马哈希尊者", "上座部·缅甸内观", ["内观", "直观内观", "vipassana"]),
    master("atisha", "阿底峡尊者", "藏传噶当派", ["三士道", "道次第", "次第", "Lamrim"]),
    master("ouyi", "蕅益大师", "天台宗·灵峰派", ["天台", "净土", "教观", "教观纲宗", "行归净土"]),
]


def rule(a, b, *keywords):
    return PairingRuleSpec((a, b), tuple(keywords), None, f"{a}-{b}")


RULES = [
    rule("huineng", "yinguang", "禅净", "念佛", "参禅", "Pure Land or Chan", "nianfo", "chanting the Buddha's name"),
    rule("kumarajiva", "xuanzang", "空有", "中观", "唯识", "Madhyamaka", "Yogacara", "emptiness and existence"),
    rule("huineng", "zhiyi", "顿渐", "顿悟", "次第", "sudden or gradual", "sudden awakening", "gradual path"),
    rule("tsongkhapa", "huineng", "应成", "顿悟", "中观分判", "直指", "Prasangika", "direct pointing"),
    rule("ajahn-chah", "mahasi-sayadaw", "戒律行持", "直观内观", "戒律", "内观", "Vinaya", "vipassana"),
    rule("atisha", "huineng", "三士道", "自性见", "three scopes", "self-nature"),
    rule("ouyi", "yinguang", "教宗天台", "行归净土", "天台", "净土", "Tiantai doctrine", "Pure Land practice"),
    rule("ouyi", "tsongkhapa", "教观纲宗", "应成中观", "教观", "Tiantai classification", "Prasangika Madhyamaka"),
]
SEED_TOPICS = [
    ("念佛与参禅，哪条路更适合现代人修行？", {"huineng", "yinguang"}),
    ("空有之争：中观与唯识，谁说得更究竟？", {"kumarajiva", "xuanzang"}),
    ("顿悟与次第，修行应从哪里下手？", {"huineng", "zhiyi"}),
    ("应成派的中观分判与禅宗的顿悟直指，能否相容？", {"tsongkhapa", "huineng"}),
    ("戒律行持与直观内观，哪个是解脱的根本？", {"ajahn-chah", "mahasi-sayadaw"}),
    ("三士道的次第与自性见，如何调和？", {"atisha", "huineng"}),
    ("教宗天台、行归净土，二者如何并行？", {"ouyi", "yinguang"}),
    ("教观纲宗与应成中观，如何判教？", {"ouyi", "tsongkhapa"}),
    # The same topics asked in English.
    ("Pure Land or Chan: chanting the Buddha's name or meditation?", {"huineng", "yinguang"}),
    ("Madhyamaka or Yogacara: which explains emptiness and existence better?", {"kumarajiva", "xuanzang"}),
    ("Sudden awakening or a gradual path?", {"huineng", "zhiyi"}),
    ("Can Prasangika analysis meet Chan's direct pointing?", {"tsongkhapa", "huineng"}),
    ("Vinaya discipline or vipassana insight: which comes first?", {"ajahn-chah", "mahasi-sayadaw"}),
    ("The three scopes of the Lamrim against seeing self-nature", {"atisha", "huineng"}),
    ("Tiantai doctrine with Pure Land practice: can both be kept?", {"ouyi", "yinguang"}),
    ("Tiantai classification against Prasangika Madhyamaka", {"ouyi", "tsongkhapa"}),
]


# -- 1. the pairing rule that matches best --------------------------------------------------------------


@pytest.mark.parametrize(("question", "pair"), SEED_TOPICS, ids=[q[:24] for q, _ in SEED_TOPICS])
def test_1_each_seed_topic_pairs_as_the_seed_table_says(question, pair):
    pairing = choose_pair(question, [], RULES, MASTERS)
    assert {pairing.a.slug, pairing.b.slug} == pair and pairing.how == "rule"


def test_1_ties_go_to_the_rule_listed_first():
    tie = [rule("a", "b", "甲"), rule("c", "d", "甲")]
    people = [master(s, s, s, ()) for s in "abcd"]
    assert {choose_pair("甲？", [], tie, people).a.slug} <= {"a", "b"}


@pytest.mark.django_db
def test_1_the_bundled_library_pairs_the_seed_topics_in_both_languages(libraries):
    from debates.engine import registry
    from debates.specs import library_spec

    library = library_spec(registry.get("duel"))
    for question, pair in SEED_TOPICS:
        pairing = choose_pair(question, [], library.pairing_rules, library.pool)
        assert {pairing.a.slug, pairing.b.slug} == pair, question


# -- 2. traditions compare by school -------------------------------------------------------------------


def test_2_a_sub_lineage_belongs_to_its_school():
    assert school("天台宗·灵峰派") == school("天台宗") == "天台宗"
    assert school("上座部·泰国森林传统") == school("上座部·缅甸内观")
    tiantai = [master("zhiyi", "智顗", "天台宗", ["止观"]), master("ouyi", "蕅益", "天台宗·灵峰派", ["止观"])]
    chan = master("huineng", "慧能", "禅宗", ["止观"])
    pairing = choose_pair("止观如何修？", [], [], [*tiantai, chan])
    assert {pairing.a.slug, pairing.b.slug} != {"zhiyi", "ouyi"}, "two of one school are no duel"


# -- 3. a speaker sees its own previous summary ----------------------------------------------------------


async def test_3_each_speaker_sees_its_own_last_summary_and_still_not_the_opponents_words():
    def speech(call):
        _, n, slug = call.key.split(":")
        return f"RAW-{slug}-{n} 依《坛经·行由品》。\n立场变化：松动\n小结：OWN-{slug}-{n}"

    fake = FakeLLM().reply("duel:close", "收束。\n小结：收束").reply("duel:*", speech)
    spec = duel_spec(seats=(HUINENG, YINGUANG))
    spec.options.rounds = 2
    run = await debate(spec, fake)
    second = run.call("duel:2:huineng").user
    assert "OWN-huineng-1" in second, "its own summary of round 1"
    assert "RAW-yinguang" not in second and "RAW-huineng-1" not in second
    assert "OWN-huineng" not in run.call("duel:1:huineng").user, "nothing of its own before it spoke"


# -- 4. every doctrinal speech cites a source -------------------------------------------------------------


@pytest.mark.parametrize(
    ("speech", "cited"),
    [
        ("如《六祖坛经·疑问品》所说……", True),
        ("见《印光法师文钞》卷二。", True),
        ("《中论》第十八品有言……", True),
        ("《坛经》说得明白。", False),  # a title without chapter or fascicle
        ("我认为自性本来清净。", False),
    ],
)
def test_4_a_citation_names_a_text_and_its_chapter_or_fascicle(speech, cited):
    assert bool(duel_citations(speech)) is cited


async def test_4_an_uncited_speech_is_warned_about():
    def speech(call):
        _, n, slug = call.key.split(":")
        body = "依《六祖坛经·般若品》立论。" if slug == "huineng" else "念佛最稳当，不必多说。"
        return f"{body}\n立场变化：无\n小结：{slug}-{n}"

    fake = FakeLLM().reply("duel:close", "收束。\n小结：收束").reply("duel:*", speech)
    spec = duel_spec(seats=(HUINENG, YINGUANG))
    spec.options.rounds = 1
    run = await debate(spec, fake)
    uncited = [w for w in run.sink.events if getattr(w, "code", "") == "uncited"]
    assert len(uncited) == 1 and "印光大师" in uncited[0].text
    assert run.turns()["duel:1:yinguang"].data["citations"] == 0
    assert run.turns()["duel:1:huineng"].data["citations"] == 1


# -- 5. panel admission -------------------------------------------------------------------------------------


async def test_5_an_unreadable_admission_is_asked_once_more_then_used():
    fake = panel_fake(admission="这个命题很有意思，值得讨论。")
    fake.reply("host:admission-again", ADMIT_OK)
    run = await debate(panel_spec(token_budget=1), fake)

    assert run.keys[:2] == ["host:admission", "host:admission-again"]
    assert "这个命题很有意思" in run.call("host:admission-again").user
    assert run.data["proposition_type"] == "choice"


async def test_5_admission_unreadable_twice_refuses_with_the_reason():
    fake = panel_fake(admission="这个命题很有意思，值得讨论。")
    fake.reply("host:admission-again", "我觉得可以辩。")
    run = await debate(panel_spec(), fake)

    assert run.outcome == "refused"
    assert "asked twice" in run.finished.reason and "我觉得可以辩" in run.finished.reason
    assert run.keys == ["host:admission", "host:admission-again"]


async def test_5_a_decision_the_host_calls_unfalsifiable_is_debated_with_the_doubt_noted():
    """Seen on the local model: 可证伪：否 for ordinary decisions. A decision is tested by its
    outcome; the refutation test is for statements (truth-seeking propositions, generalities)."""
    doubt = "类型：选择决策型\n可证伪：否\n理由：涉及多个方面，无法得出确切答案。\n话题标识：remote-work-team-shift"
    run = await debate(panel_spec(token_budget=1), panel_fake(admission=doubt))
    assert run.outcome == "done" and run.data["proposition_type"] == "choice"
    assert "涉及多个方面" in run.warning("admission_doubt").text


INVESTMENT = "类型：投资决策型\n可证伪：是\n理由：有标的与仓位。\n话题标识：buy-nvidia-this-quarter"


async def test_5_an_investment_question_without_evidence_stops_hard():
    run = await debate(panel_spec("本季度是否应加仓英伟达股票至 10%？"), panel_fake(admission=INVESTMENT))

    assert run.outcome == "refused" and "not debated without evidence" in run.finished.reason
    assert run.keys == ["host:admission"]


async def test_5_an_investment_question_with_evidence_goes_on():
    evidence = "- 市盈率：股价除以每股收益，目前 45 倍\n- 仓位：组合中该股市值占比\n- 回撤：从高点下跌的幅度"
    run = await debate(
        panel_spec("本季度是否应加仓英伟达股票至 10%？", evidence=evidence, token_budget=1),
        panel_fake(admission=INVESTMENT),
    )
    assert run.outcome == "done" and run.data["proposition_type"] == "investment"


@pytest.mark.parametrize(
    "question",
    ["我们团队是否应该在明年全面转向远程办公？", "Should our team switch to fully remote work next year?"],
)
async def test_5_an_ordinary_decision_the_host_calls_an_investment_is_debated_as_a_choice(question):
    """The bundled 1.5B host called "should our team go remote?" an investment decision, and the
    hard stop refused it for want of evidence: a question that names nothing bought, sold or held
    is read again as a choice decision, and the run says so."""
    run = await debate(panel_spec(question, token_budget=1), panel_fake(admission=INVESTMENT))
    assert run.outcome == "done" and run.data["proposition_type"] == "choice"
    assert "names nothing bought, sold or held" in run.warning("admission_reread").text


TRUTH_UNFALSIFIABLE = "类型：认知求真型\n可证伪：否\n理由：需要结合团队实际需求综合判断。\n话题标识：team-microservices"


@pytest.mark.parametrize(
    "question", ["小团队该不该上微服务？", "Should a ten-person startup adopt microservices?", "这个项目值得做吗？"]
)
async def test_5_a_should_question_the_host_calls_truth_seeking_is_debated_as_a_choice(question):
    """The bundled host called "小团队该不该上微服务？" truth-seeking and unfalsifiable, and the
    panel refused an ordinary question: one that asks what to do is a choice decision (its
    falsifiability doubt is then only noted, as for any decision), and the run says so."""
    run = await debate(panel_spec(question, token_budget=1), panel_fake(admission=TRUTH_UNFALSIFIABLE))
    assert run.outcome == "done" and run.data["proposition_type"] == "choice"
    assert "asks what to do" in run.warning("admission_reread").text
    assert "admission_doubt" in run.warning_codes


@pytest.mark.parametrize("question", ["万物皆有灵，这是宇宙的根本真理吗？", "宇宙是有限的还是无限的？"])
async def test_5_a_truth_seeking_question_the_host_finds_unfalsifiable_is_still_refused(question):
    run = await debate(panel_spec(question), panel_fake(admission=TRUTH_UNFALSIFIABLE))
    assert run.outcome == "refused" and "did not pass admission" in run.finished.reason
    stated = await debate(
        panel_spec("小团队该不该上微服务？", proposition_type="truth"), panel_fake(admission=TRUTH_UNFALSIFIABLE)
    )
    assert stated.outcome == "refused"  # the type the user stated is kept


async def test_5_a_stated_investment_type_is_kept_and_refused_without_evidence():
    question = "Should our team switch to fully remote work next year?"
    run = await debate(panel_spec(question, proposition_type="investment"), panel_fake(admission=INVESTMENT))
    assert run.outcome == "refused" and "not debated without evidence" in run.finished.reason


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("本季度是否应加仓英伟达股票至 10%？", True),
        ("Should I put half my savings into an index fund?", True),
        ("Should I go all in on NVDA before earnings?", True),
        ("Is now the time to sell our house and rent instead?", True),
        ("是否应该在明年买房？", True),
        ("我们团队是否应该在明年全面转向远程办公？", False),
        ("Should our team switch to fully remote work next year?", False),
        ("Should we rewrite the billing service in Rust?", False),
        ("要不要让孩子明年转学到寄宿学校？", False),
    ],
)
def test_5_what_counts_as_naming_a_holding(question, names):
    assert panel.names_a_holding(question) is names


# -- 6. concept alignment ------------------------------------------------------------------------------------

DEFINED = (
    "材料：2023 年内部调查。\n"
    "- 远程办公：每周四天以上不在办公室工作\n"
    "- **产出**：季度交付的功能点数\n"
    "协作成本是指会议与等待所占的工时。\n"
)


def test_6_concepts_are_read_off_the_evidence():
    assert panel.concepts_from_evidence(DEFINED) == [
        "远程办公：每周四天以上不在办公室工作",
        "产出：季度交付的功能点数",
        "协作成本：会议与等待所占的工时",
    ]


async def test_6_with_evidence_the_terms_come_from_it_without_a_model_call():
    run = await debate(panel_spec(evidence=DEFINED, token_budget=UNCAPPED), panel_fake())

    assert "host:concepts" not in run.keys
    assert run.data["concepts_source"] == "evidence"
    assert all("- 协作成本：会议与等待所占的工时" in c.text for c in run.calls_for("r1:*"))


async def test_6_evidence_without_definitions_fails_the_step_visibly():
    run = await debate(panel_spec(evidence="材料：交付量下降 5%。", token_budget=UNCAPPED), panel_fake())

    assert "host:concepts" not in run.keys and run.data["concepts"] == []
    assert run.warning("concepts_failed").text.startswith("Concept alignment failed: 0 defined terms")
    assert all("概念按通常含义使用" in c.text for c in run.calls_for("r1:*"))


# What the local model wrote when asked for "- 概念：定义" lines (bench/local_quality.py, panel #6):
# each line read as a concept gave the terms "概念" and "定义".
PAIRED = (
    "概念：初创公司是否应该在 A 轮融资前建立专职数据团队？\n"
    "定义：初创公司建立专职数据团队是为了更好地利用数据资源。\n\n"
    "概念：A 轮融资\n定义：公司向外部投资者筹集资金的第一轮投资。\n"
    "概念：专职数据团队\n定义：只做数据工作的团队。"
)


def test_6_terms_and_definitions_on_lines_of_their_own_are_paired():
    assert panel.concepts_from_answer(PAIRED)[1:] == [
        "A 轮融资：公司向外部投资者筹集资金的第一轮投资。",
        "专职数据团队：只做数据工作的团队。",
    ]
    asked = (
        "术语一：协作成本\n定义一：会议与等待所占的工时\n术语二：产出\n定义二：季度交付的功能点\n"
        "术语三：远程\n定义三：每周四天以上\n小结：范围。"
    )
    assert panel.concept_terms(panel.concepts_from_answer(asked)) == ["协作成本", "产出", "远程"]
    assert panel.concept_terms(panel.concepts_from_answer(CONCEPTS)) == ["远程办公", "产出", "协作成本"]


async def test_6_a_host_giving_two_terms_fails_the_step():
    fake = panel_fake(concepts="- 远程办公：每周四天以上\n- 产出：功能点")
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)
    assert "concepts_failed" in run.warning_codes and run.data["concepts"] == []


async def test_6_a_speech_that_uses_none_of_the_aligned_terms_is_warned_about():
    fake = panel_fake(speeches={("bayes", 1): "立场：看证据。\n小结：贝叶斯只谈证据。"})
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    # the default speeches name no term either; bayes is among those warned about
    assert run.data["concept_use"]["bayes"] == []
    assert "贝叶斯" in run.warning("concepts_unused").text


async def test_6_speeches_using_the_terms_pass():
    uses = {(slug, 1): f"立场：远程办公会降低产出。\n小结：{slug}谈协作成本。" for slug in PANEL_ALL}
    run = await debate(panel_spec(token_budget=UNCAPPED), panel_fake(speeches=uses))
    assert "concepts_unused" not in run.warning_codes
    assert run.data["concept_use"]["hegel"] == ["远程办公", "产出", "协作成本"]


# -- 7. R4's own form -------------------------------------------------------------------------------------------

FRONT = "立场：坚持审查。\n反驳：【引用 奥斯本·R2】“MARK-osborn-R2”这一点站不住。\n沉默声明：无\n小结：费曼坚持。"


async def test_7_the_closing_round_asks_for_two_parts_and_flags_other_rounds_and_new_fronts():
    closing = (
        "检验交锋：【引用 费曼·R3】“这一点站不住”——我补上数据；【引用 黑格尔·R1】“MARK-hegel-R1”也不对。\n"
        "终辩声明：维持发散立场，让步：接受试点。\n小结：奥斯本让一步。"
    )
    fake = panel_fake(speeches={("feynman", 3): FRONT, ("osborn", 4): closing})
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    assert "检验交锋：" in run.call("r4:osborn").user and "终辩声明：" in run.call("r4:osborn").user
    data = run.turns()["r4:osborn"].data
    assert data["other_rounds"] == ["黑格尔·R1"] and data["new_fronts"] == ["黑格尔"]
    assert data["missing_parts"] == [] and data["position"] == "维持发散立场，让步：接受试点。"
    assert {"r4_other_rounds", "r4_new_front"} <= set(run.warning_codes)


async def test_7_a_closing_without_its_two_parts_is_flagged():
    fake = panel_fake(speeches={("feynman", 3): FRONT, ("osborn", 4): "立场：不变。\n小结：不变。"})
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)
    assert run.turns()["r4:osborn"].data["missing_parts"] == ["检验交锋", "终辩声明"]
    assert "r4_form" in run.warning_codes


async def test_7_a_closing_that_answers_its_front_passes():
    closing = "检验交锋：【引用 费曼·R3】“这一点站不住”——我补上数据。\n终辩声明：维持立场。\n小结：奥斯本坚持。"
    fake = panel_fake(speeches={("feynman", 3): FRONT, ("osborn", 4): closing})
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)
    assert not {"r4_form", "r4_other_rounds", "r4_new_front"} & set(run.warning_codes)


# -- 9. the verdict's four parts -----------------------------------------------------------------------------------


async def test_9_a_verdict_missing_parts_is_asked_again_then_flagged():
    partial = "## 辩论精华\n- 引文。\n## 综合判断\n中性综合。"
    fake = panel_fake(verdict=partial)
    fake.reply("host:verdict-again", partial)
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    assert "上一稿缺少：三区、结论产出" in run.call("host:verdict-again").user
    assert run.warning("verdict_parts").text == "The verdict lacks: 三区、结论产出."


def test_9_english_headings_count_as_the_parts():
    verdict = "**Highlights**\n- a\n## Three zones\nb\n### Overall judgment\nc\nConclusion (boundaries)\nd"
    assert panel.verdict_missing(verdict) == []


# -- 17. the verdict survives the cap, retries included --------------------------------------------------------------


async def test_17_a_resumed_panel_whose_retries_crossed_the_cap_still_gets_its_verdict():
    budget = await budget_through(2)
    first = await debate(panel_spec(token_budget=budget), panel_fake())
    # A resume after two worker deaths: the R1 and R2 turns are kept, the attempts lost to the
    # crashes are charged to the ledger, and they push the spending past the rounds' share.
    spec = panel_spec(token_budget=budget)
    spec.completed = {
        key: turn
        for key, turn in first.completed().items()
        if key.startswith(("host:", "r1:", "r2:")) and not key.startswith("host:verdict")
    }
    ledger = Ledger()
    ledger.charge("earlier-attempts", 2000, 1000, estimated=True)
    run = await debate(spec, panel_fake(), ledger=ledger)

    assert run.outcome == "done" and run.data["stopped_by_cap_in_round"] == 3
    assert run.keys == ["host:verdict"]  # all else replayed; the verdict is the one new call
    assert run.data["verdict"] == PANEL_VERDICT


# -- 11. roundtable suitability: the model decides, the regex only hints ---------------------------------------

MISFIRED = [
    ("What is the best pricing strategy for our SaaS product?", "simple fact"),
    ("客服机器人 bug 率高，要不要换向量数据库？", "single bug fix"),
    ("老板想马上把单体应用迁到微服务，值得吗？", "urgent"),
]


@pytest.mark.parametrize(("question", "hint"), MISFIRED, ids=[h for _, h in MISFIRED])
async def test_11_ordinary_questions_the_regex_misreads_are_debated(question, hint):
    run = await debate(table_spec(question, no_interrupt=True), table_fake(STANDARD))

    assert run.outcome == "done" and "unsuitable" not in run.warning_codes
    assert len(of_phase(run, "r1")) == 4
    assert run.data["suitability_hint"] == hint  # the hint reached the host, the host said "suitable"
    # in the question's language
    said = (
        "Keyword hint (for reference only, often wrong): "
        if question.isascii()
        else "关键词提示（仅供参考，常有误判）："
    )
    assert said + hint in run.call("host:suitability").user


async def test_11_a_question_the_host_finds_unsuitable_gets_the_direct_answer_and_the_reason():
    run = await debate(table_spec("RAG 的全称是什么？"), table_fake(STANDARD, suitable=SIMPLE_FACT))

    assert run.keys == ["host:suitability", "host:direct"]
    sections = {s["key"]: s["body"] for s in run.data["sections"]}
    assert sections["direct"] == DIRECT
    assert "这是一个定义问题" in sections["suitability"] and "Debate anyway" in sections["suitability"]


@pytest.mark.parametrize(
    "question",
    [
        "Should we move the team to a four-day week?",
        "What is the best pricing strategy for our SaaS product?",
        "明年是否应该把团队改成四天工作制？",
    ],
)
async def test_11_a_question_asking_for_a_choice_is_debated_though_the_host_calls_it_a_simple_fact(question):
    """The bundled 1.5B host called decisions simple facts, and the table answered them in one
    turn: a question that asks for a choice is debated, and the run says the host's class was set aside."""
    run = await debate(table_spec(question, no_interrupt=True), table_fake(STANDARD, suitable=SIMPLE_FACT))

    assert run.outcome == "done" and "unsuitable" not in run.warning_codes
    assert len(of_phase(run, "r1")) == 4
    assert "asks for a choice" in run.warning("suitability_reread").text


@pytest.mark.parametrize(
    ("question", "decision"),
    [
        ("RAG 的全称是什么？", False),
        ("What is retrieval-augmented generation?", False),
        ("Who is the author of the Lamrim?", False),
        ("客服要不要上 RAG？", True),
        ("Postgres or MySQL for our new service?", True),
        ("Is it worth rewriting the billing service?", True),
    ],
)
def test_11_what_asks_for_a_choice(question, decision):
    from debates.engine import roundtable

    assert roundtable.asks_a_decision(question) is decision


# -- 12. mode words, and changing the table at the checkpoint ---------------------------------------------------


async def test_12_words_in_the_question_pick_the_mode_when_left_on_default():
    quick = await debate(table_spec("快速看看：客服要不要上 RAG？", roles=[]), table_fake(TABLE_POOL))
    assert quick.data["mode"] == "quick" and quick.data["mode_from_question"] == "quick"
    assert len(of_phase(quick, "r1")) == 3 and of_phase(quick, "r2") == []

    deep = await debate(table_spec("深入分析：客服要不要上 RAG？", roles=[], no_interrupt=True), table_fake(TABLE_POOL))
    assert deep.data["mode"] == "deep" and "host:research" in deep.keys


async def test_12_a_chosen_mode_or_a_table_that_does_not_fit_keeps_the_words_from_picking():
    question = "快速看看：客服要不要上 RAG？"
    chosen = await debate(table_spec(question, mode="standard", no_interrupt=True), table_fake(STANDARD))
    assert chosen.data["mode"] == "standard" and "mode_from_question" not in chosen.data
    four = await debate(table_spec(question, no_interrupt=True), table_fake(STANDARD))  # 4 seats: not quick
    assert four.data["mode"] == "standard"


async def test_12_the_checkpoint_can_seat_and_unseat_roles():
    fake = table_fake(TABLE_POOL)
    first = await debate(table_spec(), fake)
    assert first.outcome == "waiting"

    spec = table_spec(roles=[*STANDARD, AI_PM], joined=["ai-product-manager"], left=["optimist"])
    spec.completed = first.completed()
    spec.checkpoint_reply = ""
    resumed = await debate(spec, fake)

    assert resumed.outcome == "done"
    assert [c.key for c in of_phase(resumed, "r1")] == ["r1:ai-product-manager"]  # the newcomer, blind
    assert "MARK-" not in resumed.call("r1:ai-product-manager").text
    r2 = sorted(c.key for c in of_phase(resumed, "r2"))
    assert r2 == ["r2:ai-product-manager", "r2:devil-advocate", "r2:llm-architect", "r2:rag-specialist"]
    assert resumed.data["table_change"] == {"joined": ["ai-product-manager"], "left": ["optimist"]}
    assert "MARK-optimist-R1" not in resumed.call("r2:devil-advocate").text  # who left is not answered
    assert "table" in [p.phase for p in resumed.sink.of(ev.PhaseStarted)]


# -- 13. the challenge is checked by structure ---------------------------------------------------------------------

STRUCTURED = "质询对象：乐观者\n针对论点：全面铺开能最快见效。\n漏洞：忽略了知识库冷启动的成本。\n小结：质询乐观者。"


@pytest.mark.parametrize(
    "r2",
    [
        "我同意魔鬼代言人的看法，并补充：风险在于执行。\n小结：同意并补充。",  # challenge words, no structure
        "质询对象：乐观者\n漏洞：风险在于执行。\n小结：没说针对哪条论点。",  # no claim named
        "质询对象：我自己\n针对论点：我的论点。\n漏洞：风险在于执行。\n小结：没点名别人。",  # nobody else named
    ],
    ids=["agree-and-add", "no-claim", "no-one-else"],
)
async def test_13_a_challenge_without_target_and_claim_is_sent_back_once(r2):
    fake = table_fake(STANDARD, speeches={("rag-specialist", "r2"): r2, ("rag-specialist", "resend"): STRUCTURED})
    run = await debate(table_spec(no_interrupt=True), fake)
    assert [c.key for c in run.calls_for("r2:rag-specialist*")] == ["r2:rag-specialist", "r2:rag-specialist:resend"]
    assert "针对论点：" in run.call("r2:rag-specialist").user  # a required field of the form


async def test_13_a_structured_challenge_passes():
    run = await debate(
        table_spec(no_interrupt=True), table_fake(STANDARD, speeches={("rag-specialist", "r2"): STRUCTURED})
    )
    assert "r2:rag-specialist:resend" not in run.keys


# -- 14. a veto changes the outcome ----------------------------------------------------------------------------------

VETO_R3 = "决定：坚持\n否决：是\n失败场景：上线三个月后知识库过期，答错率升到三成，大客户集体投诉。\n小结：否决。"


async def test_14_an_unanswered_veto_marks_every_action_item_vetoed():
    run = await debate(
        table_spec(no_interrupt=True), table_fake(STANDARD, speeches={("devil-advocate", "r3"): VETO_R3})
    )

    assert "失败场景：上线三个月后知识库过期" in run.call("host:synthesis").user
    assert "## 否决回应" in run.call("host:synthesis").user
    assert run.data["action_guide"] == "1. ⛔ 建立评测集。\n2. ⛔ 两周试点。"
    assert run.data["veto"]["answered"] is False and "veto_unanswered" in run.warning_codes
    sections = {s["key"]: s for s in run.data["sections"]}
    assert sections["veto"]["body"] == ""  # drawn as "Not answered: …"


async def test_14_an_answered_veto_keeps_the_guide_and_shows_the_answer():
    synthesis = SYNTHESIS + "\n## 否决回应\n- 第 1 条的评测集每周更新知识库，过期率超 5% 即暂停上线。"
    fake = table_fake(STANDARD, speeches={("devil-advocate", "r3"): VETO_R3}, synthesis=synthesis)
    run = await debate(table_spec(no_interrupt=True), fake)

    assert run.data["veto"]["answered"] is True and "veto_unanswered" not in run.warning_codes
    assert "⛔" not in run.data["action_guide"]
    sections = {s["key"]: s["body"] for s in run.data["sections"]}
    assert "过期率超 5% 即暂停上线" in sections["veto"]


# -- 16. moderated: "应该" alone is a stance word --------------------------------------------------------------------


def test_16_should_alone_is_stripped_from_the_verdict_like_the_other_stance_words():
    verdict, fixes = enforce_verdict_form(f"{VERDICT_FORM}先做产品，因为小公司应该先验证需求。我认为如此。")
    assert "应该" not in verdict and "我认为" not in verdict
    assert "removed '应该'" in fixes and "removed '我认为'" in fixes
    kept, _fixes = enforce_verdict_form(f"{VERDICT_FORM}应该选先做销售。")
    assert kept == f"{VERDICT_FORM}先做销售。"  # "应该选" goes whole, not leaving a stray "选"


# -- 19. parsing what small models write -------------------------------------------------------------------


def test_19_the_last_state_named_is_the_position_change():
    from debates.engine.duel import position_moved

    assert position_moved("正文……\n立场变化：从无转向松动") is True
    assert position_moved("立场变化：从松动回到无") is False
    assert position_moved("立场变化：无，仍坚持无念") is False
    assert position_moved("立场变化：转向") is True


def test_19_a_confidence_on_the_thesis_line_is_read():
    from debates.engine.roundtable import parse_r1

    _, data = parse_r1("核心论点：先小范围试点（置信度：低）\n论据：\n1. 成本。\n2. 风险。\n小结：先试点。")
    assert data["confidence"] == "low" and data["confidence_stated"]


def test_19_a_stray_conclusion_line_does_not_replace_the_speakers_summary():
    text = "正文：……\n立场变化：无\n小结：我的本轮立场是先念佛。\n总结：以上就是我这一轮的全部发言。"
    assert summary_of(text, 80) == "我的本轮立场是先念佛。"


def test_19_a_speech_that_opens_with_the_question_is_summed_up_by_what_it_says_next():
    # Seen on the local model (moderated): the speech began with the question, which became its summary.
    question = "小公司应该先做产品还是先做销售？"
    speech = "小公司应该先做产品还是先做销售？我认为先做销售。销售能最早验证需求。"
    assert summary_of(speech, 80, question) == "我认为先做销售。"
    # choosing one side of the question is an answer, not the question again
    assert summary_of("小结：小公司应该先做产品。", 80, question) == "小公司应该先做产品。"
    copied = "小结：小公司应该先做产品还是先做销售？\n先做产品，再谈销售。"
    assert summary_of(copied, 80, question) == "先做产品，再谈销售。"


def test_19_a_summary_that_is_the_question_behind_the_speakers_lead_is_passed_over():
    # Seen on the bundled model (duel): the grammar starts the summary in the speaker's name, and
    # the model wrote the question after it.
    question = "上班族每天只有二十分钟，该参禅还是念佛？"
    speech = "正文：作为慧能大师，我始终坚信一切问题都应回到当下。\n立场变化：无\n小结：依慧能大师之见，" + question
    assert summary_of(speech, 80, question) == "作为慧能大师，我始终坚信一切问题都应回到当下。"
    english = "With only twenty minutes a day, should a busy parent practise Zen or chant?"
    text = f"Speech: As Huineng, sit for twenty minutes.\nPosition change: none\nSummary: In Huineng's view, {english}"
    assert summary_of(text, 80, english) == "As Huineng, sit for twenty minutes."
    assert summary_of("Thesis: Build on the cloud first.\nConfidence: high", 80) == "Build on the cloud first."
    # a lead before an answer is an answer; so is the question followed by its answer
    assert summary_of("小结：依慧能大师之见，每天参禅二十分钟。", 80, question) == "依慧能大师之见，每天参禅二十分钟。"
    assert summary_of(f"小结：{question}参禅。", 80, question) == f"{question}参禅。"


def test_19_a_host_heading_is_never_its_summary():
    host = "## 双方主张\n慧能重自性，印光重信愿。\n## 共识（双方都认可的）\n都重视当下用功。"
    summary = summary_of(host, 80)
    assert summary and "双方主张" not in summary and not re.match(r"^共识", summary), summary


def test_19_field_value_still_reads_the_last_labelled_line():
    assert field_value("小结：甲\n小结：乙", ("小结",)) == "乙"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "question",
    [
        "Should a busy office worker practise Chan meditation or recite the Buddha's name?",
        "Chan or Pure Land for a beginner?",
    ],
)
def test_1_ordinary_english_wording_of_the_first_seed_topic_pairs_it(libraries, question):
    """A newcomer's words, not the rule's own ("chanting"): the duel pairs them, not refuses."""
    from debates.engine import registry
    from debates.specs import library_spec

    library = library_spec(registry.get("duel"))
    pairing = choose_pair(question, [], library.pairing_rules, library.pool)
    assert {pairing.a.slug, pairing.b.slug} == {"huineng", "yinguang"} and pairing.how == "rule"
