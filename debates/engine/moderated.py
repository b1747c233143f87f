"""Moderated (debate-moderator): a neutral chair runs a state machine over participant manifests.

Validate manifests → pick the mode's order (round-robin, position-based, free-form) → each speech
gets the question, frame, mode, round, assigned position, a character limit and the earlier
speeches → anti-pattern flags → the fixed verdict form. The chair never argues and never says 我认为.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass, field, replace

from debates.engine import research
from debates.engine.context import DebateContext
from debates.engine.format import Format, Mode, Rounds, Seating, Sizing, Suggestion
from debates.engine.i18n import Text, gettext_noop, language_of, say, text
from debates.engine.options import option
from debates.engine.plans import plan
from debates.engine.report import ReportBuilder
from debates.engine.spec import CommonOptions, LibrarySpec, PersonaSpec, SeatSpec
from debates.engine.text import (
    CUT_MARK,
    after_question,
    clip,
    cut_marked,
    first_sentence,
    normalise,
    restates,
    similarity,
)
from debates.engine.turns import DebateAborted, TurnPlan, TurnResult
from debates.providers.base import estimate_messages_tokens, estimate_tokens

DEFAULT_ROUNDS = 2
MAX_ROUNDS = 6
DEFAULT_MAX_CHARS = 600
DEFAULT_BUDGET = 60000
# What a debate may set for itself when its library names no range (`max_chars_range`,
# `token_budget_range` in the library's protocol).
MAX_CHARS_RANGE = (100, 4000)
BUDGET_RANGE = (2000, 500000)
CONTEXT_SPEECHES = 6
# A speech this long (normalised characters) found whole inside an earlier one is a copy of it.
REPEATED_MIN = 40
VERDICT_FORM = "若被迫选，在所有发言的基础上最小损失的选项是"
VERDICT_FORM_EN = "If forced to choose, the least-loss option on the basis of all speeches is"
VERDICT_FORMS = {"zh": VERDICT_FORM, "en": VERDICT_FORM_EN}
# Either form, however a model spaces, bolds or capitalises it: recognised whatever the debate's
# language (a model may answer in the other one).
_FORM_RE = re.compile(
    r"若被迫选[，,]?\s*在所有发言的基础上[的]?最小损失的选项是"
    r"|if forced to choose,?\s+the least[- ]loss option,?\s+on the basis of all (?:the )?speeches,?\s+is",
    re.IGNORECASE,
)
# The verdict's own headings (both languages): the points, the verdict, its reasons.
_VERDICT_HEADINGS = re.compile(
    r"^\s*(?:#{1,6}\s*|\*\*)?(各方要点|要点|裁决|结论|理由|key points|points|verdict|conclusion|reasons?)"
    r"(?:\*\*)?\s*[:：]?\s*(?:\*\*)?\s*$",
    re.IGNORECASE,
)
_VERDICT_SECTION = re.compile(r"裁决|结论|verdict|conclusion", re.IGNORECASE)
_POINTS_SECTION = re.compile(r"要点|points", re.IGNORECASE)
NO_SPEECHES = {"zh": "（无足够发言）", "en": "(not enough speeches)"}
# The model wrote the form but only a template's blank after it (see _named).
NO_OPTION = {"zh": "（未写明选项）", "en": "(no option named)"}
# Stance words, removed from the verdict outside quotations (a persona quoted keeps its words).
# Chinese, longest first: "应该选" goes whole before "应该" alone is taken out.
STANCE_WORDS = ("我认为", "我觉得", "我相信", "在我看来", "正确答案是", "应该选", "应该")
# English: the first-person stance phrases and "the right answer is". Not "should"/"must": in
# English they carry the sentence's grammar ("the company should wait" → "the company wait"),
# where Chinese 应该 can go without breaking the sentence.
STANCE_WORDS_EN = (
    "I think",
    "I believe",
    "I feel",
    "in my opinion",
    "in my view",
    "personally",
    "the right answer is",
    "the correct answer is",
)
_STANCE_EN = re.compile(
    r"(?P<lead>,\s*)?\b(?P<word>I (?:think|believe|feel)|in my (?:opinion|view)|personally"
    r"|the (?:right|correct) answer is)\b"
    r"(?:\s+that\b)?(?P<trail>\s*[,:])?\s*",
    re.IGNORECASE,
)
_CAPITAL = "\ue000"  # where a sentence lost its stance words: its next letter is a capital again
# Quotations: “…”, 「…」, 『…』 and "…" on one line.
_QUOTED = re.compile(r"(“[^”]*”|「[^」]*」|『[^』]*』|\"[^\"\n]*\")")
POSITION_NAMES = {
    "zh": {"for": "支持", "against": "反对", "": "无"},
    "en": {"for": "for", "against": "against", "": "none"},
}
# The verdict's prompt is estimated (`estimate_messages_tokens`), the speech's reply bounded by its
# max_tokens; a tokenizer may count the prompt higher than the estimate: kept with this margin.
PROMPT_MARGIN = 1.25
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
    lang: str = "zh"  # the language of the names in `reason` and `note`

    @property
    def note(self) -> Text:
        if self.reason:
            return self.reason
        # Each name as its reader knows it: "%(m0)s; %(m1)s", each "name — keywords".
        each = {
            f"m{i}": Text("%(name)s — %(hits)s", {"name": p.named(self.lang), "hits": ", ".join(hits)})
            for i, (p, _score, hits) in enumerate(self.seats)
        }
        matches = Text("; ".join(f"%({key})s" for key in each), each)
        return text(gettext_noop("score ≥ 0.5, keywords matched: %(matches)s"), matches=matches)


def recommend_seating(
    question: str, library: LibrarySpec, threshold: float = 0.5, lang: str | None = None
) -> Recommendation:
    """The recommender's picks (score ≥ `threshold`, at most the table's size). Fewer than two:
    never a refusal, a pair all the same, filled from personas whose keywords match only weakly,
    then the library's general personas (protocol `general_personas`, else its densest
    manifests), with the reason, naming them in `lang` (default: the question's language, as the
    debate that seats them is held)."""
    lang = lang or language_of(question)
    scored = _scored(question, library.pool)
    picks = [item for item in scored if item[1] >= threshold][: FORMAT.seating.count[1]]
    if len(picks) >= 2:
        return Recommendation(picks, lang=lang)
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
        return Recommendation(seats, lang=lang)
    matched = [p.named(lang) for p, _score, hits in seats if hits]
    first, second = (p.named(lang) for p, _score, _hits in seats)
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
    return Recommendation(seats, reason, lang)


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


def _names(persona: PersonaSpec) -> list[str]:
    """The names a persona may be called by in a speech: its own, and its English one."""
    return [name for name in dict.fromkeys((persona.name, persona.name_en)) if name]


def next_free(participants: list[Participant], last: Participant | None) -> Participant:
    """Free-form: the moderator gives the floor to whoever has spoken least; among equals, someone
    the last speech named (by either name), then seat order. Counts stay within one of each other."""
    fewest = min(len(p.speeches) for p in participants)
    candidates = [p for p in participants if len(p.speeches) == fewest and p is not last] or [
        p for p in participants if len(p.speeches) == fewest
    ]
    if last and last.speeches:
        said = last.speeches[-1].text
        named = [p for p in candidates if any(name in said for name in _names(p.persona))]
        if named:
            return named[0]
    return candidates[0]


# Persona drift, in either language: the model speaking as itself.
_AS_AN_AI = re.compile(
    r"作为一个AI|作为AI|作为人工智能|作为语言模型|作为一个语言模型|\bas an AI\b|\bas an artificial intelligence\b"
    r"|\bas a (?:large )?language model\b|\bI am an AI\b|\bI'm an AI\b",
    re.IGNORECASE,
)
_AGREEMENT = re.compile(r"同意|赞同|\bagree", re.IGNORECASE)


def anti_patterns(speaker: Participant, text: str, everyone: list[Participant]) -> list[str]:
    flags = []
    # Repetition of anything said before, the speaker's own or another's: the bundled model gave
    # the second speaker of a round the first one's speech word for word, or only its first
    # paragraph (debate 81: contained whole in the earlier one, below the similarity's 0.6).
    said = normalise(text)
    if any(
        similarity(earlier.text, text) > 0.6 or (len(said) >= REPEATED_MIN and said in normalise(earlier.text))
        for p in everyone
        for earlier in p.speeches
    ):
        flags.append("repetition")
    if _AS_AN_AI.search(text):
        flags.append("persona drift")
    for other in everyone:
        if other is speaker:
            continue
        for name in _names(other.persona):
            claimed = (f"我是{name}", f"作为{name}", f"I am {name}", f"I'm {name}", f"As {name}, I")
            if any(phrase in text for phrase in claimed):
                flags.append("persona drift")
            for quote in _quotes_attributed(text, name):
                if not any(normalise(quote) in normalise(s.text) for s in other.speeches):
                    flags.append("straw man")
                    break
    # The seed's prompt: only the speech, no "作为 X 我会说" wrapper. The bundled model opened with
    # "Absolutely, let's dive into this debate from Steve Jobs' perspective." in its own seat.
    if any(_framed_as(text, name) for name in _names(speaker.persona)):
        flags.append("meta framing")
    stripped = normalise(text)
    if len(stripped) < 60 and _AGREEMENT.search(text):
        flags.append("empty agreement")
    return sorted(set(flags))


def _framed_as(text: str, name: str) -> bool:
    """The speech wraps itself in its speaker's own name: 作为乔布斯，我会说… / As Steve Jobs, I… /
    from Steve Jobs' perspective."""
    named = re.escape(name)
    return bool(
        re.search(rf"(?:作为|以|站在|从){named}(?:的|[，,：:、\s])", text)
        or re.search(rf"\bas {named}\b|\b{named}(?:'s|’s|'|’) (?:perspective|point of view|position)", text, re.I)
    )


def _quotes_attributed(text: str, name: str) -> list[str]:
    """Words a speech puts in `name`'s mouth: 芒格说：“…”, Munger said, "…"."""
    verbs = r"(?:说|认为|声称|所说|提到|\s+(?:said|says|claims|claimed|argues|argued|put it|wrote|writes))?"
    pattern = re.compile(re.escape(name) + verbs + r"[:：，,]?\s*[“\"「]([^”\"」]{4,120})[”\"」]")
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
        recommendation = recommend_seating(spec.question, library, lang=ctx.lang)
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
    moderator = library.host or PersonaSpec(slug="moderator", name="主持人", name_en="Moderator", kind="moderator")
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
        task = say(
            ctx.lang,
            "开场前的检索：为本议题需要核实的关键事实与数据写网络检索词。",
            "Research before the opening: write web search queries for the key facts and figures this question "
            "needs checked.",
        )
        report.data["research_queries"] = await research.build_pack(ctx, moderator, research.BUDGETS["standard"], task)
    elif ctx.options.research:
        await research.skipped(ctx)
    history: list[TurnResult] = []
    budget_stop = False
    margin = PROMPT_MARGIN
    for round_no in range(1, rounds + 1):
        round_name, round_title = _round_name(round_no, rounds, ctx.lang)
        # Between rounds the chair may take the audience's top question itself (#30), where the
        # owner let it: from this round on every speaker reads it as material.
        picked = await ctx.chair_takes_question() if round_no > 1 else None
        note = (
            say(ctx.lang, "主持人采纳观众席提问：", "The chair takes a question from the floor: ") + picked
            if picked
            else ""
        )
        await ctx.phase(
            round_no, "speech", gettext_noop("Round %(n)d · %(name)s"), n=round_no, name=text(round_title), note=note
        )
        last = _owner(participants, history[-1]) if history else None
        order = schedule(mode, participants) if mode != "free-form" else [None] * len(participants)
        for planned in order:
            speaker = planned or next_free(participants, last)
            turn = _speech_plan(ctx, speaker, participants, history, round_no, rounds, round_name, mode, max_chars)
            if not _affordable(ctx, turn, moderator, history, max_chars, margin):
                budget_stop = True
                break
            last = speaker

            # The bundled model once gave a whole speech as "No.": asked again once, if the budget
            # still keeps the synthesis with it; the first reply is folded under the second.
            def again(said: str, turn=turn, margin=margin) -> TurnPlan | None:
                retry = _asked_again(ctx, turn, said, max_chars)
                return retry if _affordable(ctx, retry, moderator, history, max_chars, margin) else None

            result = await _speak(ctx, turn, speaker, participants, max_chars, report, again)
            history.append(result)
            if result.prompt_tokens and not result.replayed:  # the server counts prompts higher: so do we
                ratio = result.prompt_tokens / max(1, estimate_messages_tokens(turn.messages))
                margin = max(margin, round(ratio * 1.05, 3))
            if ctx.ledger.spent_for_rounds:  # the money budget, or a reply that cost past its estimate
                budget_stop = True
                break
        if budget_stop:
            break
    if budget_stop:
        if not history:
            raise DebateAborted(
                text(
                    gettext_noop(
                        "The token budget of %(cap)d cannot pay for one speech and the moderator's synthesis: raise it."
                    ),
                    cap=ctx.ledger.cap or 0,
                ),
                outcome="refused",
            )
        await ctx.warn(
            "token_budget",
            gettext_noop(
                "The token budget of %(cap)d has room for no further speech beside the moderator's synthesis, "
                "which it keeps in reserve: the speeches end here."
            ),
            cap=ctx.ledger.cap or 0,
        )
    report.data["speech_counts"] = {p.persona.slug: len(p.speeches) for p in participants}
    await _verdict(ctx, moderator, history, report)
    return "done"


def _verdict_allowance(
    ctx: DebateContext, moderator: PersonaSpec, history: list[TurnResult], margin: float, more: int = 0
) -> int:
    """What the moderator's synthesis may cost over `history` (and `more` tokens of speeches yet
    to come): its prompt, estimated with `margin`, and its whole reply allowance."""
    plan = _verdict_plan(ctx, moderator, history)
    prompt = estimate_messages_tokens(plan.messages) + more
    return math.ceil(prompt * margin) + ctx.completion_limit(plan)  # a thinking model's headroom too


def _affordable(
    ctx: DebateContext, turn: TurnPlan, moderator: PersonaSpec, history, max_chars: int, margin: float
) -> bool:
    """Whether a speech may start: its whole allowance (prompt and `max_tokens`) and, after it,
    the moderator's synthesis over every speech (this one at its longest) fit in the token cap.
    The synthesis's allowance stays the ledger's reserve, so a debate whose budget runs out still
    ends with it. Prompts are estimates, times `margin` (at least `PROMPT_MARGIN`, more once the
    server has counted a speech's prompt higher). A speech already given (a resumed debate)
    replays whatever the cap."""
    ledger = ctx.ledger
    ledger.reserve = _verdict_allowance(ctx, moderator, history, margin)
    if ledger.cap is None or turn.key in ctx.spec.completed:
        return True
    # The completion limit its request carries (a reasoning model's headroom; 0 for a person's
    # words), as the run books it when the speech starts (`DebateContext.allowance`).
    speech = ctx.completion_limit(turn)
    speech += math.ceil(estimate_messages_tokens(turn.messages) * margin)
    # This speech in the synthesis's prompt: at most its characters, its cut mark and its label.
    longest = max_chars + len(CUT_MARK[ctx.lang]) + len(turn.speaker.called(ctx.lang)) + 16
    after = _verdict_allowance(ctx, moderator, history, margin, more=longest)
    return ledger.counted + speech + after <= ledger.cap


# Each round's name: as the prompt says it (Chinese; an English prompt says the msgid), and as
# the page titles it (a msgid).
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
    gettext_noop("meta framing"),
)


def _round_name(round_no: int, rounds: int, lang: str = "zh") -> tuple[str, str]:
    """(the name the prompt says, in `lang`; the page's title, a msgid)."""
    zh, title = CLOSING if rounds > 1 and round_no == rounds else ROUND_NAMES[min(round_no - 1, 2)]
    return say(lang, zh, title), title


def _owner(participants: list[Participant], result: TurnResult) -> Participant:
    return next(p for p in participants if p.persona.slug == result.speaker.slug)


def _speech_plan(
    ctx, speaker: Participant, participants, history, round_no, rounds, round_name, mode, max_chars
) -> TurnPlan:
    """One speech's turn, in the debate's language: the seed's per-turn prompt (question, role,
    mode, round, assigned position, character limit, task, the earlier speeches)."""
    lang = ctx.lang
    persona = speaker.persona
    name = persona.called(lang)
    position = POSITION_NAMES[lang].get(speaker.seat.position, speaker.seat.position)
    colon = say(lang, "：", ": ")
    context = "\n\n".join(f"{r.speaker.called(lang)}{colon}{r.text}" for r in history[-CONTEXT_SPEECHES:]) or say(
        lang, "（你是第一位发言者。）", "(You are the first speaker.)"
    )
    if round_no == rounds and rounds > 1:
        task = say(
            lang,
            "总结陈词：给出你的最终立场与最关键的理由。",
            "Closing statement: give your final position and your most important reasons.",
        )
    elif round_no == 1:
        task = say(lang, "陈述你对问题的核心看法与理由。", "State your core view on the question and your reasons.")
    else:
        task = say(
            lang,
            "回应之前的发言：指出你同意和不同意之处，并推进论证。",
            "Answer the earlier speeches: say where you agree and where you disagree, and move the argument forward.",
        )
    key = f"speech:{round_no}:{persona.slug}:{len(speaker.speeches) + 1}"
    mark = CUT_MARK[lang]

    def post(text: str) -> tuple[str, dict]:
        kept, was_cut = cut_marked(text.strip(), max_chars, mark)
        return kept, {"cut": was_cut, "position": speaker.seat.position}

    held = bool(speaker.seat.position)
    rules = [
        say(lang, "你正在参与一场多 persona 辩论。", "You are taking part in a debate between several personas."),
        say(
            lang,
            f"你的角色：作为“{name}”发言，严格以你的视角与风格回答，不要扮演他人。",
            f"Your role: speak as {name}, strictly from your own point of view and in your own style; do not "
            "play anyone else.",
        ),
        say(lang, f"当前模式：{mode}", f"Mode: {mode}"),
        say(
            lang,
            f"当前轮次：{round_name}（第 {round_no}/{rounds} 轮）",
            f"Round: {round_name} (round {round_no}/{rounds})",
        ),
        say(
            lang,
            f"你被分派的立场：{position}" + ("（整篇发言都要站在这个立场上）" if held else ""),
            f"Your assigned position: {position}" + (" (hold it through the whole speech)" if held else ""),
        ),
        say(
            lang,
            f"最大字数：{max_chars}（超出会被主持人截断）",
            f"At most {max_chars} characters (the moderator cuts a longer speech)",
        ),
        task,
    ]
    return plan(
        ctx,
        persona,
        key,
        round_no=round_no,
        phase="speech",
        rules=rules,
        material=say(lang, "## 相关上下文（之前的发言）\n", "## Context (the earlier speeches)\n") + context,
        output=say(
            lang,
            f"只输出你作为 {name} 的发言本身，不要解释、不要 meta 说明，不要写“作为 X 我会说”。",
            f"Write only your speech as {name}: no explanation, no meta comments, no “as X, I would say”.",
        ),
        others=[p.persona.called(lang) for p in participants if p is not speaker],
        postprocess=post,
        chars=max_chars,  # a person in the seat writes within it too
        cut_at=max_chars,  # a model's speech is no longer read (nor paid for) once it is past it
    )


# Fewer estimated tokens than this is no speech ("No.", "Agreed."): a terse real one ("Sell first;
# cash is oxygen.", 先卖后做，现金流决定生死。) has more.
EMPTY_SPEECH_TOKENS = 6


def says_nothing(speech: str) -> bool:
    return estimate_tokens(speech.strip()) < EMPTY_SPEECH_TOKENS


def _asked_again(ctx, turn: TurnPlan, said: str, max_chars: int) -> TurnPlan:
    """The same turn once more, the model shown its reply and told it is no speech (`:again`:
    pages fold the first reply under this one, marked as set aside)."""
    ask = say(
        ctx.lang,
        f"你的上一次回复只有“{said.strip()}”，这不是一篇发言。请给出你完整的发言（不超过 {max_chars} 字）。",
        f"Your previous reply was only “{said.strip()}”: that is not a speech. Give your whole speech, "
        f"within {max_chars} characters.",
    )
    messages = [*turn.messages, {"role": "assistant", "content": said}, {"role": "user", "content": ask}]
    return replace(turn, key=f"{turn.key}:again", messages=messages)


async def _speak(ctx, turn: TurnPlan, speaker: Participant, participants, max_chars, report, again) -> TurnResult:
    """A speech, asked for once more (`again(said)`: the retry's plan, or None when the budget has
    no room) when a model's reply says nothing; flagged and counted as the speech it kept."""
    persona = speaker.persona
    result = await ctx.turn(turn)
    retry = again(result.text) if says_nothing(result.text) and not ctx.is_human(persona.slug) else None
    if retry is not None:
        if not result.replayed:
            await ctx.warn(
                "speech_empty",
                gettext_noop("%(speaker)s said almost nothing (“%(said)s”): asked again once."),
                speaker=persona,
                said=result.text.strip(),
            )
        turn, result = retry, await ctx.turn(retry)
    flags = anti_patterns(speaker, result.text, participants)
    if result.data.get("cut"):
        await ctx.warn(
            "speech_cut",
            gettext_noop("%(speaker)s spoke past %(max)d characters: the speech was cut."),
            speaker=persona,
            max=max_chars,
        )
    for flag in flags:
        report.data["flags"].append({"turn": turn.key, "speaker": persona.slug, "flag": flag})
        await ctx.warn("anti_pattern", gettext_noop("%(speaker)s: %(flag)s"), speaker=persona, flag=text(flag))
    speaker.speeches.append(result)
    return result


def _outside_quotes(body: str, change) -> str:
    """`change` applied to the text outside quotations only (“…”, 「…」, 『…』, "…")."""
    pieces = _QUOTED.split(body)
    return "".join(piece if n % 2 else change(piece) for n, piece in enumerate(pieces))


def strip_stance_words(body: str) -> tuple[str, list[str]]:
    """The verdict without stance words (both languages), outside quotations: 芒格说“我认为应该先卖”
    keeps the quote. Returns (text, the words removed)."""
    removed: list[str] = []

    def chinese(piece: str) -> str:
        for word in STANCE_WORDS:
            if word in piece:
                # One comma where the word stood between two: "作为查理·芒格，我认为，这取决于" read
                # "作为查理·芒格，，这取决于"; none after a sentence's start ("我认为，先做产品").
                found = re.compile(rf"([，,、：:；;。！？!?\n])?[ \t]*{word}[ \t]*([，,])?")
                piece = found.sub(lambda m: (m[1] or "") if m[1] or m.start() == 0 else (m[2] or ""), piece)
                removed.append(word)
        return piece

    def english(piece: str) -> str:
        def drop(found: re.Match) -> str:
            word = next(w for w in STANCE_WORDS_EN if w.lower() == re.sub(r"\s+", " ", found["word"].lower()))
            removed.append(word)
            before = found.string[: found.start()]
            if found["lead"] and found["trail"]:  # "X, I think, is Y": "X is Y"
                return " "
            if found["lead"]:  # "X, I think." : "X."
                return ""
            before = before.rstrip(" \t")
            starts = not before or before[-1] in ".!?:：\n"
            return _CAPITAL if starts else ""

        piece = _STANCE_EN.sub(drop, piece)
        # a sentence that began with the stance words begins with a capital again
        piece = re.sub(_CAPITAL + r"(\W*)(\w)", lambda m: m[1] + m[2].upper(), piece)
        return piece.replace(_CAPITAL, "")

    body = _outside_quotes(body, lambda piece: english(chinese(piece)))
    return body, list(dict.fromkeys(removed))


def _is_heading(line: str) -> bool:
    return line.lstrip().startswith("#") or bool(_VERDICT_HEADINGS.match(line))


def _drop_empty_headings(lines: list[str]) -> list[str]:
    """Headings with nothing under them before the next heading (or the end) go."""
    kept: list[str] = []
    for n, line in enumerate(lines):
        if _is_heading(line):
            rest = next((ln for ln in lines[n + 1 :] if ln.strip()), None)
            if rest is None or _is_heading(rest):
                continue
        kept.append(line)
    return kept


def _tidy(lines: list[str]) -> str:
    return re.sub(r"\n{3,}", "\n\n", "\n".join(_drop_empty_headings(lines))).strip()


def _content(line: str) -> str:
    """A line's words without list markers, bold or a quote sign."""
    return re.sub(r"^\s*(?:[-*+>]|\d+[.)、])?\s*[:：,，、]?\s*", "", line).replace("**", "").strip()


# A template's blank copied instead of filled: the whole option in square or lenticular brackets
# ("[Please summarize the key points…]", "【选项】", "<option>"), or the verdict prompt's own
# ellipsis with its note ("……（一行）", "… (one line)", copied by the bundled model), which names
# nothing. A Markdown link ("[the memo](https://…)") is not one.
_PLACEHOLDER = re.compile(
    r"^\s*(?:\[[^\[\]]*\]|【[^【】]*】|<[^<>]*>|[….．。]+\s*(?:[（(][^（）()]{0,12}[）)])?)\s*[.。]?\s*$"
)


# Fixes after which the verdict's line says no option was named.
NAMED_NONE = ("placeholder option dropped", "question as the option dropped")


def _named(words: str, fixes: list[str], asked: tuple[str, ...] = ()) -> str:
    """`words`, or "" where they name no option (the fix noted in `fixes`): a template's blank, or
    the debate's question itself (the bundled model wrote it back as its "option"), as asked or
    with its stance words taken out as the verdict's were (`asked`)."""
    tag = _SPEECH_TAG.match(words)  # the material's tag copied before a copied speech: not the option's words
    if tag and words[tag.end() :].strip():
        fixes.append("speech tag dropped")
        words = words[tag.end() :]
    if _PLACEHOLDER.match(words.replace("**", "").strip(" *_")):
        fixes.append(NAMED_NONE[0])
        return ""
    if any(restates(words, question) for question in asked):
        fixes.append(NAMED_NONE[1])
        return ""
    for question in asked:  # the question copied before the option: the option is what follows
        rest = after_question(words, question)
        if rest is not None and not rest.strip():
            fixes.append(NAMED_NONE[1])
            return ""
        if rest is not None:
            fixes.append("question before the option dropped")
            return _named(rest, fixes)
    return words


# The tag each speech carries in the verdict's material ("【孔子·第1轮】", "[Confucius · round 1]"),
# copied into the verdict before a copied speech: the material's furniture, not the verdict's words.
_SPEECH_TAG = re.compile(r"^\s*(?:【[^【】\n]{1,40}·第\s*\d+\s*轮】|\[[^\[\]\n]{1,40} · round \d+\])\s*")


def _without_copies(lines: list[str], fixes: list[str]) -> list[str]:
    """The verdict's lines after its fixed one, without the form written again (whole, or cut off
    by the reply's end: "若被迫选，在所有发言的基础上最小损失的") and without the material's speech
    tags: the fixed line is where it belongs once, at the top."""
    forms = [f.lower() for f in VERDICT_FORMS.values()]
    kept = []
    for line in lines:
        words = line.strip(" #*>-").lower()
        if _FORM_RE.search(line) or (len(words) >= 6 and any(f.startswith(words) for f in forms)):
            fixes.append("repeated verdict form dropped")
            continue
        tag = _SPEECH_TAG.match(line)
        if tag:
            fixes.append("speech tag dropped")
            line = line[tag.end() :]
            if not line.strip():
                continue
        kept.append(line)
    return kept


def _option_line(lines: list[str]) -> int | None:
    """When the form is missing: the line holding the option: the first under the verdict's own
    heading (裁决 / Verdict), else the first outside the key points, else the first with words."""
    section, first_outside, first = None, None, None
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        if _is_heading(line):
            section = line
            continue
        if first is None:
            first = n
        if section is not None and _VERDICT_SECTION.search(section):
            return n
        if first_outside is None and not (section is not None and _POINTS_SECTION.search(section)):
            first_outside = n
    return first_outside if first_outside is not None else first


def enforce_verdict_form(text: str, lang: str = "zh", question: str = "") -> tuple[str, list[str]]:
    """The verdict opens with the fixed form, on its own first line and in the debate's language
    (`lang`), and holds no stance words outside quotations; fixed by code when the model did not.
    Either language's form is recognised; the debate's `question` written as the option names
    none. Returns (verdict, the fixes made)."""
    form, colon = VERDICT_FORMS[lang], say(lang, "：", ": ")
    body, removed = strip_stance_words(text.strip())
    asked = (question, strip_stance_words(question)[0]) if question else ()
    fixes = [f"removed {word!r}" for word in removed]
    lines = body.splitlines()
    at = next((n for n, line in enumerate(lines) if _FORM_RE.search(line)), None)
    if at is None:
        at = _option_line(lines)
        if at is None:
            return f"{form}{colon}{NO_SPEECHES[lang]}", [*fixes, "verdict form added"]
        option = _named(_content(lines.pop(at)), fixes, asked) or NO_OPTION[lang]
        rest = _tidy(_without_copies(lines, fixes))
        fixes.append("verdict form added")
        line = f"{form}{colon}{clip(option, 200)}"
        return (f"{line}\n\n{rest}" if rest else line), fixes
    found = _FORM_RE.search(lines[at])
    written, head = found.group(0), lines[at][: found.start()]
    # What follows the form: its colon (either width) in this language's, bold marks dropped; the
    # option written straight after the form stays so ("…的选项是先做销售。").
    lead = re.match(r"[\s*]*([:：])?[\s*]*", lines[at][found.end() :])
    words = _named(lines[at][found.end() + lead.end() :].rstrip().removesuffix("**").rstrip(), fixes, asked)
    if not words:  # the option on the next line: joined to the form
        following = next((n for n in range(at + 1, len(lines)) if lines[n].strip()), None)
        if following is not None and not _is_heading(lines[following]):
            words = _named(_content(lines.pop(following)), fixes, asked)
    blank = NO_OPTION[lang] if set(NAMED_NONE) & set(fixes) else NO_SPEECHES[lang]
    spaced = " " if lang == "en" and lead.group(0).strip("*") else ""
    line = form + (colon if lead.group(1) or not words else spaced) + (words or blank)
    if written != form:
        fixes.append("verdict form in the debate's language")
    if head.strip(" #*>-"):  # glued to a heading or a label ("## 裁决：若被迫选…"): the form starts the line
        fixes.append("verdict line on its own line")
    first = next(n for n, ln in enumerate(lines) if ln.strip())
    if first != at:
        fixes.append("verdict line moved to the top")
    before, after = _without_copies(lines[:at], fixes), _without_copies(lines[at + 1 :], fixes)
    if first == at and line == lines[at] and not fixes:
        return body, fixes
    rest = _tidy(before + after)
    return (f"{line}\n\n{rest}" if rest else line), fixes


def chosen_option(verdict: str, lang: str = "zh", question: str = "") -> str:
    """What the verdict chose: its fixed line's content, the form itself left out ("先做产品。"); when
    the line names nothing, the first real sentence after it. The verdict turn's summary."""
    fixed, _fixes = enforce_verdict_form(verdict, lang, question)
    first, _, rest = fixed.partition("\n")
    found = _FORM_RE.search(first)
    # Emphasis is the model's markup, not the option: "**hire a designer**." reads "hire a designer."
    option = (first[found.end() :] if found else first).replace("**", "").strip(" ：:*")
    if option and option not in (NO_SPEECHES[lang], NO_OPTION[lang]):
        return option
    after = [ln.strip(" -*•#") for ln in rest.splitlines() if ln.strip() and not _VERDICT_HEADINGS.match(ln)]
    return first_sentence(after[0]) if after else ""


def _verdict_plan(ctx, moderator: PersonaSpec, history: list[TurnResult]) -> TurnPlan:
    lang = ctx.lang
    form, colon = VERDICT_FORMS[lang], say(lang, "：", ": ")
    speeches = "\n\n".join(
        say(
            lang,
            f"【{r.speaker.called(lang)}·第{r.round}轮】{r.text}",
            f"[{r.speaker.called(lang)} · round {r.round}] {r.text}",
        )
        for r in history
    )
    return plan(
        ctx,
        moderator,
        "moderator:verdict",
        round_no=0,  # after the rounds, in none of them
        phase="host",
        rules=[
            say(
                lang,
                "你是中立的主持人，不是辩手。不使用“我认为 / 应该 / 正确答案是”等立场词汇。",
                "You are the neutral moderator, not a debater. Use no stance words such as “I think”, “I believe”, "
                "“in my opinion” or “the right answer is”.",
            ),
            say(
                lang,
                "裁决单独写在第一行，严格使用固定句式：“" + form + "…”",
                f"Write the verdict alone on the first line, in exactly this fixed form: “{form}…”",
            ),
            say(
                lang,
                "然后用三到五条中性要点概括各方观点与分歧，再说明裁决的理由。",
                "Then sum up the sides' views and their disagreements in three to five neutral points, and give "
                "the verdict's reasons.",
            ),
        ],
        material=say(lang, "## 全部发言\n", "## All speeches\n") + speeches,
        output=say(
            lang,
            f"{form}{colon}……（一行）\n## 各方要点\n- …\n## 理由\n……",
            f"{form}{colon}… (one line)\n## Key points\n- …\n## Reasons\n…",
        ),
        kind="verdict",
        duty=say(lang, "主席，不是辩手。", "Chair, not contestant."),
        postprocess=lambda reply: _settled_verdict(reply, lang, ctx.spec.question),
    )


def _settled_verdict(reply: str, lang: str, question: str) -> tuple[str, dict]:
    """The verdict turn's text is the verdict in its fixed form (the transcript and the page show
    what the report does, the fixed line first), the fixes made kept with it; its summary is the
    option chosen, not the fixed line cut off ("If forced to choose, … is…")."""
    verdict, fixes = enforce_verdict_form(reply, lang, question)
    option = chosen_option(verdict, lang, question)
    # Read alone, beside the turn, the option starts a sentence: "Raise venture money.", where the
    # fixed line it ends reads "… is: raise venture money.". A first word in mixed case ("iPhone") stays.
    if re.match(r"[a-z]+\b", option):
        option = option[0].upper() + option[1:]
    return verdict, {"summary": option, "verdict_fixes": fixes}


async def _verdict(ctx, moderator: PersonaSpec, history, report: ReportBuilder):
    """The moderator's synthesis, always: its allowance was kept in reserve while the speeches ran."""
    await ctx.phase(0, "verdict", gettext_noop("Verdict"))
    result = await ctx.turn(_verdict_plan(ctx, moderator, history))
    if "verdict_fixes" in result.data:
        verdict, fixes = result.text, result.data["verdict_fixes"]
    else:  # a verdict turn written before its text was the fixed verdict, taken up on a resume
        verdict, fixes = enforce_verdict_form(result.text, ctx.lang, ctx.spec.question)
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
        help=gettext_noop(
            "Empty: the format's own cap. The speeches end while the moderator's synthesis still fits, "
            "so it is always written."
        ),
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
    local = Sizing(
        gettext_noop("1 round, speeches of at most 250 characters, a shorter verdict: about 5 minutes."),
        options={"rounds": 1, "max_chars": 250},
        tokens={"speech": 300, "verdict": 400},
    )

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
