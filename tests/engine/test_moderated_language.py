"""The moderated debate in its question's language, its verdict line and its budget (issues 27 #1,
28 #2 and #3): an English question gets English prompts, rules, headings, fixed lines and
verdict on the loopback fake server (only the library's persona text stays as written), a Chinese
one stays Chinese; the verdict opens with the fixed form on its own first line in the debate's
language, whichever language's form the model wrote, and loses stance words outside quotations
only; a budget that runs out keeps the moderator's synthesis, within the cap."""

from __future__ import annotations

import dataclasses
import re

from debates.engine import events as ev
from debates.engine.moderated import VERDICT_FORM, VERDICT_FORM_EN, chosen_option, enforce_verdict_form
from debates.engine.spec import LibrarySpec, SeatSpec
from debates.engine.text import CUT_MARK
from debates.engine.turns import cut_slack
from testkit.fake_openai import Reply

from .conftest import key_of, manifest, moderated_spec, persona

CJK = re.compile("[\u3000-\u9fff\uff00-\uffef]")

JOBS = manifest(
    "steve-jobs",
    "史蒂夫·乔布斯",
    name_en="Steve Jobs",
    description_en="Product and design, from the user's side.",
    keywords=("product", "design"),
)
MUNGER = manifest(
    "charlie-munger",
    "查理·芒格",
    9.0,
    name_en="Charlie Munger",
    description_en="Inversion and incentives.",
    keywords=("inversion", "incentives"),
)
CHAIR = persona("moderator", "主持人", kind="moderator", name_en="Moderator")
PEOPLE = (JOBS, MUNGER)
LIBRARY_TEXT = [p.text for p in (*PEOPLE, CHAIR)]  # the personas' own text, as their library wrote it

QUESTION_EN = "Should a small company build the product first or sell first?"
QUESTION_ZH = "小公司应该先做产品还是先做销售？"


def spec(question: str, **values):
    made = moderated_spec(question, seats=[SeatSpec(p) for p in PEOPLE], **values)
    return dataclasses.replace(made, library=LibrarySpec(host=CHAIR))


def first_line(verdict: str) -> str:
    return verdict.split("\n", 1)[0]


def english_script(verdict: str):
    def script(body):
        key = key_of(body)
        if key == "moderator:verdict":
            return verdict
        slug, n = key.split(":")[2], key.split(":")[1]
        return f"{slug} in round {n}: validate demand with paying customers before building more."

    return script


def chinese_script(body):
    key = key_of(body)
    if key == "moderator:verdict":
        return "## 各方要点\n- 一方重产品，一方重现金流。\n## 裁决\n先用最小产品验证付费意愿。"
    return f"{key.split(':')[2]}：先验证付费意愿，再扩大投入。"


def without_library_text(prompt: str) -> str:
    for words in LIBRARY_TEXT:
        prompt = prompt.replace(words, "")
    return prompt


# -- the language ---------------------------------------------------------------------------------


async def test_an_english_question_gets_an_english_moderated_debate_on_the_fake_server(harness):
    # The model misses the form and writes stance words: the repaired verdict is English too.
    verdict = "## Key points\n- One side builds, one side sells.\n## Verdict\nI think: sell a small version first."
    run = await harness.run(spec(QUESTION_EN, rounds=2), english_script(verdict))

    assert run.outcome == "done"
    assert [key_of(r.body) for r in run.requests] == [
        "speech:1:steve-jobs:1",
        "speech:1:charlie-munger:1",
        "speech:2:steve-jobs:2",
        "speech:2:charlie-munger:2",
        "moderator:verdict",
    ]
    for request in run.requests:  # every word sent but the library's own persona text is English
        for message in request.messages:
            leftover = CJK.findall(without_library_text(message["content"]))
            assert not leftover, (key_of(request.body), message["role"], message["content"])
    first, closing, chair = run.requests[0], run.requests[2], run.requests[-1]
    user = first.messages[-1]["content"]
    for line in (
        "## Question\n" + QUESTION_EN,
        "- You are taking part in a debate between several personas.",
        "- Your role: speak as Steve Jobs,",
        "- Mode: round-robin",
        "- Round: Opening statements (round 1/2)",
        "- Your assigned position: none",
        "- At most 600 characters (the moderator cuts a longer speech)",
        "- State your core view on the question and your reasons.",
        "## Context (the earlier speeches)\n(You are the first speaker.)",
        "## Output format\nWrite only your speech as Steve Jobs:",
    ):
        assert line in user
    assert first.system_prompt.startswith("You are Steve Jobs.")
    assert first.body["stop"][0] == "\nCharlie Munger:"  # the other speaker, by the English name
    closing_user = closing.messages[-1]["content"]
    assert "- Round: Closing statements (round 2/2)" in closing_user
    assert "Charlie Munger: charlie-munger in round 1" in closing_user  # earlier speeches, English names
    chair_user = chair.messages[-1]["content"]
    assert chair.system_prompt.startswith("You are Moderator.") and "Chair, not contestant." in chair.system_prompt
    assert f"exactly this fixed form: “{VERDICT_FORM_EN}…”" in chair_user
    assert "## All speeches\n[Steve Jobs · round 1] steve-jobs in round 1" in chair_user
    assert f"## Output format\n{VERDICT_FORM_EN}: … (one line)\n## Key points\n- …\n## Reasons" in chair_user

    said = run.data["verdict"]
    assert first_line(said) == f"{VERDICT_FORM_EN}: Sell a small version first."
    assert "I think" not in said and VERDICT_FORM not in said
    assert said.endswith("## Key points\n- One side builds, one side sells.")  # no empty "## Verdict" left
    assert run.data["verdict_fixes"] == ["removed 'I think'", "verdict form added"]
    assert not CJK.search(run.report.verdict_markdown)
    assert f"\n{VERDICT_FORM_EN}: Sell a small version first.\n" in run.report.verdict_markdown
    transcript = run.report.transcript_markdown
    for person in (*PEOPLE, CHAIR):  # the speakers' headings may carry their library names
        transcript = transcript.replace(person.name, "")
    assert not CJK.search(transcript)


async def test_a_chinese_question_keeps_its_chinese_moderated_debate(harness):
    run = await harness.run(spec(QUESTION_ZH, rounds=2), chinese_script)

    assert run.outcome == "done"
    user = run.requests[0].messages[-1]["content"]
    for line in ("当前模式：round-robin", "当前轮次：开篇陈述（第 1/2 轮）", "你被分派的立场：无", "最大字数：600"):
        assert line in user
    assert "（你是第一位发言者。）" in user and "You are" not in user
    assert run.requests[0].system_prompt.startswith("你是「史蒂夫·乔布斯」")
    chair = run.requests[-1].messages[-1]["content"]
    assert f"{VERDICT_FORM}：……（一行）\n## 各方要点" in chair and "【查理·芒格·第1轮】" in chair
    assert first_line(run.data["verdict"]) == f"{VERDICT_FORM}：先用最小产品验证付费意愿。"
    assert VERDICT_FORM_EN not in run.data["verdict"]


async def test_an_english_debate_recognises_its_form_and_the_chinese_one(harness):
    # The form under its heading at the end (the old prompt's order): it moves to the top.
    english = f"## Key points\n- Build versus sell.\n## Verdict\n{VERDICT_FORM_EN}: sell first, then build."
    run = await harness.run(spec(QUESTION_EN, rounds=1), english_script(english))
    assert run.data["verdict"] == f"{VERDICT_FORM_EN}: sell first, then build.\n\n## Key points\n- Build versus sell."
    assert run.data["verdict_fixes"] == ["verdict line moved to the top"]
    # The model answered with the Chinese form: recognised, and said in the debate's language.
    chinese = f"{VERDICT_FORM}：先卖再做。\n## 要点\n- 两方分歧在顺序。"
    run = await harness.run(spec(QUESTION_EN, rounds=1), english_script(chinese))
    assert first_line(run.data["verdict"]) == f"{VERDICT_FORM_EN}: 先卖再做。"
    assert run.data["verdict_fixes"] == ["verdict form in the debate's language"]


# -- the verdict line -----------------------------------------------------------------------------


def test_a_missing_form_is_never_glued_to_a_heading():
    # The old repair prepended the form to the first line, a heading: 「…的选项是：## 各方要点」.
    verdict, fixes = enforce_verdict_form("## 各方要点\n- 甲方重产品。\n- 乙方重现金流。\n## 裁决\n先做最小产品。")
    assert verdict == f"{VERDICT_FORM}：先做最小产品。\n\n## 各方要点\n- 甲方重产品。\n- 乙方重现金流。"
    assert fixes == ["verdict form added"]
    for text, lang in (("## 各方要点\n- 甲。\n- 乙。", "zh"), ("## Key points\n- A.\n- B.", "en")):
        verdict, _fixes = enforce_verdict_form(text, lang)
        assert "#" not in first_line(verdict)


def test_the_form_glued_to_a_heading_gets_its_own_first_line():
    verdict, fixes = enforce_verdict_form(f"## 裁决：{VERDICT_FORM}：先做产品。\n## 各方要点\n- 甲。")
    assert verdict == f"{VERDICT_FORM}：先做产品。\n\n## 各方要点\n- 甲。"
    assert fixes == ["verdict line on its own line"]
    verdict, _fixes = enforce_verdict_form(f"**{VERDICT_FORM_EN}:**\nsell first.\n## Key points\n- A.", "en")
    assert verdict == f"{VERDICT_FORM_EN}: sell first.\n\n## Key points\n- A."


def test_an_english_verdict_in_the_english_form_is_recognised():
    english = f"{VERDICT_FORM_EN}: sell first.\n## Key points\n- A."
    assert enforce_verdict_form(english, "en") == (english, [])
    # also where the debate is Chinese: recognised (not added again), said in Chinese
    verdict, fixes = enforce_verdict_form(english, "zh")
    assert verdict.startswith(f"{VERDICT_FORM}：sell first.") and VERDICT_FORM_EN not in verdict
    assert fixes == ["verdict form in the debate's language"]


def test_a_templates_blank_after_the_form_names_no_option():
    """The bundled model, in an English run, wrote the form and then a bracketed instruction
    instead of an option; that blank is not the option the verdict chose."""
    text = (
        f"{VERDICT_FORM_EN}: [Please summarize the key points of each speech.]\n"
        "## Key points\n- A wants speed.\n## Reasons\nCash runs out before the product is ready."
    )
    verdict, fixes = enforce_verdict_form(text, "en")
    assert first_line(verdict) == f"{VERDICT_FORM_EN}: (no option named)"
    assert "[Please" not in verdict and "placeholder option dropped" in fixes
    assert chosen_option(text, "en") == "A wants speed."  # the first sentence after the line, as when empty
    # on the line after the form, in Chinese lenticular brackets, and where the form was missing
    verdict, _fixes = enforce_verdict_form(f"{VERDICT_FORM}：\n【在此填写选项】\n## 理由\n现金流先断。")
    assert verdict == f"{VERDICT_FORM}：（未写明选项）\n\n## 理由\n现金流先断。"
    verdict, _fixes = enforce_verdict_form("## Verdict\n**[Your option here]**\n## Key points\n- A.", "en")
    assert first_line(verdict) == f"{VERDICT_FORM_EN}: (no option named)"
    # the verdict prompt's own blank, copied with its note (the bundled model, in Chinese)
    copied = f"{VERDICT_FORM}：……（一行）\n## 各方要点\n- 先还房贷风险低。\n## 理由\n利率高。"
    verdict, fixes = enforce_verdict_form(copied)
    assert first_line(verdict) == f"{VERDICT_FORM}：（未写明选项）" and "placeholder option dropped" in fixes
    assert chosen_option(copied) == "先还房贷风险低。"
    verdict, _fixes = enforce_verdict_form(f"{VERDICT_FORM_EN}: … (one line)\n## Reasons\nRates are high.", "en")
    assert first_line(verdict) == f"{VERDICT_FORM_EN}: (no option named)"
    # an option that merely holds a link or a bracket is an option
    linked = f"{VERDICT_FORM_EN}: follow [the memo](https://example.org/memo) and sell first."
    assert enforce_verdict_form(linked, "en") == (linked, [])
    assert first_line(enforce_verdict_form(f"{VERDICT_FORM_EN}: [the memo](https://example.org).", "en")[0]).endswith(
        "[the memo](https://example.org)."
    )


def test_the_question_written_back_as_the_option_names_none():
    """The bundled model's verdict in a Chinese run: a heading, then the question itself."""
    asked = "我应该先还房贷，还是先投资指数基金？"
    verdict, fixes = enforce_verdict_form(f"## 议题\n{asked}\n\n## 理由\n利率高于预期收益。", "zh", asked)
    assert first_line(verdict) == f"{VERDICT_FORM}：（未写明选项）" and "question as the option dropped" in fixes
    assert asked not in verdict
    english = "Should I learn Rust or Go next?"
    verdict, fixes = enforce_verdict_form(f"{VERDICT_FORM_EN}: {english}\n## Reasons\nGo ships sooner.", "en", english)
    assert first_line(verdict) == f"{VERDICT_FORM_EN}: (no option named)"
    assert (
        chosen_option(f"{VERDICT_FORM_EN}: {english}\n## Reasons\nGo ships sooner.", "en", english)
        == "Go ships sooner."
    )
    # an option that answers the question is an option, and without the question nothing changes
    answer = f"{VERDICT_FORM_EN}: Go, since the team ships web services."
    assert enforce_verdict_form(answer, "en", english) == (answer, [])
    assert first_line(enforce_verdict_form(f"{VERDICT_FORM_EN}: {english}", "en")[0]).endswith(english)


def test_the_form_is_on_the_first_line_once_and_the_materials_speech_tags_go():
    """The bundled model's Chinese verdict: after the fixed line it copied a speech with its tag
    from the material, and its reply ended on the form begun again and cut off."""
    text = (
        f"{VERDICT_FORM}：先还房贷。\n【史蒂夫·乔布斯·第1轮】首先，我要明确我的角色。\n"
        "## 理由\n- 家庭财务稳定。\n若被迫选，在所有发言的基础上最小损失的"
    )
    verdict, fixes = enforce_verdict_form(text, "zh")
    assert verdict == f"{VERDICT_FORM}：先还房贷。\n\n首先，我要明确我的角色。\n## 理由\n- 家庭财务稳定。"
    assert fixes == ["speech tag dropped", "repeated verdict form dropped"]
    english = (
        f"{VERDICT_FORM_EN}: Go.\n[Steve Jobs · round 1] Rust is safer.\n## Reasons\n- Ships.\nIf forced to choose,"
    )
    verdict, _fixes = enforce_verdict_form(english, "en")
    assert verdict == f"{VERDICT_FORM_EN}: Go.\n\nRust is safer.\n## Reasons\n- Ships."
    # the tag copied at the start of the option itself (the bundled model's Chinese verdict)
    copied = f"{VERDICT_FORM}：【查理·芒格·第1轮】在小公司中，通常先做产品比先做销售更有效。\n## 理由\n- 成本。"
    verdict, fixes = enforce_verdict_form(copied, "zh")
    assert verdict.startswith(f"{VERDICT_FORM}：在小公司中，通常先做产品") and "speech tag dropped" in fixes


def test_stance_words_go_outside_quotations_only():
    verdict, fixes = enforce_verdict_form(f"{VERDICT_FORM}：先卖。\n## 理由\n芒格说“我认为应该先卖”，我认为有理。")
    assert verdict == f"{VERDICT_FORM}：先卖。\n\n## 理由\n芒格说“我认为应该先卖”，有理。"
    assert fixes == ["removed '我认为'"]
    verdict, _fixes = enforce_verdict_form(f"{VERDICT_FORM}：先卖。芒格说「应该先卖」。")
    assert "「应该先卖」" in verdict


def test_chinese_stance_words_leave_one_comma_where_they_stood():
    """The bundled model's Chinese verdict (第一次创业，应该融资还是自己滚雪球？) copied a speech:
    "作为查理·芒格，我认为，这取决于…" lost its stance word and read "作为查理·芒格，，这取决于…"."""
    body = f"{VERDICT_FORM}：先融资。\n## 理由\n作为查理·芒格，我认为，这取决于风险。我认为，先做产品。所以我认为先卖。"
    verdict, _fixes = enforce_verdict_form(body)
    assert verdict.endswith("## 理由\n作为查理·芒格，这取决于风险。先做产品。所以先卖。")


def test_english_stance_words_are_removed_and_the_sentences_still_read():
    text = (
        f"{VERDICT_FORM_EN}: sell first.\n## Reasons\nIn my opinion, cash decides. Munger said "
        '"I think we sell first", and that, I believe, holds. I think that the product can wait. '
        "The right answer is to test demand. Personally, I would ship."
    )
    verdict, fixes = enforce_verdict_form(text, "en")
    assert verdict == (
        f"{VERDICT_FORM_EN}: sell first.\n\n## Reasons\nCash decides. Munger said "
        '"I think we sell first", and that holds. The product can wait. To test demand. I would ship.'
    )
    assert fixes == [
        "removed 'in my opinion'",
        "removed 'I believe'",
        "removed 'I think'",
        "removed 'the right answer is'",
        "removed 'personally'",
    ]
    # "should" stays: in English it carries the sentence ("the company should wait")
    assert "should wait" in enforce_verdict_form(f"{VERDICT_FORM_EN}: the company should wait.", "en")[0]


# -- the budget -----------------------------------------------------------------------------------


async def test_a_budget_that_runs_out_still_ends_with_the_moderators_synthesis_within_the_cap(harness):
    """Speeches that use their whole allowance (the server cuts them at max_tokens): the speeches
    stop while the synthesis still fits, and the synthesis is the model's, not a placeholder."""
    cap = 3000

    def script(body):
        if key_of(body) == "moderator:verdict":
            return Reply(f"{VERDICT_FORM}：先验证付费意愿。\n## 各方要点\n- 甲。\n## 理由\n" + "理由充分。" * 200)
        return Reply("先做产品，" * 400)  # longer than any allowance: cut at max_tokens

    run = await harness.run(spec(QUESTION_ZH, rounds=3, token_budget=cap), script)

    assert run.outcome == "done"
    keys = [key_of(r.body) for r in run.requests]
    assert keys[-1] == "moderator:verdict" and 1 <= len(keys) - 1 < 6  # some speeches, not all six
    assert first_line(run.data["verdict"]) == f"{VERDICT_FORM}：先验证付费意愿。"
    assert "预算用尽" not in run.data["verdict"]
    assert run.sink.of(ev.TurnFinished)[-1].key == "moderator:verdict"
    ledger = run.data["ledger"]
    assert ledger["counted_against_cap"] <= cap and ledger["cap"] == cap
    assert "token_budget" in run.warning_codes
    assert "keeps in reserve" in run.warning("token_budget").text


def test_the_chosen_option_leaves_the_models_bold_out():
    """The bundled model wrote the option in bold: the verdict's summary (and the report's fixed
    line built on it) read "hire a second designer**." with the closing marks left behind."""
    verdict = f"{VERDICT_FORM_EN}: **hire a second designer**.\n\nKey points:\n- one"
    assert chosen_option(verdict, "en") == "hire a second designer."
    assert chosen_option(f"{VERDICT_FORM}：**先做产品**。\n\n要点：", "zh") == "先做产品。"


# -- the cut --------------------------------------------------------------------------------------


async def test_the_moderator_cuts_a_long_speech_off_on_the_wire_not_after_it(harness):
    """The seed's rule, read literally: the moderator cuts a speech that runs past the limit. A model
    that would go on for 2,000 characters is stopped a little past the 60 (the connection closed, the
    rest never sent or paid for), and the speech keeps its first 60 and the cut mark, as before."""
    words = "sell build ask price wait learn test listen ship count".split()
    long_speech = " ".join(
        f"{words[n % 10]} {n} {words[n * 7 % 10]}s {n * 13 % 97} {words[n * 3 % 10]}." for n in range(90)
    )
    assert len(long_speech) > 2000

    def script(body):
        key = key_of(body)
        if key == "moderator:verdict":
            return english_script(VERDICT_FORM_EN + ": sell first.\n## Points\n- both.")(body)
        if key.startswith("speech:1:steve-jobs"):
            return Reply(long_speech, token_delay=0.002)
        return "Invert it: cash kills small firms."

    run = await harness.run(spec(QUESTION_EN, rounds=1, max_chars=60), script)

    assert run.outcome == "done"
    jobs = run.turns()["speech:1:steve-jobs:1"]
    assert jobs.text == long_speech[:60] + CUT_MARK["en"] and jobs.data["cut"] is True
    asked = await next(r for r in run.requests if key_of(r.body) == "speech:1:steve-jobs:1").settled()
    sent = "".join(asked.tokens)
    assert asked.outcome == "client closed", asked.outcome
    assert 60 < len(sent) < 60 + cut_slack(60) + 40, len(sent)  # read to the cut and its slack, one token more
    assert "speech_cut" in run.warning_codes and "reply_capped" not in run.warning_codes
    munger = run.turns()["speech:1:charlie-munger:1"]
    assert (
        munger.text == "Invert it: cash kills small firms." and munger.data["cut"] is False
    )  # a short one is read whole
    # the verdict's summary, read alone, starts its sentence; the fixed line keeps the option as written
    verdict = run.turns()["moderator:verdict"]
    assert verdict.summary == "Sell first." and verdict.text.startswith(f"{VERDICT_FORM_EN}: sell first.")


def test_the_question_copied_before_the_option_goes_and_the_option_stays():
    """The bundled model's English verdict (a moderated run): a speaker's name, the question, then
    its answer, all on the form's line; only the answer is the option."""
    asked = "Should a first-time founder raise venture money or bootstrap?"
    answer = "The decision depends on the balance between risk and control; raise venture money."
    verdict, fixes = enforce_verdict_form(f"{VERDICT_FORM_EN}: Charlie Munger: {asked} {answer}", "en", asked)
    assert first_line(verdict) == f"{VERDICT_FORM_EN}: {answer}" and "question before the option dropped" in fixes
    assert chosen_option(verdict, "en", asked) == answer
    chinese = "我应该先还房贷，还是先投资指数基金？"
    verdict, fixes = enforce_verdict_form(f"{VERDICT_FORM}：芒格：{chinese}先还房贷，利率更高。", "zh", chinese)
    assert first_line(verdict) == f"{VERDICT_FORM}：先还房贷，利率更高。"
    # the question with nothing after it names no option; a long lead is not a copy of it
    verdict, _fixes = enforce_verdict_form(f"{VERDICT_FORM_EN}: Munger: {asked}", "en", asked)
    assert first_line(verdict) == f"{VERDICT_FORM_EN}: (no option named)"
    long_lead = f"{VERDICT_FORM_EN}: after weighing every speech on whether {asked.lower()} bootstrap."
    assert enforce_verdict_form(long_lead, "en", asked)[0] == long_lead


def test_a_speech_tag_before_the_verdicts_line_goes_too():
    """The bundled model's Chinese verdict (a moderated run, 2026-12-05): a copied speech with its
    material tag, then the form further down; the tag above the form stayed, the one below went."""
    copied, later = "【查理·芒格·第1轮】在创业之初，选择融资。", "【史蒂夫·乔布斯·第1轮】先做产品。"
    text = f"{copied}\n\n因此，{VERDICT_FORM}：滚雪球。\n\n{later}"
    verdict, fixes = enforce_verdict_form(text, "zh", "第一次创业，应该融资还是自己滚雪球？")
    assert first_line(verdict) == f"{VERDICT_FORM}：滚雪球。"
    assert "【" not in verdict and "在创业之初，选择融资。" in verdict and "先做产品。" in verdict, verdict
