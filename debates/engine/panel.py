"""Panel (taixu-debate): five roles, blind parallel rounds, and a host who never debates.

Admission → evidence pack → concept alignment → R1 blind (parallel) → aggregate → R2 cross-response
with the others' raw R1 → aggregate marking blind spots → R3 defence/revision → open fronts per role
→ R4 only for roles with open fronts → mechanical citation check → verdict and transcript.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field, replace

from debates.engine import citations, research
from debates.engine.context import DebateContext
from debates.engine.evidence import Source
from debates.engine.format import Format, Seating, Sizing
from debates.engine.i18n import CJK, gettext_noop, say, text, verbatim
from debates.engine.options import describe, option
from debates.engine.panel_plan import RoundsPlan, Shape, plan_rounds
from debates.engine.plans import host_plan, plan
from debates.engine.report import ReportBuilder, table
from debates.engine.spec import CommonOptions, PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import asks_what_to_do, bullet_items, clip, field_value, first_sentence, normalise, topic_slug
from debates.engine.turns import CapReached, DebateAborted, TurnPlan, TurnResult

SUMMARY_LIMIT = 60
# The seed's five debating roles (divergent, convergent, verifier, auditor, integrator): a panel
# seats all five, never fewer (taixu: 五个认知角色).
ROLE_COUNT = 5
FIVE_ROLES = gettext_noop(
    "The panel seats its five roles, one for each concern (divergent, convergent, verifier, auditor, integrator); "
    "you chose %(count)d. Choose all five, or none to seat the library's five."
)
VERDICT_LIMIT = 1200
MIN_TOKEN_BUDGET = 5000  # an explicit cap below this leaves the rounds next to nothing
CAP_MULTIPLIERS = {"light": 4.3, "standard": 4.5, "deep": 5.0}
# The verdict reads each role's last speech clipped to this many characters, fewer when the
# cap's room for it is short (`_fitted_verdict`).
FINAL_SPEECH_CHARS = 900
ROUNDS = 4
SUMMARY_LIMIT_EN = 120  # an English summary of one plain sentence needs about twice the characters
VERDICT_LIMIT_EN = 2400
# The proposition types as the prompts name them, per language.
TYPES = {"investment": "投资决策型", "choice": "选择决策型", "truth": "认知求真型"}
TYPES_EN = {"investment": "investment decision", "choice": "choice decision", "truth": "truth-seeking"}
TYPE_LABELS = {
    "investment": gettext_noop("investment decision"),
    "choice": gettext_noop("choice decision"),
    "truth": gettext_noop("truth-seeking"),
}
DECISIONS = ("investment", "choice")  # types judged by their outcome, not by a refutation
TYPE_WORDS = {
    "investment": ("投资", "investment"),
    "choice": ("选择", "choice", "决策型"),
    "truth": ("求真", "truth", "认知"),
}
NO_EVIDENCE = gettext_noop(
    "⚠️ No external evidence: no material was supplied, every role argues from its own knowledge."
)
# The seed's hard stop, said on the start form beside the material (`PanelOptions.evidence`) and
# in the refusal, which names the fields by their labels.
EVIDENCE_RULE = gettext_noop(
    "The panel does not debate an investment decision (buy, sell, how much to hold) without evidence: paste "
    "figures, filings or prices here or upload documents, or choose web research. Without any, such a question is "
    "refused once the host has classified it."
)
NO_EVIDENCE_REFUSAL = gettext_noop(
    "An investment decision is not debated without evidence: add the material (figures, filings, prices) under "
    "“%(field)s” or “%(documents)s” on the start form and start again."
)
NO_SOURCES_REFUSAL = gettext_noop(
    "An investment decision is not debated without evidence: the research found no sources and no material was "
    "supplied. Add the material (figures, filings, prices) under “%(field)s” or “%(documents)s” on the start form "
    "and start again."
)
# What an investment decision names (buy, sell, hold what, how much): the check against a host that
# calls an ordinary decision one ("should our team go remote?" from the bundled 1.5B model), which
# would refuse it for want of evidence. A ticker counts as named (an upper-case word), so a miss
# here only ever keeps the host's reading; only a question naming none of these is read again.
HOLDING_WORDS = (
    "投资 加仓 减仓 仓位 持仓 建仓 清仓 买入 卖出 买 卖 股 基金 债 币 房产 房子 楼 资产 理财 收益 估值 期权 期货 "
    "黄金 存款 储蓄 养老金 分红 定投 杠杆"
).split()
HOLDING_PATTERN = re.compile(
    r"invest|\bbuy|\bsell|\bsold\b|stock|shares?\b|equit|\bfunds?\b|\betfs?\b|\bbonds?\b|crypto|"
    r"bitcoin|\bbtc\b|\beth\b|portfolio|\bposition|\bhold|allocat|valuation|\boptions?\b|futures|"
    r"\bgold\b|property|real estate|\bhouse|\bhome\b|savings|pension|401\(?k|\bira\b|dividend|"
    r"\breturns?\b|leverage|\ball[- ]in\b|[$¥€£]",
    re.IGNORECASE,
)


def names_a_holding(question: str) -> bool:
    """Whether the question names something bought, sold or held (`HOLDING_WORDS`), or a ticker."""
    return (
        any(word in question for word in HOLDING_WORDS)
        or bool(HOLDING_PATTERN.search(question))
        or bool(re.search(r"\b[A-Z]{2,5}\b", question))
    )


CITE_FORMAT = "【引用 角色名·R1】“对方原话片段”"
_FIVE_HEAD = "按五要素输出，每项单独成行起头：\n立场：一句话\n核心论据：2–3 条，编号列出\n"
_FIVE_TAIL = f"小结：白话一句，坚持/松动/转向了什么、因为什么（不超过 {SUMMARY_LIMIT} 字）"
FIVE_PARTS = (
    _FIVE_HEAD
    + f"反驳：针对他方具体论点，每条用 {CITE_FORMAT} 引用原话（逐字摘录）\n"
    + "沉默声明：有反驳写“无”；没有任何反驳写“本轮沉默”\n"
    + _FIVE_TAIL
)
SPEECH_FORM = Form(
    (
        Part("立场", chars=100),
        Part("核心论据", chars=180, lines=3),
        Part("反驳", chars=200, lines=3),
        Part("沉默声明", choices=("无", "本轮沉默")),
        Part("小结", chars=SUMMARY_LIMIT),
    )
)
# R1 is blind: there is nothing to rebut, and its rule says to write "无" for both. The output form
# says so too (the five parts' own line for the rebuttal, "针对他方具体论点…", was copied as the
# rebuttal by the bundled model), and a server that takes a grammar can write nothing else there.
FIVE_PARTS_R1 = _FIVE_HEAD + "反驳：无\n沉默声明：无\n" + _FIVE_TAIL
SPEECH_FORM_R1 = Form(
    tuple(
        replace(part, chars=0, lines=1, choices=("无",)) if part.label in ("反驳", "沉默声明") else part
        for part in SPEECH_FORM.parts
    )
)
# R4's own form (the seed's two parts), with the summary line the evolution table reads.
CLOSING_PARTS = (
    "按两段输出，每段单独成行起头：\n"
    "检验交锋：逐条回应你的开放战线，每条用【引用 角色名·R3】“原话”引用（只引用 R3），不开新战线\n"
    "终辩声明：你的终态立场，以及让步清单（你在哪几点上让了步）\n"
    f"小结：白话一句（不超过 {SUMMARY_LIMIT} 字）"
)
CLOSING_LABELS = (("检验交锋", "defence"), ("终辩声明", "final statement"))
CLOSING_FORM = Form(
    (Part("检验交锋", chars=240, lines=3), Part("终辩声明", chars=160, lines=2), Part("小结", chars=SUMMARY_LIMIT))
)
# The same parts in English: an English debate's prompts and forms say them in English, and the
# parsers read either language's labels.
CITE_FORMAT_EN = '[cite Name·R1] "the exact words quoted"'
_FIVE_HEAD_EN = (
    "Write five parts, each starting its own line with its label:\n"
    "Position: one sentence\nCore arguments: 2–3, numbered\n"
)
_FIVE_TAIL_EN = (
    "Summary: one plain sentence: what you held, loosened or turned on, and why "
    f"(at most {SUMMARY_LIMIT_EN} characters)"
)
FIVE_PARTS_EN = (
    _FIVE_HEAD_EN
    + f"Rebuttal: against the others' specific points, each quoted word for word as {CITE_FORMAT_EN}\n"
    + "Silence: write “none” when you rebut something; write “silent this round” when you rebut nothing\n"
    + _FIVE_TAIL_EN
)
SPEECH_FORM_EN = Form(
    (
        Part("Position", chars=200),
        Part("Core arguments", chars=360, lines=3),
        Part("Rebuttal", chars=400, lines=3),
        Part("Silence", choices=("none", "silent this round")),
        Part("Summary", chars=SUMMARY_LIMIT_EN),
    ),
    colon=": ",
)
FIVE_PARTS_R1_EN = _FIVE_HEAD_EN + "Rebuttal: none\nSilence: none\n" + _FIVE_TAIL_EN
SPEECH_FORM_R1_EN = Form(
    tuple(
        replace(part, chars=0, lines=1, choices=("none",)) if part.label in ("Rebuttal", "Silence") else part
        for part in SPEECH_FORM_EN.parts
    ),
    colon=": ",
)
CLOSING_PARTS_EN = (
    "Write two parts, each starting its own line with its label:\n"
    'Defence: answer your open fronts one by one, each quoted as [cite Name·R3] "their words" (quote R3 only); '
    "open no new front\n"
    "Final statement: your final position, and your list of concessions (the points where you gave way)\n"
    f"Summary: one plain sentence (at most {SUMMARY_LIMIT_EN} characters)"
)
CLOSING_FORM_EN = Form(
    (Part("Defence", chars=480, lines=3), Part("Final statement", chars=320, lines=2), Part("Summary", chars=120)),
    colon=": ",
)
# Concept alignment: term and definition on lines of their own (a "term：definition" line cannot
# be a grammar value, which holds no colon). The seed asks for 3–5; the grammar writes three.
NUMERALS = "一二三四五"
CONCEPTS_OUTPUT = (
    "按下面的格式写 3–5 个核心概念，每个一条统一定义（口径边界）：\n"
    "术语一：概念名\n定义一：一句话定义\n术语二：…\n定义二：…\n术语三：…\n定义三：…\n"
    "小结：一句话说明这些概念划定的讨论范围"
)
CONCEPTS_FORM = Form(
    (
        *(part for n in NUMERALS[:3] for part in (Part(f"术语{n}", chars=16), Part(f"定义{n}", chars=60))),
        Part("小结", chars=SUMMARY_LIMIT),
    )
)
ADMISSION_GRAMMAR_FORM = Form(
    (
        Part("类型", choices=("投资决策型", "选择决策型", "认知求真型", "不适合")),
        Part("可证伪", choices=("是", "否")),
        Part("理由", chars=80),
        Part("话题标识", pattern='[a-z]{2,12} ("-" [a-z]{2,12}){2,5}', chars=60),
    )
)
CONCEPTS_OUTPUT_EN = (
    "Write 3–5 core concepts in the form below, each with one shared definition (where its edges are):\n"
    "Term 1: the concept\nDefinition 1: a one-sentence definition\nTerm 2: …\nDefinition 2: …\n"
    "Term 3: …\nDefinition 3: …\nSummary: one sentence on the ground these concepts mark out"
)
CONCEPTS_FORM_EN = Form(
    (
        *(part for n in "123" for part in (Part(f"Term {n}", chars=32), Part(f"Definition {n}", chars=120))),
        Part("Summary", chars=SUMMARY_LIMIT_EN),
    ),
    colon=": ",
)
ADMISSION_GRAMMAR_FORM_EN = Form(
    (
        Part("Type", choices=(*TYPES_EN.values(), "unsuitable")),
        Part("Falsifiable", choices=("yes", "no")),
        Part("Reason", chars=160),
        Part("Topic slug", pattern='[a-z]{2,12} ("-" [a-z]{2,12}){2,5}', chars=60),
    ),
    colon=": ",
)


@dataclass(frozen=True)
class Words:
    """What the panel says to its models in one language: forms, output formats and fixed lines."""

    types: dict[str, str]
    speech_output: str
    speech_form: Form
    blind_output: str  # R1's: the rebuttal and the silence are "none"
    blind_form: Form
    closing_output: str
    closing_form: Form
    concepts_output: str
    concepts_form: Form
    admission_form: Form
    summary_limit: int
    verdict_limit: int
    list_sep: str  # between names in a line ("、" / ", ")
    colon: str  # after a name that opens a line ("：" / ": ")


WORDS = {
    "zh": Words(
        TYPES,
        FIVE_PARTS,
        SPEECH_FORM,
        FIVE_PARTS_R1,
        SPEECH_FORM_R1,
        CLOSING_PARTS,
        CLOSING_FORM,
        CONCEPTS_OUTPUT,
        CONCEPTS_FORM,
        ADMISSION_GRAMMAR_FORM,
        SUMMARY_LIMIT,
        VERDICT_LIMIT,
        "、",
        "：",
    ),
    "en": Words(
        TYPES_EN,
        FIVE_PARTS_EN,
        SPEECH_FORM_EN,
        FIVE_PARTS_R1_EN,
        SPEECH_FORM_R1_EN,
        CLOSING_PARTS_EN,
        CLOSING_FORM_EN,
        CONCEPTS_OUTPUT_EN,
        CONCEPTS_FORM_EN,
        ADMISSION_GRAMMAR_FORM_EN,
        SUMMARY_LIMIT_EN,
        VERDICT_LIMIT_EN,
        ", ",
        ": ",
    ),
}


def words(lang: str) -> Words:
    return WORDS["en" if lang == "en" else "zh"]


@dataclass
class PanelState:
    roles: list[PersonaSpec]
    host: PersonaSpec
    kind: str = ""
    lang: str = "zh"  # the debate's language: every prompt, form and fixed line is in it
    concepts: list[str] = field(default_factory=list)
    speeches: dict[tuple[str, int], str] = field(default_factory=dict)
    results: dict[tuple[str, int], TurnResult] = field(default_factory=dict)
    silent: set[str] = field(default_factory=set)
    blind_spots: str = ""
    fronts: dict[str, list[str]] = field(default_factory=dict)
    front_authors: dict[str, set[str]] = field(default_factory=dict)  # role → who opened its fronts
    own_sources: dict[str, list[Source]] = field(default_factory=dict)  # a role's own searches (R2)
    stopped_by_cap: int | None = None  # the round in which the cap stopped the run
    plan: RoundsPlan | None = None  # the cap shared over the rounds before R1 (`_plan_rounds`)
    sent_back: dict[str, list[str]] = field(default_factory=dict)  # "slug·R2" → what it broke

    def aliases(self) -> dict[str, str]:
        names = {}
        for role in self.roles:
            for alias in (role.slug, role.name, role.name_en, role.role):
                if alias:
                    names[alias.lower()] = role.slug
        return names


DEFAULT_HOST = PersonaSpec(
    slug="cicero",
    name="西塞罗",
    name_en="Cicero",
    kind="host",
    description="主持人：程序与记录，不下场辩论。",
    description_en="Host: procedure and record; takes no side.",
)


def _host_plan(ctx: DebateContext, st: PanelState, key: str, task: str, material: str, fmt: str, **kw) -> TurnPlan:
    return host_plan(ctx, st.host, key, task=task, material=material, output=fmt, round_no=kw.pop("round_no", 0), **kw)


CONCEPTS_TITLE = gettext_noop("Concept alignment")
ADMISSION_TASK = (
    "入场审查：判断命题类型（投资决策型 / 选择决策型 / 认知求真型 / 不适合），以及是否可证伪。"
    "不可证伪的陈述、纯历史回顾、空泛的泛论、已形成强共识的命题都不适合。"
)
ADMISSION_FORM = "四行：\n类型：…\n可证伪：是 / 否\n理由：一句话\n话题标识：3–6 个英文小写单词，用连字符连接"
ADMISSION_TASK_EN = (
    "Admission: judge the proposition's type (investment decision / choice decision / truth-seeking / unsuitable) "
    "and whether it can be falsified. Unfalsifiable statements, pure looks back at history, vague generalities and "
    "propositions with a strong consensus already are unsuitable."
)
ADMISSION_FORM_EN = (
    "Four lines:\nType: …\nFalsifiable: yes / no\nReason: one sentence\n"
    "Topic slug: 3–6 lowercase English words joined by hyphens"
)


@dataclass
class Admission:
    kind: str  # investment | choice | truth, or "" when the answer names none
    unsuitable: bool
    falsifiable: bool | None  # None: the answer did not say
    reason: str
    slug: str

    @classmethod
    def read(cls, answer: str) -> Admission:
        kind_text = field_value(answer, ("类型", "type")).lower()
        falsifiable = field_value(answer, ("可证伪", "falsifiable")).lower()
        return cls(
            kind=next((k for k, words in TYPE_WORDS.items() if any(w in kind_text for w in words)), ""),
            unsuitable="不适合" in kind_text or "unsuitable" in kind_text,
            falsifiable=True
            if falsifiable.startswith(("是", "yes", "可"))
            else False
            if falsifiable.startswith(("否", "no", "不"))
            else None,
            reason=field_value(answer, ("理由", "reason")) or first_sentence(answer),
            slug=field_value(answer, ("话题标识", "topic slug", "slug")),
        )

    def readable(self, stated_kind: str) -> bool:
        return self.falsifiable is not None and bool(self.unsuitable or self.kind or stated_kind)


async def _admit(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Admission: one of three proposition types, and falsifiable. An answer that says neither is
    asked for once more; a second unreadable answer refuses the run, as does a refusal."""
    question = ctx.spec.question.strip()
    if len(question) < 6:
        raise DebateAborted(
            text(gettext_noop("The proposition is too short to judge its type and whether it can be falsified.")),
            outcome="refused",
        )
    stated = ctx.options.proposition_type
    lang = ctx.lang
    task = say(lang, ADMISSION_TASK, ADMISSION_TASK_EN)
    output, form = say(lang, ADMISSION_FORM, ADMISSION_FORM_EN), words(lang).admission_form
    # A classification, not a speech: no summary under it (its first line would only repeat "Type: …").
    admitted = _host_plan(ctx, st, "host:admission", task, "", output, exempt=True, form=form)
    result = await ctx.turn(replace(admitted, summary_limit=0))
    admission = Admission.read(result.text)
    if not admission.readable(stated):
        again = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:admission-again",
                task
                + say(
                    lang,
                    "上一次的回答没有按四行格式写出类型与是否可证伪，请严格按格式重答。",
                    " The last answer did not give the type and whether it can be falsified in the four lines: "
                    "answer again, keeping strictly to the form.",
                ),
                say(lang, "## 上一次的回答\n", "## The last answer\n") + clip(result.text, 600),
                output,
                exempt=True,
                form=form,
            )
        )
        admission = Admission.read(again.text)
        if not admission.readable(stated) and stated:
            # The type is the user's, stated on the form (its help promises it is debated as that
            # type "even when the host's own answer cannot be read"): only whether it can be
            # falsified is left unread, and an unread answer is no refusal. Said, never silent.
            await ctx.warn(
                "admission_unread",
                gettext_noop(
                    "Asked twice, the host's admission answer gave no reading of the proposition (last answer: "
                    "%(answer)s); it is debated as the type stated on the form: %(type)s."
                ),
                answer=verbatim(clip(again.text, 160)),
                type=text(TYPE_LABELS[stated]),
            )
        elif not admission.readable(stated):
            raise DebateAborted(
                text(
                    gettext_noop(
                        "Admission could not be judged: asked twice, the host named no proposition type or did not "
                        "say whether it can be falsified (last answer: %(answer)s). Rephrase the proposition as a "
                        "decision or a claim that can be tested, and start again."
                    ),
                    answer=verbatim(clip(again.text, 160)),
                ),
                outcome="refused",
            )
    kind = stated or admission.kind
    if kind == "investment" and not stated and not names_a_holding(question):
        # Refused for want of evidence, an ordinary decision would never be debated: read it as the
        # choice it is, and say so (the form's type decides otherwise).
        kind = "choice"
        await ctx.warn(
            "admission_reread",
            gettext_noop(
                "The host called this an investment decision, but the question names nothing bought, sold or "
                "held: it is debated as a choice decision (state the proposition type on the form to decide "
                "otherwise)."
            ),
        )
    elif kind == "truth" and not stated and asks_what_to_do(question):
        # Only the words that ask what to do, not the roundtable's wider `asks_a_decision` ("A or
        # B", "which", "better" may ask what is true): the bundled host called "小团队该不该上微服务？"
        # truth-seeking and unfalsifiable, and the panel refused it.
        kind = "choice"
        await ctx.warn(
            "admission_reread",
            gettext_noop(
                "The host called this a truth-seeking question, but it asks what to do: it is debated as a choice "
                "decision (state the proposition type on the form to decide otherwise)."
            ),
        )
    if admission.falsifiable is False and kind in DECISIONS and not admission.unsuitable:
        # A decision is tested by its outcome: the seed's falsifiability test is for statements
        # (a truth-seeking proposition, a generality). Small models answer 否 to decisions too.
        await ctx.warn(
            "admission_doubt",
            gettext_noop(
                "The host doubted the proposition can be falsified (%(reason)s); as a decision it is debated."
            ),
            reason=verbatim(clip(admission.reason, 160)),
        )
    elif (admission.unsuitable and not stated) or admission.falsifiable is False:
        raise DebateAborted(
            text(
                gettext_noop("The proposition did not pass admission: %(reason)s"),
                reason=verbatim(clip(admission.reason, 200)),
            ),
            outcome="refused",
        )
    st.kind = kind
    report.data["proposition_type"] = st.kind
    report.data["topic_slug"] = topic_slug(admission.slug, ctx.spec.question, ("panel", "debate"))


BASELINE_TOKENS = 8
MEASURE_TITLE = gettext_noop("Token cap: measuring one strong prompt")
MEASURE_LINE = "（基线测量，不是发言：只计这次调用的提示 token 数，用来定本场的 token 上限。）"
MEASURE_LINE_EN = (
    "(Baseline measurement, not a speech: only this call's prompt tokens count, to set this debate's token cap.)"
)


async def _research(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Phase 0, the evidence pack: the host writes the searches the research budget allows, and
    what they find joins the material the user gave. Without a search provider research is
    skipped (and said so); an investment decision with no evidence at all stops here (the seed's
    hard stop)."""
    if ctx.research is None:
        await research.skipped(ctx)
    else:
        budget = research.budget_of(ctx.options.research_budget)
        kind = words(ctx.lang).types.get(st.kind, st.kind)
        task = say(
            ctx.lang,
            f"证据底座：为核实本命题（{kind}）需要的事实与数据写网络检索词。",
            f"Evidence pack: write web search queries for the facts and figures needed to check this "
            f"proposition ({kind}).",
        )
        queries = await research.build_pack(ctx, st.host, budget, task, exempt=True)
        report.data["research_queries"] = queries
    if st.kind == "investment" and not ctx.evidence:
        # The seed: research failing for an investment decision is a hard stop, not a warning.
        # The fields are named by the labels the start form shows them with (their one declaration).
        fields = describe(PanelOptions)
        raise DebateAborted(
            text(
                NO_EVIDENCE_REFUSAL if ctx.research is None else NO_SOURCES_REFUSAL,
                field=text(fields["evidence"].label),
                documents=text(fields["documents"].label),
            ),
            outcome="refused",
        )


def _verifier(st: PanelState) -> PersonaSpec | None:
    """The role that checks claims against outside data (the seed's Bayes)."""
    return next((r for r in _active(st) if r.role == "verifier" or r.slug == "bayes"), None)


async def _verifier_searches(ctx: DebateContext, st: PanelState) -> None:
    """R2: the verifier may run up to three searches of his own, queries first, then his speech
    with what they found; the others see the results from R3 on (the public record)."""
    verifier = _verifier(st)
    if verifier is None or ctx.research is None:
        return
    name = verifier.called(ctx.lang)
    await ctx.phase(2, "r2-search", gettext_noop("R2 · %(name)s's searches"), name=verbatim(name))
    asked = await ctx.turn(
        plan(
            ctx,
            verifier,
            f"r2:queries:{verifier.slug}",
            round_no=2,
            phase="r2-search",
            rules=[
                say(
                    ctx.lang,
                    f"你是「{name}」。R2 开始前你可以发起一次补充检索（最多 {research.OWN_SEARCHES} 条检索词），"
                    "用外部数据检验他方 R1 的论点；结果在你的 R2 发言中可用，并从 R3 起对所有人公开。",
                    f"You are {name}. Before R2 you may run one round of searches of your own (at most "
                    f"{research.OWN_SEARCHES} queries) to test the others' R1 points against outside data; the "
                    "results are yours to use in your R2 speech, and everyone's from R3 on.",
                )
            ],
            material=_material(st, verifier, 2),
            output=research.query_output(research.OWN_SEARCHES, optional=True, lang=ctx.lang),
            max_tokens=research.QUERY_TOKENS,
            form=research.query_form(research.OWN_SEARCHES, lang=ctx.lang),
        )
    )
    queries = research.read_queries(asked.text, research.OWN_SEARCHES)
    budget = research.budget_of(ctx.options.research_budget)
    found = await research.run_queries(
        ctx,
        prefix=f"search:r2:{verifier.slug}",
        speaker=verifier,
        queries=queries,
        budget=budget,
        round_no=2,
        phase="search",
        visible_from=3,
    )
    st.own_sources[verifier.slug] = found


async def _measure_cap(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """The seed's cap is a multiple of one strong prompt's cost: the prompt that would ask a single
    model for the whole five-role analysis (its prompt tokens P, measured by the server with a
    call of a few tokens) plus the one answer it would get (A: one speech's allowance per perspective,
    not the twenty speeches of the rounds). Part of the cap is kept for the verdict, so a run
    stopped by the cap still reports."""
    budget = ctx.options.research_budget or "standard"
    multiplier = CAP_MULTIPLIERS.get(budget, CAP_MULTIPLIERS["standard"])
    frames = "\n\n".join(f"### {r.called(ctx.lang)}\n{r.told(ctx.lang)}" for r in st.roles)
    measured = _host_plan(
        ctx,
        st,
        "host:baseline",
        say(
            ctx.lang,
            "基线测量：一次性的强提示，要求五种视角完整分析本命题。",
            "Baseline: one strong prompt asking for a complete analysis of the proposition from five perspectives.",
        ),
        say(ctx.lang, f"## 五种视角\n{frames}", f"## Five perspectives\n{frames}"),
        say(ctx.lang, "完整分析。", "A complete analysis."),
        exempt=True,
        # Only its prompt is measured, but one token can be half a Chinese character, which
        # decodes to nothing: the server's empty reply then failed the debate (seen locally).
        max_tokens=BASELINE_TOKENS,
        phase="measure",
    )
    # A measurement, not a speech: under a phase that says so, its few tokens of reply replaced by
    # a line saying what it is (it stays a turn: charged, exempt from the cap, replayed on resume).
    await ctx.phase(0, "measure", MEASURE_TITLE)
    measured.postprocess = lambda _reply: (say(ctx.lang, MEASURE_LINE, MEASURE_LINE_EN), {"measurement": True})
    measured.summary_limit = 0  # a measurement has no summary to show
    prompt_tokens = (await ctx.turn(measured)).prompt_tokens
    # The one answer's allowance as its request would carry it (a reasoning model's thinking room
    # too): the whole debate written by one model that sees everything, every role's four rounds
    # and the verdict (the seed's own single-context run). The multiple then pays for what
    # isolation adds, each call reading the others' raw speeches again. One speech per perspective
    # (2,250 tokens) left a connected model's default debate no room for R2.
    written = ROUNDS * len(st.roles) * ctx.max_tokens("speech") + ctx.max_tokens("verdict")
    answer = ctx.completion_limit(replace(measured, max_tokens=written))
    baseline_tokens = prompt_tokens + answer
    seed_cap = int(baseline_tokens * multiplier)
    asked = ctx.options.token_budget
    # A user's budget may lower the seed's cap, never raise it past the multiple: a larger one is
    # held to the seed's cap, and the run says so.
    cap = min(asked, seed_cap) if asked else seed_cap
    await ctx.plan(cap=cap)
    if asked and asked > seed_cap:
        await ctx.warn(
            "token_budget_clamped",
            BUDGET_CLAMPED,
            asked=asked,
            cap=seed_cap,
            multiplier=f"{multiplier:g}",
        )
    ctx.ledger.reserve = min(cap, _verdict_reserve(ctx, st))
    report.data["token_cap"] = {
        "research_budget": budget,
        "multiplier": multiplier,
        "prompt_tokens": prompt_tokens,
        "answer_tokens": answer,
        "baseline_tokens": baseline_tokens,
        "cap": cap,
        "verdict_reserve": ctx.ledger.reserve,
        "explicit": bool(asked) and asked <= seed_cap,
        **({"asked": asked, "seed_cap": seed_cap} if asked else {}),
    }


VERDICT_NO_ROOM = gettext_noop(
    "The token cap left no room for the verdict: the turns before it spent more than they had booked."
)
BUDGET_CLAMPED = gettext_noop(
    "The token budget of %(asked)d is above this debate's cap of %(cap)d (%(multiplier)s × the baseline): a "
    "budget may lower the panel's cap, never raise it, so the cap stays at %(cap)d."
)


def _speech_tokens(ctx: DebateContext, st: PanelState) -> int:
    """A speech's allowance: the planned one once the rounds are planned, else the format's."""
    return st.plan.speech if st.plan else ctx.max_tokens("speech")


def _verdict_material_allowance(ctx: DebateContext, st: PanelState, speech: int | None = None) -> int:
    """The tokens kept for the verdict's material (the evolution table and the roles' last
    speeches): one speech's allowance per role, and one more for the table."""
    return (len(st.roles) + 1) * (speech or _speech_tokens(ctx, st))


def _verdict_reserve(ctx: DebateContext, st: PanelState, speech: int | None = None) -> int:
    """What the verdict's call and one resend can spend: the call's prompt (its material kept to
    `_verdict_material_allowance`) and its completion limit; the resend's prompt (the draft, at
    most one verdict's allowance) and its completion limit again."""
    first = _verdict_plan(ctx, st, chars=0)
    again = _resend_plan(ctx, st, draft="", problems=[])
    material = math.ceil(_verdict_material_allowance(ctx, st, speech) * ctx.prompt_margin)
    draft = math.ceil(ctx.max_tokens("verdict") * ctx.prompt_margin)
    return ctx.allowance(first) + material + ctx.allowance(again) + draft


def _cap_used(ctx: DebateContext) -> str:
    """How close the run came to its cap, as the report says it: "9,412 of 10,000 tokens"."""
    ledger = ctx.ledger
    return ctx.translate(gettext_noop("Counted against the cap: %(counted)s of %(cap)s tokens.")) % {
        "counted": f"{ledger.counted:,}",
        "cap": f"{ledger.cap:,}",
    }


def _cap_formula(ctx: DebateContext, report: ReportBuilder) -> str:
    t, cap = ctx.translate, report.data.get("token_cap")
    if not cap:
        return ""
    if cap["explicit"]:
        line = t(gettext_noop("Token cap: %(cap)d, set for this debate.")) % cap
    else:
        line = (
            t(
                gettext_noop(
                    "Token cap: %(multiplier)s × (P %(prompt_tokens)d + A %(answer_tokens)d) = %(cap)d, where P is "
                    "the prompt tokens of one strong prompt asking for the whole analysis and A the allowance of its "
                    "one answer (every perspective's four rounds and the verdict, written at once)."
                )
            )
            % cap
        )
        if cap.get("asked"):  # a budget above the seed's cap, held to it
            held = {"asked": cap["asked"], "cap": cap["cap"], "multiplier": f"{cap['multiplier']:g}"}
            line += " " + t(BUDGET_CLAMPED) % held
    reserve = (
        t(
            gettext_noop(
                "%(verdict_reserve)d of it are kept for the verdict (its call and one resend); admission and "
                "the baseline measurement do not count."
            )
        )
        % cap
    )
    return f"{line} {reserve} {_cap_used(ctx)}"


# A line that defines a term: "- 远程办公：每周四天以上…", "**Output**: features shipped…". A list's
# number ("1. ", "2、") goes before it; any other figure stays part of the line (see `_is_data`).
_DEFINITION_LINE = re.compile(
    r"^[ \t>*\-•·]*(?:\d{1,2}[.、)）]\s*)?(?:\*\*|「|“)?(?P<term>[^：:\n*」”]{1,40}?)(?:\*\*|」|”)?\s*[：:]\s*"
    r"(?P<def>\S.{3,})$",
    re.MULTILINE,
)
# A finding, not a definition: "2024 年内部调查：远程组产出 +8%", "Revenue: $4.2M", "Q3 2023: …".
_FIGURES_IN_TERM = re.compile(r"\d{2}")
_FIGURE_FIRST = re.compile(r"^[+＋\-−~≈约$¥€£]?\s*\d")
_SIGNED_SHARE = re.compile(r"[+＋\-−]\s*\d[\d.,]*\s*%")


def _is_term(term: str, definition: str) -> bool:
    """`term：definition` names a concept and says what it is: not a label of the material, not a
    dated or numbered finding, not a figure. A term is a short name (at most 24 characters in
    Chinese, five words in English)."""
    if not term or term.lower() in _NOT_TERMS:
        return False
    if len(term) > 24 if CJK.search(term) else len(term.split()) > 5:
        return False
    if _FIGURES_IN_TERM.search(term):
        return False
    return not (_FIGURE_FIRST.match(definition) or _SIGNED_SHARE.search(definition))


# A sentence that defines one: "协作成本是指…", "Output means…".
_DEFINING_SENTENCE = re.compile(
    r"(?:^|[。；;.\n]\s*)(?P<term>[^。；;.\n，,]{1,24}?)\s*"
    r"(?:是指|指的是|定义为|界定为| means | is defined as | refers to )(?P<def>[^。；;\n]{4,})",
)
# Labels of material, not concepts.
_NOT_TERMS = {"材料", "来源", "数据", "证据", "注", "备注", "链接", "日期", "出处"}
_NOT_TERMS |= {"source", "note", "evidence", "url", "date", "link"}


def concepts_from_evidence(evidence: str, lang: str = "zh") -> list[str]:
    """Up to five "term：definition" lines taken from the evidence as written (no model call: the
    seed has the host read them off the evidence pack); data lines are not terms (`_is_term`)."""
    found: dict[str, str] = {}
    colon = words(lang).colon
    for pattern in (_DEFINITION_LINE, _DEFINING_SENTENCE):
        for match in pattern.finditer(evidence):
            term = match.group("term").strip(" *「」“”\"'")
            definition = match.group("def").strip()
            if _is_term(term, definition) and term.lower() not in found:
                found[term.lower()] = f"{term}{colon}{clip(definition, 140)}"
    return list(found.values())[:5]


_TERM_LINE = re.compile(rf"^\s*(?:[-*•]\s*)?(?:术语|概念|term)\s*[{NUMERALS}\d]*\s*[：:]\s*(?P<term>.+?)\s*$", re.I)
_DEFINITION_OF_TERM = re.compile(
    rf"^\s*(?:[-*•]\s*)?(?:定义|definition)\s*[{NUMERALS}\d]*\s*[：:]\s*(?P<def>.+?)\s*$", re.I
)


def concepts_from_answer(answer: str, lang: str = "zh") -> list[str]:
    """The host's terms as "term：definition", at most five: term and definition on lines of their
    own ("术语一：…" then "定义一：…", as asked; also "概念：…" / "定义：…"), else bulleted
    "- term：definition" lines. A term line is never taken as a term named "术语" or "概念"."""
    pairs, term, colon = [], "", words(lang).colon
    for line in answer.splitlines():
        if found := _TERM_LINE.match(line):
            term = found.group("term").strip(" *「」“”")
        elif (found := _DEFINITION_OF_TERM.match(line)) and term:
            pairs.append(f"{term}{colon}{found.group('def')}")
            term = ""
    if pairs:
        return pairs[:5]
    lines = [line.strip() for line in answer.splitlines() if re.search(r"：|: ", line)]
    return (bullet_items(answer, 5) or lines)[:5]


def concept_terms(concepts: list[str]) -> list[str]:
    return [re.split(r"[：:]", c, maxsplit=1)[0].strip() for c in concepts]


async def _align_concepts(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """3–5 terms with one definition each, read off the evidence when there is some, asked of the
    host (once) when there is none. Fewer than three fails the step: the roles then use words in
    their usual sense, and the report says so. Read off the evidence, the terms are the phase's
    note (no turn shows them: the heading is never empty)."""
    lang, said = ctx.lang, words(ctx.lang)
    if ctx.evidence:
        concepts, source = concepts_from_evidence(ctx.evidence.material(), lang), "evidence"
        if len(concepts) >= 3:
            note = say(lang, "从证据中读出的术语：\n", "Terms read off the evidence:\n")
            note += "\n".join(f"- {c}" for c in concepts)
        else:
            note = say(
                lang,
                f"证据中只有 {len(concepts)} 条“术语：定义”行（需要 3–5 条）：各方按通常含义使用概念。",
                f"The evidence has {len(concepts)} “Term: definition” lines (3–5 are needed): the roles use "
                "words in their usual sense.",
            )
        await ctx.phase(0, "concepts", CONCEPTS_TITLE, note=note)
    else:
        await ctx.phase(0, "concepts", CONCEPTS_TITLE)
        result = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:concepts",
                say(
                    lang,
                    "概念对齐：从议题中提炼 3–5 个核心概念，各给一个统一定义（口径边界）。",
                    "Concept alignment: draw 3–5 core concepts from the question, each with one shared definition "
                    "(where its edges are).",
                ),
                "",
                said.concepts_output,
                round_no=0,
                form=said.concepts_form,
            )
        )
        concepts, source = [clip(item, 160) for item in concepts_from_answer(result.text, lang)], "host"
    report.data["concepts_source"] = source
    if len(concepts) < 3:
        await ctx.warn(
            "concepts_failed",
            gettext_noop(
                "Concept alignment failed: %(count)d defined terms found (3–5 are needed); the roles use words in "
                "their usual sense."
            ),
            count=len(concepts),
        )
        concepts = []
    st.concepts = concepts


async def _check_concept_use(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """The seed's check at aggregate #1: did each R1 speech argue with the aligned terms?"""
    terms = concept_terms(st.concepts)
    if not terms:
        return
    use = {}
    for role in st.roles:
        speech = normalise(st.speeches.get((role.slug, 1), ""))
        use[role.slug] = [t for t in terms if normalise(t) in speech]
    report.data["concept_use"] = use
    unused = [r.called(st.lang) for r in st.roles if (r.slug, 1) in st.speeches and not use[r.slug]]
    if unused:
        sep = words(st.lang).list_sep
        await ctx.warn(
            "concepts_unused",
            gettext_noop("%(roles)s used none of the aligned terms (%(terms)s) in R1."),
            roles=verbatim(sep.join(unused)),
            terms=verbatim(sep.join(terms)),
        )


# The five parts of a speech (R1-R3), as either language labels them (a model may write "论据").
SPEECH_LABELS = (
    ("立场", "position"),
    ("核心论据", "论据", "core arguments", "arguments"),
    ("反驳", "rebuttal"),
    ("沉默声明", "silence"),
    ("小结", "summary"),
)


def missing_parts(text: str, lang: str = "zh") -> list[str]:
    """The five parts a speech does not write, named as the debate's language labels them."""
    form = words(lang).speech_form
    return [
        part.label
        for part, labels in zip(form.parts, SPEECH_LABELS, strict=True)
        if not field_value(text, labels, multiline=True)
    ]


def _speech_postprocess(text: str, lang: str = "zh") -> tuple[str, dict]:
    silence = field_value(text, ("沉默声明", "silence"))
    declared = "本轮沉默" in silence or silence.startswith("沉默") or silence.lower().startswith("silent")
    cited = len(citations.find_citations(text))
    rebuttal = field_value(text, ("反驳", "rebuttal"), multiline=True).strip("：: ")
    # Silence means rebutting nothing: a speech that declares it but rebuts anyway is not silent.
    rebuts = cited > 0 or (rebuttal and not rebuttal.lower().startswith(("无", "none", "no rebuttal", "n/a")))
    return text, {
        "position": clip(field_value(text, ("立场", "position")) or first_sentence(text), 200),
        "silent": declared and not rebuts,
        # The seed: 无反驳则显式沉默. A speech whose rebuttal says "none" and whose silence is not
        # declared breaks that (R2-R3; in R1, blind, both are "none" by the round's own rule).
        "silence_undeclared": bool(rebuttal and silence) and not rebuts and not declared,
        "citations": cited,
        "missing_parts": missing_parts(text, lang),
    }


def _role_plan(
    ctx: DebateContext,
    st: PanelState,
    role: PersonaSpec,
    round_no: int,
    rules: list[str],
    material: str,
    again: bool = False,
) -> TurnPlan:
    concept_block = "\n".join(f"- {c}" for c in st.concepts)
    lang, said = st.lang, words(st.lang)
    name, kind = role.called(lang), said.types.get(st.kind, st.kind)
    if concept_block:
        concepts = say(lang, "概念一律使用下列统一定义：\n", "Use these shared definitions for every concept:\n")
        concepts += concept_block
    else:
        concepts = say(lang, "概念按通常含义使用。", "Use concepts in their usual sense.")
    made = plan(
        ctx,
        role,
        f"r{round_no}:{role.slug}" + (":again" if again else ""),
        round_no=round_no,
        phase=f"r{round_no}",
        rules=[
            say(
                lang,
                f"你是五角色辩论中的「{name}」（{role.role or role.tier}），始终守住你自己的核心关切。",
                f"You are {name} ({role.role or role.tier}) in a five-role debate; hold to your own core concern "
                "throughout.",
            ),
            say(lang, f"命题类型：{kind}。", f"Proposition type: {kind}."),
            *rules,
            concepts,
            *([_length_rule(lang, st.plan.speech)] if st.plan else []),
        ],
        material=material,
        output={1: said.blind_output, 4: said.closing_output}.get(round_no, said.speech_output),
        form={1: said.blind_form, 4: said.closing_form}.get(round_no, said.speech_form),
        others=[r.called(lang) for r in st.roles if r.slug != role.slug],
        postprocess=_closing_postprocess(st, role) if round_no == 4 else (lambda text: _speech_postprocess(text, lang)),
        max_tokens=_speech_tokens(ctx, st),
    )
    return replace(made, summary_limit=said.summary_limit)


def _length_rule(lang: str, tokens: int) -> str:
    """The speech's planned length, said in the prompt as its request's max_tokens holds it: a
    Chinese character is about a token, an English word about four-thirds of one."""
    return say(
        lang,
        f"篇幅：全文不超过 {tokens} 字（本场的 token 上限按四轮分配给每篇发言的份额）。",
        f"Length: at most {tokens * 3 // 4} words in all (each speech's share of this debate's token cap, "
        "planned over the four rounds).",
    )


def _raw(st: PanelState, round_no: int, exclude: str | None = None, only: str | None = None) -> str:
    blocks = []
    for role in st.roles:
        if role.slug == exclude or (only and role.slug != only):
            continue
        text = st.speeches.get((role.slug, round_no))
        if text is not None:
            verbatim_mark = say(st.lang, "（原文）", " (verbatim)")
            blocks.append(f"### {role.called(st.lang)}·R{round_no}{verbatim_mark}\n{text}")
    return "\n\n".join(blocks)


async def _round(ctx: DebateContext, st: PanelState, round_no: int, plans: list[TurnPlan]) -> None:
    try:
        results = await ctx.parallel(plans)
    except CapReached as stop:
        results, st.stopped_by_cap = stop.done, round_no
    for result in results:
        st.speeches[(result.speaker.slug, round_no)] = result.text
        st.results[(result.speaker.slug, round_no)] = result
        if round_no >= 2 and result.data.get("silent"):
            st.silent.add(result.speaker.slug)
    if st.stopped_by_cap is not None:
        raise CapReached(f"r{round_no}", results, text(gettext_noop("round %(n)d"), n=round_no))


def _active(st: PanelState) -> list[PersonaSpec]:
    return [r for r in st.roles if r.slug not in st.silent]


def _named_in(role: PersonaSpec, line: str) -> bool:
    """The line names the role, by either of its names (an English name as a word)."""
    if role.name in line:
        return True
    return bool(role.name_en) and re.search(rf"\b{re.escape(role.name_en)}\b", line, re.I) is not None


def open_fronts(st: PanelState) -> dict[str, list[str]]:
    """For each role, the points of the others' R3 that attack it or revise positions touching it:
    lines that cite it or name it."""
    aliases, colon = st.aliases(), words(st.lang).colon
    fronts: dict[str, list[str]] = {r.slug: [] for r in st.roles}
    st.front_authors = {r.slug: set() for r in st.roles}
    for author in st.roles:
        text = st.speeches.get((author.slug, 3))
        if not text:
            continue
        for line in text.splitlines():
            if not line.strip() or line.strip().lower().startswith(("小结", "沉默声明", "summary", "silence")):
                continue
            touched = {aliases.get(c.speaker.lower()) for c in citations.find_citations(line)}
            for role in st.roles:
                if role.slug != author.slug and (role.slug in touched or _named_in(role, line)):
                    fronts[role.slug].append(f"{author.called(st.lang)}{colon}{clip(line.strip(), 200)}")
                    st.front_authors[role.slug].add(author.slug)
    return fronts


def _closing_postprocess(st: PanelState, role: PersonaSpec):
    """R4 is checked by form: both parts present, quotes from R3 only, and nobody answered who did
    not open a front against this role (a new front)."""
    aliases = st.aliases()

    def check(text: str) -> tuple[str, dict]:
        defence = field_value(text, CLOSING_LABELS[0], multiline=True)
        statement = field_value(text, CLOSING_LABELS[1], multiline=True)
        quoted = citations.find_citations(text)
        allowed = st.front_authors.get(role.slug, set())
        new_fronts = sorted(
            {c.speaker for c in quoted if aliases.get(c.speaker.lower()) not in allowed | {role.slug}}
            | {r.called(st.lang) for r in st.roles if r.slug not in allowed | {role.slug} and _named_in(r, defence)}
        )
        return text, {
            "position": clip(first_sentence(statement) or first_sentence(text), 200),
            "silent": False,
            "citations": len(quoted),
            "missing_parts": [
                say(st.lang, zh, en.capitalize()) for zh, en in CLOSING_LABELS if not field_value(text, (zh, en))
            ],
            "other_rounds": sorted({f"{c.speaker}·R{c.round}" for c in quoted if c.round != 3}),
            "new_fronts": new_fronts,
        }

    return check


# What a closing is checked for: (its data key, the warning's code and message, the value's name).
CLOSING_FLAGS = (
    ("missing_parts", "r4_form", gettext_noop("%(speaker)s's closing lacks: %(found)s.")),
    ("other_rounds", "r4_other_rounds", gettext_noop("%(speaker)s's closing quotes beyond R3: %(found)s.")),
    (
        "new_fronts",
        "r4_new_front",
        gettext_noop("%(speaker)s's closing opens a new front against %(found)s (R4 may not)."),
    ),
)


async def _flag_closings(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    flags = {}
    for role in st.roles:
        result = st.results.get((role.slug, 4))
        if result is None:
            continue
        for key, code, msgid in CLOSING_FLAGS:
            if result.data.get(key):
                found = verbatim(words(st.lang).list_sep.join(result.data[key]))
                await ctx.warn(code, msgid, speaker=role, found=found)
        flags[role.slug] = {key: result.data.get(key, []) for key, _code, _msgid in CLOSING_FLAGS}
    if flags:
        report.data["closing_checks"] = flags


ROUNDS_TEXT = {
    1: (
        gettext_noop("R1 · Blind positions"),
        "盲立论：你看不到任何其他角色的发言。R1 没有可反驳的对象，反驳写“无”，沉默声明写“无”。",
    ),
    2: (gettext_noop("R2 · Cross-response"), "逐条反驳他方的具体论点，引用须逐字摘录原文。"),
    3: (
        gettext_noop("R3 · Defence and revision"),
        "防御你被攻击的论点或修正立场，引用须逐字摘录。R3 是最后一个能承接新维度的发言轮。",
    ),
    4: (
        gettext_noop("R4 · Closing"),
        "前半段逐条回应你的开放战线，只引用 R3；后半段给出终态立场与让步清单。禁止开新战线。",
    ),
}
ROUND_RULES_EN = {
    1: "Blind position: you see no other role's speech. R1 has nothing to rebut: write “none” as your rebuttal "
    "and “none” as your silence.",
    2: "Rebut the others' specific points one by one; every quote is copied word for word from their speech.",
    3: "Defend the points of yours that were attacked, or revise your position; quotes word for word. R3 is the "
    "last round that may take up a new dimension.",
    4: "First answer your open fronts one by one, quoting R3 only; then give your final position and your list "
    "of concessions. Open no new front.",
}


MATERIAL_HEADINGS = {
    "zh": {
        "own1": "你自己的 R1",
        "own2": "你自己的 R2",
        "others1": "他方 R1 原文",
        "others2": "他方 R2 原文",
        "searched": "你的补充检索结果",
        "blind": "主持人标注的盲区",
        "fronts": "你的开放战线",
        "r3": "R3 原文",
    },
    "en": {
        "own1": "Your own R1",
        "own2": "Your own R2",
        "others1": "The others' R1, verbatim",
        "others2": "The others' R2, verbatim",
        "searched": "What your own searches found",
        "blind": "Blind spots the host marked",
        "fronts": "Your open fronts",
        "r3": "R3, verbatim",
    },
}


def _material(st: PanelState, role: PersonaSpec, round_no: int) -> str:
    """What a role may see in each round: nothing (R1, blind); its own R1 and the others' raw R1
    (R2); its own R1+R2, the others' raw R2 and the host's blind spots (R3); its open fronts and
    the R3 record (R4)."""
    own = {r: st.speeches.get((role.slug, r), "") for r in (1, 2)}
    h = MATERIAL_HEADINGS["en" if st.lang == "en" else "zh"]
    if round_no == 1:
        return ""
    if round_no == 2:
        found = st.own_sources.get(role.slug)
        searched = f"\n\n## {h['searched']}\n{research.described(found, st.lang)}" if found else ""
        return f"## {h['own1']}\n{own[1]}\n\n## {h['others1']}\n{_raw(st, 1, exclude=role.slug)}{searched}"
    if round_no == 3:
        return (
            f"## {h['own1']}\n{own[1]}\n\n## {h['own2']}\n{own[2]}\n\n## {h['others2']}\n"
            f"{_raw(st, 2, exclude=role.slug)}\n\n## {h['blind']}\n{st.blind_spots}"
        )
    fronts = "\n".join(f"- {f}" for f in st.fronts[role.slug])
    return f"## {h['fronts']}\n{fronts}\n\n## {h['r3']}\n{_raw(st, 3)}"


async def _speak(ctx: DebateContext, st: PanelState, round_no: int, roles: list[PersonaSpec]) -> None:
    """One round: the roles speak in parallel, each in its own isolated call; a speech that breaks
    the round's form is sent back once (`_send_back`)."""
    title, rule = ROUNDS_TEXT[round_no]
    rule = say(st.lang, rule, ROUND_RULES_EN[round_no])
    await ctx.phase(round_no, f"r{round_no}", title)
    await _round(
        ctx, st, round_no, [_role_plan(ctx, st, r, round_no, [rule], _material(st, r, round_no)) for r in roles]
    )
    await _send_back(ctx, st, round_no, roles, rule)


def form_problems(data: dict, round_no: int, lang: str) -> list[str]:
    """What a speech breaks, said to its model: the five parts it lacks (R1-R3), a rebuttal of
    nothing without a declared silence (R2-R3); R4's two parts, quotes beyond R3 and new fronts."""
    sep = words(lang).list_sep
    problems = []
    if data.get("missing_parts"):
        problems.append(say(lang, "缺少：", "missing: ") + sep.join(data["missing_parts"]))
    if round_no in (2, 3) and data.get("silence_undeclared"):
        problems.append(
            say(
                lang,
                "没有反驳却未声明沉默（无反驳则沉默声明写“本轮沉默”）",
                "rebuts nothing but does not declare silence (with no rebuttal, the silence says “silent this round”)",
            )
        )
    if round_no == 4 and data.get("other_rounds"):
        problems.append(say(lang, "引用了 R3 以外的发言：", "quotes beyond R3: ") + sep.join(data["other_rounds"]))
    if round_no == 4 and data.get("new_fronts"):
        problems.append(
            say(lang, "对没有向你开战线的角色开了新战线：", "opens a new front against ") + sep.join(data["new_fronts"])
        )
    return problems


SENT_BACK = gettext_noop("%(speaker)s's R%(round)d speech was sent back once: %(found)s.")
SENT_BACK_KEPT = gettext_noop("%(speaker)s's R%(round)d speech still breaks its form after being sent back: %(found)s.")


async def _send_back(ctx: DebateContext, st: PanelState, round_no: int, roles: list[PersonaSpec], rule: str) -> None:
    """The round's speeches that break its form (five parts; R4's two parts, R3-only quotes, no new
    front) are sent back once, together, each with what it broke and its own last version; the
    new versions replace them. A person's words are never sent back. A resend the cap cannot pay
    for does not start: the first version stands. What still breaks R4's rules is flagged with
    the closings (`_flag_closings`); other rounds' are flagged here."""
    lang, sep = st.lang, "; "
    again = []
    for role in roles:
        result = st.results.get((role.slug, round_no))
        if result is None or ctx.is_human(role.slug):
            continue
        problems = form_problems(result.data, round_no, lang)
        if not problems:
            continue
        st.sent_back[f"{role.slug}·R{round_no}"] = problems
        if not result.replayed:
            found = verbatim(sep.join(problems))
            await ctx.warn("sent_back", SENT_BACK, speaker=role, round=round_no, found=found)
        told = say(
            lang,
            f"主持人退回了你上一版发言（{sep.join(problems)}）。按要求的格式重写整篇发言，每一部分单独成行、带标签。",
            f"The host sent your last version back ({sep.join(problems)}). Write the whole speech again in the form "
            "asked for, each part on its own line with its label.",
        )
        previous = say(lang, "## 你被退回的上一版\n", "## Your version that was sent back\n") + result.text
        material = "\n\n".join(m for m in (_material(st, role, round_no), previous) if m)
        again.append(_role_plan(ctx, st, role, round_no, [rule, told], material, again=True))
    if not again:
        return
    try:
        results = await ctx.parallel(again)
    except CapReached as stop:  # the turns the cap had no room for keep their first version
        results = stop.done
    for result in results:
        slug = result.speaker.slug
        st.speeches[(slug, round_no)] = result.text
        st.results[(slug, round_no)] = result
        st.silent.discard(slug)
        if round_no >= 2 and result.data.get("silent"):
            st.silent.add(slug)
        still = form_problems(result.data, round_no, lang)
        if still and round_no < 4 and not result.replayed:
            found = verbatim(sep.join(still))
            await ctx.warn("sent_back_kept", SENT_BACK_KEPT, speaker=result.speaker, round=round_no, found=found)


def _blind_spots_plan(ctx: DebateContext, st: PanelState, material: str) -> TurnPlan:
    return _host_plan(
        ctx,
        st,
        "host:aggregate2",
        say(
            st.lang,
            "汇总 #2：标注全场盲区——各方都没有谈到的维度。只标注，不引导，不评价。",
            "Aggregate #2: mark the blind spots of the whole panel, the dimensions nobody addressed. Mark "
            "them only: do not steer, do not judge.",
        ),
        material,
        say(st.lang, "最多 3 条：- 盲区：…", "At most 3 lines: - Blind spot: …"),
        round_no=2,
    )


async def _mark_blind_spots(ctx: DebateContext, st: PanelState) -> None:
    """Host aggregate #2: the dimensions nobody addressed, marked but not steered."""
    material = "\n\n".join(_raw(st, 2, only=r.slug) for r in st.roles)
    st.blind_spots = (await ctx.turn(_blind_spots_plan(ctx, st, material))).text


# The planned length's own line in each speech's prompt (`_length_rule`), which the prompts
# measured for the plan do not carry yet.
LENGTH_RULE_TOKENS = 60


def _plan_rounds(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Before R1, the cap's room shared over the four rounds and the verdict (`panel_plan`): every
    speech gets the longest allowance at which all of them fit, measured on the debate's own
    prompts; R4 and the verifier's searches are planned for as if they all run. With no cap, or
    one too small for speeches of `panel_plan.MIN_SPEECH` tokens (a budget the user set low, the
    bundled model's sizing), the speeches keep the format's allowance. A budget the user set below
    the seed's cap is not planned over either (yet): its speeches keep their allowance, and the
    cap stops the run where it must, saying so."""
    if ctx.ledger.cap is None or report.data["token_cap"]["explicit"]:
        return
    rules = {r: say(st.lang, ROUNDS_TEXT[r][1], ROUND_RULES_EN[r]) for r in ROUNDS_TEXT}
    probes = {r: [_role_plan(ctx, st, role, r, [rules[r]], "") for role in st.roles] for r in ROUNDS_TEXT}
    bases = {
        r: sum(ctx.prompt_allowance(p.messages) + LENGTH_RULE_TOKENS for p in plans) for r, plans in probes.items()
    }
    blind = _blind_spots_plan(ctx, st, "")
    verifier = _verifier(st) if ctx.research is not None else None
    # The verifier's own searches: his queries (R2's material), and what they find, read by him
    # in R2 and by everyone from R3 on (the public record), each source clipped to 800 characters.
    found = research.OWN_SEARCHES * 900 if verifier else 0

    def extra(speech: int) -> dict[int, int]:
        if not verifier:
            return {}
        queries = bases[2] // len(st.roles) + int(5 * speech * 1.25) + research.QUERY_TOKENS
        return {2: queries + found, 3: len(st.roles) * found, 4: len(st.roles) * found}

    shape = Shape(
        bases=bases,
        speakers=len(st.roles),
        completion=lambda speech: ctx.completion_limit(replace(probes[1][0], max_tokens=speech)),
        host=ctx.allowance(blind),
        extra=extra,
        reserve=lambda speech: _verdict_reserve(ctx, st, speech),
    )
    st.plan = plan_rounds(shape, ctx.ledger.room(reserved=True), ctx.max_tokens("speech"))
    if st.plan is None:
        return
    ctx.ledger.reserve = st.plan.reserve
    report.data["token_cap"]["verdict_reserve"] = st.plan.reserve
    report.data["token_plan"] = st.plan.as_dict()


def _keep_for_later(ctx: DebateContext, st: PanelState, round_no: int) -> None:
    """While round `round_no` runs, the cap keeps the later rounds' planned shares and the
    verdict's: a resend, or a reply charged past its booking, spends only what this round leaves."""
    if st.plan:
        ctx.ledger.reserve = st.plan.after(round_no)


async def _run(ctx: DebateContext) -> str:
    spec = ctx.spec
    # No seats chosen: the library's roles (the bundled five) sit at the table.
    roles = [s.persona for s in spec.seats if s.persona.kind == "debater"] or [
        p for p in ctx.library.pool if p.kind == "debater"
    ]
    if len(roles) != ROLE_COUNT:
        raise DebateAborted(text(FIVE_ROLES, count=len(roles)), outcome="refused")
    st = PanelState(roles=roles, host=ctx.library.host or DEFAULT_HOST, lang=ctx.lang)
    report = ReportBuilder(ctx, title=spec.question)
    mode = "isolated_parallel" if ctx.parallel_capacity > 1 else "isolated_sequential"
    report.data.update({"execution_mode": mode, "roles": [r.slug for r in roles]})
    if mode != "isolated_parallel":
        report.top_notes.append(
            text(
                gettext_noop(
                    "Execution mode: isolated calls, one at a time (the provider serves one request at a time); "
                    "the roles still cannot see each other."
                )
            )
        )

    await ctx.plan(rounds=ROUNDS)
    await ctx.phase(0, "admission", gettext_noop("Admission"))
    await _admit(ctx, st, report)
    await _research(ctx, st, report)
    if not ctx.evidence:
        await ctx.warn("no_evidence", NO_EVIDENCE)
    await _measure_cap(ctx, st, report)
    try:
        await _rounds(ctx, st, report)
    except CapReached as stop:
        st.stopped_by_cap = st.stopped_by_cap or _round_of(stop.key)
        await ctx.warn(
            "token_cap",
            gettext_noop("The token cap of %(cap)d left no room for %(turn)s: the run stopped in R%(round)d."),
            cap=ctx.ledger.cap,
            turn=stop.label,
            round=st.stopped_by_cap,
        )
        report.data["stopped_by_cap_in_round"] = st.stopped_by_cap
    await _flag_closings(ctx, st, report)
    if st.sent_back:
        report.data["sent_back"] = st.sent_back

    checks = _check_citations(st)
    await _write_report(ctx, st, report, checks)
    return "done"


async def _rounds(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Concept alignment, then R1 to R4; the token cap may stop them before any turn (`CapReached`)."""
    try:
        await _align_concepts(ctx, st, report)
    except CapReached:
        st.stopped_by_cap = 1
        raise
    _plan_rounds(ctx, st, report)
    _keep_for_later(ctx, st, 1)
    await _speak(ctx, st, 1, st.roles)
    await _check_concept_use(ctx, st, report)
    _keep_for_later(ctx, st, 2)
    await _verifier_searches(ctx, st)
    await _speak(ctx, st, 2, _active(st))
    try:
        await _mark_blind_spots(ctx, st)
    except CapReached:
        st.stopped_by_cap = 3
        raise
    _keep_for_later(ctx, st, 3)
    await _speak(ctx, st, 3, _active(st))
    st.fronts = open_fronts(st)
    report.data["open_fronts"] = {k: len(v) for k, v in st.fronts.items()}
    closing = [r for r in _active(st) if st.fronts.get(r.slug)]
    _keep_for_later(ctx, st, 4)
    if closing:
        await _speak(ctx, st, 4, closing)
    else:
        await ctx.warn("r4_skipped", gettext_noop("No role has an open front: R4 is skipped."))


def _round_of(key: str) -> int:
    match = re.match(r"r(\d+)", key)
    return int(match.group(1)) if match else 0


def _check_citations(st: PanelState) -> list[citations.CitationCheck]:
    results = []
    aliases = st.aliases()
    for (slug, round_no), speech in sorted(st.speeches.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        results += citations.check(f"r{round_no}:{slug}", speech, st.speeches, aliases)
    return results


def evolution_table(st: PanelState, translate=gettext_noop) -> str:
    rounds = sorted({r for _, r in st.results})
    silent = translate(gettext_noop("(silent)"))
    rows = [
        [role.called(st.lang)]
        + [
            st.results[(role.slug, r)].summary
            if (role.slug, r) in st.results
            else (silent if role.slug in st.silent else "—")
            for r in rounds
        ]
        for role in st.roles
    ]
    return table([translate(gettext_noop("Role"))] + [f"R{r}" for r in rounds], rows)


def _turn_name(st: PanelState, key: str) -> str:
    """A speech's key ("r2:feynman") as readers know it ("Feynman·R2")."""
    round_key, _, slug = key.partition(":")
    role = next((r for r in st.roles if r.slug == slug), None)
    return f"{role.called(st.lang)}·{round_key.upper()}" if role else key


async def _write_report(ctx, st: PanelState, report: ReportBuilder, checks) -> None:
    bad = [c for c in checks if not c.ok]
    t = ctx.translate
    review = [
        "- "
        + t(gettext_noop("Citation check: %(count)d quotes, %(bad)d not verified."))
        % {"count": len(checks), "bad": len(bad)}
    ]
    review += [
        f"  - ⚠️ {_turn_name(st, c.citing)} → {c.citation.speaker}·R{c.citation.round} “{clip(c.citation.quote, 40)}”: "
        f"{t(c.reason)}"
        for c in bad
    ]
    if not ctx.evidence:
        review.append(f"- {t(NO_EVIDENCE)}")
    if ctx.ledger.estimated:
        review.append("- " + t(gettext_noop("Some token counts are estimates (the server reported no usage).")))
    report.data["citation_check"] = [
        {
            "citing": c.citing,
            "speaker": c.citation.speaker,
            "round": c.citation.round,
            "quote": c.citation.quote,
            "ok": c.ok,
            "reason": c.reason,
        }
        for c in checks
    ]
    report.data["silent"] = sorted(st.silent)
    report.data["concepts"] = st.concepts
    if bad:
        await ctx.warn(
            "citations_unverified",
            gettext_noop("%(count)d quoted point(s) were not found in the speech they cite."),
            count=len(bad),
        )

    if st.speeches:
        await ctx.phase(0, "verdict", gettext_noop("Verdict"))
        try:
            verdict_text = await _verdict(ctx, st)
        except CapReached:  # turns that spent past what they booked left not even a short verdict room
            verdict_text = t(VERDICT_NO_ROOM)
            await ctx.warn("token_cap", VERDICT_NO_ROOM)
    else:
        verdict_text = t(gettext_noop("The token cap left no room for any speech: there is nothing to judge."))
    report.data["verdict"] = verdict_text
    if formula := _cap_formula(ctx, report):  # after the verdict: it says how close the run came
        review.append(f"- {formula}")
    t = ctx.translate
    report.section("verdict", gettext_noop("Verdict"), verdict_text)
    execution = t(gettext_noop("execution_mode: %(mode)s · proposition type: %(kind)s · topic_slug: %(slug)s")) % {
        "mode": report.data["execution_mode"],
        "kind": t(TYPE_LABELS.get(st.kind, st.kind)),
        "slug": report.data.get("topic_slug", ""),
    }
    report.section("execution", gettext_noop("Execution"), execution, part="transcript")
    concepts = "\n".join(f"- {c}" for c in st.concepts)
    report.section("concepts", gettext_noop("Concepts"), concepts, part="transcript", empty=gettext_noop("none"))
    report.section("evolution", gettext_noop("Position evolution"), evolution_table(st, t), part="transcript")
    report.section("reliability", gettext_noop("Data reliability"), "\n".join(review), part="transcript")
    await report.emit(verdict_heading=gettext_noop("Panel"))


VERDICT_PARTS = (
    ("辩论精华", ("highlights", "highlight")),
    ("三区", ("three zones", "zones")),
    ("综合判断", ("overall judgement", "overall judgment", "judgement", "judgment")),
    ("结论产出", ("conclusion",)),
)
VERDICT_PART_NAMES_EN = {
    "辩论精华": "Highlights",
    "三区": "Three zones",
    "综合判断": "Overall judgement",
    "结论产出": "Conclusion",
}
# A heading: a Markdown heading, or a bold or bracketed line, of any sensible length (the English
# form's own headings run to 50 characters with their parentheses, "## Three zones (consensus /
# disagreement / undecided)", and a model copies them whole); or a plain short line.
_HEADING = re.compile(r"^[ \t]*(?:(?:#+|\*\*|【)\s*(?P<marked>[^\n]{1,100})|(?P<name>[^\n]{1,40}))$", re.MULTILINE)


def _heading_name(match: re.Match) -> str:
    return match.group("marked") or match.group("name")


def _part_of(line: str) -> str | None:
    line = line.strip("*#【】 ").lower()
    return next((zh for zh, en in VERDICT_PARTS if line.startswith((zh, *en))), None)


def verdict_parts(verdict: str) -> list[tuple[str, str, str]]:
    """The parts found, as (part, heading line, body) in the order written. A heading is a short line
    (or a Markdown heading) that starts with a part's name: "## 三区（…）", "**Highlights**"."""
    heads = [(m, part) for m in _HEADING.finditer(verdict) if (part := _part_of(_heading_name(m)))]
    parts = []
    for i, (match, part) in enumerate(heads):
        end = heads[i + 1][0].start() if i + 1 < len(heads) else len(verdict)
        parts.append((part, match.group(0).strip(), verdict[match.end() : end].strip()))
    return parts


def verdict_missing(verdict: str, lang: str = "zh") -> list[str]:
    """The parts the verdict lacks, named in `lang` (the English names as the English form has them)."""
    found = {part for part, _, _ in verdict_parts(verdict)}
    return [say(lang, zh, VERDICT_PART_NAMES_EN[zh]) for zh, _ in VERDICT_PARTS if zh not in found]


def fit_verdict(verdict: str, limit: int = VERDICT_LIMIT) -> str:
    """Shorten each part in proportion, so every heading and the start of every part survive."""
    parts = verdict_parts(verdict)
    if not parts:
        return clip(verdict, limit)
    heads = sum(len(head) + 3 for _, head, _ in parts)
    room = max(len(parts) * 20, limit - heads)
    total = sum(len(body) for _, _, body in parts) or 1
    return clip(
        "\n\n".join(f"{head}\n{clip(body, max(20, room * len(body) // total))}" for _, head, body in parts),
        limit,
    )


def _verdict_words(st: PanelState) -> tuple[str, str]:
    """The verdict's task and output form, in the debate's language."""
    lang, limit = st.lang, words(st.lang).verdict_limit
    form = say(
        lang,
        "依次四节：\n## 辩论精华（2–3 条穿透性引文）\n## 三区（共识区 / 分歧区 / 未决区）\n## 综合判断\n"
        f"## 结论产出（{_conclusion_kind(st.kind)}）",
        "Four sections, in this order:\n## Highlights (2–3 quotes that cut to the core)\n"
        "## Three zones (consensus / disagreement / undecided)\n## Overall judgement\n"
        f"## Conclusion ({_conclusion_kind(st.kind, lang)})",
    )
    task = say(
        lang,
        f"撰写摘要版裁决书（面向普通读者，禁止术语黑话，不超过 {limit} 字）。",
        f"Write the short verdict (for ordinary readers, no jargon, at most {limit} characters).",
    )
    return task, form


def _verdict_plan(ctx: DebateContext, st: PanelState, chars: int = FINAL_SPEECH_CHARS) -> TurnPlan:
    """The verdict's call, each role's last speech clipped to `chars` characters."""
    lang = st.lang
    task, form = _verdict_words(st)
    material = say(lang, "## 立场演化\n", "## How the positions moved\n") + evolution_table(st)
    material += say(lang, "\n\n## 各方最终发言\n", "\n\n## Each role's last speech\n") + _final_speeches(st, chars)
    return _host_plan(ctx, st, "host:verdict", task, material, form, kind="verdict")


def _resend_plan(ctx: DebateContext, st: PanelState, draft: str, problems: list[str]) -> TurnPlan:
    """The verdict sent back once: the last draft and what is wrong with it."""
    lang = st.lang
    task, form = _verdict_words(st)
    return _host_plan(
        ctx,
        st,
        "host:verdict-again",
        task
        + say(lang, "；".join(problems) + "。保留结论，改写全文。", " " + _sentence("; ".join(problems)))
        + say(lang, "", ". Keep the conclusion and write the whole text again."),
        say(lang, "## 上一稿\n", "## The last draft\n") + draft,
        form,
        kind="verdict",
    )


def _fitted_verdict(ctx: DebateContext, st: PanelState) -> TurnPlan:
    """The verdict's call within the room the cap leaves it, one resend's worth kept beside it:
    the roles' last speeches clipped shorter when the whole of them would not fit (never the
    table, the task or the form). With no cap, or room enough, they are clipped at
    `FINAL_SPEECH_CHARS` as always."""
    room = ctx.ledger.room(reserved=True)
    plan = _verdict_plan(ctx, st)
    if room is None:
        return plan
    resend = ctx.allowance(_resend_plan(ctx, st, "", [])) + math.ceil(ctx.max_tokens("verdict") * ctx.prompt_margin)
    budget = room - resend if room - resend >= ctx.allowance(_verdict_plan(ctx, st, chars=0)) else room
    if ctx.allowance(plan) <= budget:
        return plan
    low, high = 0, FINAL_SPEECH_CHARS  # the longest clip that fits (the allowance grows with it)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if ctx.allowance(_verdict_plan(ctx, st, middle)) <= budget else (low, middle - 1)
    return _verdict_plan(ctx, st, low)


async def _verdict(ctx: DebateContext, st: PanelState) -> str:
    """The verdict within 1200 characters with its four parts: a draft that misses either is sent
    back once with its count; a second draft still too long is shortened part by part, never by
    cutting its end (where the conclusion is). Both calls are paid from the verdict's reserve:
    the first reads the speeches as the room allows (`_fitted_verdict`); the resend is made only
    if its whole allowance fits what is left, else the draft is kept (and shortened to fit)."""
    lang, limit, sep = st.lang, words(st.lang).verdict_limit, words(st.lang).list_sep
    draft = (await ctx.turn(_fitted_verdict(ctx, st))).text
    missing = verdict_missing(draft, lang)
    if len(draft) > limit or missing:
        problems = []
        if len(draft) > limit:
            problems.append(
                say(
                    lang,
                    f"上一稿 {len(draft)} 字，超出 {limit} 字上限，请压缩到 {limit} 字以内",
                    f"the last draft has {len(draft)} characters, over the limit of {limit}: bring it within {limit}",
                )
            )
        if missing:
            problems.append(say(lang, "上一稿缺少：", "the last draft lacks: ") + sep.join(missing))
        again = _resend_plan(ctx, st, draft, problems)
        room = ctx.ledger.room(reserved=True)
        if room is None or ctx.allowance(again) <= room:
            draft = (await ctx.turn(again)).text
        else:
            await ctx.warn(
                "verdict_not_resent",
                gettext_noop(
                    "The token cap left no room to send the verdict back (%(need)d tokens, %(room)d left): "
                    "the first draft is kept."
                ),
                need=ctx.allowance(again),
                room=max(0, room),
            )
    missing = verdict_missing(draft, lang)
    if missing:
        await ctx.warn(
            "verdict_parts", gettext_noop("The verdict lacks: %(parts)s."), parts=verbatim(sep.join(missing))
        )
    if len(draft) > limit:
        await ctx.warn(
            "verdict_long",
            gettext_noop(
                "The verdict was still %(count)d characters when asked again: each part was shortened to fit %(limit)d."
            ),
            count=len(draft),
            limit=limit,
        )
        draft = fit_verdict(draft, limit)
    return draft


def _sentence(line: str) -> str:
    return line[:1].upper() + line[1:]


def _conclusion_kind(kind: str, lang: str = "zh") -> str:
    if lang == "en":
        return {
            "investment": "recommended actions",
            "choice": "the conclusion and where it holds",
            "truth": "where to adopt it, and how to keep checking it",
        }.get(kind, "the conclusion")
    return {"investment": "行动建议", "choice": "结论与适用边界", "truth": "采纳边界与验证跟踪"}.get(kind, "结论")


def _final_speeches(st: PanelState, chars: int = FINAL_SPEECH_CHARS) -> str:
    blocks = []
    for role in st.roles:
        last = max((r for s, r in st.speeches if s == role.slug), default=None)
        if last:
            speech = clip(st.speeches[(role.slug, last)], chars) if chars else "…"
            blocks.append(f"### {role.called(st.lang)}·R{last}\n{speech}")
    return "\n\n".join(blocks)


# -- the format ------------------------------------------------------------------------------------


@dataclass
class PanelOptions(CommonOptions):
    # The material every format reads, declared again with the panel's rule as its help: the start
    # form shows it beside the field before Start, and the refusal names the field by its label.
    evidence: str = dataclasses.field(
        default="",
        metadata={"option": dataclasses.replace(describe(CommonOptions)["evidence"], help=EVIDENCE_RULE)},
    )
    research_budget: str = option(  # the cap's multiplier
        "standard",
        kind="choice",
        label=gettext_noop("Research budget"),
        help=gettext_noop("Deeper research lets the panel spend more tokens and time."),
        choices=(
            ("light", gettext_noop("light")),
            ("standard", gettext_noop("standard")),
            ("deep", gettext_noop("deep")),
        ),
        invalid=gettext_noop("Choose light, standard or deep."),
        aliases=("--budget",),
        example="light",
    )
    token_budget: int | None = option(  # lowers the seed's cap (the baseline multiple), never raises it
        None,
        kind="int",
        label=gettext_noop("Token budget"),
        help=gettext_noop(
            "Empty: the panel's own cap, 4.3–5 × one strong prompt, measured when the debate starts. A budget may "
            "lower that cap, never raise it: a larger one is held to the cap, and the report says so. Every turn "
            "is paid for before it starts, so the run never spends past the cap, and the verdict is always "
            "written from the part kept for it."
        ),
        minimum=1,
        example=20000,
    )
    proposition_type: str = option(  # when the user states it, the host's reading of it is not needed
        "",
        kind="choice",
        label=gettext_noop("Proposition type"),
        help=gettext_noop(
            "Empty: the host classifies the proposition. Stated, it is debated as this type even when the "
            "host's own answer cannot be read."
        ),
        choices=tuple(TYPE_LABELS.items()),
        blank=gettext_noop("as the host classifies it"),
        invalid=gettext_noop("Choose one of the listed proposition types."),
        example="choice",
    )


class Panel(Format):
    name = "panel"
    label = gettext_noop("Panel")
    description = gettext_noop(
        "Five roles answer blind and in parallel, then cross-examine; a host who never debates writes the verdict."
    )
    Options = PanelOptions
    researches = True
    # The seed's five roles, each with its own concern, always all five: a table without one (the
    # verifier, say) would silently lose what only that role does (its R2 searches).
    seating = Seating(count=(ROLE_COUNT, ROLE_COUNT), host_kind="host")
    tokens = {"speech": 450, "host": 300, "verdict": 900}
    # The cap ends the speeches after R1 (five speeches in turn on the one local slot), then the
    # verdict. Every turn is paid for before it starts: with the bundled roles the concepts turn
    # (~700), R1's five speeches (~1,000 each, prompt and allowance) and the verdict's reserve (its
    # call and one resend, ~3,900) fit in 10,500; an R2 speech (its prompt ~3,000) does not.
    local = Sizing(
        gettext_noop("A token cap that ends the speeches after R1, shorter speeches and verdict: about 5 minutes."),
        options={"token_budget": 10_500},
        tokens={"speech": 220, "host": 220, "verdict": 450},
    )
    summary_limit = SUMMARY_LIMIT
    parallel_phases = frozenset({"r1", "r2", "r3", "r4"})
    phase_titles = {
        "r1": gettext_noop("R1 · Blind positions"),
        "r2": gettext_noop("R2 · Cross-response"),
        "r3": gettext_noop("R3 · Defence and revision"),
        "r4": gettext_noop("R4 · Closing"),
        "r2-search": gettext_noop("R2 · Searches"),
        "measure": MEASURE_TITLE,
    }

    def check(self, question, personas, options, library):
        problems = super().check(question, personas, options, library)
        if personas and len(personas) != ROLE_COUNT:
            problems["personas"] = text(FIVE_ROLES, count=len(personas))
        if options.token_budget is not None and options.token_budget < MIN_TOKEN_BUDGET:
            problems["token_budget"] = text(
                gettext_noop("At least %(min)d tokens: the verdict alone keeps %(reserve)d of them."),
                min=MIN_TOKEN_BUDGET,
                reserve=3 * self.tokens["verdict"],  # its answer, and a resend's draft and answer
            )
        return problems

    async def run(self, ctx: DebateContext) -> str:
        return await _run(ctx)


FORMAT = Panel()
