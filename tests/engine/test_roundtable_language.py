"""The roundtable in the question's language (issue 27: 1, 2), its table by meaning (issue 28: 5)
and its challenges judged by structure (issue 28: 4).

An English question gets an English roundtable: every prompt, rule, heading, form label and fixed
line, the persona names (`name_en`), the report and its action guide; the parsers read either
language's labels. The bundled library seats the architect and the SRE for a microservices
question in both languages, and never an expert the question is not about."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from debates.engine import events as ev
from debates.engine.roundtable import FORMAT, auto_table, challenge_of, says_nothing
from debates.engine.spec import DebateSpec, DomainTemplateSpec, LibrarySpec, PersonaSpec, SeatSpec
from testkit.fake_llm import FakeLLM

from .conftest import key_of, options, unscripted

CJK = re.compile("[\u3400-\u9fff]")
LIBRARY = Path(__file__).resolve().parents[2] / "personas" / "libraries" / "roundtable.json"


def role(slug, name, name_en, tier, **kw) -> PersonaSpec:
    # As the bundled library has them: Chinese persona text, English name and description.
    kw.setdefault("text", f"{name}的认知框架：只在这段人格文字里有中文。")
    return PersonaSpec(slug=slug, name=name, name_en=name_en, tier=tier, description_en=f"The {name_en}.", **kw)


DEVIL = role("devil-advocate", "魔鬼代言人", "Devil's advocate", "l1", veto_right=True, keywords=("风险", "risk"))
OPTIMIST = role("optimist", "乐观者", "Optimist", "l1", keywords=("机会", "opportunity"))
BACKEND = role("backend-architect", "后端架构师", "Backend architect", "l2", keywords=("微服务", "microservice"))
SRE = role("sre-engineer", "站点可靠性工程师", "Site reliability engineer", "l2", keywords=("可靠性", "reliability"))
ROLES = [DEVIL, OPTIMIST, BACKEND, SRE]
EN_NAME = {r.slug: r.name_en for r in ROLES}
QUESTION = "Should a 10-person startup adopt microservices now?"

EN_SYNTHESIS = (
    "## Consensus\n- Stay on the monolith for now.\n## Disagreements\n- The optimist wants services now.\n"
    "## Action guide\n1. Split the payment module first.\n2. Add tracing.\n## Risks\n- On-call load doubles."
)


def english_reply(slugs: list[str]):
    """Each roundtable turn answered in the English form, as a model that follows it would."""

    def speak(call) -> str:
        key = call.key or ""
        if key == "host:suitability":
            return "Class: suitable\nReason: a decision with many sides."
        if key == "host:synthesis":
            return EN_SYNTHESIS
        phase, slug, *_ = key.split(":")
        who, target = EN_NAME[slug], EN_NAME[slugs[(slugs.index(slug) + 1) % len(slugs)]]
        if phase == "r1":
            return (
                f"Thesis: {who} says wait. MARK-{slug}\nArguments:\n1. Small team.\n2. Ops cost.\n"
                f"Confidence: high\nSummary: {who} says wait."
            )
        if phase == "r2":
            return (
                f"Challenge target: {target}\nChallenged claim: {target} says wait.\n"
                "Flaw: no load figures back it.\nYour position: measure first.\nSummary: asks for numbers."
            )
        veto = "\nVeto: no" if slug == "devil-advocate" else ""
        return (
            f"Decision: hold\nReason: still right.\nFinal position: wait.\nConfidence: medium{veto}\n"
            f"Summary: {who} holds."
        )

    return speak


def spec(question=QUESTION, roles=ROLES, **values) -> DebateSpec:
    return DebateSpec(
        question=question,
        format="roundtable",
        seats=[SeatSpec(p) for p in roles],
        library=LibrarySpec(pool=list(ROLES)),
        options=options("roundtable", **values),
    )


def without_persona_text(prompt: str, roles=ROLES) -> str:
    for r in roles:
        prompt = prompt.replace(r.text, "")
    return prompt


async def test_an_english_question_gets_an_english_roundtable():
    from .conftest import debate

    fake = FakeLLM(default=unscripted).reply("*", english_reply([r.slug for r in ROLES]))
    run = await debate(spec(no_interrupt=True), fake)

    assert run.outcome == "done"
    assert [c.key for c in run.calls if c.key.startswith("r2:")] == [f"r2:{r.slug}" for r in ROLES]  # none sent back
    for call in run.calls:
        assert not CJK.search(call.user), (call.key, CJK.findall(call.user))
        assert not CJK.search(without_persona_text(call.system)), call.key
    r1 = run.call("r1:optimist").user
    assert "## Rules of this round" in r1 and "you are Optimist" in r1 and "Thesis: one sentence" in r1
    assert "Map what you always care about (opportunity)" in r1  # the English keywords only
    r2 = run.call("r2:optimist").user
    assert "## Round 1: every statement\n### Devil's advocate·R1" in r2 and "Challenge target:" in r2
    assert "Veto: yes / no" in run.call("r3:devil-advocate").user
    synthesis = run.call("host:synthesis")
    assert "You are Roundtable host." in synthesis.system
    assert "## Action guide (concrete" in synthesis.user and "| Optimist | Optimist says wait." in synthesis.user
    # the report: English sections, the action guide parsed from English headings
    assert run.data["action_guide"] == "1. Split the payment module first.\n2. Add tracing."
    assert run.data["consensus"] == "- Stay on the monolith for now."
    assert run.data["risks"] == "- On-call load doubles.\n- Devil's advocate: Devil's advocate holds."
    for section in run.data["sections"]:
        assert not CJK.search(str(section["body"])), section["key"]
    assert all(r.data["confidence_stated"] for r in run.sink.of(ev.TurnFinished) if r.key.startswith("r1:"))


async def test_an_english_checkpoint_and_veto_read_in_english():
    from .conftest import debate

    slugs = [r.slug for r in ROLES]
    scenario = "Three months in, the split services page the two on-call engineers nightly and both quit."
    speak = english_reply(slugs)
    fake = FakeLLM(default=unscripted).reply(
        "r3:devil-advocate", f"Decision: hold\nVeto: yes\nFailure scenario: {scenario}"
    )
    fake.reply("*", speak)
    first = await debate(spec(), fake)
    assert first.outcome == "waiting"
    resumed_spec = spec()
    resumed_spec.completed, resumed_spec.checkpoint_reply = first.completed(), "We have one ops engineer."
    run = await debate(resumed_spec, fake)

    assert run.outcome == "done"
    assert "Added by the user at the checkpoint: We have one ops engineer." in run.call("r2:optimist").user
    synthesis = run.call("host:synthesis").user
    assert f"## Veto (Devil's advocate)\nFailure scenario: {scenario}" in synthesis
    assert "## Answer to the veto" in synthesis and not CJK.search(synthesis)
    assert run.warning("veto").text.startswith("Devil's advocate vetoes.")
    assert run.data["action_guide"] == "1. ⛔ Split the payment module first.\n2. ⛔ Add tracing."


async def test_a_chinese_question_stays_chinese():
    from .conftest import debate, table_spec
    from .test_roundtable import STANDARD, table_fake

    run = await debate(table_spec(no_interrupt=True), table_fake(STANDARD))
    assert run.outcome == "done"
    r1 = run.call("r1:optimist").user
    assert "## 本轮规则" in r1 and "你是「乐观者」" in r1 and "核心论点：一句话" in r1 and "Thesis" not in r1
    assert "质询对象：" in run.call("r2:optimist").user and "Challenge target" not in run.call("r2:optimist").user
    synthesis = run.call("host:synthesis").user
    assert "## 行动指南（具体" in synthesis and "| 魔鬼代言人 |" in synthesis and "| 高 |" in synthesis
    # each final statement under the role's name alone: under "乐观者·R3" the bundled model took
    # "R1" for a role's name ("R1认为…" in its risks)
    assert "\n### 乐观者\n" in synthesis and "·R" not in synthesis
    assert run.data["action_guide"] == "1. 建立评测集。\n2. 两周试点。"


async def test_an_english_roundtable_over_http_on_the_fake_server(harness):
    slugs = [r.slug for r in ROLES]
    speak = english_reply(slugs)

    class Seen:  # what the script is given, as FakeLLM calls are
        def __init__(self, body):
            self.key, self.messages = key_of(body), body["messages"]

    run = await harness.run(spec(no_interrupt=True), script=lambda body: speak(Seen(body)))

    assert run.outcome == "done" and len(run.requests) == 1 + 4 + 4 + 4 + 1
    for request in run.requests:
        system, user = (m["content"] for m in request.body["messages"])
        assert not CJK.search(user) and not CJK.search(without_persona_text(system)), key_of(request.body)
        assert request.body["stop"][:1] != ["\n魔鬼代言人："]  # stops name the English names
    assert run.data["action_guide"] == "1. Split the payment module first.\n2. Add tracing."
    assert [s["title"]["msgid"] for s in run.data["sections"] if s["part"] == "verdict"] == [
        "Consensus",
        "Disagreements",
        "Action guide",
        "Risks",
    ]


# -- the table, on the bundled library --------------------------------------------------------------


def bundled() -> LibrarySpec:
    data = json.loads(LIBRARY.read_text(encoding="utf-8"))
    pool = [
        PersonaSpec(
            slug=p["slug"],
            name=p["name"],
            name_en=p.get("name_en", ""),
            tier=p["tier"],
            keywords=tuple(p["keywords"]),
            veto_right=p["veto_right"],
        )
        for p in data["personas"]
    ]
    templates = [
        DomainTemplateSpec(t["slug"], t["name"], tuple(t["keywords"]), tuple(t["roles"]), t.get("name_en", ""))
        for t in data["domain_templates"]
    ]
    return LibrarySpec(pool=pool, domain_templates=templates)


def table_for(question: str, mode: str = ""):
    chosen = FORMAT.effective_mode(question, options("roundtable", mode=mode))
    return auto_table(question, bundled(), chosen.name, bool(mode))


@pytest.mark.parametrize(
    "question",
    [
        "Should a 10-person startup adopt microservices now?",
        "我们 10 人的创业公司现在要不要上微服务？",
        "Is it time to split our monolith into microservices?",
        "要不要把单体应用拆成微服务？",
    ],
)
def test_a_microservices_question_seats_the_architect_and_the_sre(question):
    mode, roles, template = table_for(question)
    slugs = [r.slug for r in roles]
    assert template.slug == "architecture" and mode == "standard"
    assert slugs[:2] == ["devil-advocate", "optimist"]
    assert "backend-architect" in slugs and "sre-engineer" in slugs and "career-coach" not in slugs


@pytest.mark.parametrize(
    "question, template",
    [
        ("Should I quit my job to join a startup?", "career"),
        ("我该不该辞职去创业？", "career"),
        ("Should our support bot answer from the knowledge base with RAG?", "ai-product"),
        ("客服要不要上 RAG 知识库？", "ai-product"),
        ("How do we cut churn and lift retention?", "growth"),
        ("新用户留存太低，怎么提升转化？", "growth"),
        ("Should I move my savings from stocks into bonds?", "investment"),
        ("现在该不该加仓股票基金？", "investment"),
    ],
)
def test_templates_match_by_meaning_in_both_languages(question, template):
    _mode, roles, picked = table_for(question)
    assert picked.slug == template
    assert [r.tier for r in roles].count("l1") == 2 and {"devil-advocate", "optimist"} <= {r.slug for r in roles}


@pytest.mark.parametrize("question", ["要不要搬到成都？", "Should we move the office to Chengdu?"])
def test_no_template_seats_no_expert_the_question_is_not_about(question):
    mode, roles, template = table_for(question)
    assert template is None and all(r.tier == "l1" for r in roles)  # stances, no irrelevant expert
    assert [r.slug for r in roles][:2] == ["devil-advocate", "optimist"] and len(roles) == 3
    assert mode == "quick"  # the table it could fill, rather than a refusal
    suggestion = FORMAT.suggest(question, bundled(), options("roundtable"))
    assert "no expert in the library fits this question" in suggestion.note


def test_no_template_seats_the_experts_the_question_is_about():
    mode, roles, template = table_for("Should we raise our prices by 20%?")
    assert template is None and mode == "standard"
    assert [r.slug for r in roles if r.tier == "l2"] == ["finance-analyst"]
    assert 2 <= [r.tier for r in roles].count("l1") <= 3


@pytest.mark.parametrize("mode", ["quick", "standard", "deep"])
def test_every_template_seats_the_tension_and_two_or_three_stances(mode):
    library = bundled()
    for template in library.domain_templates:
        question = template.keywords[0]
        _m, roles, picked = auto_table(question, library, mode, True)
        slugs = [r.slug for r in roles]
        low, high = FORMAT.seat_bounds(mode)
        assert picked is template and low <= len(roles) <= high, (template.slug, mode, slugs)
        assert slugs[:2] == ["devil-advocate", "optimist"], template.slug
        assert 2 <= [r.tier for r in roles].count("l1") <= 3
        assert {"devil-advocate", "optimist"} <= set(template.roles), template.slug


def test_the_suggestion_names_the_template_in_the_questions_language():
    assert FORMAT.suggest(QUESTION, bundled(), options("roundtable")).note == "Technical architecture"
    assert FORMAT.suggest("要不要上微服务？", bundled(), options("roundtable")).note == "技术架构选型"


def test_three_confirmed_roles_on_auto_run_quick():
    assert FORMAT.effective_mode("要不要搬到成都？", options("roundtable"), 3).name == "quick"
    assert FORMAT.effective_mode("要不要搬到成都？", options("roundtable", mode="standard"), 3).name == "standard"


# -- challenges: by structure, not leading words --------------------------------------------------

REAL_ZH = [
    "没有评测数据，上线后无法判断答对率。",
    "没有考虑长尾问题，冷门问题检索不到。",
    "无法覆盖冷启动，新产品没有文档可检索。",
    "缺少回滚方案，一旦答错无法快速撤回。",
    "未考虑知识库的维护成本，文档过期后答错。",
    "无视了客服人员的培训成本。",
    "没有给出成本估算，预算可能超支一倍。",
    "缺乏用户调研支撑，需求是假设出来的。",
    "未区分高频与低频问题，试点范围过大。",
    "忽略了知识库维护成本，三个月后内容就过期。",
    "假设用户会读引用来源，但实际没人看。",
    "把试点成功等同于全面成功，样本太小。",
    "无人负责评测集的更新，质量会逐渐下降。",
    "没有对照组，无法证明效果来自 RAG。",
    "低估了提示注入的风险，外部文档可能带恶意指令。",
    "缺少数据合规审查，客户数据可能外泄。",
    "未说明失败时转人工的路径。",
    "同意试点的方向，但忽略了检索延迟会让客服等待超过 5 秒。",
    "论据只有一条，且是个例。",
    "无监控指标，出了问题没人知道。",
]
REAL_EN = [
    "No evaluation data: after launch nobody can tell how often it answers right.",
    "No rollback plan if the answers go wrong.",
    "It lacks a cost estimate; the budget could double.",
    "Lacks any user research; the need is assumed.",
    "Without a control group the effect cannot be attributed to RAG.",
    "Does not account for the long tail of rare questions.",
    "It does not consider the maintenance cost of the knowledge base.",
    "Ignores that documents go stale within three months.",
    "Assumes customers read the cited sources, which they do not.",
    "Nothing in it covers the cold start: new products have no documents.",
    "There is no owner for the evaluation set, so quality will drift.",
    "No monitoring: a failure would go unnoticed for weeks.",
    "The pilot is too small to say anything about full rollout.",
    "I agree with the direction, but retrieval latency will make agents wait over 5 seconds.",
    "Treats one success story as proof.",
    "Does not say who handles the hand-off to a human agent.",
    "No budget for prompt-injection testing, though external documents may carry instructions.",
    "Without compliance review customer data may leak.",
    "Underestimates the latency of re-ranking.",
    "There is no plan for what happens when the index is down.",
]
EMPTY_ZH = [
    "无",
    "没有",
    "无。",
    "没有漏洞",
    "没有明显漏洞。",
    "无明显问题",
    "未发现漏洞",
    "没有发现明显的问题。",
    "我没有看到任何漏洞",
    "暂无",
    "无可挑剔",
    "同意",
    "我同意他的观点，并补充：还要关注体验。",
    "完全赞同",
    "认同这一论点。",
    "没有异议",
    "无需质疑",
    "略",
    "没有什么可补充的",
    "不适用",
]
EMPTY_EN = [
    "None",
    "none.",
    "No",
    "No flaw.",
    "No obvious flaws.",
    "No real problem here.",
    "N/A",
    "I see no flaw.",
    "I found no problems.",
    "Nothing to add.",
    "There is no flaw.",
    "I agree.",
    "I agree with the optimist and would add that support matters.",
    "Agree fully.",
    "Not applicable",
    "No issues found.",
    "Nothing.",
    "I cannot find any flaw.",
    "There are no objections.",
    "No concerns",
]
OTHERS = ["乐观者", "Optimist"]


def zh_challenge(flaw: str) -> str:
    return f"质询对象：乐观者\n针对论点：全面铺开能最快见效。\n漏洞：{flaw}\n你的立场：先试点。\n小结：质询乐观者。"


def en_challenge(flaw: str) -> str:
    return (
        "Challenge target: Optimist\nChallenged claim: a full rollout pays off fastest.\n"
        f"Flaw: {flaw}\nYour position: pilot first.\nSummary: challenges the optimist."
    )


@pytest.mark.parametrize("flaw", REAL_ZH)
def test_a_chinese_flaw_that_names_what_is_missing_is_a_challenge(flaw):
    assert challenge_of(zh_challenge(flaw), OTHERS) == {
        "target": "乐观者",
        "claim": "全面铺开能最快见效。",
        "flaw": flaw,
    }


@pytest.mark.parametrize("flaw", REAL_EN)
def test_an_english_flaw_that_names_what_is_missing_is_a_challenge(flaw):
    found = challenge_of(en_challenge(flaw), OTHERS)
    assert found is not None and found["target"] == "Optimist" and found["flaw"] == flaw


@pytest.mark.parametrize("flaw", EMPTY_ZH)
def test_a_chinese_flaw_that_says_there_is_none_is_no_challenge(flaw):
    assert says_nothing(flaw)
    assert challenge_of(zh_challenge(flaw), OTHERS) is None


@pytest.mark.parametrize("flaw", EMPTY_EN)
def test_an_english_flaw_that_says_there_is_none_is_no_challenge(flaw):
    assert says_nothing(flaw)
    assert challenge_of(en_challenge(flaw), OTHERS) is None


def test_a_claim_that_starts_with_a_negation_is_still_a_claim():
    text = zh_challenge("没有评测数据。").replace("全面铺开能最快见效。", "无需额外投入即可上线。")
    assert challenge_of(text, OTHERS)["claim"] == "无需额外投入即可上线。"
    assert challenge_of(zh_challenge("没有评测数据。").replace("全面铺开能最快见效。", "无"), OTHERS) is None


def test_either_languages_labels_and_names_are_read():
    mixed = "质询对象：Optimist\n针对论点：a full rollout pays off fastest.\n漏洞：没有评测数据。"
    assert challenge_of(mixed, OTHERS)["target"] == "Optimist"
    assert challenge_of(en_challenge("No evaluation data.").replace("Optimist", "乐观者", 1), OTHERS)


async def test_a_real_challenge_that_starts_with_mei_you_is_not_sent_back():
    from .conftest import debate
    from .test_roundtable import STANDARD, table_fake

    flaw = "质询对象：乐观者\n针对论点：全面铺开能最快见效。\n漏洞：没有评测数据，无法覆盖冷启动。\n小结：质询。"
    run = await debate(
        spec("我们的客服产品要不要引入 RAG 知识库？", STANDARD, no_interrupt=True),
        table_fake(STANDARD, speeches={("rag-specialist", "r2"): flaw}),
    )
    assert "r2:rag-specialist:resend" not in run.keys and "agree_and_add" not in run.warning_codes
