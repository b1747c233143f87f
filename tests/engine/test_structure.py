"""Forms as grammars (issue 13 part 4): a client that takes a GBNF grammar (the local llama.cpp
server) gets one with every structured turn, bounded to fit the turn's max_tokens; a remote client
gets none. A duel speech whose own stance line argues the opponent's side is written again once.
The grammars against the real llama.cpp server: tests/providers/test_local_model.py."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from debates.engine import duel, panel, roundtable
from debates.engine.structure import Form, Part
from testkit.fake_llm import FakeLLM
from testkit.prose import prose

from .conftest import HUINENG, YINGUANG, debate, duel_spec, options, panel_spec, table_spec
from .test_panel import UNCAPPED, panel_fake
from .test_roundtable import STANDARD, table_fake

FORMS = {
    "duel speech": duel.SPEECH_FORM,
    "duel speech in the speaker's name": duel.speech_form(HUINENG, "参禅与念佛，哪一条路更适合今天的在家人？"),
    "duel close": duel.CLOSE_FORM,
    "panel speech": panel.SPEECH_FORM,
    "panel closing": panel.CLOSING_FORM,
    "panel admission": panel.ADMISSION_GRAMMAR_FORM,
    "panel concepts": panel.CONCEPTS_FORM,
    "roundtable r1": roundtable.R1_GRAMMAR,
    "roundtable r2": roundtable.challenge_form(["乐观者", "魔鬼代言人"]),
    "roundtable r3 with veto": roundtable.revision_form(True),
    "roundtable suitability": roundtable.SUITABILITY_GRAMMAR,
}


@pytest.mark.parametrize("form", FORMS.values(), ids=FORMS.keys())
@pytest.mark.parametrize("max_tokens", [120, 380, 700])
def test_a_form_fits_its_budget_and_names_every_part_in_order(form, max_tokens):
    fitted = form.fit(max_tokens)
    floor = sum(p.size() for p in fitted.parts if not p.chars) + sum(
        len(p.label) + 2 + 10 * p.lines for p in fitted.parts if p.chars
    )
    assert fitted.size() <= max(max_tokens, floor)  # fits, unless even the minimums do not
    grammar = fitted.grammar()
    root = grammar.splitlines()[0]
    assert re.findall(r'"(?:\\n)?([^"：]+)："', root) == form.labels()
    for n, part in enumerate(form.parts):
        assert f"p{n} ::= " in grammar
        for word in part.choices:
            assert f'"{word}"' in grammar


def test_free_text_is_bounded_and_never_holds_a_label():
    # A speech breaks its lines where it likes (a bound per line cut words in two mid-sentence);
    # a one-line part holds no line break. Neither holds the full-width colon a label needs.
    form = Form((Part("正文", chars=300, lines=3), Part("小结", chars=80)))
    assert form.grammar().splitlines()[1:] == [
        r"p0 ::= [^\n\r：:#` ] [^\r：:#`]{0,299}",
        r"p1 ::= [^\n\r：:#` ] [^\n\r：:#`]{0,79}",
    ]
    assert form.size() == len("正文：") + 1 + 300 + len("小结：") + 1 + 80


def grammar_client(**kw) -> FakeLLM:
    fake = FakeLLM(**kw)
    fake.supports_grammar = True  # as LocalModelClient
    return fake


async def test_a_local_client_gets_a_grammar_with_each_structured_turn_a_remote_one_does_not():
    local = grammar_client()
    spec = duel_spec(seats=[HUINENG, YINGUANG], options=options("duel", rounds=1))
    run = await debate(spec, local)
    speech = run.call("duel:1:huineng")
    form = duel.speech_form(HUINENG, spec.question, opening=True).fit(speech.max_tokens)
    assert speech.extra["grammar"] == form.grammar()
    assert 'p1 ::= ("无")\n' in form.grammar()  # an opening has no position to have moved from, nor a why
    # in the speaker's own name: the speech and its summary start with words the grammar writes
    assert '"正文：" p0' in form.grammar() and 'p0 ::= "作为慧能大师，"' in form.grammar()
    assert 'p2 ::= "依慧能大师之见，"' in form.grammar()
    assert duel.speech_form(HUINENG, spec.question).parts[2].size() == len("小结：") + 1 + 80  # lead included
    assert run.call("duel:close").extra["grammar"].startswith('root ::= "双方主张："')

    remote = await debate(duel_spec(seats=[HUINENG, YINGUANG], options=options("duel", rounds=1)), FakeLLM())
    assert all(not c.extra for c in remote.calls)


async def test_the_roundtable_challenge_grammar_names_only_the_other_roles():
    fake = table_fake(STANDARD)
    fake.supports_grammar = True
    run = await debate(table_spec(no_interrupt=True), fake)
    grammar = run.call("r2:optimist").extra["grammar"]
    assert '"魔鬼代言人"' in grammar and '"乐观者"' not in grammar  # whom: never oneself


async def test_panel_turns_carry_their_forms():
    fake = panel_fake()
    fake.supports_grammar = True
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)
    assert run.call("host:admission").extra["grammar"].startswith('root ::= "类型：" p0 "\\n可证伪："')
    assert '"\\n沉默声明：" p3' in run.call("r1:osborn").extra["grammar"]
    # R1 is blind: its grammar writes only "无" for the rebuttal and the silence; R2's are free.
    blind = run.call("r1:osborn").extra["grammar"]
    assert 'p2 ::= ("无")' in blind and 'p3 ::= ("无")' in blind
    crossing = run.call("r2:osborn").extra["grammar"]
    assert 'p2 ::= ("无")' not in crossing and 'p3 ::= ("无" | "本轮沉默")' in crossing


# -- a speaker that loses its side -----------------------------------------------------------------

FLIPPED = "正文：念佛最稳妥。\n立场变化：转向\n小结：念佛往生净土才是现代人最稳妥的路。"
OWN = "正文：直指人心。\n立场变化：无\n小结：参禅顿悟自性，不假外求。"


def test_speaks_for_counts_each_sides_own_words_in_the_stance_line():
    assert duel.speaks_for(FLIPPED, YINGUANG, HUINENG)
    assert not duel.speaks_for(OWN, YINGUANG, HUINENG)
    # Naming the other side to reject it: its words and one's own weigh the same, not a flip.
    assert not duel.speaks_for("小结：念佛不如参禅直接。", YINGUANG, HUINENG)
    # A claim decides over word counts: the summary names both, the speech claims the other side.
    claimed = "正文：我认为念佛是通往自性最直接的途径。\n立场变化：转向\n小结：念佛和参禅都与自性有关。"
    assert duel.speaks_for(claimed, YINGUANG, HUINENG)
    assert not duel.speaks_for("正文：参禅才是顿悟之门，念佛亦可。\n小结：念佛与参禅。", YINGUANG, HUINENG)
    # Backing the opponent by name is a flip too (seen: "我支持「印光」的观点"); one's own name is not.
    assert duel.speaks_for("小结：我支持「印光」大师的观点。", YINGUANG, HUINENG)
    assert not duel.speaks_for("小结：我同意「慧能」的观点：见性即佛。", YINGUANG, HUINENG)


def test_the_leads_the_grammar_wrote_do_not_count_as_a_side():
    # "依慧能大师之见" names the speaker, but the grammar wrote it: what follows decides.
    flipped = "正文：作为慧能大师，念佛最稳妥。\n立场变化：转向\n小结：依慧能大师之见，念佛往生净土才是最稳妥的路。"
    assert duel.speaks_for(flipped, YINGUANG, HUINENG)
    own = "正文：作为慧能大师，直指人心。\n立场变化：无\n小结：依慧能大师之见，参禅顿悟自性，不假外求。"
    assert not duel.speaks_for(own, YINGUANG, HUINENG)


def test_an_english_question_gets_english_parts_and_leads():
    huineng = replace(HUINENG, name_en="Huineng")
    form = duel.speech_form(huineng, "Chan or Pure Land, which suits a modern life?")
    assert form.labels() == ["Speech", "Position change", "Summary"] and form.colon == ": "
    assert form.parts[0].lead == "As Huineng, " and form.parts[2].lead == "In Huineng's view, "
    assert form.parts[1].choices == ("none", "softened", "shifted")
    assert not re.search("[\u3400-\u9fff]", form.grammar())


async def test_a_speech_arguing_the_opponents_side_is_written_again_once():
    fake = FakeLLM()
    fake.reply("duel:1:huineng", FLIPPED)
    fake.reply("duel:1:huineng:again", OWN)
    run = await debate(duel_spec(seats=[HUINENG, YINGUANG], options=options("duel", rounds=1)), fake)

    assert run.keys[:2] == ["duel:1:huineng", "duel:1:huineng:again"]
    assert "被退回重写" in run.call("duel:1:huineng:again").user
    assert "side_lost" in run.warning_codes and "side_lost_kept" not in run.warning_codes
    # the opponent answers the rewritten position, not the flipped one
    assert (
        "参禅顿悟自性" in run.call("duel:1:yinguang").user
        and "念佛往生净土才是" not in run.call("duel:1:yinguang").user
    )


# -- what a part copies of the form ----------------------------------------------------------------

# Seen on the local model (bench/local_quality.py): the speech and the half-sentence after the
# position change went on to write the parts that follow them.
ECHOING = (
    "正文：作为阿姜查，我认为解脱的根本在于放下。立场变化为“转向”，因为我在思考如何在日常生活中实现解脱。\n\n"
    "小结，我本轮立场是“转向”。\n"
    "立场变化：转向。小结，通过戒律行持，我们建立正念和观智\n"
    "小结：依阿姜查之见，解脱的根本在于放下。"
)


def test_tidy_cuts_what_a_part_copied_of_the_parts_after_it():
    assert duel.SPEECH_FORM.tidy(ECHOING) == (
        "正文：作为阿姜查，我认为解脱的根本在于放下。\n立场变化：转向。\n小结：依阿姜查之见，解脱的根本在于放下。"
    )


def test_tidy_cuts_a_copied_label_run_into_the_speech():
    # the bundled model's Yinguang (念佛与参禅…, 2026-12-05): the position change and the summary's
    # label written at the end of the speech, with an enumeration comma
    speech = "正文：作为印光大师，我建议现代人量根机选择。立场变化、“无” 小结\n念佛与参禅各有优劣，但都…\n"
    tail = "立场变化：无\n小结：依印光大师之见，念佛与参禅各有优劣。"
    assert duel.SPEECH_FORM.tidy(speech + tail) == "正文：作为印光大师，我建议现代人量根机选择。\n" + tail


def test_tidy_keeps_sentences_that_only_use_a_labels_word():
    form = roundtable.revision_form(False)
    text = "\n".join(
        f"{label}：{value}"
        for label, value in zip(
            form.labels(),
            ["修正", "理由是成本太高。理由很简单", "先试点。理由是风险小", "中", "先试点，理由是风险小。"],
            strict=True,
        )
    )
    assert form.tidy(text) == text
    # a reply without all its parts is left as it is
    assert duel.SPEECH_FORM.tidy("正文：小结，参禅。") == "正文：小结，参禅。"


# The bundled model's Chinese roundtable (R1, under the grammar): the thesis ended by announcing the
# arguments with the form's "（2–3 条）" copied, and an argument was numbered twice; the same in English.
ANNOUNCED = {
    "zh": (
        "核心论点：取消年终绩效考核可以为公司带来更多的行动机会。论据如下（2-3 条）。\n"
        "论据：1. 传统考核过度关注结果。\n2. 2. 取消考核可以打破部门壁垒。\n3. 3、 节省 1. 5 个人力\n"
        "置信度：高\n小结：值得尝试。",
        "核心论点：取消年终绩效考核可以为公司带来更多的行动机会。\n"
        "论据：1. 传统考核过度关注结果。\n2. 取消考核可以打破部门壁垒。\n3. 3、 节省 1. 5 个人力\n"
        "置信度：高\n小结：值得尝试。",
    ),
    "en": (
        "Thesis: Dropping reviews frees managers to coach. Arguments as follows (2–3 of them).\n"
        "Arguments: 1. 1. Reviews take weeks.\n2. Ratings are 1. 5 points apart on average.\n"
        "Confidence: high\nSummary: Drop them.",
        "Thesis: Dropping reviews frees managers to coach.\n"
        "Arguments: 1. Reviews take weeks.\n2. Ratings are 1. 5 points apart on average.\n"
        "Confidence: high\nSummary: Drop them.",
    ),
}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_tidy_cuts_an_announced_part_and_a_list_number_written_twice(lang):
    reply, tidied = ANNOUNCED[lang]
    assert roundtable.r1_grammar(lang).tidy(reply) == tidied


async def test_the_tidied_reply_is_what_is_stored_and_summarised():
    fake = FakeLLM()
    fake.reply("duel:1:huineng", ECHOING)
    run = await debate(duel_spec(seats=[HUINENG, YINGUANG], options=options("duel", rounds=1)), fake)
    finished = run.turns()["duel:1:huineng"]
    assert "立场变化为" not in finished.text and finished.text.endswith("依阿姜查之见，解脱的根本在于放下。")


# -- a part the grammar stopped at its length ---------------------------------------------------

CUT_FORM = Form(
    (Part("Position", chars=30), Part("Core", chars=40, lines=3), Part("Silence", choices=("none",))),
    colon=": ",
)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        # the bundled model's stray last letters, as it wrote them at the bound (panel, 2026-12-04)
        ("The startup should adopt it,혁", "The startup should adopt it…"),
        ("scalability, modularity, и", "scalability, modularity…"),
        ("Microservices allow for more柔", "Microservices allow for more…"),
        ("each service responsible for a单一", "each service responsible for a…"),
        ("It could improve productivity,<", "It could improve productivity…"),
        # a hyphen then an invisible soft hyphen (the roundtable host's English reason, 2026-12-04)
        ("Reviews are part of many companies' employee-\u00ad", "Reviews are part of many companies' employee…"),
        ("A word cut in the middle: modul", "A word cut in the middle: modul…"),
        ("It ends on a full sentence here.", "It ends on a full sentence here."),
    ],
)
def test_a_part_stopped_at_its_length_ends_as_a_cut_without_a_stray_letter(value, shown):
    value = value.ljust(30, " ") if len(value) < 30 else value  # at the bound: 30 characters or more
    text = f"Position: {value}\nCore: two lines\nof arguments\nSilence: none"
    assert CUT_FORM.mark_cuts(text) == f"Position: {shown}\nCore: two lines\nof arguments\nSilence: none"


def test_a_part_ended_just_short_of_its_length_is_a_cut_too():
    """The bundled model's English roundtable summary, 79 characters of its 80: no token short
    enough to fit was left, and the summary read "…not advisable due to potential negative"."""
    form = Form((Part("Thesis", chars=40), Part("Summary", chars=80)), colon=": ")
    summary = "The adoption of a four-day work week is not advisable due to potential negative"
    assert len(summary) == 79
    assert form.mark_cuts(f"Thesis: no.\nSummary: {summary}") == f"Thesis: no.\nSummary: {summary}…"
    three_short = summary[:77]  # further from the bound: as written
    assert form.mark_cuts(f"Thesis: no.\nSummary: {three_short}") == f"Thesis: no.\nSummary: {three_short}"


def test_a_choices_half_sentence_stopped_at_its_length_ends_as_a_cut():
    """The bundled model's duel: "Position change: shifted, I now propose that Chan is … today. I"."""
    form = Form((Part("Position change", choices=("held", "shifted"), tail=20), Part("Summary", chars=40)), colon=": ")
    cut = "Position change: shifted, I now propose that\nSummary: short."
    assert form.mark_cuts(cut) == "Position change: shifted, I now propose that…\nSummary: short."
    within = "Position change: held, as before\nSummary: short."  # the tail's 10 of 20: as written
    assert form.mark_cuts(within) == within


def test_a_part_within_its_length_and_latin_letters_are_left_as_written():
    text = "Position: adopt them,\nCore: option B\nSilence: none"  # short parts: not cut by the grammar
    assert CUT_FORM.mark_cuts(text) == text
    chinese = Form((Part("立场", chars=10), Part("小结", chars=10)))
    assert (
        chinese.mark_cuts("立场：我们应当先试点新方案B\n小结：先试点。")
        == "立场：我们应当先试点新方案B…\n小结：先试点。"
    )
    assert (
        chinese.mark_cuts("立场：我们应当先试点微服务하\n小结：先试点。")
        == "立场：我们应当先试点微服务…\n小结：先试点。"
    )
    assert chinese.mark_cuts("立场：缺了小结") == "立场：缺了小结"  # a reply without all its parts


async def test_a_local_turn_stopped_at_a_parts_length_is_stored_as_a_cut_a_remote_one_is_not():
    body = prose(400, stops=False)  # longer than the fitted part: the grammar stopped it
    cut = f"正文：作为慧能大师，{body}하\n立场变化：无\n小结：依慧能大师之见，顿悟。"
    local, remote = grammar_client(), FakeLLM()
    for fake in (local, remote):
        fake.reply("duel:1:huineng", cut)
    spec = duel_spec(seats=[HUINENG, YINGUANG], options=options("duel", rounds=1))
    stored = (await debate(spec, local)).turns()["duel:1:huineng"].text
    assert "하" not in stored and f"{body}…\n立场变化" in stored
    # a remote model has no grammar: its text is not the grammar's cut, and is kept as written
    kept = (await debate(spec, remote)).turns()["duel:1:huineng"].text
    assert "하\n立场变化" in kept


def test_tidy_cuts_a_label_written_again_with_one_of_its_choices():
    """The bundled model's Chinese roundtable (debate 83): the thesis ended "…确保遵循康威定律。置信度中。",
    the confidence part written into it, label and choice with nothing between."""
    form = roundtable.r1_grammar("zh")
    thesis, rest = (
        "单体应用拆分成微服务，有助于提高系统的可扩展性，但需要权衡成本，确保遵循康威定律。",
        "\n论据：1. 便于部署。\n置信度：中\n小结：可以拆。",
    )
    assert form.tidy(f"核心论点：{thesis}置信度中。{rest}") == f"核心论点：{thesis}{rest}"
    # the label's word with other words after it is the value's own sentence
    kept = f"核心论点：{thesis}置信度中等的判断不宜采纳。{rest}"
    assert form.tidy(kept) == kept
