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
from debates.engine.format import Format, Rounds, Seating, Sizing, Suggestion
from debates.engine.i18n import Text, gettext_noop, language_of, say, text
from debates.engine.moderated import keyword_hits
from debates.engine.options import option
from debates.engine.plans import plan
from debates.engine.reading import shown_speech
from debates.engine.report import ReportBuilder
from debates.engine.spec import CommonOptions, CritiqueSpec, LibrarySpec, PairingRuleSpec, PersonaSpec
from debates.engine.structure import Form, Part
from debates.engine.text import field_value, first_sentence, similarity
from debates.engine.turns import DebateAborted, TurnPlan

SUMMARY_LIMIT = 80
# The opponent's summary a turn sees: 80 Chinese characters say about what 160 English ones do.
SUMMARY_LIMITS = {"zh": SUMMARY_LIMIT, "en": 160}
DEFAULT_ROUNDS = 4
MAX_ROUNDS = 8
# Positions "stop moving" when both speakers say so, or their summaries barely change.
STILL_SIMILARITY = 0.8
DISCLAIMER = gettext_noop(
    "This dialogue is generated from historical texts and public sources; the comparison shows plural "
    "perspectives and ranks none."
)
# What the citation check found, under the disclaimer (it once promised every claim a source
# above the warnings that said otherwise).
CITED_ALL = gettext_noop("Every speech cites a source (%(cited)d of %(total)d).")
CITED_SOME = gettext_noop("%(cited)d of %(total)d speeches cite a source (a text with its chapter or fascicle).")
CITED_NONE = gettext_noop("No speech cites a source (a text with its chapter or fascicle).")
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
    """How many of the persona's keywords the question holds: Chinese ones anywhere in it, Latin
    ones (the library's English keywords) as whole words, so an English question pairs too."""
    return len(keyword_hits(question, persona.keywords))


def school(tradition: str) -> str:
    """The school a tradition belongs to: a sub-lineage (天台宗·灵峰派) is its school's (天台宗)."""
    return re.split(r"[·・/／(（]", tradition.strip(), maxsplit=1)[0].strip()


def rule_score(rule: PairingRuleSpec, question: str) -> tuple[int, int]:
    """How well a pairing rule matches: how many of its keywords the question holds, then how
    specific they are (their length). A short keyword inside a longer matched one of another
    rule (中观 in 中观分判) then loses to the rule the longer one belongs to."""
    matched = keyword_hits(question, rule.keywords)
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
            text(
                gettext_noop(
                    "No pairing rule or persona keyword matches this question: choose two personas, or put "
                    "a question outside the library's traditions to a panel or a moderated debate."
                )
            ),
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
EN_HONORIFICS = ("Master ", "Venerable ", "Ven. ", "Patriarch ")


def _names(persona: PersonaSpec) -> set[str]:
    """A persona's names in both languages, each also without its honorific ("慧能大师" → "慧能",
    "Master Yinguang" → "Yinguang")."""
    names = set()
    for name in (persona.name.strip(), persona.name_en.strip()):
        if not name:
            continue
        names.add(name)
        names.update(name[: -len(h)] for h in HONORIFICS if name.endswith(h) and len(name) > len(h) + 1)
        names.update(name[len(h) :] for h in EN_HONORIFICS if name.startswith(h) and len(name) > len(h) + 1)
    return names


def side_words(persona: PersonaSpec, other: PersonaSpec) -> set[str]:
    """What names a persona's side and not the other's: its names in both languages (with and
    without an honorific), its school and its own keywords (Chinese and English)."""
    mine = {k for k in (*persona.keywords, school(persona.tradition), *_names(persona)) if k and len(k) >= 2}
    theirs = {k for k in (*other.keywords, school(other.tradition), *_names(other)) if k}
    # A word inside one of theirs is theirs too, matched as keywords match a question: whole words
    # in Latin script ("Chan" is not in "chanting"), anywhere in Chinese (中观 in 中观分判).
    return {k for k in mine - theirs if not any(keyword_hits(t, (k,)) for t in theirs)}


# A claim for a side: its word followed by a verdict ("念佛更适合", "参禅才是…"), or a verdict
# followed by it ("我认为念佛…", "应当参禅", "支持「阿姜查」").
_VERDICT_AFTER = "(?:更适合|最适合|最直接|更直接|才是|更好|为上|优先|更究竟|更根本|更殊胜|最稳妥|更稳妥)"
_VERDICT_BEFORE = "(?:我认为|我主张|主张|应当|应该|建议|首推|只有|支持|同意|赞同|认同)"
# The same in English: "Chan is the more direct way", "I side with Yinguang", "we should practise nianfo".
_EN_VERDICT_AFTER = (
    r"(?:is|are|remains?)\s+(?:the\s+)?(?:better|best|more\s+direct|most\s+direct|safer|surer|superior|"
    r"the\s+(?:right|true|surest|safest)\s+(?:way|path|gate)|(?:the\s+)?way\s+to\s+go)|suits?\s+(?:\w+\s+){0,3}better|"
    r"comes?\s+first|should\s+come\s+first"
)
_EN_VERDICT_BEFORE = (
    r"I\s+(?:think|believe|hold|maintain|argue|recommend|support|agree\s+with|side\s+with|endorse)"
    r"(?:\s+that)?|we\s+should|one\s+should|should\s+(?:practi[cs]e|follow|choose|start\s+with|begin\s+with)|only|choose|support"
)


def _claims(text: str, words: set[str]) -> int:
    count = 0
    for w in words:
        if re.search(r"[a-z]", w, re.IGNORECASE):  # a Latin word: English claims, on word boundaries
            word = rf"(?<![\w]){re.escape(w)}(?![\w])"
            count += len(re.findall(rf"{word}[^,.;!?\n]{{0,30}}?\b{_EN_VERDICT_AFTER}", text, re.IGNORECASE))
            count += _affirmed(rf"\b(?:{_EN_VERDICT_BEFORE})\b([^,.;!?\n]{{0,20}}?){word}", text, re.IGNORECASE)
            continue
        count += len(re.findall(rf"{re.escape(w)}[^，。；！？,.;!?\n]{{0,6}}{_VERDICT_AFTER}", text))
        count += _affirmed(rf"{_VERDICT_BEFORE}([^，。；！？,.;!?\n]{{0,4}}){re.escape(w)}", text)
    return count


def _affirmed(pattern: str, text: str, flags: int = 0) -> int:
    """Matches of `pattern` (a verdict, the words between in group 1, then a side's word) whose side
    is not denied right before it: "我认为不是次第", "I think not gradual" argue against that side."""
    return sum(not re.search(_DENIED, m.group(1)) for m in re.finditer(pattern, text, flags))


def speaks_for(text: str, side: PersonaSpec, speaker: PersonaSpec) -> bool:
    """The speech argues `side`'s position rather than the speaker's own. Method: each side's
    distinctive words (its master's name, school and keywords, none the other shares) are looked
    for in claims, a word next to a verdict ("念佛更适合", "我认为念佛…", "我支持「阿姜查」的观点",
    "I side with Yinguang", "nianfo is the safer way"); more claims for the other side is a flip.
    With no claim either way, the stance line decides: the summary (else the first sentence)
    naming the other side's words more than the speaker's own."""
    for lead in (*leads(speaker, "zh"), *leads(speaker, "en")):  # words the grammar wrote say nothing of its side
        text = text.replace(lead, "")
    theirs_words, mine_words = side_words(side, speaker), side_words(speaker, side)
    theirs, mine = _claims(text, theirs_words), _claims(text, mine_words)
    if theirs or mine:
        return theirs > mine
    line = (field_value(text, ("小结", "summary")) or first_sentence(text)).lower()
    return _mentions(line, theirs_words) > _mentions(line, mine_words)


# A side's word right after one of these is denied, not argued: "enlightenment is sudden, not
# gradual" names the gradual side only to refuse it (the bundled model's Huineng, sent back for it).
# Also a few words after it in the same clause, none of them turning it ("does not require gradual
# progression", the bundled model's Huineng again; "not sudden but gradual" and "no doubt
# gradual" affirm gradual).
_DENIED = (
    r"(?:(?:\bnot|\bnever|\brather than|\binstead of|\bno|\bwithout|n't)"
    r"(?:\s+(?!(?:but|yet|rather|instead|doubt|question|only|just|less|matter)\b)[\w-]+){0,3}"
    r"|不是|非|不|(?:不需要|不必|无需|无须|不用|不靠)[^，。；！？,.;!?\s]{0,2})\s*$"  # 非: also 并非, 而非
)


def _mentions(line: str, words: set[str]) -> int:
    """How many of `words` the (lowercased) line names, other than denied ("…, not gradual"):
    Latin words as whole words."""
    count = 0
    for w in words:
        latin = re.search(r"[a-z]", w, re.IGNORECASE)
        pattern = rf"(?<!\w){re.escape(w.lower())}(?!\w)" if latin else re.escape(w.lower())
        count += any(not re.search(_DENIED, line[: m.start()]) for m in re.finditer(pattern, line))
    return count


def ammunition(critiques: list[CritiqueSpec], source: str, target: str) -> list[CritiqueSpec]:
    return [c for c in critiques if c.source == source and c.target == target]


def _ammo_text(ammo: list[CritiqueSpec], lang: str = "zh") -> str:
    """The speaker's prepared critiques, each with its source, in the debate's language where the library has it."""
    if not ammo:
        return say(
            lang,
            "（你对这位对手没有预备的批评条目，请依你自己的经典立论。）",
            "(You have no prepared critique of this opponent: argue from your own texts.)",
        )
    pointed = [c.pointed(lang) for c in ammo]
    if lang == "en":
        return "\n".join(f"{i}. {point} (source: {cited})" for i, (point, cited) in enumerate(pointed, 1))
    return "\n".join(f"{i}. {point}（出处：{cited}）" for i, (point, cited) in enumerate(pointed, 1))


# The position-change part's choices, per language; the parsers read either language.
MOVES = {"zh": ("无", "松动", "转向"), "en": ("none", "softened", "shifted")}
STILL_WORDS = ("无", "未变", "坚持", "不变", "none", "unchanged", "hold", "held", "no change")
LOOSENED_WORDS = ("松动", "loosen", "soften")
TURNED_WORDS = ("转向", "shift", "turn")
MOVED_WORDS = (*LOOSENED_WORDS, *TURNED_WORDS)
STATE_OF = {
    **{w: "held" for w in STILL_WORDS},
    **{w: "loosened" for w in LOOSENED_WORDS},
    **{w: "turned" for w in TURNED_WORDS},
}


def position_state(text: str) -> str | None:
    """The speaker's declared position change as a state: "held", "loosened" or "turned" (None
    when it declared none). The chosen state is the option word at the start; in a phrase such
    as "从无转向松动" the *last* state named is where the position went. The half-sentence after
    the choice may say anything (无念, 无常, "turn inward", …). A declaration in no word the
    parser knows counts as a move ("loosened")."""
    value = field_value(text, ("立场变化", "position change")).lower()
    if not value:
        return None
    # A small model may copy the whole menu ("无 / 松动 / 转向", "none / softened / shifted"):
    # that says nothing either way.
    if "/" in value and sum(word in value for word in ("无", "none", *MOVED_WORDS)) > 1:
        return None
    head = re.split(r"[，,。；;：:（(—-]", value, maxsplit=1)[0]  # the choice, before any explanation
    hits = [(head.rfind(w), len(w), STATE_OF[w]) for w in STATE_OF if w in head]
    if hits:
        return max(hits)[2]
    hits = [(value.find(w), -len(w), STATE_OF[w]) for w in STATE_OF if w in value]
    return min(hits)[2] if hits else "loosened"


def position_moved(text: str) -> bool | None:
    """Whether the speaker declared its position moved (None when it declared nothing)."""
    state = position_state(text)
    return None if state is None else state != "held"


# A doctrinal source: a title in 《》 with its chapter or fascicle (inside, after "·", or just after).
CITATION = re.compile(
    r"《[^》]{1,40}[·・][^》]{1,30}》"
    r"|《[^》]{1,40}》\s*(?:第?[一二三四五六七八九十百千\d]+\s*[卷品章篇]|卷\s*[一二三四五六七八九十百千\d]+)"
)
# In English: a work (in italics or quotes, or a title naming its kind: "Platform Sutra", "Letters
# of Master Yinguang", "Mūlamadhyamakakārikā") with where in it ("chapter 3", "fascicle 2", "ch. 24",
# "24.18", "the chapter on Doubts").
_WORK_KINDS = (
    r"(?:Sutra|Sūtra|Sutta|Sūtras?|Suttas|Treatise|Śāstra|Sastra|Shastra|Letters|Records?|Discourses?|Commentary|"
    r"Canon|Kārikā|Karika|Mūlamadhyamakakārikā|Mulamadhyamakakarika|Verses|Collection|Writings|Essays|Nikāya|Nikaya|"
    r"Vinaya|Abhidharma|Abhidhamma|Analects|Scripture|Gatha|Gāthā)"
)
_EN_TITLE = (
    r"(?:\*[^*\n]{2,60}\*|_[^_\n]{2,60}_|“[^”\n]{2,60}”|\"[^\"\n]{2,60}\"|《[^》\n]{1,40}》"
    rf"|(?:[A-Z][\w'’\-āīūṃṇṭḍśṣñ]*\s+){{0,5}}{_WORK_KINDS}\b(?:\s+of\s+(?:the\s+)?(?:[A-Z][\w'’\-]*\s*){{1,4}})?)"
)
_EN_PLACE = (
    r"(?:,|:)?\s*\(?\s*(?:(?:ch(?:apter)?|fasc(?:icle)?|vol(?:ume)?|sec(?:tion)?|book|part|verse|letter|no|v)\.?\s*"
    r"(?:\d+|[IVXLC]+\b)(?:[.:]\d+)?|(?:the\s+)?(?:chapter|section|fascicle)\s+(?:on|of)\s+(?:the\s+)?[A-Z][\w'’\-]*"
    r"|\d+[.:]\d+|§\s*\d+)"
)
EN_CITATION = re.compile(rf"{_EN_TITLE}{_EN_PLACE}")


def duel_citations(text: str) -> list[str]:
    """The doctrinal sources a speech names with where in them, Chinese (《坛经·疑问品》,
    《中论》第二十四品) or English (*Platform Sutra*, chapter 3; Mūlamadhyamakakārikā 24.18)."""
    found = CITATION.findall(text)
    rest = CITATION.sub(" ", text)
    return found + [m.group(0).strip() for m in EN_CITATION.finditer(rest)]


# The duel speech's parts, per language: the speech, its declared position change, its summary.
SPEECH_LABELS = {"zh": ("正文", "立场变化", "小结"), "en": ("Speech", "Position change", "Summary")}
COLONS = {"zh": "：", "en": ": "}


def _speech_form(lang: str) -> Form:
    body, moved, summary = SPEECH_LABELS[lang]
    chars = {"zh": 300, "en": 900}[lang]  # 300 Chinese characters say about what 900 English ones do
    return Form(
        (
            Part(body, chars=chars, lines=3),
            Part(moved, choices=MOVES[lang], tail=30 if lang == "zh" else 60),
            Part(summary, chars=SUMMARY_LIMITS[lang]),
        ),
        colon=COLONS[lang],
    )


SPEECH_FORMS = {lang: _speech_form(lang) for lang in SPEECH_LABELS}
SPEECH_FORM = SPEECH_FORMS["zh"]


def leads(speaker: PersonaSpec, lang: str = "zh") -> tuple[str, str]:
    """The words a speech and its summary start with under the grammar, in the speaker's own
    name: a 1.5B model that begins "作为慧能大师，" goes on to argue Huineng's side far more often
    than one left to begin as it likes, which argued its opponent's in a quarter of its speeches.
    In English: "As Huineng, " / "In Huineng's view, "."""
    name = speaker.called(lang)
    if lang == "en":
        return f"As {name}, ", f"In {name}'s view, "
    return f"作为{name}，", f"依{name}之见，"


def speech_form(speaker: PersonaSpec, lang: str, *, opening: bool = False) -> Form:
    """The speech form in the debate's language (`lang`: "zh"/"en", or the question itself), with
    the speaker's leads. In the speaker's `opening` statement its position has nothing to have
    moved from: the change can only be "none", with no half-sentence after it (the bundled model
    declared "shifted" there, and then copied the prompt's words into the half-sentence)."""
    if lang not in SPEECH_FORMS:
        lang = language_of(lang)
    speech, summary = leads(speaker, lang)
    body, moved, last = SPEECH_FORMS[lang].parts
    if opening:  # the one word, and no half-sentence: the model filled it with the prompt's own words
        moved = replace(moved, choices=MOVES[lang][:1], tail=0)
    return replace(
        SPEECH_FORMS[lang],
        parts=(replace(body, lead=speech), moved, replace(last, lead=summary, chars=last.chars - len(summary))),
    )


CLOSE_LABELS = {
    "zh": ("双方主张", "分歧所在", "可互相参照之处", "小结"),
    "en": ("Both positions", "Where they differ", "What each can take from the other", "Summary"),
}


def _close_form(lang: str) -> Form:
    sides, differ, share, summary = CLOSE_LABELS[lang]
    chars = 160 if lang == "zh" else 420
    return Form(
        (
            Part(sides, chars=chars, lines=2),
            Part(differ, chars=chars, lines=2),
            Part(share, chars=chars, lines=2),
            Part(summary, chars=SUMMARY_LIMITS[lang]),
        ),
        colon=COLONS[lang],
    )


CLOSE_FORMS = {lang: _close_form(lang) for lang in CLOSE_LABELS}
CLOSE_FORM = CLOSE_FORMS["zh"]


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
    lang = ctx.lang
    me, them = speaker.called(lang), opponent.called(lang)
    limit = SUMMARY_LIMITS[lang]
    opening = round_no == 1  # the speaker's first statement
    if lang == "en":
        # The library's school names are Chinese: an English prompt names the school only when it has an English one.
        school_of = f" ({speaker.tradition})" if speaker.tradition and language_of(speaker.tradition) == "en" else ""
        side = f"You speak for {me}{school_of}; your opponent is {them}."
        summary = opponent_summary or "(Your opponent has not spoken yet: this is the opening statement.)"
        material = (
            f"## Your opponent's current position (at most {limit} characters)\n{summary}\n\n"
            f"## Your ammunition: your critiques of {them}\n{_ammo_text(ammo, lang)}"
        )
        if own_summary:
            material = f"## Your position last round (at most {limit} characters)\n{own_summary}\n\n{material}"
        change = (
            "Position change: “none” (this is your first statement)"
            if opening
            else "Position change: exactly one word of “none”, “softened”, “shifted”, then half a sentence of why"
        )
        output_format = (
            "Write these three parts, the speech first:\n"
            "Speech: a speech of 120–200 words. State your position and your argument, answer the points in "
            "your opponent's summary, use your ammunition and name its sources.\n"
            f"{change}\n"
            f"Summary: one sentence with your position this round (at most {limit} characters)\n\n"
            f"Remember: you are {me}, and you defend your own position only; do not speak for {them}, "
            "and do not declare that you agree with them."
        )
        rules = [
            f"A duel of masters, round {round_no} of {rounds}. {side}",
            "You see only a summary of your opponent's current position, never their words: "
            "do not invent anything they said.",
            "Every doctrinal claim names its source (the text, with its chapter or fascicle); "
            "say so when you are unsure.",
            "About 120–200 words.",
        ]
        if again:
            rules.append(
                f"Your previous summary argued {them}'s position and was sent back to be written again. "
                f"This time speak from {me}'s own position."
            )
    else:
        side = f"你代表「{me}」（{speaker.tradition or '本派'}）的立场，对手是「{them}」。"
        summary = opponent_summary or "（对手尚未发言：这是开篇立论。）"
        material = (
            f"## 对手当前立场摘要（≤{limit}字）\n{summary}\n\n## 你的弹药：你对「{them}」的批评\n{_ammo_text(ammo)}"
        )
        if own_summary:  # its own position so far, to say honestly whether it moved (never the opponent's words)
            material = f"## 你上一轮的立场摘要（≤{limit}字）\n{own_summary}\n\n{material}"
        change = (
            "立场变化：“无”（这是你的首次发言）"
            if opening
            else "立场变化：从“无”“松动”“转向”中只选一个词，再用半句话说明"
        )
        output_format = (
            "按下面三部分写，先写正文：\n"
            "正文：200–350 字的发言。陈述你的立场与论证，回应对手摘要中的要点，用上你的弹药并注明出处。\n"
            f"{change}\n"
            f"小结：一句话概括你本轮立场（不超过 {limit} 字）\n\n"
            f"记住：你是「{me}」，只为自己的立场辩护；不要替「{them}」说话，也不要宣布赞同对方。"
        )
        rules = [
            f"祖师对辩，第 {round_no}/{rounds} 轮。{side}",
            "你只看得到对手当前立场的摘要，看不到其原话；不要编造对手说过的话。",
            "每一条教义断言都要注明出处（经论名与品/卷），不确定就说明。",
            "篇幅约 200–300 字。",
        ]
        if again:
            rules.append(
                f"你上一版的小结替「{them}」的立场说话，被退回重写。"
                f"这一次从「{me}」（{speaker.tradition or '本派'}）的立场出发。"
            )
    turn = plan(
        ctx,
        speaker,
        f"duel:{round_no}:{speaker.slug}" + (":again" if again else ""),
        round_no=round_no,
        phase="duel",
        rules=rules,
        material=material,
        output=output_format,
        form=speech_form(speaker, lang, opening=opening),
        others=[them],
        postprocess=lambda text: (
            text,
            {"moved": position_moved(text), "position": position_state(text), "citations": len(duel_citations(text))},
        ),
    )
    return replace(turn, summary_limit=limit)


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
    speeches = cited = 0
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
                        speaker=speaker,
                        opponent=opponent,
                    )
                args = (ctx, round_no, speaker, opponent, latest[opponent.slug], ammo[speaker.slug], rounds)
                result = await ctx.turn(_speech_plan(*args, latest[speaker.slug], again=True))
                if not result.replayed and speaks_for(result.text, opponent, speaker):
                    await ctx.warn(
                        "side_lost_kept",
                        gettext_noop("%(speaker)s still argued %(opponent)s's side when asked again."),
                        speaker=speaker,
                        opponent=opponent,
                    )
            speeches += 1
            cited += bool(result.data.get("citations"))
            if not result.replayed and not result.data.get("citations"):
                await ctx.warn(
                    "uncited",
                    gettext_noop("%(speaker)s cited no source (a text with its chapter or fascicle) in round %(n)d."),
                    speaker=speaker,
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
    # Its parts' labels as small headings (the synthesis keeps its summary: nothing repeats it there).
    synthesis = shown_speech(close.text, close.data.get("parts") or CLOSE_FORMS[ctx.lang].labels())
    report.section("synthesis", gettext_noop("Neutral synthesis"), synthesis)
    report.top_notes[:0] = [text(DISCLAIMER), citation_note(cited, speeches)]
    report.data["cited_speeches"] = {"cited": cited, "total": speeches}
    await report.emit(verdict_heading=gettext_noop("Duel"))


def citation_note(cited: int, total: int) -> Text:
    """The report's line on sources: what the check of each speech found."""
    if total and cited == total:
        return text(CITED_ALL, cited=cited, total=total)
    if cited:
        return text(CITED_SOME, cited=cited, total=total)
    return text(CITED_NONE)


ORCHESTRATOR = PersonaSpec(slug="orchestrator", name="中立记录者", name_en="Neutral recorder", kind="host")


def _close_plan(ctx: DebateContext, a: PersonaSpec, b: PersonaSpec, summaries: list[dict]) -> TurnPlan:
    lang = ctx.lang
    names = {a.slug: a.called(lang), b.slug: b.called(lang)}
    limit = SUMMARY_LIMITS[lang]
    if lang == "en":
        lines = "\n".join(f"- Round {s['round']}, {names[s['speaker_slug']]}: {s['summary']}" for s in summaries)
        labels = CLOSE_LABELS["en"]
        rules = [
            "You are the duel's neutral recorder: you take no side and rank neither.",
            "Work only from the round summaries below: each side's core claims, where they really differ, "
            "and what each can take from the other.",
            "Do not write “I think” or “the right answer is”. About 200–350 words.",
        ]
        material = f"## Round summaries\n{lines}"
        output = (
            "Write four parts, each starting its own line:\n"
            + "\n".join(f"{label}: …" for label in labels[:3])
            + f"\n{labels[3]}: … (at most {limit} characters)"
        )
        duty = "You only record and synthesise; you have no power to decide."
    else:
        lines = "\n".join(f"- 第{s['round']}轮 {names[s['speaker_slug']]}：{s['summary']}" for s in summaries)
        rules = [
            "你是对辩的中立记录者，不站任何一方，不评判高下。",
            "只根据下面的轮次摘要作综合：双方各自的核心主张、真正的分歧点、可以相互参照之处。",
            "不要使用“我认为”“正确答案是”。约 300–500 字。",
        ]
        material = f"## 轮次摘要 round_summaries\n{lines}"
        output = (
            f"按四部分写，每部分单独成行起头：\n双方主张：…\n分歧所在：…\n可互相参照之处：…\n小结：…（不超过{limit}字）"
        )
        duty = "你只有记录与综合之责，没有裁决之权。"
    # Not a library persona: its name is the debate's language's, wherever it is shown.
    recorder = replace(ORCHESTRATOR, name=ORCHESTRATOR.called(lang))
    turn = plan(
        ctx,
        recorder,
        "duel:close",
        round_no=0,  # after the rounds, in none of them
        phase="close",
        rules=rules,
        material=material,
        output=output,
        form=CLOSE_FORMS[lang],
        kind="close",
        duty=duty,
    )
    return replace(turn, summary_limit=limit)


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
    local = Sizing(
        gettext_noop("1 round, shorter speeches and synthesis: about 5 minutes."),
        options={"rounds": 1},
        tokens={"speech": 260, "close": 360},
    )
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
        # The pair as people read it ("Huineng vs Yinguang"), never its key (huineng-vs-yinguang).
        lang = language_of(question)
        pair = Text("%(a)s vs %(b)s", {"a": pairing.a.named(lang), "b": pairing.b.named(lang)})
        if pairing.rule:
            note = text(gettext_noop("%(key)s · pairing rule: %(label)s"), key=pair, label=pairing.rule.label)
        else:
            note = text(gettext_noop("%(key)s · keyword match"), key=pair)
        return Suggestion([(pairing.a, ""), (pairing.b, "")], note)

    async def run(self, ctx: DebateContext) -> str:
        await _run(ctx)
        return "done"


FORMAT = Duel()
