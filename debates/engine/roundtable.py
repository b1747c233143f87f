"""Roundtable: tiered roles, a blind first round, a checkpoint, mandatory challenge, an action guide.

The checkpoint after R1 does not hold a coroutine open while the user thinks: the engine emits
`Checkpoint` and returns "waiting"; the runner resumes later with `spec.checkpoint_reply` set and
the finished R1 turns replayed from the database. That also survives a server restart.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from debates.engine import events as ev
from debates.engine import research
from debates.engine.context import DebateContext
from debates.engine.format import Format, Mode, Seating, Sizing, Suggestion
from debates.engine.i18n import CJK, Text, gettext_noop, language_of, say, text, verbatim
from debates.engine.moderated import keyword_hits
from debates.engine.options import option
from debates.engine.plans import host_plan, plan
from debates.engine.report import ReportBuilder, table
from debates.engine.spec import CommonOptions, DomainTemplateSpec, LibrarySpec, PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import WHAT_TO_DO, bullet_items, clip, field_value, first_sentence, normalise, summary_of
from debates.engine.turns import DebateAborted, TurnPlan, TurnResult

SUMMARY_LIMIT = 80
MIN_FAILURE_SCENARIO = 15
DEFAULT_HOST = PersonaSpec(slug="roundtable-host", name="圆桌主持", name_en="Roundtable host", kind="host")

# Suitability (seed §一): questions better answered directly than debated. The model decides; these
# patterns only give it a hint (they misfire on ordinary questions: "What is the best pricing
# strategy…" is no simple fact).
UNSUITABLE = {
    "simple fact": (
        r"^(什么是|何为|.{0,20}是什么[？?]?$|.{0,30}的定义|define\b|what is\b|what are\b|who is\b|when did\b)",
    ),
    "single bug fix": (r"(报错|bug|异常栈|stack ?trace|traceback|编译错误|怎么修复|fix (this|the|my) )",),
    "urgent": (r"(紧急|马上|立刻|今天之内|right now|urgent|asap)",),
    "already decided": (r"(已经决定|已决定|已经定了|just (tell|help) me (how )?to execute|已拍板)",),
}
UNSUITABLE_LABELS = {
    "simple fact": gettext_noop("simple fact"),
    "single bug fix": gettext_noop("single bug fix"),
    "urgent": gettext_noop("urgent matter"),
    "already decided": gettext_noop("decision already made"),
}
# The classes as the host is asked to name them, and the words that name each in its answer.
SUITABILITY_CLASSES = {
    "simple fact": ("简单事实", "simple fact", "定义", "definition"),
    "single bug fix": ("单一修复", "bug", "single fix"),
    "urgent": ("紧急", "urgent"),
    "already decided": ("已有结论", "已决定", "already decided"),
}
SUITABILITY_TASK = {
    "zh": "判断这个议题是否值得开圆桌。不适合的四类：简单事实查询或定义解释；单一代码修复或明确的 bug；"
    "紧急的时间敏感决策；已有明确结论、只差执行的任务。复杂多维决策、方案对比、风险预判、战略规划都适合。",
    "en": "Judge whether this question deserves a roundtable. Four kinds do not: a simple fact to look up or a "
    "definition; a single code fix or a clear bug; an urgent, time-critical decision; a task whose conclusion is "
    "already made and only needs doing. Complex decisions with many sides, comparing options, foreseeing risks "
    "and strategy all deserve one.",
}
SUITABILITY_FORM = {
    "zh": "两行：\n类别：适合 / 简单事实 / 单一修复 / 紧急 / 已有结论\n理由：一句话",
    "en": "Two lines:\nClass: suitable / simple fact / single fix / urgent / already decided\nReason: one sentence",
}
CONFIDENCE_LABELS = (gettext_noop("high"), gettext_noop("medium"), gettext_noop("low"))
CONFIDENCE = {"高": "high", "中": "medium", "低": "low", "high": "high", "medium": "medium", "low": "low"}
CONFIDENCE_ZH = {"high": "高", "medium": "中", "low": "低"}


def suitability(question: str) -> tuple[bool, str]:
    """The keyword hint: (False, class) when a pattern of an unsuitable class matches."""
    text = question.strip()
    for reason, patterns in UNSUITABLE.items():
        if any(re.search(p, text, re.IGNORECASE) for p in patterns):
            return False, reason
    return True, ""


# A question that asks for a choice is no fact to look up, whatever a small host answers (the
# bundled 1.5B model called "should we move the team to a four-day week?" a simple fact, and the
# table answered it in one turn instead of debating it).
DECISION_PATTERN = re.compile(
    rf"{WHAT_TO_DO}|是否|还是|哪个|哪种|哪条|如何选|怎么选|利弊|最好|最佳|最合适|"
    r"\bwhether\b|\bwhich\b|\bbetter\b|\bbest\b|\bor\b|\bvs\.?|\bversus\b|\bpros and cons\b",
    re.IGNORECASE,
)


def asks_a_decision(question: str) -> bool:
    return bool(DECISION_PATTERN.search(question))


def read_suitability(answer: str) -> tuple[str, str]:
    """The host's class ("" for suitable or unreadable: only a named class refuses) and reason,
    in either language whatever the debate's."""
    named = field_value(answer, ("类别", "class", "category")).lower()
    fits = ("适合" in named and "不适合" not in named) or (
        "suitable" in named and not re.search(r"\b(un|not |isn't |is not )suitable", named)
    )
    found = "" if fits else named
    kind = next((k for k, words in SUITABILITY_CLASSES.items() if any(w in found for w in words)), "")
    return kind, field_value(answer, ("理由", "reason")) or first_sentence(answer)


# Words in a question that pick a mode when the form is left on its default (seed §四).
MODE_WORDS = {
    "quick": ("快速", "简单讨论", "快速看看", "quick", "quickly", "brief"),
    "deep": ("深入", "深度", "战略级", "in depth", "in-depth", "deep dive", "strategic"),
}


def mode_from_words(question: str) -> str:
    q = question.lower()
    return next((mode for mode, words in MODE_WORDS.items() if any(w in q for w in words)), "")


# -- who sits at the table -------------------------------------------------------------------------

# The tension every table seats (seed: 每场必选 2-3 个 L1; the veto and "risks = the devil's
# advocate's unresolved objections" need the devil's advocate, and the optimist argues back).
TENSION = ("devil-advocate", "optimist")
# The third stance when the question names none: the realist of means first (any decision has a cost).
THIRD_STANCES = ("resource-constraint", "systems-thinker", "data-evidence", "user-advocate")
# Per mode: how many experts (L2) a full table seats; the stances (L1) are two, three when the
# experts that fit the question are too few to fill the mode's seats.
EXPERTS = {"quick": 1, "standard": 3, "deep": 4}
MAX_STANCES = 3
# Every table seats 2-3 L1 stances (每场必选 2-3 个 L1): Agora's own pick (`recommend_roles`)
# always does, and a person's choice that does not is refused beside the roles, saying why.
MIN_STANCES = 2
STANCES_RULE = gettext_noop(
    "A roundtable seats 2–3 stances (L1 roles such as the devil's advocate and the optimist): their clash is "
    "what keeps it adversarial. You chose %(count)d. Add or remove stances, or choose no roles to let Agora "
    "pick the table."
)


def relevance(question: str, keywords) -> int:
    """How many of `keywords` the question holds, in either language (Latin words on word
    boundaries with their common endings, Chinese as substrings)."""
    return len(keyword_hits(question, tuple(k for k in keywords if k)))


def _template_score(question: str, template: DomainTemplateSpec, by_slug: dict[str, PersonaSpec]) -> int:
    """A template fits by meaning, not by one shared word: its own keywords count double, and the
    keywords of the experts it seats count too, so "adopt microservices" (the architect's and
    the template's word) outweighs "startup" said in passing."""
    own = relevance(question, template.keywords)
    if not own:
        return 0
    experts = [by_slug[s] for s in template.roles if s in by_slug and by_slug[s].tier == "l2"]
    return 2 * own + sum(relevance(question, p.keywords) for p in experts)


def best_template(
    question: str, templates: list[DomainTemplateSpec], pool: list[PersonaSpec]
) -> DomainTemplateSpec | None:
    by_slug = {p.slug: p for p in pool}
    scored = [(_template_score(question, t, by_slug), -n, t) for n, t in enumerate(templates)]
    best = max(scored, key=lambda item: item[:2], default=None)
    return best[2] if best and best[0] > 0 else None


def recommend_roles(
    question: str, templates: list[DomainTemplateSpec], pool: list[PersonaSpec], mode: str = "standard"
) -> tuple[list[PersonaSpec], DomainTemplateSpec | None]:
    """A good table (seed: 2 L1 + 3 L2): the devil's advocate and the optimist, the experts of
    the template that fits the question best (most relevant first), else the experts the question
    is about, and never an expert it is not about. A third stance (the template's, else the one
    the question concerns most) fills a table whose experts are too few; a table that still
    cannot fill the mode's seats is returned short (`auto_table` then picks the mode it fits)."""
    low, high = FORMAT.seat_bounds(mode)
    mode = FORMAT.mode(mode).name if FORMAT.mode(mode) else "standard"
    by_slug = {p.slug: p for p in pool if p.kind == "debater"}
    template = best_template(question, templates, pool)
    order = {slug: n for n, slug in enumerate(template.roles)} if template else {}
    stances = [p for p in by_slug.values() if p.tier == "l1"]
    stances.sort(
        key=lambda p: (
            p.slug not in TENSION,
            TENSION.index(p.slug) if p.slug in TENSION else 0,
            p.slug not in order,
            -relevance(question, p.keywords),
            order.get(p.slug, 0),
            THIRD_STANCES.index(p.slug) if p.slug in THIRD_STANCES else len(THIRD_STANCES),
            p.slug,
        )
    )
    experts = [p for p in by_slug.values() if p.tier == "l2"]
    scores = {p.slug: relevance(question, p.keywords) for p in experts}
    # The template's experts (most relevant first), then any other expert the question is about.
    fitting = sorted(
        (p for p in experts if p.slug in order or scores[p.slug] > 0),
        key=lambda p: (p.slug not in order, -scores[p.slug], order.get(p.slug, 0), p.slug),
    )
    fitting = [p for p in fitting if p.slug in order or scores[p.slug] > 0]
    picked_experts = fitting[: min(EXPERTS.get(mode, 3), high - 2)]
    room = max(0, low - len(picked_experts))
    picked_stances = stances[: min(MAX_STANCES, max(2, room))]
    roles = picked_stances + picked_experts
    return roles[:high], template


def auto_table(question: str, library: LibrarySpec, mode_name: str, chosen: bool) -> tuple[str, list, object]:
    """Agora's own table for a question: (mode, roles, template). With the mode left on Auto, a
    table too small for it (no expert fits the question) runs in the mode it fits (quick)."""
    roles, template = recommend_roles(question, library.domain_templates, library.pool, mode_name)
    low, _high = FORMAT.seat_bounds(mode_name)
    if len(roles) < low and not chosen:
        fits = next((m for m in FORMAT.modes if m.seats and m.seats[0] <= len(roles) <= m.seats[1]), None)
        if fits is None:
            fits = FORMAT.mode("quick")
            roles, template = recommend_roles(question, library.domain_templates, library.pool, fits.name)
        mode_name = fits.name
    return mode_name, roles, template


@dataclass
class TableState:
    roles: list[PersonaSpec]
    host: PersonaSpec
    rounds: int
    speeches: dict[tuple[str, int], TurnResult] = field(default_factory=dict)
    veto: dict | None = None


CONFIDENCE_ANYWHERE = re.compile(r"(?:置信度|confidence)\s*[:：]?\s*(高|中|低|high|medium|low)", re.IGNORECASE)


def confidence_of(text: str) -> str:
    """The stated confidence: its own line, or said inside another ("核心论点：…（置信度：低）")."""
    raw = field_value(text, ("置信度", "confidence"))
    found = next((v for k, v in CONFIDENCE.items() if k in raw.lower()), "")
    if not found:
        match = CONFIDENCE_ANYWHERE.search(text)
        found = CONFIDENCE[match.group(1).lower()] if match else ""
    return found


def parse_r1(text: str) -> tuple[str, dict]:
    confidence = confidence_of(text)
    arguments = bullet_items(field_value(text, ("论据", "arguments"), multiline=True), 3) or bullet_items(text, 3)
    thesis = field_value(text, ("核心论点", "论点", "thesis")) or first_sentence(text)
    return text, {
        "thesis": clip(first_sentence(thesis) or thesis, 160),
        "arguments": arguments,
        "confidence": confidence or "medium",
        "confidence_stated": bool(confidence),
    }


# A flaw or claim that only says there is none, or agrees, holds nothing to answer. Judged by what
# follows a negation, not by the negation: "没有评测数据" / "no evaluation data" name a real gap,
# "没有明显漏洞" / "I see no obvious flaw" name none.
_NEGATION_ZH = re.compile(
    r"^(?:我|这|这里|其中)?(?:并|也|完全|基本)?(?:没有|沒有|无|無|缺少|缺乏|未|不存在|看不出|找不到)"
)
_NEGATION_EN = re.compile(
    r"^(?:(?:i|there|it|this|that|the thesis|the claim)\s+)?"
    r"(?:(?:is|are|was|were|do|does|did|can|could|have|has)\s*(?:not|n't|no)|cannot|can't|no|not any|none|nothing|"
    r"lacks?|lacking|without|(?:see|saw|find|found|have|has)\s+(?:no|nothing))\b"
)
_FILLER_ZH = re.compile(
    r"发现|看到|找到|看出|什么|任何|明显|明确|具体|实质性|实质|重大|特别|需要|需|可以|可|要|的|了|之处|可言|其他|别的"
)
_NOTHING_ZH = {
    "",
    "漏洞",
    "问题",
    "缺陷",
    "异议",
    "反对意见",
    "反对",
    "质疑",
    "意见",
    "补充",
    "挑战",
    "挑剔",
    "毛病",
    "不足",
    "可说",
}
_FILLER_EN = frozenset(
    "a an the any obvious real clear specific major significant particular apparent serious see find found have has "
    "here there to add report raise say of i can in on with this that it its thesis claim argument really at all "
    "whatsoever other more further else".split()
)
_NOTHING_EN = frozenset(
    "flaw flaws problem problems issue issues objection objections weakness weaknesses gap gaps hole holes concern "
    "concerns challenge challenges comment comments disagreement disagreements complaint complaints thing things "
    "one".split()
)
_EMPTY = frozenset({"n/a", "na", "nil", "-", "—", "…", "略", "暂无", "无可挑剔", "不适用", "not applicable", "nope"})
# Agreement without a "but": the seed's "agree and add" (同意并补充), no challenge.
_AGREES = re.compile(
    r"^(?:我)?(?:也|完全|基本|大体)?(?:同意|赞同|认同|赞成)|^(?:i\s+)?(?:also\s+|fully\s+|mostly\s+)?agree"
)
_BUT = re.compile(r"但|然而|不过|可是|却|\bbut\b|\bhowever\b|\byet\b|\bexcept\b")


def says_nothing(value: str) -> bool:
    """True when a challenge's claim or flaw holds nothing to answer: empty, "无", "none", "没有
    明显漏洞", "I see no flaw", "N/A", or agreement with no "but". A negation that names what is
    missing ("没有评测数据", "无法覆盖冷启动", "lacks a rollback plan") is a real flaw."""
    said = re.sub(r"^[\s\-*•>]+", "", value.strip().lower()).strip(" *。.!！?？")
    if not said or said in _EMPTY:
        return True
    if _AGREES.match(said):
        return not _BUT.search(said)
    zh = _NEGATION_ZH.match(said)
    if zh:
        rest = re.sub(r"[\s，,。.、！!？?：:；;]", "", said[zh.end() :])
        return _FILLER_ZH.sub("", rest) in _NOTHING_ZH
    en = _NEGATION_EN.match(said)
    if en:
        words = re.findall(r"[a-z]+", said[en.end() :])
        return all(w in _FILLER_EN or w in _NOTHING_EN for w in words)
    return False


_NEXT_LABEL = re.compile(
    r"^[\s>*#\-•]*(?:\*\*)?\s*(?:质询对象|针对论点|漏洞|你的立场|小结|"
    r"challenge target|challenged claim|flaw|your position|summary)\s*(?:\*\*)?\s*[:：]",
    re.IGNORECASE,
)


def _until_label(value: str) -> str:
    """A multi-line value up to the next part of the challenge form (an English label such as
    "Your position" is longer than the generic label reader takes for one)."""
    lines = value.split("\n")
    cut = next((n for n, line in enumerate(lines) if n and _NEXT_LABEL.match(line)), len(lines))
    return "\n".join(lines[:cut]).strip()


def challenge_of(text: str, other_names: list[str]) -> dict[str, str] | None:
    """The R2 challenge, read by structure: whom (another role, named), which of their claims, and
    the flaw. None when any is missing: "我同意…并补充：风险在于执行" names nobody and no claim.
    Labels and names of either language count, whatever the debate's."""
    target = field_value(text, ("质询对象", "challenge target", "target"))
    claim = _until_label(field_value(text, ("针对论点", "challenged claim", "claim"), multiline=True))
    flaw = _until_label(field_value(text, ("漏洞", "flaw"), multiline=True))
    lowered = target.lower()
    whom = next((name for name in other_names if name and name.lower() in lowered), "")
    if not whom or says_nothing(claim) or says_nothing(flaw):
        return None
    return {"target": whom, "claim": clip(claim, 200), "flaw": clip(flaw, 300)}


def _r3_post(veto_right: bool):
    def post(text: str) -> tuple[str, dict]:
        decision = field_value(text, ("决定", "decision"))
        data = {"decision": "revise" if "修正" in decision or "revise" in decision.lower() else "hold"}
        data["confidence"] = confidence_of(text)
        if veto_right:
            veto = field_value(text, ("否决", "veto"))
            scenario = field_value(text, ("失败场景", "failure scenario"), multiline=True)
            data["veto_claimed"] = veto.lower().startswith(("是", "yes", "行使"))
            data["failure_scenario"] = scenario
        return text, data

    return post


def _plan(
    ctx: DebateContext,
    st: TableState,
    role: PersonaSpec,
    key: str,
    round_no: int,
    phase: str,
    rules: list[str],
    material: str,
    fmt: str,
    post=None,
    form: Form | None = None,
) -> TurnPlan:
    return plan(
        ctx,
        role,
        key,
        round_no=round_no,
        phase=phase,
        rules=[
            say(
                ctx.lang,
                f"圆桌讨论，你是「{role.called(ctx.lang)}」。保持你的认知立场，不要变成别的角色。",
                f"A roundtable discussion; you are {role.called(ctx.lang)}. Keep your stance of mind; "
                "do not turn into another role.",
            ),
            *rules,
        ],
        material=material,
        output=fmt,
        others=[r.called(ctx.lang) for r in st.roles if r.slug != role.slug],
        postprocess=post,
        form=form,
    )


def _all_r1(ctx: DebateContext, st: TableState) -> str:
    return "\n\n".join(
        f"### {r.called(ctx.lang)}·R1\n{st.speeches[(r.slug, 1)].text}" for r in st.roles if (r.slug, 1) in st.speeches
    )


def _names(ctx: DebateContext, roles: list[PersonaSpec]) -> str:
    return say(ctx.lang, "、", ", ").join(r.called(ctx.lang) for r in roles)


def _known_names(roles: list[PersonaSpec]) -> list[str]:
    """Every name the roles go by, both languages: a model may name a role either way."""
    return [name for r in roles for name in dict.fromkeys((r.name, r.name_en)) if name]


async def _run(ctx: DebateContext) -> str:
    spec, library = ctx.spec, ctx.library
    seated = [s.persona for s in spec.seats if s.persona.kind == "debater"]
    joined = [p for p in seated if p.slug in ctx.options.joined]  # seated at the checkpoint
    roles = [p for p in seated if p.slug not in ctx.options.joined]
    chosen = FORMAT.effective_mode(spec.question, ctx.options, len(roles))
    if chosen is None:
        raise DebateAborted(
            text(
                gettext_noop("There is no roundtable mode “%(mode)s”: quick, standard or deep."), mode=ctx.options.mode
            ),
            outcome="refused",
        )
    report = ReportBuilder(ctx, title=spec.question)
    if not ctx.options.mode and chosen.name != FORMAT.mode("").name:
        report.data["mode_from_question"] = chosen.name
    if not roles:
        picked, roles, template = auto_table(spec.question, library, chosen.name, bool(ctx.options.mode))
        report.data["recommended_by"] = template.slug if template else "keywords"
        if picked != chosen.name:  # too few roles fit the question for the mode it would have had
            report.data["mode_from_table"] = picked
            chosen = FORMAT.mode(picked)
    mode, rounds = chosen.name, chosen.rounds
    low, high = FORMAT.seat_bounds(mode)
    if not low <= len(roles) <= high:
        raise DebateAborted(
            text(
                gettext_noop("This mode seats %(bounds)s roles; %(count)d were chosen."),
                bounds=f"{low}–{high}" if low != high else str(low),
                count=len(roles),
            ),
            outcome="refused",
        )
    st = TableState(roles, library.host or DEFAULT_HOST, rounds)
    await ctx.plan(rounds=rounds)
    report.data.update({"mode": mode, "roles": [r.slug for r in roles], "rounds": rounds})

    if not ctx.options.force and not await _suitable(ctx, st, report):
        return "done"

    if mode == "deep" and ctx.research is not None:
        task = say(
            ctx.lang,
            "深度模式的检索：为本议题需要核实的关键事实与数据写网络检索词。",
            "Research for the deep mode: write web search queries for the key facts and figures this question "
            "needs checked.",
        )
        report.data["research_queries"] = await research.build_pack(ctx, st.host, research.BUDGETS["deep"], task)
    elif mode == "deep":
        await research.skipped(ctx)
        await ctx.phase(0, "research", gettext_noop("Research"))
        noted = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:research",
                say(
                    ctx.lang,
                    "深度模式的检索准备：列出本议题需要核实的关键事实与数据口径（不得编造数据，不确定就标注待核实）。",
                    "Research for the deep mode: list the key facts and figures this question needs checked "
                    "(invent no data; mark anything uncertain “to be checked”).",
                ),
                "",
                say(ctx.lang, "- 事实/数据：…（来源或“待核实”）", "- Fact/figure: … (source, or “to be checked”)"),
            )
        )
        ctx.evidence.note(noted.text)

    await ctx.phase(1, "r1", gettext_noop("Round 1 · Independent statements"))
    await _statements(ctx, st, roles)

    if rounds > 1 and not ctx.options.no_interrupt:
        if spec.checkpoint_reply is None:
            await ctx.emit(
                ev.Checkpoint(
                    text(
                        gettext_noop(
                            "Round 1 is done: every role has stated its thesis blind. Add facts the next rounds "
                            "should know, change who sits at the table, or continue."
                        )
                    )
                )
            )
            return "waiting"
        if spec.checkpoint_reply.strip():
            added = spec.checkpoint_reply.strip()
            ctx.evidence.note(say(ctx.lang, "用户在检查点补充：", "Added by the user at the checkpoint: ") + added)
            report.data["checkpoint_addition"] = added
            await ctx.phase(1, "checkpoint", gettext_noop("Facts added at the checkpoint"), note=added)
        await _change_table(ctx, st, report, joined)

    if rounds > 1:
        await _cross_examination(ctx, st)
        await _revision(ctx, st, report)
    await _synthesise(ctx, st, report)
    return "done"


# The forms each round writes, per language; the parsers read the labels of both.
R1_FORM = {
    "zh": "核心论点：一句话\n论据：\n1. …\n2. …\n（2–3 条）\n置信度：高 / 中 / 低\n小结：一句话（不超过 80 字）",
    "en": "Thesis: one sentence\nArguments:\n1. …\n2. …\n(2–3 of them)\nConfidence: high / medium / low\n"
    "Summary: one sentence (at most 80 characters)",
}
CONFIDENCE_PART = {
    "zh": Part("置信度", choices=("高", "中", "低")),
    "en": Part("Confidence", choices=("high", "medium", "low")),
}
EN = ": "  # an English form's colon: "Thesis: …"


def _form(lang: str, parts) -> Form:
    return Form(tuple(parts), colon=EN) if lang == "en" else Form(tuple(parts))


def r1_grammar(lang: str = "zh") -> Form:
    thesis, arguments, summary = ("Thesis", "Arguments", "Summary") if lang == "en" else ("核心论点", "论据", "小结")
    return _form(
        lang,
        (
            Part(thesis, chars=100),
            Part(arguments, chars=180, lines=3),
            CONFIDENCE_PART[lang],
            Part(summary, chars=SUMMARY_LIMIT),
        ),
    )


R1_GRAMMAR = r1_grammar("zh")
CHALLENGE_LABELS = {
    "zh": ("质询对象", "针对论点", "漏洞", "你的立场", "小结"),
    "en": ("Challenge target", "Challenged claim", "Flaw", "Your position", "Summary"),
}
CHALLENGE_FORM = {
    "zh": "质询对象：你要挑战的角色名（必须是另一位角色）\n针对论点：你挑战的那条核心论点（摘述原话）\n"
    "漏洞：这条论点的具体漏洞（不许“同意并补充”）\n你的立场：一句话\n小结：一句话（不超过 80 字）",
    "en": "Challenge target: the name of the role you challenge (another role, not you)\n"
    "Challenged claim: the thesis you challenge (quote or sum it up)\n"
    "Flaw: the concrete flaw in that thesis (no “I agree and would add”)\nYour position: one sentence\n"
    "Summary: one sentence (at most 80 characters)",
}


def challenge_form(others: list[str], lang: str = "zh") -> Form:
    """R2: whom (one of the others, by name), which claim, the flaw, one's own position."""
    target, claim, flaw, position, summary = CHALLENGE_LABELS[lang]
    return _form(
        lang,
        (
            Part(target, choices=tuple(others)),
            Part(claim, chars=100),
            Part(flaw, chars=150, lines=2),
            Part(position, chars=80),
            Part(summary, chars=SUMMARY_LIMIT),
        ),
    )


REVISION_FORM = {
    "zh": "决定：修正 / 坚持\n理由：修正给理由，坚持给反驳\n最终立场：一句话\n置信度：高 / 中 / 低\n"
    "小结：一句话（不超过 80 字）",
    "en": "Decision: revise / hold\nReason: why you revise, or your rebuttal if you hold\n"
    "Final position: one sentence\nConfidence: high / medium / low\nSummary: one sentence (at most 80 characters)",
}
VETO_FORM = {
    "zh": "\n否决：是 / 否（你有一票否决权，但只有附上具体失败场景才有效）\n失败场景：具体描述方案会怎样失败",
    "en": "\nVeto: yes / no (you hold a veto, but it counts only with a concrete failure scenario)\n"
    "Failure scenario: describe concretely how the plan fails",
}


def revision_form(veto_right: bool, lang: str = "zh") -> Form:
    en = lang == "en"
    parts = [
        Part("Decision", choices=("revise", "hold")) if en else Part("决定", choices=("修正", "坚持")),
        Part("Reason" if en else "理由", chars=150, lines=2),
        Part("Final position" if en else "最终立场", chars=80),
        CONFIDENCE_PART[lang],
        Part("Summary" if en else "小结", chars=SUMMARY_LIMIT),
    ]
    if veto_right:
        parts += (
            [Part("Veto", choices=("yes", "no")), Part("Failure scenario", chars=150)]
            if en
            else [Part("否决", choices=("是", "否")), Part("失败场景", chars=150)]
        )
    return _form(lang, parts)


def suitability_grammar(lang: str = "zh") -> Form:
    if lang == "en":
        classes = ("suitable", "simple fact", "single fix", "urgent", "already decided")
        return _form(lang, (Part("Class", choices=classes), Part("Reason", chars=80)))
    return Form((Part("类别", choices=("适合", "简单事实", "单一修复", "紧急", "已有结论")), Part("理由", chars=80)))


SUITABILITY_GRAMMAR = suitability_grammar("zh")


async def _statements(ctx: DebateContext, st: TableState, roles: list[PersonaSpec]) -> None:
    """Round 1: each role states its thesis blind (also a role seated at the checkpoint)."""
    rule = [
        say(
            ctx.lang,
            "轮次 1：只看议题，看不到其他角色的发言（防锚定）。",
            "Round 1: you see only the question, not what the other roles say (no anchoring).",
        )
    ]
    fmt, form = R1_FORM[ctx.lang], r1_grammar(ctx.lang)
    plans = [_plan(ctx, st, r, f"r1:{r.slug}", 1, "r1", rule, "", fmt, parse_r1, form) for r in roles]
    results = await _arguments_asked_again(ctx, st, await ctx.parallel(plans), rule, fmt, form)
    for result in results:
        st.speeches[(result.speaker.slug, 1)] = result
        if not result.data.get("confidence_stated"):
            await ctx.warn(
                "confidence_missing",
                gettext_noop("%(speaker)s stated no confidence: recorded as medium."),
                speaker=result.speaker,
            )


_ARGUMENTS_LABEL = re.compile(r"^[\s#*]*(?:论据|arguments)[\s*]*[:：]", re.IGNORECASE | re.MULTILINE)


def without_arguments(text: str) -> bool:
    """A round 1 statement that gives its thesis no argument (the seed asks for 2–3): the bundled
    model once wrote "论据：高", its confidence in the arguments' place. Arguments written as prose
    rather than a list count, and so does a statement in prose without the form's labels, unless
    it is too short to hold any."""
    if _ARGUMENTS_LABEL.search(text):
        value = field_value(text, ("论据", "arguments"), multiline=True)
        return not bullet_items(value) and len(normalise(value)) < 8
    return not bullet_items(text) and len(normalise(text)) < 40


async def _arguments_asked_again(
    ctx: DebateContext, st: TableState, results: list[TurnResult], rule: list[str], fmt: str, form: Form
) -> list[TurnResult]:
    """`results` with each model's statement that gave no arguments written once more, asked for
    them (together, as the round was); the second one stands either way, and a resumed debate
    replays both."""
    lacking = [r for r in results if without_arguments(r.text) and not ctx.is_human(r.speaker.slug)]
    if not lacking:
        return results
    for result in lacking:
        if not result.replayed:
            await ctx.warn(
                "arguments_missing",
                gettext_noop("%(speaker)s gave its thesis no arguments: asked once more."),
                speaker=result.speaker,
            )
    asked = say(
        ctx.lang,
        "你上一版的“论据”一项没有写出论据，被主持人退回。这一次在“论据：”下列出 2–3 条支持核心论点的具体论据。",
        "The host sent your last version back: its “Arguments” part gave no argument. This time list 2–3 concrete "
        "arguments for your thesis under “Arguments:”.",
    )
    plans = [
        _plan(ctx, st, r.speaker, f"r1:{r.speaker.slug}:again", 1, "r1", [*rule, asked], "", fmt, parse_r1, form)
        for r in lacking
    ]
    again = {a.speaker.slug: a for a in await ctx.parallel(plans)}
    for result in again.values():
        if without_arguments(result.text) and not result.replayed:
            await ctx.warn(
                "arguments_missing_kept",
                gettext_noop("%(speaker)s still gave no arguments when asked again."),
                speaker=result.speaker,
            )
    return [again.get(r.speaker.slug, r) for r in results]


async def _change_table(ctx: DebateContext, st: TableState, report: ReportBuilder, joined: list[PersonaSpec]) -> None:
    """The checkpoint's other change (seed: the user may replace, add or remove roles): roles who
    left keep their round-1 statement in the record and take no further part; roles who joined
    state theirs blind before the cross-examination."""
    left = [r for r in st.roles if r.slug in ctx.options.left]
    if not left and not joined:
        return
    st.roles = [r for r in st.roles if r not in left] + joined
    change = {"joined": [r.slug for r in joined], "left": [r.slug for r in left]}
    report.data["table_change"] = change
    report.data["roles"] = [r.slug for r in st.roles]
    note = "; ".join(
        filter(
            None,
            [
                ("+ " + _names(ctx, joined)) if joined else "",
                ("− " + _names(ctx, left)) if left else "",
            ],
        )
    )
    await ctx.phase(1, "table", gettext_noop("The table changed at the checkpoint"), note=note)
    if joined:
        await _statements(ctx, st, joined)


async def _suitable(ctx: DebateContext, st: TableState, report: ReportBuilder) -> bool:
    """The seed's pre-check, decided by the host with the keyword hint in hand. An unsuitable
    question is answered directly, with the reason; "debate anyway" (force) skips the check."""
    fits, hint = suitability(ctx.spec.question)
    hint_line = (
        ""
        if fits
        else say(
            ctx.lang,
            f"关键词提示（仅供参考，常有误判）：{hint}",
            f"Keyword hint (for reference only, often wrong): {hint}",
        )
    )
    asked = _host_plan(
        ctx,
        st,
        "host:suitability",
        SUITABILITY_TASK[ctx.lang],
        hint_line,
        SUITABILITY_FORM[ctx.lang],
        max_tokens=120,
        form=suitability_grammar(ctx.lang),
    )
    # A classification, not a speech: no summary under it (its first line would only repeat "Class: …").
    answer = await ctx.turn(dataclasses.replace(asked, summary_limit=0))
    kind, reason = read_suitability(answer.text)
    report.data["suitability_hint"] = hint
    if kind == "simple fact" and asks_a_decision(ctx.spec.question):
        await ctx.warn(
            "suitability_reread",
            gettext_noop(
                "The host called this a simple fact, but the question asks for a choice: the table debates it."
            ),
        )
        return True
    if not kind:
        return True
    await _answer_directly(ctx, st, report, kind, reason)
    return False


def _r2_rules(lang: str) -> list[str]:
    return [
        say(lang, "你看得到所有人的轮次 1 发言。", "You can see every role's round 1 statement."),
        say(
            lang,
            "必须挑战至少一个其他角色的核心论点，指出具体漏洞。禁止“同意并补充”式的表演性和谐。",
            "You must challenge the thesis of at least one other role and name its concrete flaw. No performed "
            "harmony of the “I agree and would add” kind.",
        ),
    ]


async def _cross_examination(ctx: DebateContext, st: TableState) -> None:
    await ctx.phase(2, "r2", gettext_noop("Round 2 · Cross-examination"))
    lang = ctx.lang
    fmt, rules = CHALLENGE_FORM[lang], _r2_rules(lang)
    heading = say(lang, "## 轮次 1 全部发言\n", "## Round 1: every statement\n")
    plans = [
        _plan(
            ctx,
            st,
            r,
            f"r2:{r.slug}",
            2,
            "r2",
            rules,
            heading + _all_r1(ctx, st),
            fmt,
            form=challenge_form([o.called(lang) for o in st.roles if o.slug != r.slug], lang),
        )
        for r in st.roles
    ]
    results = await ctx.parallel(plans)
    for role, result in zip(st.roles, results, strict=True):
        others = [r for r in st.roles if r.slug != role.slug]
        if challenge_of(result.text, _known_names(others)) is None:
            await ctx.warn(
                "agree_and_add",
                gettext_noop(
                    "%(speaker)s named no role and claim to challenge (agreeing and adding is not a challenge): "
                    "sent back once."
                ),
                speaker=role,
            )
            sent_back = say(
                lang,
                "你上一版没有写出质询对象与针对论点，被主持人退回。这一次必须点名一位角色、摘述其核心论点，"
                "并指出具体漏洞。",
                "The host sent your last version back: it named no role and no thesis to challenge. This time name "
                "one role, sum up its thesis and name its concrete flaw.",
            )
            previous = say(lang, "## 你被退回的上一版", "## Your version that was sent back")
            resend = _plan(
                ctx,
                st,
                role,
                f"r2:{role.slug}:resend",
                2,
                "r2",
                [*rules, sent_back],
                heading + _all_r1(ctx, st) + f"\n\n{previous}\n{result.text}",
                fmt,
                form=challenge_form([o.called(lang) for o in others], lang),
            )
            result = await ctx.turn(resend)
            if challenge_of(result.text, _known_names(others)) is None:
                await ctx.warn(
                    "agree_and_add_kept",
                    gettext_noop("%(speaker)s still raised no concrete challenge after being sent back."),
                    speaker=role,
                )
        st.speeches[(role.slug, 2)] = result


async def _revision(ctx: DebateContext, st: TableState, report: ReportBuilder) -> None:
    await ctx.phase(3, "r3", gettext_noop("Round 3 · Revision"))
    lang = ctx.lang
    r2 = "\n\n".join(f"### {r.called(lang)}·R2\n{st.speeches[(r.slug, 2)].text}" for r in st.roles)
    plans = []
    for role in st.roles:
        fmt = REVISION_FORM[lang] + (VETO_FORM[lang] if role.veto_right else "")
        material = say(
            lang,
            f"## 你的轮次 1\n{st.speeches[(role.slug, 1)].text}\n\n## 轮次 2 全部质询\n{r2}",
            f"## Your round 1\n{st.speeches[(role.slug, 1)].text}\n\n## Round 2: every challenge\n{r2}",
        )
        plans.append(
            _plan(
                ctx,
                st,
                role,
                f"r3:{role.slug}",
                3,
                "r3",
                [say(lang, "回应针对你的质询。", "Answer the challenges aimed at you.")],
                material,
                fmt,
                _r3_post(role.veto_right),
                revision_form(role.veto_right, lang),
            )
        )
    for result in await ctx.parallel(plans):
        st.speeches[(result.speaker.slug, 3)] = result
        data = result.data
        if data.get("veto_claimed"):
            scenario = data.get("failure_scenario", "").strip()
            if len(scenario) >= MIN_FAILURE_SCENARIO:
                st.veto = {"by": result.speaker.slug, "failure_scenario": scenario}
                await ctx.warn(
                    "veto",
                    gettext_noop("%(speaker)s vetoes. Failure scenario: %(scenario)s"),
                    speaker=result.speaker,
                    scenario=verbatim(clip(scenario, 200)),
                )
            else:
                await ctx.warn(
                    "veto_ignored",
                    gettext_noop(
                        "%(speaker)s tried to veto without a concrete failure scenario: the veto does not count."
                    ),
                    speaker=result.speaker,
                )
    report.data["veto"] = st.veto


def _host_plan(ctx: DebateContext, st: TableState, key: str, task: str, material: str, fmt: str, **kw) -> TurnPlan:
    return host_plan(ctx, st.host, key, task=task, material=material, output=fmt, round_no=0, **kw)


SECTIONS = {
    "veto_response": ("否决回应", "answer to the veto", "veto"),
    "consensus": ("共识", "consensus"),
    "disagreements": ("分歧", "disagreement"),
    "action_guide": ("行动指南", "action"),
    "risks": ("风险", "risk"),
}


UNANSWERED = ("无法化解", "无", "没有", "cannot", "none", "not answered", "unanswerable", "no answer")
VETOED_MARK = "⛔ "


async def _answer_veto(ctx: DebateContext, st: TableState, report: ReportBuilder, sections: dict[str, str]) -> None:
    """Answered (the host says how the guide avoids the failure scenario) or not: then every item
    of the action guide is marked vetoed, in the report and its data."""
    response = sections.get("veto_response", "").strip()
    answered = bool(response) and not response.lower().lstrip("-*• ").startswith(UNANSWERED)
    st.veto["answered"] = answered
    if answered:
        return
    guide = sections.get("action_guide", "")
    sections["action_guide"] = "\n".join(
        re.sub(r"^(\s*(?:\d+[.、)]|[-*•])\s*)", rf"\1{VETOED_MARK}", line) if line.strip() else line
        for line in guide.splitlines()
    )
    await ctx.warn(
        "veto_unanswered",
        gettext_noop("The action guide does not answer %(speaker)s's veto: its items are marked vetoed."),
        speaker=next(r for r in st.roles if r.slug == st.veto["by"]),
    )


def split_sections(text: str) -> dict[str, str]:
    """Split the host's synthesis at its headings; tolerant of '##', '**', numbering and colons."""
    found: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        head = re.sub(r"^[#\s*\d.、一二三四]+", "", line).strip("*：: ")
        head = re.sub(r"\s*[（(][^（()）]*[)）]?[*：: ]*$", "", head)  # "Consensus (what all agree on)"
        key = next(
            (k for k, words in SECTIONS.items() if head and len(head) <= 20 and any(w in head.lower() for w in words)),
            None,
        )
        if key:
            current = key
            found.setdefault(key, "")
            continue
        if current:
            found[current] += line + "\n"
    return {k: v.strip() for k, v in found.items()}


def one_voice(consensus: str, theses: dict[PersonaSpec, str]) -> PersonaSpec | None:
    """The one role whose R1 thesis the consensus copies word for word (its first 24 characters,
    32 in a Latin script, after `normalise`), where no other role's is copied: the seed's consensus is
    what every role holds with high confidence, and the bundled model wrote "所有角色都同意，" before
    the optimist's thesis as it stood. A paraphrase is not caught."""
    said = normalise(consensus)
    copied = []
    for role, thesis in theses.items():
        words = normalise(thesis)
        length = 24 if CJK.search(words) else 32
        if len(words) >= length and words[:length] in said:
            copied.append(role)
    return copied[0] if len(copied) == 1 and len(theses) > 1 else None


SYNTHESIS_FORM = {
    "zh": "四节，标题依次为：\n## 共识（所有角色都同意、置信度高的结论）\n## 分歧（各方立场 + 理由 + 置信度）\n"
    "## 行动指南（具体、可执行、按优先级编号）\n## 风险提示（魔鬼代言人未解决的反对意见）",
    "en": "Four sections, headed in this order:\n## Consensus (what every role agrees on, with high confidence)\n"
    "## Disagreements (each side's position + reasons + confidence)\n"
    "## Action guide (concrete, doable steps, numbered by priority)\n"
    "## Risks (the devil's advocate's objections left unresolved)",
}
VETO_ANSWER_FORM = {
    "zh": "\n## 否决回应（行动指南的哪几条、怎样避免这个失败场景；化解不了就写“无法化解”）",
    "en": "\n## Answer to the veto (which items of the action guide avoid this failure scenario, and how; if it "
    "cannot be avoided, write “cannot be answered”)",
}


async def _synthesise(ctx: DebateContext, st: TableState, report: ReportBuilder) -> None:
    lang = ctx.lang
    last = max(r for _, r in st.speeches)
    # Headed by the name alone: under "·R1" the bundled model named a role "R1" ("R1认为…").
    finals = "\n\n".join(f"### {r.called(lang)}\n{st.speeches[(r.slug, last)].text}" for r in st.roles)

    def confidence(role: PersonaSpec) -> str:
        said = st.speeches[(role.slug, 1)].data.get("confidence", "")
        return CONFIDENCE_ZH.get(said, said) if lang == "zh" else said

    theses = {r: st.speeches[(r.slug, 1)].data.get("thesis", "") for r in st.roles}
    r1 = table(
        say(lang, ["角色", "核心论点", "置信度"], ["Role", "Thesis", "Confidence"]),
        [[r.called(lang), thesis, confidence(r)] for r, thesis in theses.items()],
    )
    await ctx.phase(0, "synthesis", gettext_noop("Synthesis"))
    task = say(
        lang,
        "整合输出：共识、分歧、行动指南、风险提示。",
        "Bring it together: consensus, disagreements, action guide, risks.",
    )
    material = say(
        lang,
        f"## 轮次 1 立论\n{r1}\n\n## 最终发言\n{finals}",
        f"## Round 1 theses\n{r1}\n\n## Final statements\n{finals}",
    )
    form = SYNTHESIS_FORM[lang]
    if st.veto:
        # A veto with a failure scenario binds the outcome: the guide must answer it.
        vetoer = next(r.called(lang) for r in st.roles if r.slug == st.veto["by"])
        scenario = st.veto["failure_scenario"]
        task += say(
            lang,
            f"{vetoer}行使了一票否决，行动指南必须回应其失败场景。",
            f" {vetoer} used the veto: the action guide must answer its failure scenario.",
        )
        material += say(
            lang,
            f"\n\n## 否决（{vetoer}）\n失败场景：{scenario}",
            f"\n\n## Veto ({vetoer})\nFailure scenario: {scenario}",
        )
        form += VETO_ANSWER_FORM[lang]
    synthesis = _host_plan(ctx, st, "host:synthesis", task, material, form)
    question = ctx.spec.question

    def consensus_summary(text: str) -> tuple[str, dict]:
        # The synthesis's summary is its consensus: a role's "Summary:" line the host copied into
        # the disagreements is not (the bundled model's English roundtable, debate 65).
        text, data = synthesis.postprocess(text) if synthesis.postprocess else (text, {})
        consensus = split_sections(text).get("consensus", "")
        if consensus.strip():
            data = {**data, "summary": summary_of(consensus, SUMMARY_LIMIT, question)}
        return text, data

    result = await ctx.turn(dataclasses.replace(synthesis, postprocess=consensus_summary))
    sections = split_sections(result.text)
    if (voice := one_voice(sections.get("consensus", ""), theses)) and not result.replayed:
        await ctx.warn(
            "consensus_one_voice",
            gettext_noop(
                "The synthesis's consensus copies %(speaker)s's thesis word for word; the other roles did not "
                "state it: read it as one role's view."
            ),
            speaker=voice,
        )
    if st.veto:
        await _answer_veto(ctx, st, report, sections)
    t = ctx.translate
    devil = [r for r in st.roles if r.veto_right]
    objections = [st.speeches[(d.slug, last)].summary for d in devil if (d.slug, last) in st.speeches]
    if st.veto:
        objections.insert(
            0, t(gettext_noop("Veto: %(scenario)s")) % {"scenario": clip(st.veto["failure_scenario"], 300)}
        )
    risks = sections.get("risks", "")
    if objections:
        lines = [t(gettext_noop("Devil's advocate: %(objection)s")) % {"objection": o} for o in objections]
        risks = (risks + "\n" if risks else "") + "\n".join(f"- {line}" for line in lines)
    report.data.update(
        {
            "consensus": sections.get("consensus", ""),
            "disagreements": sections.get("disagreements", ""),
            "action_guide": sections.get("action_guide", ""),
            "risks": risks,
        }
    )
    if not any(sections.values()):  # the host wrote no headings: keep its text whole
        report.section("synthesis", gettext_noop("Synthesis"), result.text)
    if st.veto:
        answered = st.veto["answered"]
        report.section(
            "veto",
            gettext_noop("Answer to the veto"),
            sections.get("veto_response", "") if answered else "",
            empty=gettext_noop("Not answered: every item of the action guide is marked vetoed."),
        )
    for key, title, empty in (
        ("consensus", gettext_noop("Consensus"), gettext_noop("No consensus was reached.")),
        ("disagreements", gettext_noop("Disagreements"), gettext_noop("No disagreement was recorded.")),
        ("action_guide", gettext_noop("Action guide"), gettext_noop("The host wrote no action guide.")),
        ("risks", gettext_noop("Risks"), gettext_noop("No unresolved objection.")),
    ):
        report.section(key, title, report.data[key], empty=empty)
    theses = table(
        [t(gettext_noop("Role")), t(gettext_noop("Thesis")), t(gettext_noop("Confidence"))],
        [
            [
                r.called(lang),
                st.speeches[(r.slug, 1)].data.get("thesis", ""),
                t(st.speeches[(r.slug, 1)].data.get("confidence", "")),
            ]
            for r in st.roles
        ],
    )
    report.section("theses", gettext_noop("Round 1 theses"), theses, part="transcript")
    if report.data.get("checkpoint_addition"):
        report.section("checkpoint", gettext_noop("Facts added at the checkpoint"), report.data["checkpoint_addition"])
    await report.emit(verdict_heading=gettext_noop("Roundtable"))


async def _answer_directly(ctx: DebateContext, st: TableState, report: ReportBuilder, kind: str, reason: str) -> None:
    await ctx.warn(
        "unsuitable",
        gettext_noop("This question is a %(kind)s: it is answered directly instead of debated. %(reason)s"),
        kind=text(UNSUITABLE_LABELS.get(kind, kind)),
        reason=verbatim(clip(reason, 200)),
    )
    await ctx.phase(1, "direct", gettext_noop("Direct answer"))
    task = say(ctx.lang, "直接、准确地回答这个问题。", "Answer this question directly and accurately.")
    result = await ctx.turn(
        _host_plan(ctx, st, "host:direct", task, "", say(ctx.lang, "简洁回答。", "Answer briefly."))
    )
    report.data["suitability"] = kind
    report.data["suitability_reason"] = reason
    report.section("direct", gettext_noop("Direct answer"), result.text)
    why = ctx.translate(
        gettext_noop("Not debated: a %(kind)s. %(reason)s To debate it anyway, start it again with “Debate anyway”.")
    )
    report.section(
        "suitability",
        gettext_noop("Why it was not debated"),
        why % {"kind": ctx.translate(UNSUITABLE_LABELS.get(kind, kind)), "reason": clip(reason, 200)},
    )
    await report.emit(verdict_heading=gettext_noop("Roundtable"))


# -- the format ------------------------------------------------------------------------------------


@dataclass
class RoundtableOptions(CommonOptions):
    # quick | standard | deep; empty: the question's words pick, else standard
    mode: str = option("", kind="modes", label=gettext_noop("Mode"))
    no_interrupt: bool = option(  # run through the checkpoint
        False,
        kind="bool",
        label=gettext_noop("No interrupt (run through the roundtable checkpoint)"),
        help=gettext_noop("Otherwise the roundtable pauses after the first round so you can add facts."),
        unattended=True,
    )
    force: bool = option(  # debate even when the suitability check says "answer directly"
        False,
        kind="bool",
        label=gettext_noop("Debate anyway"),
        help=gettext_noop(
            "Otherwise the host first asks whether the question needs a debate at all, and answers a simple fact, a "
            "single bug fix, an urgent or an already decided matter directly, saying why."
        ),
    )
    # Who was seated and who left at the checkpoint: the user's answer there, not a start option.
    joined: list[str] = option([], kind="slugs", label=gettext_noop("Roles seated at the checkpoint"), internal=True)
    left: list[str] = option([], kind="slugs", label=gettext_noop("Roles who left at the checkpoint"), internal=True)


class Roundtable(Format):
    name = "roundtable"
    first_round_theses = True
    label = gettext_noop("Roundtable")
    description = gettext_noop(
        "Stances and experts state theses blind, must challenge each other, and end on an action guide."
    )
    Options = RoundtableOptions
    researches = True
    seating = Seating(count=(3, 7), host_kind="host")
    modes = (
        # The seed's own names (--mode=快速|标准|深度) are accepted at every door too.
        Mode("standard", gettext_noop("standard (4–5 roles, 3 rounds)"), seats=(4, 5), rounds=3, aliases=("标准",)),
        Mode("quick", gettext_noop("quick (3 roles, 1 round)"), seats=(3, 3), rounds=1, aliases=("快速",)),
        Mode("deep", gettext_noop("deep (5–7 roles, 3 rounds + research)"), seats=(5, 7), rounds=3, aliases=("深度",)),
    )
    mode_hint = gettext_noop("from the question (“quick” or “deep” in it) or the number of roles, else standard")
    confirms_choice = True
    seats_characters = True
    tokens = {"speech": 380, "host": 700}
    local = Sizing(
        gettext_noop("Quick mode (3 roles, 1 round) unless chosen, shorter statements: about 5 minutes."),
        options={"mode": "quick"},
        tokens={"speech": 240, "host": 400},
    )
    summary_limit = SUMMARY_LIMIT
    parallel_phases = frozenset({"r1", "r2", "r3"})
    phase_titles = {
        "r1": gettext_noop("Round 1 · Independent statements"),
        "r2": gettext_noop("Round 2 · Cross-examination"),
        "r3": gettext_noop("Round 3 · Revision"),
        "direct": gettext_noop("Direct answer"),
        "research": gettext_noop("Research"),
    }

    def effective_mode(self, question: str, options, seats: int = 0) -> Mode | None:
        """Left on default, words in the question pick the mode (快速 / 深入, quick / deep), as
        long as the roles already chosen fit it."""
        if getattr(options, "mode", ""):
            return self.mode(options.mode)
        worded = self.mode(mode_from_words(question)) if mode_from_words(question) else None
        if worded and (not seats or worded.seats[0] <= seats <= worded.seats[1]):
            return worded
        default = self.mode("")
        if seats and not default.seats[0] <= seats <= default.seats[1]:
            # Three roles confirmed (Agora's table when no expert fits the question) run as quick.
            return next((m for m in self.modes if m.seats[0] <= seats <= m.seats[1]), default)
        return default

    def check(self, question, personas, options, library) -> dict[str, Text]:
        problems = super().check(question, personas, options, library)
        stances = [p for p in personas if p.tier == "l1"]
        offered = [p for p in library.pool if p.kind == "debater" and p.tier == "l1"]
        if personas and "personas" not in problems and len(offered) >= MIN_STANCES:
            if not MIN_STANCES <= len(stances) <= MAX_STANCES:
                # The seed's 每场必选 2-3 个 L1: the stances keep the table adversarial.
                problems["personas"] = text(STANCES_RULE, count=len(stances))
        known = self.effective_mode(question, options) is not None
        if not personas and known and "personas" not in problems and question.strip():
            refusal = self.suggest(question, library, options).refusal
            if refusal:
                problems["personas"] = refusal
        return problems

    def suggest(self, question, library: LibrarySpec, options=None) -> Suggestion:
        if not question.strip():
            return Suggestion()
        options = options or self.Options()
        mode = self.effective_mode(question, options)
        chosen = bool(getattr(options, "mode", ""))
        picked, roles, template = auto_table(question, library, mode.name, chosen)
        low, high = self.seat_bounds(picked)
        if not low <= len(roles) <= high:
            # A mode chosen that the roles fitting the question cannot fill: the submit would
            # refuse the table, so the box says why instead of suggesting it (`check`).
            return Suggestion(
                refusal=text(
                    gettext_noop(
                        "Too few roles in the library fit this question for the %(mode)s mode (it seats "
                        "%(bounds)s, %(count)d fit): choose the roles yourself, or leave the mode on Auto."
                    ),
                    mode=text(self.mode(picked).label),
                    bounds=f"{low}–{high}" if low != high else str(low),
                    count=len(roles),
                )
            )
        lang = language_of(question)
        if template:
            note = verbatim(template.called(lang))
        elif any(r.tier == "l2" for r in roles):
            note = text(gettext_noop("experts matched to the question"))
        else:
            note = text(gettext_noop("no expert in the library fits this question: stances only"))
        if not chosen and picked != mode.name:
            note = text(
                gettext_noop("%(how)s · too few roles fit for %(wanted)s: %(mode)s"),
                how=note,
                wanted=text(mode.label),
                mode=text(self.mode(picked).label),
            )
        elif not chosen and mode.name != self.mode("").name:
            note = text(gettext_noop("%(how)s · mode from the question: %(mode)s"), how=note, mode=text(mode.label))
        ok, reason = suitability(question)
        if not ok:
            note = text(
                gettext_noop("%(how)s · the host may answer it directly (looks like a %(kind)s)"),
                how=note,
                kind=text(UNSUITABLE_LABELS[reason]),
            )
        return Suggestion([(r, r.tier.upper()) for r in roles], note)

    async def run(self, ctx: DebateContext) -> str:
        return await _run(ctx)


FORMAT = Roundtable()
