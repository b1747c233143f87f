"""Panel (taixu-debate): five roles, blind parallel rounds, and a host who never debates.

Admission → evidence pack → concept alignment → R1 blind (parallel) → aggregate → R2 cross-response
with the others' raw R1 → aggregate marking blind spots → R3 defence/revision → open fronts per role
→ R4 only for roles with open fronts → mechanical citation check → verdict and transcript.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from debates.engine import citations
from debates.engine.format import Format, Seating
from debates.engine.i18n import gettext_noop, text, verbatim
from debates.engine.plans import host_plan, plan
from debates.engine.report import ReportBuilder, table
from debates.engine.spec import CommonOptions, PersonaSpec
from debates.engine.text import bullet_items, clip, field_value, first_sentence, topic_slug
from debates.engine.turns import DebateAborted, DebateContext, TurnPlan, TurnResult

SUMMARY_LIMIT = 60
VERDICT_LIMIT = 1200
CAP_MULTIPLIERS = {"light": 4.3, "standard": 4.5, "deep": 5.0}
ROUNDS = 4
TYPES = {"investment": "投资决策型", "choice": "选择决策型", "truth": "认知求真型"}  # as the prompts name them
TYPE_LABELS = {
    "investment": gettext_noop("investment decision"),
    "choice": gettext_noop("choice decision"),
    "truth": gettext_noop("truth-seeking"),
}
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
    stopped_by_cap: int | None = None  # the round after which the cap stopped the run

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


async def _admit(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """Admission: one of three proposition types, and falsifiable. Refuse with the reason."""
    question = ctx.spec.question.strip()
    if len(question) < 6:
        raise DebateAborted(
            text(gettext_noop("The proposition is too short to judge its type and whether it can be falsified.")),
            outcome="refused",
        )
    result = await ctx.turn(
        _host_plan(
            ctx,
            st,
            "host:admission",
            "入场审查：判断命题类型（投资决策型 / 选择决策型 / 认知求真型 / 不适合），以及是否可证伪。"
            "不可证伪的陈述、纯历史回顾、空泛的泛论、已形成强共识的命题都不适合。",
            "",
            "四行：\n类型：…\n可证伪：是 / 否\n理由：一句话\n话题标识：3–6 个英文小写单词，用连字符连接",
            exempt=True,
        )
    )
    kind_text = field_value(result.text, ("类型", "type"))
    falsifiable = field_value(result.text, ("可证伪", "falsifiable"))
    reason = field_value(result.text, ("理由", "reason")) or first_sentence(result.text)
    kind = ctx.options.proposition_type or next(
        (k for k, words in TYPE_WORDS.items() if any(w in kind_text.lower() for w in words)), ""
    )
    refused_type = "不适合" in kind_text or "unsuitable" in kind_text.lower()
    not_falsifiable = falsifiable.lower().startswith(("否", "no", "不"))
    if (refused_type and not ctx.options.proposition_type) or not_falsifiable:
        raise DebateAborted(
            text(
                gettext_noop("The proposition did not pass admission: %(reason)s"), reason=verbatim(clip(reason, 200))
            ),
            outcome="refused",
        )
    if not kind:
        kind = "choice"
        await ctx.warn(
            "admission_unclear", gettext_noop("Admission could not tell the proposition's type: treated as a choice.")
        )
    st.kind = kind
    report.data["proposition_type"] = kind
    report.data["topic_slug"] = topic_slug(
        field_value(result.text, ("话题标识", "topic slug", "slug")), ctx.spec.question, ("panel", "debate")
    )


async def _measure_cap(ctx: DebateContext, st: PanelState, report: ReportBuilder) -> None:
    """The cap is a multiple of a single strong-prompt baseline: the prompt that would ask one
    model for the whole five-role analysis (its prompt tokens measured by the server with a
    one-token call) plus the output that prompt would be allowed (every speech of every round)."""
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
            max_tokens=1,
        )
    )
    allowance = len(st.roles) * ROUNDS * ctx.max_tokens("speech")
    baseline_tokens = baseline.prompt_tokens + allowance
    cap = ctx.options.token_budget or int(baseline_tokens * multiplier)
    await ctx.plan(cap=cap)
    report.data["token_cap"] = {
        "research_budget": budget,
        "multiplier": multiplier,
        "baseline_tokens": baseline_tokens,
        "cap": cap,
    }


async def _align_concepts(ctx: DebateContext, st: PanelState) -> None:
    result = await ctx.turn(
        _host_plan(
            ctx,
            st,
            "host:concepts",
            "概念对齐：从议题与材料中提炼 3–5 个核心概念，各给一个统一定义（口径边界）。",
            "",
            "每行一个：- 概念：定义",
            round_no=0,
        )
    )
    items = bullet_items(result.text, 5) or [line.strip() for line in result.text.splitlines() if "：" in line][:5]
    st.concepts = [clip(item, 160) for item in items]
    if len(st.concepts) < 3:
        await ctx.warn(
            "concepts_few",
            gettext_noop("Concept alignment gave %(count)d terms (3–5 are asked)."),
            count=len(st.concepts),
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
        output=FIVE_PARTS,
        others=[r.name for r in st.roles if r.slug != role.slug],
        postprocess=_speech_postprocess,
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
    for result in await ctx.parallel(plans):
        st.speeches[(result.speaker.slug, round_no)] = result.text
        st.results[(result.speaker.slug, round_no)] = result
        if round_no >= 2 and result.data.get("silent"):
            st.silent.add(result.speaker.slug)


def _active(st: PanelState) -> list[PersonaSpec]:
    return [r for r in st.roles if r.slug not in st.silent]


def _over_cap(ctx: DebateContext, st: PanelState, after_round: int) -> bool:
    if ctx.ledger.exceeded and st.stopped_by_cap is None:
        st.stopped_by_cap = after_round
    return st.stopped_by_cap is not None


def open_fronts(st: PanelState) -> dict[str, list[str]]:
    """For each role, the points of the others' R3 that attack it or revise positions touching it:
    lines that cite it or name it."""
    aliases = st.aliases()
    fronts: dict[str, list[str]] = {r.slug: [] for r in st.roles}
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
    return fronts


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
        return f"## 你自己的 R1\n{own[1]}\n\n## 他方 R1 原文\n{_raw(st, 1, exclude=role.slug)}"
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
    if not ctx.facts:
        await ctx.warn("no_evidence", NO_EVIDENCE)
    await _measure_cap(ctx, st, report)
    await ctx.phase(0, "concepts", gettext_noop("Concept alignment"))
    await _align_concepts(ctx, st)

    await _speak(ctx, st, 1, roles)
    if not _over_cap(ctx, st, 1):
        await _speak(ctx, st, 2, _active(st))
    if not _over_cap(ctx, st, 2):
        await _mark_blind_spots(ctx, st)
        await _speak(ctx, st, 3, _active(st))
    if not _over_cap(ctx, st, 3):
        st.fronts = open_fronts(st)
        report.data["open_fronts"] = {k: len(v) for k, v in st.fronts.items()}
        closing = [r for r in _active(st) if st.fronts.get(r.slug)]
        if closing:
            await _speak(ctx, st, 4, closing)
        else:
            await ctx.warn("r4_skipped", gettext_noop("No role has an open front: R4 is skipped."))
    if st.stopped_by_cap is not None:
        await ctx.warn(
            "token_cap",
            gettext_noop("The token cap of %(cap)d was passed: the run stopped after R%(round)d."),
            cap=ctx.ledger.cap,
            round=st.stopped_by_cap,
        )
        report.data["stopped_by_cap_after_round"] = st.stopped_by_cap

    checks = _check_citations(st)
    await _write_report(ctx, st, report, checks)
    return "done"


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
    if not ctx.facts:
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

    if st.stopped_by_cap is None:
        await ctx.phase(0, "verdict", gettext_noop("Verdict"))
        verdict = await ctx.turn(
            _host_plan(
                ctx,
                st,
                "host:verdict",
                "撰写摘要版裁决书（面向普通读者，禁止术语黑话，不超过 1200 字）。",
                f"## 立场演化\n{evolution_table(st)}\n\n## 各方最终发言\n" + _final_speeches(st),
                "依次四节：\n## 辩论精华（2–3 条穿透性引文）\n## 三区（共识区 / 分歧区 / 未决区）\n## 综合判断\n"
                f"## 结论产出（{_conclusion_kind(st.kind)}）",
                kind="verdict",
                round_no=0,  # after the rounds, in none of them
            )
        )
        verdict_text = clip(verdict.text, VERDICT_LIMIT)
    else:
        verdict_text = clip(
            ctx.translate(
                gettext_noop("The token cap was reached: the host wrote no verdict. Each role's last summary:")
            )
            + "\n"
            + "\n".join(f"- {r.name}: {_last_summary(st, r)}" for r in st.roles),
            VERDICT_LIMIT,
        )
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


def _conclusion_kind(kind: str) -> str:
    return {"investment": "行动建议", "choice": "结论与适用边界", "truth": "采纳边界与验证跟踪"}.get(kind, "结论")


def _last_summary(st: PanelState, role: PersonaSpec) -> str:
    for r in (4, 3, 2, 1):
        if (role.slug, r) in st.results:
            return st.results[(role.slug, r)].summary
    return "—"


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
    research_budget: str = "standard"  # light | standard | deep: the cap's multiplier
    token_budget: int | None = None  # an explicit cap instead of the baseline multiple
    proposition_type: str = ""  # investment | choice | truth, when the user states it


class Panel(Format):
    name = "panel"
    label = gettext_noop("Panel")
    description = gettext_noop(
        "Five roles answer blind and in parallel, then cross-examine; a host who never debates writes the verdict."
    )
    Options = PanelOptions
    seating = Seating(count=(3, 5), host_kind="host")
    tokens = {"speech": 450, "host": 300, "verdict": 900}
    summary_limit = SUMMARY_LIMIT
    parallel_phases = frozenset({"r1", "r2", "r3", "r4"})
    phase_titles = {
        "r1": gettext_noop("R1 · Blind positions"),
        "r2": gettext_noop("R2 · Cross-response"),
        "r3": gettext_noop("R3 · Defence and revision"),
        "r4": gettext_noop("R4 · Closing"),
    }

    async def run(self, ctx: DebateContext) -> str:
        return await _run(ctx)


FORMAT = Panel()
