"""Duel (master-debate): two personas, each turn a fresh isolated call.

A turn carries only the speaker's persona, the question, the opponent's current position summary
(at most 80 characters) and the speaker's own ammunition against that opponent: never the
opponent's raw text and never earlier drafts, so a position cannot be contaminated by the other's
wording. The orchestrator (this module) keeps `round_summaries` and decides when to stop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from debates.engine.context import DebateContext
from debates.engine.format import Format, Rounds, Seating, Suggestion
from debates.engine.i18n import Text, gettext_noop, text
from debates.engine.options import option
from debates.engine.plans import plan
from debates.engine.report import ReportBuilder
from debates.engine.spec import CommonOptions, CritiqueSpec, LibrarySpec, PairingRuleSpec, PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import field_value, first_sentence, similarity
from debates.engine.turns import DebateAborted, TurnPlan

SUMMARY_LIMIT = 80
DEFAULT_ROUNDS = 4
MAX_ROUNDS = 8
# Positions "stop moving" when both speakers say so, or their summaries barely change.
STILL_SIMILARITY = 0.8
DISCLAIMER = gettext_noop(
    "This dialogue is generated from historical texts and public sources; the comparison shows plural "
    "perspectives and ranks none. Every doctrinal claim carries its source."
)
ONE_SIDED_WARNING = gettext_noop("⚠️ Cross-critique covers this pair in one direction only: the debate may be weaker.")


def pair_key(slug_a: str, slug_b: str) -> str:
    """Sort, then join. Slugs may contain '-', so a key is never split back into slugs."""
    first, second = sorted((slug_a, slug_b))
    return f"{first}-vs-{second}"


@dataclass(frozen=True)
class Pairing:
    a: PersonaSpec
    b: PersonaSpec
    how: str  # explicit | rule | keywords
    rule: PairingRuleSpec | None = None

    @property
    def key(self) -> str:
        return pair_key(self.a.slug, self.b.slug)


def keyword_score(persona: PersonaSpec, question: str) -> int:
    low = question.lower()
    return sum(1 for keyword in persona.keywords if keyword and keyword.lower() in low)


def school(tradition: str) -> str:
    """The school a tradition belongs to: a sub-lineage (天台宗·灵峰派) is its school's (天台宗)."""
    return re.split(r"[·・/／(（]", tradition.strip(), maxsplit=1)[0].strip()


def rule_score(rule: PairingRuleSpec, question: str) -> tuple[int, int]:
    """How well a pairing rule matches: how many of its keywords the question holds, then how
    specific they are (their length). A short keyword inside a longer matched one of another
    rule (中观 in 中观分判) then loses to the rule the longer one belongs to."""
    low = question.lower()
    matched = [k for k in rule.keywords if k and k.lower() in low]
    return len(matched), sum(len(k) for k in matched)


def choose_pair(
    question: str,
    explicit: list[PersonaSpec],
    rules: list[PairingRuleSpec],
    pool: list[PersonaSpec],
) -> Pairing:
    """The seed's decision tree: named by the user → the pairing rule that matches best (ties go to
    the rule listed first) → the two best keyword matches from different schools."""
    if len(explicit) == 2:
        return Pairing(explicit[0], explicit[1], "explicit")
    if explicit:
        raise DebateAborted(
            text(gettext_noop("A duel needs exactly two personas: name two, or none.")), outcome="refused"
        )
    by_slug = {p.slug: p for p in pool}
    scored = [(rule_score(r, question), -i, r) for i, r in enumerate(rules)]
    for score, _order, best in sorted(scored, key=lambda item: (item[0], item[1]), reverse=True):
        if score[0] == 0:
            break
        a, b = (by_slug.get(s) for s in best.personas)
        if a and b:
            return Pairing(a, b, "rule", best)
    debaters = [p for p in pool if p.kind == "debater"]
    ranked = sorted(debaters, key=lambda p: (-keyword_score(p, question), p.slug))
    if not ranked or keyword_score(ranked[0], question) == 0:
        raise DebateAborted(
            text(gettext_noop("No pairing rule or persona keyword matches this question: choose two personas.")),
            outcome="refused",
        )
    first = ranked[0]
    for second in ranked[1:]:
        if school(second.tradition) != school(first.tradition) and keyword_score(second, question) > 0:
            return Pairing(first, second, "keywords")
    raise DebateAborted(
        text(gettext_noop("Keywords found no second persona from a different tradition: choose two personas.")),
        outcome="refused",
    )


def resolve_rounds(pairing: Pairing, rules: list[PairingRuleSpec], protocol: dict, requested: int | None):
    """Per-pair override's default, else the protocol default; a user's value capped by the maximum."""
    default = Duel.rounds.default_for(protocol)
    maximum = Duel.rounds.maximum_for(protocol)
    for rule in rules:
        if pair_key(*rule.personas) == pairing.key and rule.default_rounds:
            default = rule.default_rounds
            break
    if requested:
        return min(requested, maximum)
    return min(default, maximum)


HONORIFICS = ("大师", "尊者", "法师", "禅师", "祖师")


def side_words(persona: PersonaSpec, other: PersonaSpec) -> set[str]:
    """What names a persona's side and not the other's: its name (with and without an honorific),
    its school and its own keywords."""
    name = persona.name.strip()
    bare = next((name[: -len(h)] for h in HONORIFICS if name.endswith(h) and len(name) > len(h) + 1), name)
    mine = {k for k in (*persona.keywords, school(persona.tradition), name, bare) if k and len(k) >= 2}
    theirs = {k for k in (*other.keywords, school(other.tradition), other.name) if k}
    return {k for k in mine - theirs if not any(k in t for t in theirs)}


# A claim for a side: its word followed by a verdict ("念佛更适合", "参禅才是…"), or a verdict
# followed by it ("我认为念佛…", "应当参禅", "支持「阿姜查」").
_VERDICT_AFTER = "(?:更适合|最适合|最直接|更直接|才是|更好|为上|优先|更究竟|更根本|更殊胜|最稳妥|更稳妥)"
_VERDICT_BEFORE = "(?:我认为|我主张|主张|应当|应该|建议|首推|只有|支持|同意|赞同|认同)"


def _claims(text: str, words: set[str]) -> int:
    return sum(
        len(re.findall(rf"{re.escape(w)}[^，。；！？,.;!?\n]{{0,6}}{_VERDICT_AFTER}", text))
        + len(re.findall(rf"{_VERDICT_BEFORE}[^，。；！？,.;!?\n]{{0,4}}{re.escape(w)}", text))
        for w in words
    )


def speaks_for(text: str, side: PersonaSpec, speaker: PersonaSpec) -> bool:
    """The speech argues `side`'s position rather than the speaker's own. Method: each side's
    distinctive words (its master's name, school and keywords, none the other shares) are looked
    for in claims, a word next to a verdict ("念佛更适合", "我认为念佛…", "我支持「阿姜查」的观点");
    more claims for the other side is a flip. With no claim either way, the stance line decides:
    the summary (else the first sentence) naming the other side's words more than the speaker's
    own."""
    for lead in leads(speaker):  # words the grammar wrote for it say nothing of its side
        text = text.replace(lead, "")
    theirs_words, mine_words = side_words(side, speaker), side_words(speaker, side)
    theirs, mine = _claims(text, theirs_words), _claims(text, mine_words)
    if theirs or mine:
        return theirs > mine
    line = (field_value(text, ("小结", "summary")) or first_sentence(text)).lower()
    return sum(w.lower() in line for w in theirs_words) > sum(w.lower() in line for w in mine_words)


def ammunition(critiques: list[CritiqueSpec], source: str, target: str) -> list[CritiqueSpec]:
    return [c for c in critiques if c.source == source and c.target == target]


def _ammo_text(ammo: list[CritiqueSpec]) -> str:
    if not ammo:
        return "（你对这位对手没有预备的批评条目，请依你自己的经典立论。）"
    return "\n".join(f"{i}. {c.point}（出处：{c.citation}）" for i, c in enumerate(ammo, 1))


STILL_WORDS = ("无", "未变", "坚持", "不变", "none", "unchanged", "hold")
MOVED_WORDS = ("松动", "转向", "loosen", "shift", "turn")


def position_moved(text: str) -> bool | None:
    """The speaker's declared position change: None when it declared none. The chosen state is the
    option word at the start; in a phrase such as "从无转向松动" the *last* state named is where the
    position went. The half-sentence after the choice may say anything (无念, 无常, …)."""
    value = field_value(text, ("立场变化", "position change")).lower()
    if not value:
        return None
    # A small model may copy the whole menu ("无 / 松动 / 转向"): that says nothing either way.
    if "/" in value and sum(word in value for word in ("无", *MOVED_WORDS)) > 1:
        return None
    head = re.split(r"[，,。；;：:（(]", value, maxsplit=1)[0]  # the choice, before any explanation
    hits = [(head.rfind(w), w in STILL_WORDS) for w in (*STILL_WORDS, *MOVED_WORDS) if w in head]
    if hits:
        return not max(hits)[1]
    hits = [(value.find(w), w in STILL_WORDS) for w in (*STILL_WORDS, *MOVED_WORDS) if w in value]
    return not min(hits)[1] if hits else True


# A doctrinal source: a title in 《》 with its chapter or fascicle (inside, after "·", or just after).
CITATION = re.compile(
    r"《[^》]{1,40}[·・][^》]{1,30}》"
    r"|《[^》]{1,40}》\s*(?:第?[一二三四五六七八九十百千\d]+\s*[卷品章篇]|卷\s*[一二三四五六七八九十百千\d]+)"
)


def duel_citations(text: str) -> list[str]:
    return CITATION.findall(text)


SPEECH_FORM = Form(
    (
        Part("正文", chars=300, lines=3),
        Part("立场变化", choices=("无", "松动", "转向"), tail=30),
        Part("小结", chars=SUMMARY_LIMIT),
    )
)


def leads(speaker: PersonaSpec) -> tuple[str, str]:
    """The words a speech and its summary start with under the grammar, in the speaker's own
    name: a 1.5B model that begins "作为慧能大师，" goes on to argue Huineng's side far more often
    than one left to begin as it likes, which argued its opponent's in a quarter of its speeches."""
    return f"作为{speaker.name}，", f"依{speaker.name}之见，"


def speech_form(speaker: PersonaSpec, question: str) -> Form:
    """SPEECH_FORM, with the speaker's leads when the debate is in Chinese (the leads are)."""
    if not re.search(r"[\u4e00-\u9fff]", question):
        return SPEECH_FORM
    speech, summary = leads(speaker)
    body, moved, last = SPEECH_FORM.parts
    return Form((replace(body, lead=speech), moved, replace(last, lead=summary, chars=SUMMARY_LIMIT - len(summary))))


CLOSE_FORM = Form(
    (
        Part("双方主张", chars=160, lines=2),
        Part("分歧所在", chars=160, lines=2),
        Part("可互相参照之处", chars=160, lines=2),
        Part("小结", chars=80),
    )
)


def _speech_plan(
    ctx: DebateContext,
    round_no: int,
    speaker: PersonaSpec,
    opponent: PersonaSpec,
    opponent_summary: str,
    ammo: list[CritiqueSpec],
    rounds: int,
    own_summary: str = "",
    again: bool = False,
) -> TurnPlan:
    side = f"你代表「{speaker.name}」（{speaker.tradition or '本派'}）的立场，对手是「{opponent.name}」。"
    summary = opponent_summary or "（对手尚未发言：这是开篇立论。）"
    material = (
        f"## 对手当前立场摘要（≤80字）\n{summary}\n\n## 你的弹药：你对「{opponent.name}」的批评\n{_ammo_text(ammo)}"
    )
    if own_summary:  # its own position so far, to say honestly whether it moved (never the opponent's words)
        material = f"## 你上一轮的立场摘要（≤80字）\n{own_summary}\n\n{material}"
    output_format = (
        "按下面三部分写，先写正文：\n"
        "正文：200–350 字的发言。陈述你的立场与论证，回应对手摘要中的要点，用上你的弹药并注明出处。\n"
        "立场变化：从“无”“松动”“转向”中只选一个词，再用半句话说明\n"
        f"小结：一句话概括你本轮立场（不超过 {SUMMARY_LIMIT} 字）\n\n"
        f"记住：你是「{speaker.name}」，只为自己的立场辩护；不要替「{opponent.name}」说话，也不要宣布赞同对方。"
    )
    rules = [
        f"祖师对辩，第 {round_no}/{rounds} 轮。{side}",
        "你只看得到对手当前立场的摘要，看不到其原话；不要编造对手说过的话。",
        "每一条教义断言都要注明出处（经论名与品/卷），不确定就说明。",
        "篇幅约 200–300 字。",
    ]
    if again:
        rules.append(
            f"你上一版的小结替「{opponent.name}」的立场说话，被退回重写。"
            f"这一次从「{speaker.name}」（{speaker.tradition or '本派'}）的立场出发。"
        )
    return plan(
        ctx,
        speaker,
        f"duel:{round_no}:{speaker.slug}" + (":again" if again else ""),
        round_no=round_no,
        phase="duel",
        rules=rules,
        material=material,
        output=output_format,
        form=speech_form(speaker, ctx.spec.question),
        others=[opponent.name],
        postprocess=lambda text: (text, {"moved": position_moved(text), "citations": len(duel_citations(text))}),
    )


async def _run(ctx: DebateContext) -> None:
    spec, library = ctx.spec, ctx.library
    pairing = choose_pair(spec.question, [s.persona for s in spec.seats], library.pairing_rules, library.pool)
    rounds = resolve_rounds(pairing, library.pairing_rules, library.protocol, ctx.options.rounds)
    await ctx.plan(rounds=rounds)
    a, b = pairing.a, pairing.b
    ammo = {
        a.slug: ammunition(library.critiques, a.slug, b.slug),
        b.slug: ammunition(library.critiques, b.slug, a.slug),
    }
    report = ReportBuilder(ctx, title=spec.question)
    report.data.update(
        {
            "pair_key": pairing.key,
            "pairing": pairing.how,
            "rounds_planned": rounds,
            "personas": [a.slug, b.slug],
            "ammunition": {k: len(v) for k, v in ammo.items()},
        }
    )
    if not ammo[a.slug] or not ammo[b.slug]:
        await ctx.warn("one_sided_coverage", ONE_SIDED_WARNING)
        report.top_notes.append(text(ONE_SIDED_WARNING))

    round_summaries: list[dict] = []
    latest = {a.slug: "", b.slug: ""}
    for round_no in range(1, rounds + 1):
        await ctx.phase(round_no, "duel", gettext_noop("Round %(n)d"), n=round_no)
        moved = {}
        for speaker, opponent in ((a, b), (b, a)):
            turn = _speech_plan(
                ctx,
                round_no,
                speaker,
                opponent,
                latest[opponent.slug],
                ammo[speaker.slug],
                rounds,
                latest[speaker.slug],
            )
            result = await ctx.turn(turn)
            # A model that loses its side writes again; a person says what they mean.
            if speaks_for(result.text, opponent, speaker) and not ctx.is_human(speaker.slug):
                # A small model loses its side: its own stance line argues the opponent's school.
                if not result.replayed:
                    await ctx.warn(
                        "side_lost",
                        gettext_noop("%(speaker)s's summary argued %(opponent)s's side: written again once."),
                        speaker=speaker.name,
                        opponent=opponent.name,
                    )
                args = (ctx, round_no, speaker, opponent, latest[opponent.slug], ammo[speaker.slug], rounds)
                result = await ctx.turn(_speech_plan(*args, latest[speaker.slug], again=True))
                if not result.replayed and speaks_for(result.text, opponent, speaker):
                    await ctx.warn(
                        "side_lost_kept",
                        gettext_noop("%(speaker)s still argued %(opponent)s's side when asked again."),
                        speaker=speaker.name,
                        opponent=opponent.name,
                    )
            if not result.replayed and not result.data.get("citations"):
                await ctx.warn(
                    "uncited",
                    gettext_noop("%(speaker)s cited no source (a text with its chapter or fascicle) in round %(n)d."),
                    speaker=speaker.name,
                    n=round_no,
                )
            previous = latest[speaker.slug]
            latest[speaker.slug] = result.summary
            round_summaries.append({"round": round_no, "speaker_slug": speaker.slug, "summary": result.summary})
            declared = result.data.get("moved")
            moved[speaker.slug] = (
                declared
                if declared is not None
                else (not previous or similarity(previous, result.summary) < STILL_SIMILARITY)
            )
        if round_no >= 2 and not any(moved.values()) and round_no < rounds:
            await ctx.warn(
                "early_stop", gettext_noop("Neither position moved in round %(n)d: the duel ends early."), n=round_no
            )
            report.data["stopped_early_after"] = round_no
            break
    report.data["round_summaries"] = round_summaries

    await ctx.phase(0, "close", gettext_noop("Closing synthesis"))
    close = await ctx.turn(_close_plan(ctx, a, b, round_summaries))
    report.section("synthesis", gettext_noop("Neutral synthesis"), close.text)
    report.top_notes.insert(0, text(DISCLAIMER))
    await report.emit(verdict_heading=gettext_noop("Duel"))


ORCHESTRATOR = PersonaSpec(slug="orchestrator", name="中立记录者", kind="host")


def _close_plan(ctx: DebateContext, a: PersonaSpec, b: PersonaSpec, summaries: list[dict]) -> TurnPlan:
    names = {a.slug: a.name, b.slug: b.name}
    lines = "\n".join(f"- 第{s['round']}轮 {names[s['speaker_slug']]}：{s['summary']}" for s in summaries)
    return plan(
        ctx,
        ORCHESTRATOR,
        "duel:close",
        round_no=0,  # after the rounds, in none of them
        phase="close",
        rules=[
            "你是对辩的中立记录者，不站任何一方，不评判高下。",
            "只根据下面的轮次摘要作综合：双方各自的核心主张、真正的分歧点、可以相互参照之处。",
            "不要使用“我认为”“正确答案是”。约 300–500 字。",
        ],
        material=f"## 轮次摘要 round_summaries\n{lines}",
        output="按四部分写，每部分单独成行起头：\n双方主张：…\n分歧所在：…\n可互相参照之处：…\n小结：…（不超过80字）",
        form=CLOSE_FORM,
        kind="close",
        duty="你只有记录与综合之责，没有裁决之权。",
    )


# -- the format ------------------------------------------------------------------------------------


@dataclass
class DuelOptions(CommonOptions):
    # None: the pair's override, else the library's default
    rounds: int | None = option(None, kind="round_count", label=gettext_noop("Rounds"), example=1)


class Duel(Format):
    name = "duel"
    label = gettext_noop("Duel")
    description = gettext_noop(
        "Two masters argue in turns; each turn is a fresh call that sees only the other's summary."
    )
    Options = DuelOptions
    sides = "order"
    seating = Seating(count=(2, 2))
    rounds = Rounds(user_sets=True, default=DEFAULT_ROUNDS, maximum=MAX_ROUNDS)
    tokens = {"speech": 420, "close": 700}
    summary_limit = SUMMARY_LIMIT
    phase_titles = {"duel": gettext_noop("Duel round"), "close": gettext_noop("Closing synthesis")}

    def check(self, question, personas, options, library) -> dict[str, Text]:
        problems = super().check(question, personas, options, library)
        if not personas and "personas" not in problems:
            refusal = self.suggest(question, library).refusal
            if refusal:
                problems["personas"] = refusal
        return problems

    def suggest(self, question, library: LibrarySpec, options=None) -> Suggestion:
        if not question.strip():
            return Suggestion()
        try:
            pairing = choose_pair(question, [], library.pairing_rules, library.pool)
        except DebateAborted as refusal:
            return Suggestion(refusal=refusal.text)
        if pairing.rule:
            note = text(gettext_noop("%(key)s · pairing rule: %(label)s"), key=pairing.key, label=pairing.rule.label)
        else:
            note = text(gettext_noop("%(key)s · keyword match"), key=pairing.key)
        return Suggestion([(pairing.a, ""), (pairing.b, "")], note)

    async def run(self, ctx: DebateContext) -> str:
        await _run(ctx)
        return "done"


FORMAT = Duel()
