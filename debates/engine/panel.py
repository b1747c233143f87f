"""Panel (taixu-debate): five roles, blind parallel rounds, and a host who never debates.

Admission → evidence pack → concept alignment → R1 blind (parallel) → aggregate → R2 cross-response
with the others' raw R1 → aggregate marking blind spots → R3 defence/revision → open fronts per role
→ R4 only for roles with open fronts → mechanical citation check → verdict and transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from debates.engine import citations, research
from debates.engine.context import DebateContext
from debates.engine.evidence import Source
from debates.engine.format import Format, Seating
from debates.engine.i18n import gettext_noop, text, verbatim
from debates.engine.options import option
from debates.engine.plans import host_plan, plan
from debates.engine.report import ReportBuilder, table
from debates.engine.spec import CommonOptions, PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import bullet_items, clip, field_value, first_sentence, normalise, topic_slug
from debates.engine.turns import CapReached, DebateAborted, TurnPlan, TurnResult

SUMMARY_LIMIT = 60
VERDICT_LIMIT = 1200
MIN_TOKEN_BUDGET = 5000  # an explicit cap below this leaves the rounds next to nothing
VERDICT_RESERVE_FACTOR = 2  # the verdict's prompt and answer, each about one answer's allowance
CAP_MULTIPLIERS = {"light": 4.3, "standard": 4.5, "deep": 5.0}
ROUNDS = 4
TYPES = {"investment": "投资决策型", "choice": "选择决策型", "truth": "认知求真型"}  # as the prompts name them
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
CITE_FORMAT = "【引用 角色名·R1】“对方原话片段”"
FIVE_PARTS = (
    "按五要素输出，每项单独成行起头：\n"
    "立场：一句话\n核心论据：2–3 条，编号列出\n"
    f"反驳：针对他方具体论点，每条用 {CITE_FORMAT} 引用原话（逐字摘录）\n"
    "沉默声明：有反驳写“无”；没有任何反驳写“本轮沉默”\n"
    f"小结：白话一句，坚持/松动/转向了什么、因为什么（不超过 {SUMMARY_LIMIT} 字）"
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


@dataclass
class PanelState:
    roles: list[PersonaSpec]
    host: PersonaSpec
    kind: str = ""
    concepts: list[str] = field(default_factory=list)
    speeches: dict[tuple[str, int], str] = field(default_factory=dict)
    results: dict[tuple[str, int], TurnResult] = field(default_factory=dict)
    silent: set[str] = field(default_factory=set)
    blind_spots: str = ""
    fronts: dict[str, list[str]] = field(default_factory=dict)
    front_authors: dict[str, set[str]] = field(default_factory=dict)  # role → who opened its fronts
    own_sources: dict[str, list[Source]] = field(default_factory=dict)  # a role's own searches (R2)
    stopped_by_cap: int | None = None  # the round in which the cap stopped the run

    def aliases(self) -> dict[str, str]:
        names = {}
        for role in self.roles:
            for alias in (role.slug, role.name, role.role):
                if alias:
                    names[alias.lower()] = role.slug
        return names


DEFAULT_HOST = PersonaSpec(slug="cicero", name="西塞罗", kind="host", description="主持人：程序与记录，不下场辩论。")


def _host_plan(ctx: DebateContext, st: PanelState, key: str, task: str, material: str, fmt: str, **kw) -> TurnPlan:
    return host_plan(ctx, st.host, key, task=task, material=material, output=fmt, round_no=kw.pop("round_no", 0), **kw)


ADMISSION_TASK = (
    "入场审查：判断命题类型（投资决策型 / 选择决策型 / 认知求真型 / 不适合），以及是否可证伪。"
    "不可证伪的陈述、纯历史回顾、空泛的泛论、已形成强共识的命题都不适合。"
)
ADMISSION_FORM = "四行：\n类型：…\n可证伪：是 / 否\n理由：一句话\n话题标识：3–6 个英文小写单词，用连字符连接"


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
    result = await ctx.turn(
        _host_plan(
            ctx, st, "host:admission", ADMISSION_TASK, "", ADMISSION_FORM, exempt=True, form=ADMISSION_GRAMMAR_FORM
        )
    )
    admission = Admission.read(result.text)
    if not admission.readable(stated):
        again = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:admission-again",
                ADMISSION_TASK + "上一次的回答没有按四行格式写出类型与是否可证伪，请严格按格式重答。",
                f"## 上一次的回答\n{clip(result.text, 600)}",
                ADMISSION_FORM,
                exempt=True,
                form=ADMISSION_GRAMMAR_FORM,
            )
        )
        admission = Admission.read(again.text)
        if not admission.readable(stated):
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


async def _research(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Phase 0, the evidence pack: the host writes the searches the research budget allows, and
    what they find joins the material the user gave. Without a search provider research is
    skipped (and said so); an investment decision with no evidence at all stops here (the seed's
    hard stop)."""
    if ctx.research is None:
        await research.skipped(ctx)
    else:
        budget = research.budget_of(ctx.options.research_budget)
        task = f"证据底座：为核实本命题（{TYPES.get(st.kind, st.kind)}）需要的事实与数据写网络检索词。"
        queries = await research.build_pack(ctx, st.host, budget, task, exempt=True)
        report.data["research_queries"] = queries
    if st.kind == "investment" and not ctx.evidence:
        # The seed: research failing for an investment decision is a hard stop, not a warning.
        raise DebateAborted(
            text(
                gettext_noop(
                    "An investment decision is not debated without evidence: add the material (figures, filings, "
                    "prices) in the Evidence field and start again."
                )
                if ctx.research is None
                else gettext_noop(
                    "An investment decision is not debated without evidence: the research found no sources and no "
                    "material was supplied. Add the material (figures, filings, prices) or documents and start again."
                )
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
    await ctx.phase(2, "r2-search", gettext_noop("R2 · %(name)s's searches"), name=verbatim(verifier.name))
    asked = await ctx.turn(
        plan(
            ctx,
            verifier,
            f"r2:queries:{verifier.slug}",
            round_no=2,
            phase="r2-search",
            rules=[
                f"你是「{verifier.name}」。R2 开始前你可以发起一次补充检索（最多 {research.OWN_SEARCHES} 条检索词），"
                "用外部数据检验他方 R1 的论点；结果在你的 R2 发言中可用，并从 R3 起对所有人公开。"
            ],
            material=_material(st, verifier, 2),
            output=research.query_output(research.OWN_SEARCHES, optional=True),
            max_tokens=research.QUERY_TOKENS,
            form=research.query_form(research.OWN_SEARCHES),
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
    frames = "\n\n".join(f"### {r.name}\n{r.text}" for r in st.roles)
    baseline = await ctx.turn(
        _host_plan(
            ctx,
            st,
            "host:baseline",
            "基线测量：一次性的强提示，要求五种视角完整分析本命题。",
            f"## 五种视角\n{frames}",
            "完整分析。",
            exempt=True,
            # Only its prompt is measured, but one token can be half a Chinese character, which
            # decodes to nothing: the server's empty reply then failed the debate (seen locally).
            max_tokens=BASELINE_TOKENS,
        )
    )
    answer = len(st.roles) * ctx.max_tokens("speech")
    baseline_tokens = baseline.prompt_tokens + answer
    cap = ctx.options.token_budget or int(baseline_tokens * multiplier)
    await ctx.plan(cap=cap)
    # The verdict's prompt is bounded (final speeches clipped) and so is its answer.
    ctx.ledger.reserve = min(cap, VERDICT_RESERVE_FACTOR * ctx.max_tokens("verdict"))
    report.data["token_cap"] = {
        "research_budget": budget,
        "multiplier": multiplier,
        "prompt_tokens": baseline.prompt_tokens,
        "answer_tokens": answer,
        "baseline_tokens": baseline_tokens,
        "cap": cap,
        "verdict_reserve": ctx.ledger.reserve,
        "explicit": bool(ctx.options.token_budget),
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
                    "one answer (one speech per perspective)."
                )
            )
            % cap
        )
    reserve = (
        t(
            gettext_noop(
                "%(verdict_reserve)d of it are kept for the verdict; admission and the baseline "
                "measurement do not count."
            )
        )
        % cap
    )
    return f"{line} {reserve}"


# A line that defines a term: "- 远程办公：每周四天以上…", "**Output**: features shipped…".
_DEFINITION_LINE = re.compile(
    r"^[\s>*\-•·\d.、)）]*(?:\*\*|「|“)?(?P<term>[^：:\n*」”]{1,24}?)(?:\*\*|」|”)?\s*[：:]\s*(?P<def>\S.{3,})$",
    re.MULTILINE,
)
# A sentence that defines one: "协作成本是指…", "Output means…".
_DEFINING_SENTENCE = re.compile(
    r"(?:^|[。；;.\n]\s*)(?P<term>[^。；;.\n，,]{1,24}?)\s*"
    r"(?:是指|指的是|定义为|界定为| means | is defined as | refers to )(?P<def>[^。；;\n]{4,})",
)
# Labels of material, not concepts.
_NOT_TERMS = {"材料", "来源", "数据", "证据", "注", "备注", "链接", "日期", "出处"}
_NOT_TERMS |= {"source", "note", "evidence", "url", "date", "link"}


def concepts_from_evidence(evidence: str) -> list[str]:
    """Up to five "term：definition" lines taken from the evidence as written (no model call: the
    seed has the host read them off the evidence pack)."""
    found: dict[str, str] = {}
    for pattern in (_DEFINITION_LINE, _DEFINING_SENTENCE):
        for match in pattern.finditer(evidence):
            term = match.group("term").strip(" *「」“”\"'")
            if term and term.lower() not in _NOT_TERMS and term.lower() not in found:
                found[term.lower()] = f"{term}：{clip(match.group('def').strip(), 140)}"
    return list(found.values())[:5]


_TERM_LINE = re.compile(rf"^\s*(?:[-*•]\s*)?(?:术语|概念|term)\s*[{NUMERALS}\d]*\s*[：:]\s*(?P<term>.+?)\s*$", re.I)
_DEFINITION_OF_TERM = re.compile(
    rf"^\s*(?:[-*•]\s*)?(?:定义|definition)\s*[{NUMERALS}\d]*\s*[：:]\s*(?P<def>.+?)\s*$", re.I
)


def concepts_from_answer(answer: str) -> list[str]:
    """The host's terms as "term：definition", at most five: term and definition on lines of their
    own ("术语一：…" then "定义一：…", as asked; also "概念：…" / "定义：…"), else bulleted
    "- term：definition" lines. A term line is never taken as a term named "术语" or "概念"."""
    pairs, term = [], ""
    for line in answer.splitlines():
        if found := _TERM_LINE.match(line):
            term = found.group("term").strip(" *「」“”")
        elif (found := _DEFINITION_OF_TERM.match(line)) and term:
            pairs.append(f"{term}：{found.group('def')}")
            term = ""
    if pairs:
        return pairs[:5]
    return (bullet_items(answer, 5) or [line.strip() for line in answer.splitlines() if "：" in line])[:5]


def concept_terms(concepts: list[str]) -> list[str]:
    return [re.split(r"[：:]", c, maxsplit=1)[0].strip() for c in concepts]


async def _align_concepts(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """3–5 terms with one definition each, read off the evidence when there is some, asked of the
    host (once) when there is none. Fewer than three fails the step: the roles then use words in
    their usual sense, and the report says so."""
    if ctx.evidence:
        concepts, source = concepts_from_evidence(ctx.evidence.material()), "evidence"
    else:
        result = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:concepts",
                "概念对齐：从议题中提炼 3–5 个核心概念，各给一个统一定义（口径边界）。",
                "",
                CONCEPTS_OUTPUT,
                round_no=0,
                form=CONCEPTS_FORM,
            )
        )
        concepts, source = [clip(item, 160) for item in concepts_from_answer(result.text)], "host"
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
    unused = [r.name for r in st.roles if (r.slug, 1) in st.speeches and not use[r.slug]]
    if unused:
        await ctx.warn(
            "concepts_unused",
            gettext_noop("%(roles)s used none of the aligned terms (%(terms)s) in R1."),
            roles=verbatim("、".join(unused)),
            terms=verbatim("、".join(terms)),
        )


def _speech_postprocess(text: str) -> tuple[str, dict]:
    silence = field_value(text, ("沉默声明", "silence"))
    declared = "本轮沉默" in silence or silence.startswith("沉默") or silence.lower().startswith("silent")
    cited = len(citations.find_citations(text))
    rebuttal = field_value(text, ("反驳", "rebuttal"), multiline=True).strip("：: ")
    # Silence means rebutting nothing: a speech that declares it but rebuts anyway is not silent.
    rebuts = cited > 0 or (rebuttal and not rebuttal.startswith(("无", "none", "None")))
    return text, {
        "position": clip(field_value(text, ("立场", "position")) or first_sentence(text), 200),
        "silent": declared and not rebuts,
        "citations": cited,
    }


def _role_plan(
    ctx: DebateContext, st: PanelState, role: PersonaSpec, round_no: int, rules: list[str], material: str
) -> TurnPlan:
    concept_block = "\n".join(f"- {c}" for c in st.concepts)
    return plan(
        ctx,
        role,
        f"r{round_no}:{role.slug}",
        round_no=round_no,
        phase=f"r{round_no}",
        rules=[
            f"你是五角色辩论中的「{role.name}」（{role.role or role.tier}），始终守住你自己的核心关切。",
            f"命题类型：{TYPES.get(st.kind, st.kind)}。",
            *rules,
            "概念一律使用下列统一定义：\n" + concept_block if concept_block else "概念按通常含义使用。",
        ],
        material=material,
        output=CLOSING_PARTS if round_no == 4 else FIVE_PARTS,
        form=CLOSING_FORM if round_no == 4 else SPEECH_FORM,
        others=[r.name for r in st.roles if r.slug != role.slug],
        postprocess=_closing_postprocess(st, role) if round_no == 4 else _speech_postprocess,
    )


def _raw(st: PanelState, round_no: int, exclude: str | None = None, only: str | None = None) -> str:
    blocks = []
    for role in st.roles:
        if role.slug == exclude or (only and role.slug != only):
            continue
        text = st.speeches.get((role.slug, round_no))
        if text is not None:
            blocks.append(f"### {role.name}·R{round_no}（原文）\n{text}")
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
        raise CapReached(f"r{round_no}", results)


def _active(st: PanelState) -> list[PersonaSpec]:
    return [r for r in st.roles if r.slug not in st.silent]


def open_fronts(st: PanelState) -> dict[str, list[str]]:
    """For each role, the points of the others' R3 that attack it or revise positions touching it:
    lines that cite it or name it."""
    aliases = st.aliases()
    fronts: dict[str, list[str]] = {r.slug: [] for r in st.roles}
    st.front_authors = {r.slug: set() for r in st.roles}
    for author in st.roles:
        text = st.speeches.get((author.slug, 3))
        if not text:
            continue
        for line in text.splitlines():
            if not line.strip() or line.strip().startswith(("小结", "沉默声明")):
                continue
            touched = {aliases.get(c.speaker.lower()) for c in citations.find_citations(line)}
            for role in st.roles:
                if role.slug != author.slug and (role.slug in touched or role.name in line):
                    fronts[role.slug].append(f"{author.name}：{clip(line.strip(), 200)}")
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
            | {r.name for r in st.roles if r.slug not in allowed | {role.slug} and r.name in defence}
        )
        return text, {
            "position": clip(first_sentence(statement) or first_sentence(text), 200),
            "silent": False,
            "citations": len(quoted),
            "missing_parts": [zh for zh, en in CLOSING_LABELS if not field_value(text, (zh, en))],
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
                found = verbatim("、".join(result.data[key]))
                await ctx.warn(code, msgid, speaker=role.name, found=found)
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


def _material(st: PanelState, role: PersonaSpec, round_no: int) -> str:
    """What a role may see in each round: nothing (R1, blind); its own R1 and the others' raw R1
    (R2); its own R1+R2, the others' raw R2 and the host's blind spots (R3); its open fronts and
    the R3 record (R4)."""
    own = {r: st.speeches.get((role.slug, r), "") for r in (1, 2)}
    if round_no == 1:
        return ""
    if round_no == 2:
        found = st.own_sources.get(role.slug)
        searched = f"\n\n## 你的补充检索结果\n{research.described(found)}" if found else ""
        return f"## 你自己的 R1\n{own[1]}\n\n## 他方 R1 原文\n{_raw(st, 1, exclude=role.slug)}{searched}"
    if round_no == 3:
        return (
            f"## 你自己的 R1\n{own[1]}\n\n## 你自己的 R2\n{own[2]}\n\n## 他方 R2 原文\n"
            f"{_raw(st, 2, exclude=role.slug)}\n\n## 主持人标注的盲区\n{st.blind_spots}"
        )
    fronts = "\n".join(f"- {f}" for f in st.fronts[role.slug])
    return f"## 你的开放战线\n{fronts}\n\n## R3 原文\n{_raw(st, 3)}"


async def _speak(ctx: DebateContext, st: PanelState, round_no: int, roles: list[PersonaSpec]) -> None:
    """One round: the roles speak in parallel, each in its own isolated call."""
    title, rule = ROUNDS_TEXT[round_no]
    await ctx.phase(round_no, f"r{round_no}", title)
    await _round(
        ctx, st, round_no, [_role_plan(ctx, st, r, round_no, [rule], _material(st, r, round_no)) for r in roles]
    )


async def _mark_blind_spots(ctx: DebateContext, st: PanelState) -> None:
    """Host aggregate #2: the dimensions nobody addressed, marked but not steered."""
    blind = await ctx.turn(
        _host_plan(
            ctx,
            st,
            "host:aggregate2",
            "汇总 #2：标注全场盲区——各方都没有谈到的维度。只标注，不引导，不评价。",
            "\n\n".join(_raw(st, 2, only=r.slug) for r in st.roles),
            "最多 3 条：- 盲区：…",
            round_no=2,
        )
    )
    st.blind_spots = blind.text


async def _run(ctx: DebateContext) -> str:
    spec = ctx.spec
    # No seats chosen: the library's roles (the bundled five) sit at the table.
    roles = [s.persona for s in spec.seats if s.persona.kind == "debater"] or [
        p for p in ctx.library.pool if p.kind == "debater"
    ]
    if len(roles) < 2:
        raise DebateAborted(text(gettext_noop("A panel needs at least two debating roles.")), outcome="refused")
    st = PanelState(roles=roles, host=ctx.library.host or DEFAULT_HOST)
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
            turn=verbatim(stop.key),
            round=st.stopped_by_cap,
        )
        report.data["stopped_by_cap_in_round"] = st.stopped_by_cap
    await _flag_closings(ctx, st, report)

    checks = _check_citations(st)
    await _write_report(ctx, st, report, checks)
    return "done"


async def _rounds(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Concept alignment, then R1 to R4; the token cap may stop them before any turn (`CapReached`)."""
    await ctx.phase(0, "concepts", gettext_noop("Concept alignment"))
    try:
        await _align_concepts(ctx, st, report)
    except CapReached:
        st.stopped_by_cap = 1
        raise
    await _speak(ctx, st, 1, st.roles)
    await _check_concept_use(ctx, st, report)
    await _verifier_searches(ctx, st)
    await _speak(ctx, st, 2, _active(st))
    try:
        await _mark_blind_spots(ctx, st)
    except CapReached:
        st.stopped_by_cap = 3
        raise
    await _speak(ctx, st, 3, _active(st))
    st.fronts = open_fronts(st)
    report.data["open_fronts"] = {k: len(v) for k, v in st.fronts.items()}
    closing = [r for r in _active(st) if st.fronts.get(r.slug)]
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
        [role.name]
        + [
            st.results[(role.slug, r)].summary
            if (role.slug, r) in st.results
            else (silent if role.slug in st.silent else "—")
            for r in rounds
        ]
        for role in st.roles
    ]
    return table([translate(gettext_noop("Role"))] + [f"R{r}" for r in rounds], rows)


async def _write_report(ctx, st: PanelState, report: ReportBuilder, checks) -> None:
    bad = [c for c in checks if not c.ok]
    t = ctx.translate
    review = [
        "- "
        + t(gettext_noop("Citation check: %(count)d quotes, %(bad)d not verified."))
        % {"count": len(checks), "bad": len(bad)}
    ]
    review += [
        f"  - ⚠️ {c.citing} → {c.citation.speaker}·R{c.citation.round} “{clip(c.citation.quote, 40)}”: {t(c.reason)}"
        for c in bad
    ]
    if not ctx.evidence:
        review.append(f"- {t(NO_EVIDENCE)}")
    if ctx.ledger.estimated:
        review.append("- " + t(gettext_noop("Some token counts are estimates (the server reported no usage).")))
    if formula := _cap_formula(ctx, report):
        review.append(f"- {formula}")
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
        verdict_text = await _verdict(ctx, st)
    else:
        verdict_text = t(gettext_noop("The token cap left no room for any speech: there is nothing to judge."))
    report.data["verdict"] = verdict_text
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
_HEADING = re.compile(r"^[ \t]*(?:#+|\*\*|【)?\s*(?P<name>[^\n]{1,40})$", re.MULTILINE)


def _part_of(line: str) -> str | None:
    line = line.strip("*#【】 ").lower()
    return next((zh for zh, en in VERDICT_PARTS if line.startswith((zh, *en))), None)


def verdict_parts(verdict: str) -> list[tuple[str, str, str]]:
    """The parts found, as (part, heading line, body) in the order written. A heading is a short line
    (or a Markdown heading) that starts with a part's name: "## 三区（…）", "**Highlights**"."""
    heads = [(m, part) for m in _HEADING.finditer(verdict) if (part := _part_of(m.group("name")))]
    parts = []
    for i, (match, part) in enumerate(heads):
        end = heads[i + 1][0].start() if i + 1 < len(heads) else len(verdict)
        parts.append((part, match.group(0).strip(), verdict[match.end() : end].strip()))
    return parts


def verdict_missing(verdict: str) -> list[str]:
    found = {part for part, _, _ in verdict_parts(verdict)}
    return [zh for zh, _ in VERDICT_PARTS if zh not in found]


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


async def _verdict(ctx: DebateContext, st: PanelState) -> str:
    """The verdict within 1200 characters with its four parts: a draft that misses either is sent
    back once with its count; a second draft still too long is shortened part by part, never by
    cutting its end (where the conclusion is)."""
    form = (
        "依次四节：\n## 辩论精华（2–3 条穿透性引文）\n## 三区（共识区 / 分歧区 / 未决区）\n## 综合判断\n"
        f"## 结论产出（{_conclusion_kind(st.kind)}）"
    )
    task = f"撰写摘要版裁决书（面向普通读者，禁止术语黑话，不超过 {VERDICT_LIMIT} 字）。"
    material = f"## 立场演化\n{evolution_table(st)}\n\n## 各方最终发言\n" + _final_speeches(st)
    draft = (await ctx.turn(_host_plan(ctx, st, "host:verdict", task, material, form, kind="verdict"))).text
    missing = verdict_missing(draft)
    if len(draft) > VERDICT_LIMIT or missing:
        problems = []
        if len(draft) > VERDICT_LIMIT:
            problems.append(f"上一稿 {len(draft)} 字，超出 {VERDICT_LIMIT} 字上限，请压缩到 {VERDICT_LIMIT} 字以内")
        if missing:
            problems.append("上一稿缺少：" + "、".join(missing))
        again = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:verdict-again",
                task + "；".join(problems) + "。保留结论，改写全文。",
                f"## 上一稿\n{draft}",
                form,
                kind="verdict",
            )
        )
        draft = again.text
    missing = verdict_missing(draft)
    if missing:
        await ctx.warn(
            "verdict_parts", gettext_noop("The verdict lacks: %(parts)s."), parts=verbatim("、".join(missing))
        )
    if len(draft) > VERDICT_LIMIT:
        await ctx.warn(
            "verdict_long",
            gettext_noop(
                "The verdict was still %(count)d characters when asked again: each part was shortened to fit %(limit)d."
            ),
            count=len(draft),
            limit=VERDICT_LIMIT,
        )
        draft = fit_verdict(draft)
    return draft


def _conclusion_kind(kind: str) -> str:
    return {"investment": "行动建议", "choice": "结论与适用边界", "truth": "采纳边界与验证跟踪"}.get(kind, "结论")


def _final_speeches(st: PanelState) -> str:
    blocks = []
    for role in st.roles:
        last = max((r for s, r in st.speeches if s == role.slug), default=None)
        if last:
            blocks.append(f"### {role.name}·R{last}\n{clip(st.speeches[(role.slug, last)], 900)}")
    return "\n\n".join(blocks)


# -- the format ------------------------------------------------------------------------------------


@dataclass
class PanelOptions(CommonOptions):
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
    token_budget: int | None = option(  # an explicit cap instead of the baseline multiple
        None,
        kind="int",
        label=gettext_noop("Token budget"),
        help=gettext_noop("Empty: the format's own cap. Past it the speeches end and the verdict is still written."),
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
    seating = Seating(count=(3, 5), host_kind="host")
    tokens = {"speech": 450, "host": 300, "verdict": 900}
    summary_limit = SUMMARY_LIMIT
    parallel_phases = frozenset({"r1", "r2", "r3", "r4"})
    phase_titles = {
        "r1": gettext_noop("R1 · Blind positions"),
        "r2": gettext_noop("R2 · Cross-response"),
        "r3": gettext_noop("R3 · Defence and revision"),
        "r4": gettext_noop("R4 · Closing"),
        "r2-search": gettext_noop("R2 · Searches"),
    }

    def check(self, question, personas, options, library):
        problems = super().check(question, personas, options, library)
        if options.token_budget is not None and options.token_budget < MIN_TOKEN_BUDGET:
            problems["token_budget"] = text(
                gettext_noop("At least %(min)d tokens: the verdict alone keeps %(reserve)d of them."),
                min=MIN_TOKEN_BUDGET,
                reserve=VERDICT_RESERVE_FACTOR * self.tokens["verdict"],
            )
        return problems

    async def run(self, ctx: DebateContext) -> str:
        return await _run(ctx)


FORMAT = Panel()
