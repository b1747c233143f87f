"""Roundtable: tiered roles, a blind first round, a checkpoint, mandatory challenge, an action guide.

The checkpoint after R1 does not hold a coroutine open while the user thinks: the engine emits
`Checkpoint` and returns "waiting"; the runner resumes later with `spec.checkpoint_reply` set and
the finished R1 turns replayed from the database. That also survives a server restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from debates.engine import events as ev
from debates.engine.format import Format, Mode, Seating, Suggestion
from debates.engine.i18n import gettext_noop, text, verbatim
from debates.engine.plans import host_plan, plan
from debates.engine.report import ReportBuilder, table
from debates.engine.spec import CommonOptions, DomainTemplateSpec, LibrarySpec, PersonaSpec
from debates.engine.text import bullet_items, clip, contains_any, field_value, first_sentence
from debates.engine.turns import DebateAborted, DebateContext, TurnPlan, TurnResult

SUMMARY_LIMIT = 80
MIN_FAILURE_SCENARIO = 15
DEFAULT_HOST = PersonaSpec(slug="roundtable-host", name="圆桌主持", kind="host")

# Suitability: questions better answered directly than debated (seed §一).
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
CONFIDENCE_LABELS = (gettext_noop("high"), gettext_noop("medium"), gettext_noop("low"))
CHALLENGE_WORDS = (
    "漏洞",
    "质疑",
    "不同意",
    "反对",
    "问题在于",
    "站不住",
    "错在",
    "忽略了",
    "忽视了",
    "缺陷",
    "风险在于",
    "不成立",
    "低估",
    "高估",
    "flaw",
    "disagree",
    "wrong",
    "overlook",
    "challenge",
    "fails",
)
CONFIDENCE = {"高": "high", "中": "medium", "低": "low", "high": "high", "medium": "medium", "low": "low"}


def suitability(question: str) -> tuple[bool, str]:
    text = question.strip()
    for reason, patterns in UNSUITABLE.items():
        if any(re.search(p, text, re.IGNORECASE) for p in patterns):
            return False, reason
    return True, ""


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


def is_agree_and_add(text: str, other_names: list[str]) -> bool:
    """'Agree and add' is performative harmony: no named target with a concrete flaw."""
    target = field_value(text, ("质询对象", "challenge target", "质询"))
    names_target = any(name in (target or text) for name in other_names)
    challenges = contains_any(text, CHALLENGE_WORDS) is not None
    return not (names_target and challenges)


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
    )


def _all_r1(st: TableState) -> str:
    return "\n\n".join(
        f"### {r.name}·R1\n{st.speeches[(r.slug, 1)].text}" for r in st.roles if (r.slug, 1) in st.speeches
    )


async def _run(ctx: DebateContext) -> str:
    spec, library = ctx.spec, ctx.library
    chosen = FORMAT.mode(ctx.options.mode)
    if chosen is None:
        raise DebateAborted(
            text(
                gettext_noop("There is no roundtable mode “%(mode)s”: quick, standard or deep."), mode=ctx.options.mode
            ),
            outcome="refused",
        )
    mode, rounds = chosen.name, chosen.rounds
    low, high = FORMAT.seat_bounds(mode)
    roles = [s.persona for s in spec.seats if s.persona.kind == "debater"]
    report = ReportBuilder(ctx, title=spec.question)
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

    ok, reason = suitability(spec.question)
    if not ok and not ctx.options.force:
        return await _answer_directly(ctx, st, report, reason)

    if mode == "deep":
        await ctx.phase(0, "research", gettext_noop("Research"))
        research = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:research",
                "深度模式的检索准备：列出本议题需要核实的关键事实与数据口径（不得编造数据，不确定就标注待核实）。",
                "",
                "- 事实/数据：…（来源或“待核实”）",
            )
        )
        ctx.facts = "\n\n".join(filter(None, [ctx.facts, research.text]))

    await ctx.phase(1, "r1", gettext_noop("Round 1 · Independent statements"))
    r1_fmt = "核心论点：一句话\n论据：\n1. …\n2. …\n（2–3 条）\n置信度：高 / 中 / 低\n小结：一句话（不超过 80 字）"
    for result in await ctx.parallel(
        [
            _plan(
                ctx,
                st,
                r,
                f"r1:{r.slug}",
                1,
                "r1",
                ["轮次 1：只看议题，看不到其他角色的发言（防锚定）。"],
                "",
                r1_fmt,
                parse_r1,
            )
            for r in roles
        ]
    ):
        st.speeches[(result.speaker.slug, 1)] = result
        if not result.data.get("confidence_stated"):
            await ctx.warn(
                "confidence_missing",
                gettext_noop("%(speaker)s stated no confidence: recorded as medium."),
                speaker=result.speaker.name,
            )

    if rounds > 1 and not ctx.options.no_interrupt:
        if spec.checkpoint_reply is None:
            await ctx.emit(
                ev.Checkpoint(
                    text(
                        gettext_noop(
                            "Round 1 is done: every role has stated its thesis blind. Add facts the next rounds "
                            "should know, or continue."
                        )
                    )
                )
            )
            return "waiting"
        if spec.checkpoint_reply.strip():
            added = spec.checkpoint_reply.strip()
            ctx.facts = "\n\n".join(filter(None, [ctx.facts, "用户在检查点补充：" + added]))
            report.data["checkpoint_addition"] = added
            await ctx.phase(1, "checkpoint", gettext_noop("Facts added at the checkpoint"), note=added)

    if rounds > 1:
        await _cross_examination(ctx, st)
        await _revision(ctx, st, report)
    await _synthesise(ctx, st, report)
    return "done"


async def _cross_examination(ctx: DebateContext, st: TableState) -> None:
    await ctx.phase(2, "r2", gettext_noop("Round 2 · Cross-examination"))
    fmt = (
        "质询对象：你要挑战的角色名\n漏洞：对方核心论点的具体漏洞（不许“同意并补充”）\n"
        "你的立场：一句话\n小结：一句话（不超过 80 字）"
    )
    rules = [
        "你看得到所有人的轮次 1 发言。",
        "必须挑战至少一个其他角色的核心论点，指出具体漏洞。禁止“同意并补充”式的表演性和谐。",
    ]
    plans = [
        _plan(ctx, st, r, f"r2:{r.slug}", 2, "r2", rules, "## 轮次 1 全部发言\n" + _all_r1(st), fmt) for r in st.roles
    ]
    results = await ctx.parallel(plans)
    for role, result in zip(st.roles, results, strict=True):
        others = [r.name for r in st.roles if r.slug != role.slug]
        if is_agree_and_add(result.text, others):
            await ctx.warn(
                "agree_and_add",
                gettext_noop("%(speaker)s agreed and added instead of challenging: sent back once."),
                speaker=role.name,
            )
            resend = _plan(
                ctx,
                st,
                role,
                f"r2:{role.slug}:resend",
                2,
                "r2",
                rules + ["你上一版没有挑战任何人，被主持人退回。这一次必须点名一位角色并指出其核心论点的具体漏洞。"],
                "## 轮次 1 全部发言\n" + _all_r1(st) + f"\n\n## 你被退回的上一版\n{result.text}",
                fmt,
            )
            result = await ctx.turn(resend)
            if is_agree_and_add(result.text, others):
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


def _host_plan(ctx: DebateContext, st: TableState, key: str, task: str, material: str, fmt: str) -> TurnPlan:
    return host_plan(ctx, st.host, key, task=task, material=material, output=fmt, round_no=0)


SECTIONS = {
    "consensus": ("共识", "consensus"),
    "disagreements": ("分歧", "disagreement"),
    "action_guide": ("行动指南", "action"),
    "risks": ("风险", "risk"),
}


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
    result = await ctx.turn(
        _host_plan(
            ctx,
            st,
            "host:synthesis",
            "整合输出：共识、分歧、行动指南、风险提示。",
            f"## 轮次 1 立论\n{r1}\n\n## 最终发言\n{finals}",
            "四节，标题依次为：\n## 共识（所有角色都同意、置信度高的结论）\n## 分歧（各方立场 + 理由 + 置信度）\n"
            "## 行动指南（具体、可执行、按优先级编号）\n## 风险提示（魔鬼代言人未解决的反对意见）",
        )
    )
    sections = split_sections(result.text)
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


async def _answer_directly(ctx: DebateContext, st: TableState, report: ReportBuilder, reason: str) -> str:
    await ctx.warn(
        "unsuitable",
        gettext_noop("This question is a %(kind)s: it is answered directly instead of debated."),
        kind=text(UNSUITABLE_LABELS.get(reason, reason)),
    )
    await ctx.phase(1, "direct", gettext_noop("Direct answer"))
    result = await ctx.turn(_host_plan(ctx, st, "host:direct", "直接、准确地回答这个问题。", "", "简洁回答。"))
    report.data["suitability"] = reason
    report.section("direct", gettext_noop("Direct answer"), result.text)
    await report.emit(verdict_heading=gettext_noop("Roundtable"))
    return "done"


# -- the format ------------------------------------------------------------------------------------


@dataclass
class RoundtableOptions(CommonOptions):
    mode: str = ""  # quick | standard | deep; empty: standard
    no_interrupt: bool = False  # run through the checkpoint
    force: bool = False  # debate even when the suitability check says "answer directly"


class Roundtable(Format):
    name = "roundtable"
    label = gettext_noop("Roundtable")
    description = gettext_noop(
        "Stances and experts state theses blind, must challenge each other, and end on an action guide."
    )
    Options = RoundtableOptions
    seating = Seating(count=(3, 7), host_kind="host")
    modes = (
        Mode("standard", gettext_noop("standard (4–5 roles, 3 rounds)"), seats=(4, 5), rounds=3),
        Mode("quick", gettext_noop("quick (3 roles, 1 round)"), seats=(3, 3), rounds=1),
        Mode("deep", gettext_noop("deep (5–7 roles, 3 rounds + research)"), seats=(5, 7), rounds=3),
    )
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

    def suggest(self, question, library: LibrarySpec, options=None) -> Suggestion:
        if not question.strip():
            return Suggestion()
        mode = getattr(options, "mode", "") or "standard"
        roles, template = recommend_roles(question, library.domain_templates, library.pool, mode)
        note = text(template.name) if template else text(gettext_noop("keyword match"))
        ok, reason = suitability(question)
        if not ok:
            note = text(gettext_noop("answered directly (%(reason)s) · %(how)s"), reason=reason, how=note)
        return Suggestion([(r, r.tier.upper()) for r in roles], note)

    async def run(self, ctx: DebateContext) -> str:
        return await _run(ctx)


FORMAT = Roundtable()
