"""Moderated (debate-moderator): a neutral chair runs a state machine over participant manifests.

Validate manifests → pick the mode's order (round-robin, position-based, free-form) → each speech
gets the question, frame, mode, round, assigned position, a character limit and the earlier
speeches → anti-pattern flags → the fixed verdict form. The chair never argues and never says 我认为.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

from debates.engine import research
from debates.engine.context import DebateContext
from debates.engine.format import Format, Mode, Rounds, Seating, Suggestion
from debates.engine.i18n import Text, gettext_noop, text
from debates.engine.options import option
from debates.engine.plans import plan
from debates.engine.report import ReportBuilder
from debates.engine.spec import CommonOptions, LibrarySpec, PersonaSpec, SeatSpec
from debates.engine.text import clip, cut_marked, normalise, similarity
from debates.engine.turns import DebateAborted, TurnResult

DEFAULT_ROUNDS = 2
MAX_ROUNDS = 6
DEFAULT_MAX_CHARS = 600
DEFAULT_BUDGET = 60000
# What a debate may set for itself when its library names no range (`max_chars_range`,
# `token_budget_range` in the library's protocol).
MAX_CHARS_RANGE = (100, 4000)
BUDGET_RANGE = (2000, 500000)
CONTEXT_SPEECHES = 6
CUT_MARK = "……【超出字数，已由主持人截断 cut at the limit】"
VERDICT_FORM = "若被迫选，在所有发言的基础上最小损失的选项是"
VERDICT_FORM_EN = "If forced to choose, the least-loss option on the basis of all speeches is"
# Longest first: "应该选" goes whole before "应该" alone is taken out.
STANCE_WORDS = ("我认为", "我觉得", "我相信", "正确答案是", "应该选", "应该")
POSITION_NAMES = {"for": "支持", "against": "反对", "": "无"}
MIN_DENSITY_OK = 6.0


@dataclass
class Participant:
    seat: SeatSpec
    speeches: list[TurnResult] = field(default_factory=list)

    @property
    def persona(self) -> PersonaSpec:
        return self.seat.persona


def screen_seats(seats: list[SeatSpec]) -> tuple[list[SeatSpec], list[str], list[str]]:
    """The seats this format can run with: a persona missing a key field (name, description,
    schema type, density score) is dropped; a density in [0, 6) or -1 is a low-density warning.
    Returns (kept, dropped reasons, warnings). (Not the manifest validator, which checks a library
    file before import: `personas.manifest.validation`.)"""
    kept, dropped, warnings = [], [], []
    for seat in seats:
        p = seat.persona
        missing = [
            name
            for name, value in (
                ("name", p.name),
                ("description", p.description),
                ("schema_type", p.schema_type),
                ("density_score", p.density_score),
            )
            if value in (None, "")
        ]
        if missing:
            dropped.append(text(gettext_noop("%(slug)s: missing %(fields)s"), slug=p.slug, fields=", ".join(missing)))
            continue
        if p.density_score == -1 or 0 <= p.density_score < MIN_DENSITY_OK:
            warnings.append(
                text(
                    gettext_noop("%(name)s: low-density persona (density %(density)s)"),
                    name=p.name,
                    density=f"{p.density_score:g}",
                )
            )
        kept.append(seat)
    return kept, dropped, warnings


# A Latin keyword matches whole words, and their common endings ("price" → "prices", "hire" →
# "hiring"); CJK keywords match as substrings of the question (no spaces between Chinese words).
_LATIN = re.compile(r"[a-z0-9]")
_ENDINGS = "(?:s|es|d|ed|ing|er|ers)?"
# Library protocol key: the debaters to seat, in order, when a question's keywords pick fewer than
# two (without it: the library's densest manifests).
GENERAL_PERSONAS = "general_personas"


@functools.lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern | None:
    word = unicodedata.normalize("NFKC", keyword).lower().strip()
    if not _LATIN.search(word):
        return None
    parts = [re.escape(part) for part in re.split(r"[\s\-_]+", word) if part]
    body = r"[\s\-]*".join(parts)
    forms = [body + _ENDINGS]
    if word.endswith("e") and len(word) > 3:  # hire → hiring, hired
        forms.append(body[:-1] + "(?:ing|ed|er|ers)")
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(forms) + r")(?![a-z0-9])")


def keyword_hits(question: str, keywords) -> list[str]:
    """The keywords a question holds: Latin ones case-insensitively on word boundaries, the others
    (Chinese) anywhere in it."""
    lowered = unicodedata.normalize("NFKC", question).lower()
    squeezed = normalise(question)
    hits = []
    for keyword in keywords:
        if not keyword or not keyword.strip() or keyword in hits:
            continue
        pattern = _keyword_pattern(keyword)
        found = pattern.search(lowered) if pattern else normalise(keyword) and normalise(keyword) in squeezed
        if found:
            hits.append(keyword)
    return hits


def _scored(question: str, pool: list[PersonaSpec]) -> list[tuple[PersonaSpec, float, list[str]]]:
    scored = []
    for persona in pool:
        if persona.kind != "debater":
            continue
        keywords = [k for k in persona.keywords if k]
        hits = keyword_hits(question, keywords)
        overlap = min(1.0, len(hits) / 2) if keywords else 0.0
        density = persona.density_score if persona.density_score not in (None, -1) else 0.0
        score = round(0.7 * overlap + 0.3 * min(1.0, density / 10), 3)
        scored.append((persona, score, hits))
    scored.sort(key=lambda item: (-item[1], item[0].slug))
    return scored


def recommend(question: str, pool: list[PersonaSpec], threshold: float = 0.5) -> list[tuple[PersonaSpec, float]]:
    """Score each debater for a question in [0, 1]: keyword overlap, weighted by manifest density.
    Scores under `threshold` are ignored, as the seed's router integration requires."""
    return [(p, s) for p, s, _hits in _scored(question, pool) if s >= threshold]


@dataclass
class Recommendation:
    """Who sits when nobody is chosen: (persona, score, keywords matched), and why, when the
    keywords alone did not pick two (`reason`, said in the suggestion and as a debate warning)."""

    seats: list[tuple[PersonaSpec, float, list[str]]]
    reason: Text | None = None

    @property
    def note(self) -> Text:
        if self.reason:
            return self.reason
        matches = "; ".join(f"{p.name} — {', '.join(hits)}" for p, _score, hits in self.seats)
        return text(gettext_noop("score ≥ 0.5, keywords matched: %(matches)s"), matches=matches)


def recommend_seating(question: str, library: LibrarySpec, threshold: float = 0.5) -> Recommendation:
    """The recommender's picks (score ≥ `threshold`, at most the table's size). Fewer than two:
    never a refusal, a pair all the same, filled from personas whose keywords match only weakly,
    then the library's general personas (protocol `general_personas`, else its densest
    manifests), with the reason."""
    scored = _scored(question, library.pool)
    picks = [item for item in scored if item[1] >= threshold][: FORMAT.seating.count[1]]
    if len(picks) >= 2:
        return Recommendation(picks)
    weak = [item for item in scored if item not in picks and item[2]]
    named = list(library.protocol.get(GENERAL_PERSONAS) or [])
    general = sorted(
        (item for item in scored if item not in picks and not item[2]),
        key=lambda item: (
            named.index(item[0].slug) if item[0].slug in named else len(named),
            -(item[0].density_score or 0),
            item[0].slug,
        ),
    )
    seats = picks + (weak + general)[: 2 - len(picks)]
    if len(seats) < 2:
        return Recommendation(seats)
    matched = [p.name for p, _score, hits in seats if hits]
    first, second = (p.name for p, _score, _hits in seats)
    if not matched:
        reason = text(
            gettext_noop(
                "No persona's keywords match this question, so two general voices sit: %(first)s and "
                "%(second)s. Choose personas yourself for a closer fit."
            ),
            first=first,
            second=second,
        )
    elif len(matched) == 1:
        reason = text(
            gettext_noop(
                "Only %(fit)s matches this question's keywords, so %(added)s joins as a general voice. "
                "Choose personas yourself for a closer fit."
            ),
            fit=matched[0],
            added=second if matched[0] == first else first,
        )
    elif picks:
        reason = text(
            gettext_noop(
                "Only %(fit)s fits this question well (score ≥ 0.5), so %(added)s joins, whose keywords match "
                "it only weakly. Choose personas yourself for a closer fit."
            ),
            fit=first,
            added=second,
        )
    else:
        reason = text(
            gettext_noop(
                "%(first)s and %(second)s match this question's keywords only weakly (score under 0.5), "
                "and no persona fits better. Choose personas yourself for a closer fit."
            ),
            first=first,
            second=second,
        )
    return Recommendation(seats, reason)


def schedule(mode: str, participants: list[Participant]) -> list[Participant]:
    """Speakers of one round. Free-form picks one speaker at a time elsewhere (see `next_free`)."""
    if mode == "position-based":
        pro = [p for p in participants if p.seat.position == "for"]
        con = [p for p in participants if p.seat.position == "against"]
        order = []
        for i in range(max(len(pro), len(con))):
            order += [side[i] for side in (pro, con) if i < len(side)]
        return order
    return list(participants)


def next_free(participants: list[Participant], last: Participant | None) -> Participant:
    """Free-form: the moderator gives the floor to whoever has spoken least; among equals, someone
    the last speech named, then seat order. Counts stay within one of each other."""
    fewest = min(len(p.speeches) for p in participants)
    candidates = [p for p in participants if len(p.speeches) == fewest and p is not last] or [
        p for p in participants if len(p.speeches) == fewest
    ]
    if last and last.speeches:
        named = [p for p in candidates if p.persona.name in last.speeches[-1].text]
        if named:
            return named[0]
    return candidates[0]


def anti_patterns(speaker: Participant, text: str, everyone: list[Participant]) -> list[str]:
    flags = []
    for earlier in speaker.speeches:
        if similarity(earlier.text, text) > 0.6:
            flags.append("repetition")
            break
    if any(w in text for w in ("作为一个AI", "作为AI", "作为人工智能", "as an AI", "作为语言模型")):
        flags.append("persona drift")
    for other in everyone:
        if other is speaker:
            continue
        if f"我是{other.persona.name}" in text or f"作为{other.persona.name}" in text:
            flags.append("persona drift")
        for quote in _quotes_attributed(text, other.persona.name):
            if not any(normalise(quote) in normalise(s.text) for s in other.speeches):
                flags.append("straw man")
                break
    stripped = normalise(text)
    if len(stripped) < 60 and any(w in text for w in ("同意", "赞同", "agree")):
        flags.append("empty agreement")
    return sorted(set(flags))


def _quotes_attributed(text: str, name: str) -> list[str]:
    pattern = re.compile(re.escape(name) + r"(?:说|认为|声称|所说|提到)?[:：，,]?\s*[“\"「]([^”\"」]{4,120})[”\"」]")
    return pattern.findall(text)


def recommended_seats(question: str, library: LibrarySpec) -> list[SeatSpec]:
    """Nobody named: the recommender's seats (`recommend_seating`), at most the table's size."""
    return [SeatSpec(p) for p, _score, _hits in recommend_seating(question, library).seats]


async def _run(ctx: DebateContext) -> str:
    spec, library = ctx.spec, ctx.library
    chosen = FORMAT.mode(ctx.options.mode)
    if chosen is None:
        raise DebateAborted(
            text(
                gettext_noop("There is no moderated mode “%(mode)s”: round-robin, position-based or free-form."),
                mode=ctx.options.mode,
            ),
            outcome="refused",
        )
    mode = chosen.name
    seats = [s for s in spec.seats if s.persona.kind == "debater"]
    if not seats:
        recommendation = recommend_seating(spec.question, library)
        seats = [SeatSpec(p) for p, _score, _hits in recommendation.seats]
        if recommendation.reason:
            await ctx.warn("recommender_fallback", recommendation.reason.msgid, **recommendation.reason.params)
    kept, dropped, low_density = screen_seats(seats)
    for reason in dropped:
        await ctx.warn(
            "manifest_dropped",
            gettext_noop("A participant was dropped (its manifest misses key fields): %(reason)s"),
            reason=reason,
        )
    for note in low_density:
        await ctx.warn("low_density", note.msgid, **note.params)
    if len(kept) < 2:
        raise DebateAborted(
            text(gettext_noop("Only %(count)d participant(s) left: a moderated debate needs 2."), count=len(kept)),
            outcome="refused",
        )
    if mode == "position-based":
        sides = {s.position for s in kept}
        if not {"for", "against"} <= sides:
            raise DebateAborted(
                text(gettext_noop("Position-based needs at least one persona for and one against.")),
                outcome="refused",
            )
    participants = [Participant(s) for s in kept]
    protocol = library.protocol
    rounds = ctx.options.rounds or FORMAT.rounds.default_for(protocol)
    max_chars = ctx.options.max_chars or int(protocol.get("max_chars", DEFAULT_MAX_CHARS))
    await ctx.plan(rounds=rounds, cap=ctx.options.token_budget or int(protocol.get("token_budget", DEFAULT_BUDGET)))
    moderator = library.host or PersonaSpec(slug="moderator", name="主持人", kind="moderator")
    report = ReportBuilder(ctx, title=spec.question)
    report.data.update(
        {
            "mode": mode,
            "rounds": rounds,
            "max_chars": max_chars,
            "participants": [p.persona.slug for p in participants],
            "flags": [],
        }
    )
    if ctx.options.research and ctx.research is not None:
        task = "开场前的检索：为本议题需要核实的关键事实与数据写网络检索词。"
        report.data["research_queries"] = await research.build_pack(ctx, moderator, research.BUDGETS["standard"], task)
    elif ctx.options.research:
        await research.skipped(ctx)
    history: list[TurnResult] = []
    budget_stop = False
    for round_no in range(1, rounds + 1):
        round_name, round_title = _round_name(round_no, rounds)
        await ctx.phase(round_no, "speech", gettext_noop("Round %(n)d · %(name)s"), n=round_no, name=text(round_title))
        last = _owner(participants, history[-1]) if history else None
        order = schedule(mode, participants) if mode != "free-form" else [None] * len(participants)
        for planned in order:
            speaker = last = planned or next_free(participants, last)
            result = await _speak(
                ctx, speaker, participants, history, round_no, rounds, round_name, mode, max_chars, report
            )
            history.append(result)
            if ctx.ledger.spent_for_rounds:
                break
        if ctx.ledger.spent_for_rounds:
            budget_stop = True
            await ctx.warn(
                "token_budget",
                gettext_noop("The debate's token budget of %(cap)d is spent: the speeches end here."),
                cap=ctx.ledger.cap,
            )
            break
    report.data["speech_counts"] = {p.persona.slug: len(p.speeches) for p in participants}
    await _verdict(ctx, moderator, participants, history, report, budget_stop)
    return "done"


# Each round's name: as the prompt says it, and as the page titles it (a msgid).
ROUND_NAMES = (
    ("开篇陈述", gettext_noop("Opening statements")),
    ("交锋回应", gettext_noop("Responses")),
    ("深入交锋", gettext_noop("Deeper exchange")),
)
CLOSING = ("总结陈词", gettext_noop("Closing statements"))
FLAGS = (
    gettext_noop("repetition"),
    gettext_noop("straw man"),
    gettext_noop("persona drift"),
    gettext_noop("empty agreement"),
)


def _round_name(round_no: int, rounds: int) -> tuple[str, str]:
    if rounds > 1 and round_no == rounds:
        return CLOSING
    return ROUND_NAMES[min(round_no - 1, 2)]


def _owner(participants: list[Participant], result: TurnResult) -> Participant:
    return next(p for p in participants if p.persona.slug == result.speaker.slug)


async def _speak(
    ctx, speaker: Participant, participants, history, round_no, rounds, round_name, mode, max_chars, report
) -> TurnResult:
    persona = speaker.persona
    position = POSITION_NAMES.get(speaker.seat.position, speaker.seat.position)
    context = (
        "\n\n".join(f"{r.speaker.name}：{r.text}" for r in history[-CONTEXT_SPEECHES:]) or "（你是第一位发言者。）"
    )
    task = {1: "陈述你对问题的核心看法与理由。"}.get(round_no, "回应之前的发言：指出你同意和不同意之处，并推进论证。")
    if round_no == rounds and rounds > 1:
        task = "总结陈词：给出你的最终立场与最关键的理由。"
    key = f"speech:{round_no}:{persona.slug}:{len(speaker.speeches) + 1}"

    def post(text: str) -> tuple[str, dict]:
        kept, was_cut = cut_marked(text.strip(), max_chars, CUT_MARK)
        return kept, {"cut": was_cut, "position": speaker.seat.position}

    turn = plan(
        ctx,
        persona,
        key,
        round_no=round_no,
        phase="speech",
        rules=[
            "你正在参与一场多 persona 辩论。",
            f"你的角色：作为“{persona.name}”发言，严格以你的视角与风格回答，不要扮演他人。",
            f"当前模式：{mode}",
            f"当前轮次：{round_name}（第 {round_no}/{rounds} 轮）",
            f"你被分派的立场：{position}" + ("（整篇发言都要站在这个立场上）" if speaker.seat.position else ""),
            f"最大字数：{max_chars}（超出会被主持人截断）",
            task,
        ],
        material=f"## 相关上下文（之前的发言）\n{context}",
        output=f"只输出你作为 {persona.name} 的发言本身，不要解释、不要 meta 说明，不要写“作为 X 我会说”。",
        others=[p.persona.name for p in participants if p is not speaker],
        postprocess=post,
        chars=max_chars,  # a person in the seat writes within it too
    )
    result = await ctx.turn(turn)
    flags = anti_patterns(speaker, result.text, participants)
    if result.data.get("cut"):
        await ctx.warn(
            "speech_cut",
            gettext_noop("%(speaker)s spoke past %(max)d characters: the speech was cut."),
            speaker=persona.name,
            max=max_chars,
        )
    for flag in flags:
        report.data["flags"].append({"turn": key, "speaker": persona.slug, "flag": flag})
        await ctx.warn("anti_pattern", gettext_noop("%(speaker)s: %(flag)s"), speaker=persona.name, flag=text(flag))
    speaker.speeches.append(result)
    return result


def enforce_verdict_form(text: str) -> tuple[str, list[str]]:
    """The verdict must use the fixed form and no stance words; fix it by code when the model didn't."""
    fixes = []
    body = text.strip()
    for word in STANCE_WORDS:
        if word in body:
            body = body.replace(word, "")
            fixes.append(f"removed {word!r}")
    if VERDICT_FORM not in body:
        line = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
        body = f"{VERDICT_FORM}：{clip(line, 200)}\n\n{body}" if line else f"{VERDICT_FORM}：（无足够发言）"
        fixes.append("verdict form added")
    return body, fixes


async def _verdict(ctx, moderator: PersonaSpec, participants, history, report: ReportBuilder, budget_stop: bool):
    speeches = "\n\n".join(f"【{r.speaker.name}·第{r.round}轮】{r.text}" for r in history)
    if budget_stop:
        verdict = f"{VERDICT_FORM}：（预算用尽，主持人未能综合；请阅读实录。）"
        fixes = []
    else:
        await ctx.phase(0, "verdict", gettext_noop("Verdict"))
        result = await ctx.turn(
            plan(
                ctx,
                moderator,
                "moderator:verdict",
                round_no=0,  # after the rounds, in none of them
                phase="host",
                rules=[
                    "你是中立的主持人，不是辩手。不使用“我认为 / 应该 / 正确答案是”等立场词汇。",
                    "先用三到五条中性要点概括各方观点与分歧，再给出裁决。",
                    f"裁决必须严格使用固定句式：“{VERDICT_FORM}…”",
                ],
                material=f"## 全部发言\n{speeches}",
                output=f"## 各方要点\n- …\n## 裁决\n{VERDICT_FORM}……（说明理由）",
                kind="verdict",
                duty="主席，不是辩手。",
            )
        )
        verdict, fixes = enforce_verdict_form(result.text)
    report.data["verdict"] = verdict
    report.data["verdict_fixes"] = fixes
    report.section("verdict", gettext_noop("The moderator's synthesis and verdict"), verdict)
    await report.emit(verdict_heading=gettext_noop("Moderated debate"))


# -- the format ------------------------------------------------------------------------------------


@dataclass
class ModeratedOptions(CommonOptions):
    # round-robin | position-based | free-form; empty: round-robin
    mode: str = option("", kind="modes", label=gettext_noop("Mode"))
    rounds: int | None = option(None, kind="round_count", label=gettext_noop("Rounds"), example=1)
    token_budget: int | None = option(  # the whole run's budget (default: the library's, else 60,000)
        None,
        kind="int",
        label=gettext_noop("Token budget"),
        help=gettext_noop("Empty: the format's own cap. Past it the speeches end and the verdict is still written."),
        minimum=1,
        default_key="token_budget",
        range_key="token_budget_range",
        example=20000,
    )
    max_chars: int | None = option(  # per speech (default: the library's, else 600)
        None,
        kind="int",
        label=gettext_noop("Characters per speech"),
        help=gettext_noop("Empty: the library's limit. A longer speech is cut, and marked so."),
        minimum=1,
        default_key="max_chars",
        range_key="max_chars_range",
        example=300,
    )
    research: bool = option(  # build an evidence pack by searching before the opening
        False,
        kind="bool",
        label=gettext_noop("Research before the opening"),
        help=gettext_noop("Search the web for an evidence pack first (needs web research above)."),
        place="search",
    )


class Moderated(Format):
    name = "moderated"
    label = gettext_noop("Moderated")
    description = gettext_noop(
        "A neutral moderator runs personas round-robin, for and against, or free-form, and ends on a fixed verdict."
    )
    Options = ModeratedOptions
    sides = "positions"
    researches = True
    seating = Seating(count=(2, 8), host_kind="moderator")
    modes = (
        Mode("round-robin", gettext_noop("round-robin")),
        Mode("position-based", gettext_noop("position-based"), positions=True),
        Mode("free-form", gettext_noop("free-form")),
    )
    rounds = Rounds(user_sets=True, default=DEFAULT_ROUNDS, maximum=MAX_ROUNDS)
    tokens = {"speech": 400, "verdict": 600}

    def check(self, question, personas, options, library) -> dict[str, Text]:
        problems = super().check(question, personas, options, library)
        maximum = self.rounds.maximum_for(library.protocol)
        if options.rounds and options.rounds > maximum:
            problems["rounds"] = text(gettext_noop("A moderated debate has at most %(max)d rounds."), max=maximum)
        for name, default in (("max_chars", MAX_CHARS_RANGE), ("token_budget", BUDGET_RANGE)):
            low, high = library.protocol.get(f"{name}_range", default)
            value = getattr(options, name)
            if value is not None and not low <= value <= high:
                message = gettext_noop("Between %(low)d and %(high)d in this library.")
                problems[name] = text(message, low=low, high=high)
        if not personas and question.strip() and "personas" not in problems:
            if self.mode(options.mode).positions:
                problems["personas"] = text(gettext_noop("Position-based: choose the personas and their sides."))
            elif len(recommend_seating(question, library).seats) < 2:
                problems["personas"] = text(
                    gettext_noop("The moderated library has fewer than two personas to seat: add personas to it first.")
                )
        return problems

    def suggest(self, question, library: LibrarySpec, options=None) -> Suggestion:
        if not question.strip():
            return Suggestion()
        recommendation = recommend_seating(question, library)
        picks = [(p, f"{score:.2f}") for p, score, _hits in recommendation.seats]
        return Suggestion(picks, recommendation.note) if len(picks) >= 2 else Suggestion()

    async def run(self, ctx: DebateContext) -> str:
        return await _run(ctx)


FORMAT = Moderated()
