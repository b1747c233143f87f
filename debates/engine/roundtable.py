"""Roundtable: tiered roles, a blind first round, a checkpoint, mandatory challenge, an action guide.

The checkpoint after R1 does not hold a coroutine open while the user thinks: the engine emits
`Checkpoint` and returns "waiting"; the runner resumes later with `spec.checkpoint_reply` set and
the finished R1 turns replayed from the database. That also survives a server restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from debates.engine import events as ev
from debates.engine import research
from debates.engine.context import DebateContext
from debates.engine.format import Format, Mode, Seating, Suggestion
from debates.engine.i18n import gettext_noop, text, verbatim
from debates.engine.options import option
from debates.engine.plans import host_plan, plan
from debates.engine.report import ReportBuilder, table
from debates.engine.spec import CommonOptions, DomainTemplateSpec, LibrarySpec, PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import bullet_items, clip, field_value, first_sentence
from debates.engine.turns import DebateAborted, TurnPlan, TurnResult

SUMMARY_LIMIT = 80
MIN_FAILURE_SCENARIO = 15
DEFAULT_HOST = PersonaSpec(slug="roundtable-host", name="圆桌主持", kind="host")

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
    "simple fact": ("简单事实", "simple fact", "定义"),
    "single bug fix": ("单一修复", "bug", "single fix"),
    "urgent": ("紧急", "urgent"),
    "already decided": ("已有结论", "已决定", "already decided"),
}
SUITABILITY_TASK = (
    "判断这个议题是否值得开圆桌。不适合的四类：简单事实查询或定义解释；单一代码修复或明确的 bug；"
    "紧急的时间敏感决策；已有明确结论、只差执行的任务。复杂多维决策、方案对比、风险预判、战略规划都适合。"
)
SUITABILITY_FORM = "两行：\n类别：适合 / 简单事实 / 单一修复 / 紧急 / 已有结论\n理由：一句话"
CONFIDENCE_LABELS = (gettext_noop("high"), gettext_noop("medium"), gettext_noop("low"))
CONFIDENCE = {"高": "high", "中": "medium", "低": "low", "high": "high", "medium": "medium", "low": "low"}


def suitability(question: str) -> tuple[bool, str]:
    """The keyword hint: (False, class) when a pattern of an unsuitable class matches."""
    text = question.strip()
    for reason, patterns in UNSUITABLE.items():
        if any(re.search(p, text, re.IGNORECASE) for p in patterns):
            return False, reason
    return True, ""


def read_suitability(answer: str) -> tuple[str, str]:
    """The host's class ("" for suitable or unreadable: only a named class refuses) and reason."""
    named = field_value(answer, ("类别", "class", "category")).lower()
    found = "" if "不适合" not in named and "适合" in named else named
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


def recommend_roles(
    question: str, templates: list[DomainTemplateSpec], pool: list[PersonaSpec], mode: str = "standard"
) -> tuple[list[PersonaSpec], DomainTemplateSpec | None]:
    """A good table is 2 L1 + 3 L2: the best-matching domain template's roles, else keywords."""
    _low, high = FORMAT.seat_bounds(mode)
    by_slug = {p.slug: p for p in pool}
    q = question.lower()
    scored = sorted(((sum(k.lower() in q for k in t.keywords if k), t.slug, t) for t in templates), reverse=True)
    template = scored[0][2] if scored and scored[0][0] > 0 else None
    roles = [by_slug[s] for s in template.roles if s in by_slug] if template else []
    if not roles:
        stances = [p for p in pool if p.tier == "l1"]
        experts = sorted(
            (p for p in pool if p.tier == "l2"), key=lambda p: (-sum(k.lower() in q for k in p.keywords), p.slug)
        )
        first = next((p for p in stances if p.slug == "devil-advocate"), stances[0] if stances else None)
        picked = [first] if first else []
        picked += [p for p in stances if p not in picked][: 2 - len(picked)]
        roles = picked + experts[:3]
    return roles[:high], template


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


def challenge_of(text: str, other_names: list[str]) -> dict[str, str] | None:
    """The R2 challenge, read by structure: whom (another role, named), which of their claims, and
    the flaw. None when any is missing: "我同意…并补充：风险在于执行" names nobody and no claim."""
    target = field_value(text, ("质询对象", "challenge target", "target"))
    claim = field_value(text, ("针对论点", "challenged claim", "claim"), multiline=True)
    flaw = field_value(text, ("漏洞", "flaw"), multiline=True)
    whom = next((name for name in other_names if name in target), "")
    empty = ("无", "没有", "none", "同意", "agree")
    if not whom or not claim or not flaw or claim.lower().startswith(empty) or flaw.lower().startswith(empty):
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
        rules=[f"圆桌讨论，你是「{role.name}」。保持你的认知立场，不要变成别的角色。", *rules],
        material=material,
        output=fmt,
        others=[r.name for r in st.roles if r.slug != role.slug],
        postprocess=post,
        form=form,
    )


def _all_r1(st: TableState) -> str:
    return "\n\n".join(
        f"### {r.name}·R1\n{st.speeches[(r.slug, 1)].text}" for r in st.roles if (r.slug, 1) in st.speeches
    )


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
    mode, rounds = chosen.name, chosen.rounds
    low, high = FORMAT.seat_bounds(mode)
    report = ReportBuilder(ctx, title=spec.question)
    if not ctx.options.mode and mode != FORMAT.mode("").name:
        report.data["mode_from_question"] = mode
    if not roles:
        roles, template = recommend_roles(spec.question, library.domain_templates, library.pool, mode)
        report.data["recommended_by"] = template.slug if template else "keywords"
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
        task = "深度模式的检索：为本议题需要核实的关键事实与数据写网络检索词。"
        report.data["research_queries"] = await research.build_pack(ctx, st.host, research.BUDGETS["deep"], task)
    elif mode == "deep":
        await research.skipped(ctx)
        await ctx.phase(0, "research", gettext_noop("Research"))
        noted = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:research",
                "深度模式的检索准备：列出本议题需要核实的关键事实与数据口径（不得编造数据，不确定就标注待核实）。",
                "",
                "- 事实/数据：…（来源或“待核实”）",
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
            ctx.evidence.note("用户在检查点补充：" + added)
            report.data["checkpoint_addition"] = added
            await ctx.phase(1, "checkpoint", gettext_noop("Facts added at the checkpoint"), note=added)
        await _change_table(ctx, st, report, joined)

    if rounds > 1:
        await _cross_examination(ctx, st)
        await _revision(ctx, st, report)
    await _synthesise(ctx, st, report)
    return "done"


R1_FORM = "核心论点：一句话\n论据：\n1. …\n2. …\n（2–3 条）\n置信度：高 / 中 / 低\n小结：一句话（不超过 80 字）"
CONFIDENCE_PART = Part("置信度", choices=("高", "中", "低"))
R1_GRAMMAR = Form(
    (Part("核心论点", chars=100), Part("论据", chars=180, lines=3), CONFIDENCE_PART, Part("小结", chars=SUMMARY_LIMIT))
)


def challenge_form(others: list[str]) -> Form:
    """R2: whom (one of the others, by name), which claim, the flaw, one's own position."""
    return Form(
        (
            Part("质询对象", choices=tuple(others)),
            Part("针对论点", chars=100),
            Part("漏洞", chars=150, lines=2),
            Part("你的立场", chars=80),
            Part("小结", chars=SUMMARY_LIMIT),
        )
    )


def revision_form(veto_right: bool) -> Form:
    parts = [
        Part("决定", choices=("修正", "坚持")),
        Part("理由", chars=150, lines=2),
        Part("最终立场", chars=80),
        CONFIDENCE_PART,
        Part("小结", chars=SUMMARY_LIMIT),
    ]
    if veto_right:
        parts += [Part("否决", choices=("是", "否")), Part("失败场景", chars=150)]
    return Form(tuple(parts))


SUITABILITY_GRAMMAR = Form(
    (Part("类别", choices=("适合", "简单事实", "单一修复", "紧急", "已有结论")), Part("理由", chars=80))
)


async def _statements(ctx: DebateContext, st: TableState, roles: list[PersonaSpec]) -> None:
    """Round 1: each role states its thesis blind (also a role seated at the checkpoint)."""
    rule = ["轮次 1：只看议题，看不到其他角色的发言（防锚定）。"]
    plans = [_plan(ctx, st, r, f"r1:{r.slug}", 1, "r1", rule, "", R1_FORM, parse_r1, R1_GRAMMAR) for r in roles]
    for result in await ctx.parallel(plans):
        st.speeches[(result.speaker.slug, 1)] = result
        if not result.data.get("confidence_stated"):
            await ctx.warn(
                "confidence_missing",
                gettext_noop("%(speaker)s stated no confidence: recorded as medium."),
                speaker=result.speaker.name,
            )


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
                ("+ " + "、".join(r.name for r in joined)) if joined else "",
                ("− " + "、".join(r.name for r in left)) if left else "",
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
    hint_line = "" if fits else f"关键词提示（仅供参考，常有误判）：{hint}"
    answer = await ctx.turn(
        _host_plan(
            ctx,
            st,
            "host:suitability",
            SUITABILITY_TASK,
            hint_line,
            SUITABILITY_FORM,
            max_tokens=120,
            form=SUITABILITY_GRAMMAR,
        )
    )
    kind, reason = read_suitability(answer.text)
    report.data["suitability_hint"] = hint
    if not kind:
        return True
    await _answer_directly(ctx, st, report, kind, reason)
    return False


async def _cross_examination(ctx: DebateContext, st: TableState) -> None:
    await ctx.phase(2, "r2", gettext_noop("Round 2 · Cross-examination"))
    fmt = (
        "质询对象：你要挑战的角色名（必须是另一位角色）\n针对论点：你挑战的那条核心论点（摘述原话）\n"
        "漏洞：这条论点的具体漏洞（不许“同意并补充”）\n你的立场：一句话\n小结：一句话（不超过 80 字）"
    )
    rules = [
        "你看得到所有人的轮次 1 发言。",
        "必须挑战至少一个其他角色的核心论点，指出具体漏洞。禁止“同意并补充”式的表演性和谐。",
    ]
    plans = [
        _plan(
            ctx,
            st,
            r,
            f"r2:{r.slug}",
            2,
            "r2",
            rules,
            "## 轮次 1 全部发言\n" + _all_r1(st),
            fmt,
            form=challenge_form([o.name for o in st.roles if o.slug != r.slug]),
        )
        for r in st.roles
    ]
    results = await ctx.parallel(plans)
    for role, result in zip(st.roles, results, strict=True):
        others = [r.name for r in st.roles if r.slug != role.slug]
        if challenge_of(result.text, others) is None:
            await ctx.warn(
                "agree_and_add",
                gettext_noop(
                    "%(speaker)s named no role and claim to challenge (agreeing and adding is not a challenge): "
                    "sent back once."
                ),
                speaker=role.name,
            )
            resend = _plan(
                ctx,
                st,
                role,
                f"r2:{role.slug}:resend",
                2,
                "r2",
                rules
                + [
                    "你上一版没有写出质询对象与针对论点，被主持人退回。这一次必须点名一位角色、摘述其核心论点，"
                    "并指出具体漏洞。"
                ],
                "## 轮次 1 全部发言\n" + _all_r1(st) + f"\n\n## 你被退回的上一版\n{result.text}",
                fmt,
                form=challenge_form(others),
            )
            result = await ctx.turn(resend)
            if challenge_of(result.text, others) is None:
                await ctx.warn(
                    "agree_and_add_kept",
                    gettext_noop("%(speaker)s still raised no concrete challenge after being sent back."),
                    speaker=role.name,
                )
        st.speeches[(role.slug, 2)] = result


async def _revision(ctx: DebateContext, st: TableState, report: ReportBuilder) -> None:
    await ctx.phase(3, "r3", gettext_noop("Round 3 · Revision"))
    r2 = "\n\n".join(f"### {r.name}·R2\n{st.speeches[(r.slug, 2)].text}" for r in st.roles)
    plans = []
    for role in st.roles:
        fmt = (
            "决定：修正 / 坚持\n理由：修正给理由，坚持给反驳\n最终立场：一句话\n"
            "置信度：高 / 中 / 低\n小结：一句话（不超过 80 字）"
        )
        if role.veto_right:
            fmt += "\n否决：是 / 否（你有一票否决权，但只有附上具体失败场景才有效）\n失败场景：具体描述方案会怎样失败"
        plans.append(
            _plan(
                ctx,
                st,
                role,
                f"r3:{role.slug}",
                3,
                "r3",
                ["回应针对你的质询。"],
                f"## 你的轮次 1\n{st.speeches[(role.slug, 1)].text}\n\n## 轮次 2 全部质询\n{r2}",
                fmt,
                _r3_post(role.veto_right),
                revision_form(role.veto_right),
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
                    speaker=result.speaker.name,
                    scenario=verbatim(clip(scenario, 200)),
                )
            else:
                await ctx.warn(
                    "veto_ignored",
                    gettext_noop(
                        "%(speaker)s tried to veto without a concrete failure scenario: the veto does not count."
                    ),
                    speaker=result.speaker.name,
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


UNANSWERED = ("无法化解", "无", "没有", "cannot", "none", "not answered")
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
        speaker=next(r.name for r in st.roles if r.slug == st.veto["by"]),
    )


def split_sections(text: str) -> dict[str, str]:
    """Split the host's synthesis at its headings; tolerant of '##', '**', numbering and colons."""
    found: dict[str, str] = {}
    current = None
    for line in text.splitlines():
        head = re.sub(r"^[#\s*\d.、一二三四]+", "", line).strip("*：: ")
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


async def _synthesise(ctx: DebateContext, st: TableState, report: ReportBuilder) -> None:
    last = max(r for _, r in st.speeches)
    finals = "\n\n".join(f"### {r.name}·R{last}\n{st.speeches[(r.slug, last)].text}" for r in st.roles)
    r1 = table(
        ["角色", "核心论点", "置信度"],
        [
            [
                r.name,
                st.speeches[(r.slug, 1)].data.get("thesis", ""),
                st.speeches[(r.slug, 1)].data.get("confidence", ""),
            ]
            for r in st.roles
        ],
    )
    await ctx.phase(0, "synthesis", gettext_noop("Synthesis"))
    task, material = "整合输出：共识、分歧、行动指南、风险提示。", f"## 轮次 1 立论\n{r1}\n\n## 最终发言\n{finals}"
    form = (
        "四节，标题依次为：\n## 共识（所有角色都同意、置信度高的结论）\n## 分歧（各方立场 + 理由 + 置信度）\n"
        "## 行动指南（具体、可执行、按优先级编号）\n## 风险提示（魔鬼代言人未解决的反对意见）"
    )
    if st.veto:
        # A veto with a failure scenario binds the outcome: the guide must answer it.
        vetoer = next(r.name for r in st.roles if r.slug == st.veto["by"])
        task += f"{vetoer}行使了一票否决，行动指南必须回应其失败场景。"
        material += f"\n\n## 否决（{vetoer}）\n失败场景：{st.veto['failure_scenario']}"
        form += "\n## 否决回应（行动指南的哪几条、怎样避免这个失败场景；化解不了就写“无法化解”）"
    result = await ctx.turn(_host_plan(ctx, st, "host:synthesis", task, material, form))
    sections = split_sections(result.text)
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
                r.name,
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
    result = await ctx.turn(_host_plan(ctx, st, "host:direct", "直接、准确地回答这个问题。", "", "简洁回答。"))
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
    label = gettext_noop("Roundtable")
    description = gettext_noop(
        "Stances and experts state theses blind, must challenge each other, and end on an action guide."
    )
    Options = RoundtableOptions
    researches = True
    seating = Seating(count=(3, 7), host_kind="host")
    modes = (
        Mode("standard", gettext_noop("standard (4–5 roles, 3 rounds)"), seats=(4, 5), rounds=3),
        Mode("quick", gettext_noop("quick (3 roles, 1 round)"), seats=(3, 3), rounds=1),
        Mode("deep", gettext_noop("deep (5–7 roles, 3 rounds + research)"), seats=(5, 7), rounds=3),
    )
    mode_hint = gettext_noop("from the question (“quick” or “deep” in it), else standard")
    confirms_choice = True
    tokens = {"speech": 380, "host": 700}
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
        return self.mode("")

    def suggest(self, question, library: LibrarySpec, options=None) -> Suggestion:
        if not question.strip():
            return Suggestion()
        mode = self.effective_mode(question, options or self.Options())
        roles, template = recommend_roles(question, library.domain_templates, library.pool, mode.name)
        note = text(template.name) if template else text(gettext_noop("keyword match"))
        if not getattr(options, "mode", "") and mode.name != self.mode("").name:
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
