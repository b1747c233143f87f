"""The duel in its question's language (issue 27.1): an English question gets English prompts, forms,
leads, fixed lines, headings and report; a Chinese one stays Chinese; the parsers (position change,
side detection, citations, pairing) read both languages.

What stays Chinese in an English duel is the library's own text, as the library wrote it: each
persona's prompt text (its frame, knowledge, style), its keywords where it has none in English, and
the cross-critiques with their citations (the ammunition). The tests take those strings out before
they look for Chinese characters."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from debates.engine import duel
from debates.engine.spec import CritiqueSpec, PairingRuleSpec
from testkit.fake_llm import FakeLLM

from .conftest import HUINENG, KUMARAJIVA, MASTERS, YINGUANG, debate, duel_spec, options

CJK = re.compile("[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")
EN_HUINENG = replace(HUINENG, name_en="Huineng", keywords=(*HUINENG.keywords, "Chan", "Zen"))
EN_YINGUANG = replace(YINGUANG, name_en="Yinguang", keywords=(*YINGUANG.keywords, "Pure Land", "nianfo"))
CRITIQUES = [
    CritiqueSpec("huineng", "yinguang", "念佛若不见自性，只是口头功夫", "《坛经·疑问品》"),
    CritiqueSpec("yinguang", "huineng", "末法众生根机陋劣，参禅难以了脱", "《印光法师文钞·复永嘉某居士书》"),
]
QUESTION_EN = "Chan or Pure Land: which suits a busy lay person today?"
QUESTION_ZH = "参禅与念佛，哪一条路更适合今天的在家人？"


def library_text(*personas) -> list[str]:
    """The library's own words a prompt carries as written (Chinese in the bundled library)."""
    words = [p.text for p in personas] + [p.tradition for p in personas] + [k for p in personas for k in p.keywords]
    words += [p.name for p in personas]  # speaker names in the stored transcript: the persona work names them
    words += [c.point for c in CRITIQUES] + [c.citation for c in CRITIQUES]
    return [w for w in words if w]


def without(text: str, words: list[str]) -> str:
    for word in sorted(words, key=len, reverse=True):
        text = text.replace(word, "")
    return text


def en_speech(call) -> str:
    name = "Huineng" if ":huineng" in call.key else "Yinguang"
    return (
        f"Speech: As {name}, I hold my ground, as the *Platform Sutra*, chapter 3 says.\n"
        f"Position change: shifted, a little towards practice in daily life\n"
        f"Summary: In {name}'s view, practice must start in this very moment."
    )


def en_fake(**kw) -> FakeLLM:
    fake = FakeLLM(**kw)
    fake.reply(
        "duel:close",
        "Both positions: one points at the mind, one at the vow.\nWhere they differ: the gate.\n"
        "What each can take from the other: steady practice.\nSummary: Two gates, one practice.",
    )
    return fake.reply("duel:*", en_speech)


async def test_an_english_duel_is_english_in_every_prompt_form_and_line():
    fake = en_fake()
    fake.supports_grammar = True  # the local model's grammar: the form's labels and leads too
    spec = duel_spec(QUESTION_EN, seats=(EN_HUINENG, EN_YINGUANG), critiques=CRITIQUES, options=options("duel"))
    spec.options.rounds = 2
    run = await debate(spec, fake)

    assert run.outcome == "done"
    library = library_text(EN_HUINENG, EN_YINGUANG)
    for call in run.calls:
        for message in call.messages:
            left = without(message["content"], library)
            assert not CJK.search(left), (call.key, CJK.findall(left)[:10], left)
        grammar = call.extra["grammar"]
        assert not re.search("[\u3400-\u9fff]", grammar), grammar  # (its character classes exclude "：")
    speech = run.call("duel:2:huineng")
    assert "round 2 of 2" in speech.user and "You speak for Huineng; your opponent is Yinguang." in speech.user
    assert "## Your opponent's current position (at most 160 characters)" in speech.user
    assert "## Your ammunition: your critiques of Yinguang" in speech.user
    assert "(source: 《坛经·疑问品》)" in speech.user  # the library's citation, as the library wrote it
    assert "Position change: exactly one word of “none”, “softened”, “shifted”" in speech.user
    assert '"Speech: " p0' in speech.extra["grammar"] and 'p0 ::= "As Huineng, "' in speech.extra["grammar"]
    assert '"none" | "softened" | "shifted"' in speech.extra["grammar"]
    # round 1 was each speaker's opening: "none" was the one choice (the bundled model had declared
    # "shifted" in an opening statement)
    opening = run.call("duel:1:yinguang")
    # the one word alone: the half-sentence after it was filled with the prompt's own words
    assert 'p1 ::= ("none")\n' in opening.extra["grammar"] and "“none” (this is your first statement)\n" in opening.user
    assert 'p2 ::= "In Huineng\'s view, "' in speech.extra["grammar"]
    close = run.call("duel:close")
    assert "You are Neutral recorder." in close.system
    assert "- Round 1, Huineng: In Huineng's view, practice must start in this very moment." in close.user
    assert close.extra["grammar"].startswith('root ::= "Both positions: "')
    # parsed: the English position change and citation
    turn = run.turns()["duel:1:huineng"]
    assert turn.data["moved"] is True and turn.data["position"] == "turned" and turn.data["citations"] == 1
    assert "uncited" not in run.warning_codes
    # the report the engine renders in the question's language: no Chinese but the library's
    for markdown in (run.report.verdict_markdown, run.report.transcript_markdown):
        assert not CJK.search(without(markdown, library)), CJK.findall(markdown)[:10]
    assert "**Position change**: shifted" in run.report.transcript_markdown
    assert re.search(r"### Closing synthesis · (?:R0 · )?Neutral recorder\n", run.report.transcript_markdown)


async def test_a_chinese_duel_stays_chinese():
    spec = duel_spec(QUESTION_ZH, seats=(EN_HUINENG, EN_YINGUANG), critiques=CRITIQUES, options=options("duel"))
    spec.options.rounds = 1
    fake = FakeLLM()
    fake.supports_grammar = True
    run = await debate(spec, fake)
    speech = run.call("duel:1:huineng")
    assert "第 1/1 轮" in speech.user and "你代表「慧能大师」（禅宗）的立场，对手是「印光大师」。" in speech.user
    # the speaker's first statement: no position yet to have moved from
    assert "立场变化：“无”（这是你的首次发言）" in speech.user and "Position change" not in speech.user
    assert 'p0 ::= "作为慧能大师，"' in speech.extra["grammar"] and '"\\n立场变化：" p1' in speech.extra["grammar"]
    assert "You speak for" not in speech.user and "Huineng" not in speech.user
    close = run.call("duel:close")
    assert "## 轮次摘要" in close.user and close.extra["grammar"].startswith('root ::= "双方主张："')


# -- parsers read both languages ------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, state",
    [
        ("立场变化：转向，接受了无念之说", "turned"),
        ("立场变化：松动", "loosened"),
        ("立场变化：无，坚持", "held"),
        ("立场变化：从无转向松动", "loosened"),
        ("Position change: shifted, towards daily practice", "turned"),
        ("Position change: softened - a little", "loosened"),
        ("Position change: none, I hold to the sudden gate", "held"),
        ("Position change: unchanged", "held"),
        ("position change: none / softened / shifted", None),
        ("Speech: no declaration here", None),
    ],
)
def test_the_declared_position_change_is_read_in_either_language(line, state):
    assert duel.position_state(line) == state
    assert duel.position_moved(line) == (None if state is None else state != "held")


def test_english_citations_of_sutras_and_treatises_count():
    found = duel.duel_citations(
        "As the *Platform Sutra*, chapter 3 teaches, and Mūlamadhyamakakārikā 24.18 says; "
        "see also the Letters of Master Yinguang, vol. 2, and 《坛经·疑问品》."
    )
    assert len(found) == 4, found
    assert duel.duel_citations("The Platform Sutra teaches this.") == []  # a title without where in it
    assert duel.duel_citations("Chapter 3 of my life.") == []


def test_side_detection_reads_english_claims_and_names():
    flipped = "Speech: As Huineng, I side with Yinguang.\nSummary: In Huineng's view, nianfo is the safer way."
    own = "Speech: As Huineng, Chan is the more direct way.\nSummary: In Huineng's view, see your own nature."
    assert duel.speaks_for(flipped, EN_YINGUANG, EN_HUINENG)
    assert not duel.speaks_for(own, EN_YINGUANG, EN_HUINENG)
    # the leads name the speaker, but the grammar wrote them: they decide nothing
    neutral = "Speech: As Huineng, look within.\nSummary: In Huineng's view, look within."
    assert not duel.speaks_for(neutral, EN_YINGUANG, EN_HUINENG)


def test_a_side_named_only_to_be_denied_is_not_argued():
    """The bundled model's Huineng on "Is enlightenment sudden or gradual?": its summary "…sudden,
    not gradual." named only Zhiyi's keyword, was judged a lost side and sent back, and the second
    version did argue Zhiyi's side. A word after a negation refuses that side."""
    gradual = replace(YINGUANG, name_en="Zhiyi", keywords=("Tiantai", "gradual"))
    summary = "Speech: As Huineng, the mind is seen at once.\nSummary: In Huineng's view, enlightenment is "
    assert not duel.speaks_for(summary + "sudden, not gradual.", gradual, EN_HUINENG)
    assert not duel.speaks_for(summary + "never gradual.", gradual, EN_HUINENG)
    assert duel.speaks_for(summary + "gradual.", gradual, EN_HUINENG)  # named and not denied: still a flip
    # denied a few words on (debate 44: "…immediate and does not require gradual progression."),
    # but not past a word that turns the clause
    assert not duel.speaks_for(summary + "immediate and does not require gradual progression.", gradual, EN_HUINENG)
    assert not duel.speaks_for(summary + "immediate; it doesn't need any gradual steps.", gradual, EN_HUINENG)
    assert duel.speaks_for(summary + "not sudden but gradual.", gradual, EN_HUINENG)
    assert duel.speaks_for(summary + "not a leap: it is gradual.", gradual, EN_HUINENG)
    assert duel.speaks_for(summary + "no doubt gradual.", gradual, EN_HUINENG)
    assert duel.speaks_for(summary + "without question gradual.", gradual, EN_HUINENG)
    assert not duel.speaks_for(
        "正文：作为慧能大师。\n小结：依慧能大师之见，不需要次第。", replace(YINGUANG, keywords=("次第",)), HUINENG
    )
    # an English claim that denies is no claim for that side; one that affirms is
    assert not duel.speaks_for("Speech: As Huineng, I think not gradual at all.\nSummary: x.", gradual, EN_HUINENG)
    assert duel.speaks_for("Speech: As Huineng, I think gradual practice wins.\nSummary: x.", gradual, EN_HUINENG)
    # a Chinese claim that denies: "我认为不是次第" argues against the gradual side
    stepwise = replace(YINGUANG, keywords=("次第",))
    assert not duel.speaks_for(
        "正文：作为慧能大师，我认为不是次第。\n小结：依慧能大师之见，一念即悟。", stepwise, HUINENG
    )
    assert duel.speaks_for("正文：作为慧能大师，我认为次第更稳妥。\n小结：依慧能大师之见，次第。", stepwise, HUINENG)


def test_an_english_question_pairs_by_the_librarys_english_keywords():
    rules = [
        PairingRuleSpec(("huineng", "yinguang"), ("禅净", "念佛", "参禅", "nianfo", "Pure Land or Chan"), None, "禅净"),
        PairingRuleSpec(("kumarajiva", "huineng"), ("中观", "Madhyamaka"), None, "中观"),
    ]
    pool = [EN_HUINENG, EN_YINGUANG, replace(KUMARAJIVA, keywords=(*KUMARAJIVA.keywords, "Madhyamaka")), *MASTERS[3:]]
    pairing = duel.choose_pair("Should a busy lay person practise nianfo or sit in meditation?", [], rules, pool)
    assert (pairing.a.slug, pairing.b.slug, pairing.how) == ("huineng", "yinguang", "rule")
    # keywords: whole English words ("Chan" is not in "change", "Zen" not in "citizens")
    pairing = duel.choose_pair("Chan or Pure Land for a modern life?", [], [], pool)
    assert {pairing.a.slug, pairing.b.slug} == {"huineng", "yinguang"} and pairing.how == "keywords"
    assert duel.keyword_score(EN_HUINENG, "How do citizens change their habits?") == 0
