"""How a formed turn reads (issue 27.4), in the Markdown the engine and the exports render: an attempt
sent back and written again is folded under its replacement, marked as discarded; no grammar label
starts a speech; each summary is printed once; a summary ends on a sentence."""

from __future__ import annotations

import pytest

from debates.engine.reading import fold_rewrites, replaced_key, shown_speech
from debates.engine.text import CAPPED_MARK, CUT_MARK, REPEATED_MARK, summary_of, whole_sentences
from testkit.fake_llm import FakeLLM

from .conftest import HUINENG, YINGUANG, debate, duel_spec, options

FLIPPED = "正文：我完全同意印光大师的观点，念佛最稳妥。\n立场变化：转向\n小结：念佛往生净土才是现代人最稳妥的路。"
CLOSE = "双方主张：各有所重。\n分歧所在：下手处。\n可互相参照之处：都重当下。\n小结：两家各有所重。"
OWN = "正文：作为慧能大师，直指人心，见性成佛。\n立场变化：转向，吸收了持名的恒常\n小结：参禅顿悟自性，不假外求。"


async def side_lost_run():
    fake = FakeLLM()
    fake.reply("duel:1:huineng", FLIPPED)
    fake.reply("duel:1:huineng:again", OWN)
    fake.reply("duel:1:yinguang", "正文：老实念佛。\n立场变化：无\n小结：信愿持名，带业往生。")
    fake.reply("duel:close", CLOSE)
    return await debate(duel_spec(seats=[HUINENG, YINGUANG], options=options("duel", rounds=1)), fake)


async def test_a_side_lost_attempt_is_folded_under_its_rewrite_and_marked_discarded():
    run = await side_lost_run()
    transcript = run.report.transcript_markdown
    assert run.keys[:2] == ["duel:1:huineng", "duel:1:huineng:again"]
    # one speech of Huineng in round 1, not two
    assert transcript.count("### Duel round · R1 · 慧能大师") == 1
    speech = transcript.split("### Duel round · R1 · 慧能大师", 1)[1].split("\n### ", 1)[0]
    shown, folded = speech.split("*Discarded attempt, written again (not part of the debate)*:")
    assert "直指人心" in shown and "我完全同意" not in shown
    assert "> 我完全同意印光大师的观点" in folded  # quoted, under the speech that replaced it
    assert transcript.index("直指人心") < transcript.index("我完全同意")


async def test_no_grammar_label_starts_a_speech_and_each_summary_is_printed_once():
    run = await side_lost_run()
    transcript = run.report.transcript_markdown
    assert "正文：" not in transcript  # the speech's own label says nothing
    assert transcript.count("参禅顿悟自性，不假外求。") == 1  # once, as the summary, not again in the text
    assert "*Summary*: 参禅顿悟自性，不假外求。" in transcript
    assert "**立场变化**：转向，吸收了持名的恒常" in transcript  # the other parts' labels: small headings
    # the verdict's synthesis keeps its parts, as headings, and its summary (nothing repeats it there)
    assert "**分歧所在**：下手处。" in run.report.verdict_markdown
    assert "**小结**：两家各有所重。" in run.report.verdict_markdown


def test_shown_speech_reads_both_languages_labels_and_keeps_text_without_labels():
    english = "Speech: As Huineng, look within.\nPosition change: none\nSummary: In Huineng's view, look within."
    assert shown_speech(english, ["Speech", "Position change", "Summary"], summary="x") == (
        "As Huineng, look within.\n**Position change**: none"
    )
    # an English form answered with Chinese labels (a model may): read all the same
    assert shown_speech("正文：直指人心。\n小结：见性。", ["Speech", "Summary"], summary="见性。") == "直指人心。"
    assert shown_speech("只是一段话。\n第二行。", None, summary="只是一段话。") == "只是一段话。\n第二行。"


ASKED = "参禅与念佛，哪一条路更适合今天的在家人？"


def test_a_first_line_that_only_says_the_question_again_is_not_shown():
    """The bundled model opened speeches with the question, in both languages: not the speech."""
    assert shown_speech(f"{ASKED}\n\n念佛更稳妥。", None, question=ASKED) == "念佛更稳妥。"
    english = "Should I learn Rust or Go next?"
    assert shown_speech(f"**{english}**\nGo: it ships sooner.", None, question=english) == "Go: it ships sooner."
    # most of it, as small models shorten it, is still the question
    assert shown_speech("参禅与念佛，哪一条路更适合今天的在家人\n念佛。", None, question=ASKED) == "念佛。"
    # a first line that answers, a question later in the speech, or a speech that is only the question: kept
    answered = "参禅与念佛，哪一条路更适合今天的在家人？念佛，因为它不挑根器。\n其次……"
    assert shown_speech(answered, None, question=ASKED) == answered
    later = f"念佛更稳妥。\n{ASKED}"
    assert shown_speech(later, None, question=ASKED) == later
    assert shown_speech(ASKED, None, question=ASKED) == ASKED
    assert shown_speech(f"{ASKED}\n念佛。", None) == f"{ASKED}\n念佛。"  # no question given: as written


def test_a_first_line_that_answers_a_yes_no_question_in_its_words_is_the_answer_not_the_question():
    """The bundled model's panel position (debate 42): "We should rewrite our monolith as
    microservices." was hidden as the question again, its characters that close to the question's."""
    from debates.engine.text import restates

    asked = "Should we rewrite our monolith as microservices?"
    position = "Position: We should rewrite our monolith as microservices.\nCore arguments: They scale."
    labels = ["Position", "Core arguments"]
    assert "We should rewrite" in shown_speech(position, labels, question=asked)
    assert not restates("We shouldn't rewrite our monolith as microservices.", asked)
    assert not restates("Enlightenment is sudden.", "Is enlightenment sudden?")
    assert restates("Should we rewrite our monolith as microservices", asked)  # no mark, still asked
    assert restates("So: should we rewrite our monolith as microservices?", asked)
    assert restates("Whether we should rewrite our monolith as microservices.", asked)  # asked indirectly
    zh = "我们公司要不要取消年终绩效考核？"
    assert not restates("我们公司要取消年终绩效考核。", zh)
    assert restates("我们公司要不要取消年终绩效考核", zh)
    assert not restates("我们应该重写成微服务。", "我们应该重写成微服务吗？")
    assert restates("我们应该重写成微服务吗", "我们应该重写成微服务吗？")


def test_a_speakers_own_name_as_a_label_goes_and_a_name_in_a_sentence_stays():
    from debates.engine.text import without_own_name

    names = ("查理·芒格", "Charlie Munger")
    assert without_own_name("Charlie Munger: As a lawyer, I invert.", names) == "As a lawyer, I invert."
    assert without_own_name("**查理·芒格：** 反过来想。", names) == "反过来想。"
    assert without_own_name("[Charlie Munger] Invert.", names) == "Invert."
    assert without_own_name("**Charlie Munger**\n\nInvert, always invert.", names) == "Invert, always invert."
    # the bundled model's English moderated speech opened with its speaker as a heading
    assert without_own_name("## Charlie Munger\n\nInvert, always invert.", names) == "Invert, always invert."
    assert without_own_name("### Opening\n## 查理·芒格\n反过来想。", names) == "### Opening\n反过来想。"
    assert without_own_name("## Charlie Munger's view\nInvert.", names) == "## Charlie Munger's view\nInvert."
    # behind an opening interjection (the bundled model's English Jobs, debate 48: "Certainly! Steve Jobs: As…")
    jobs = ("Steve Jobs", "史蒂夫·乔布斯")
    assert (
        without_own_name("Certainly! Steve Jobs: As a founder, I build.", jobs) == "Certainly! As a founder, I build."
    )
    assert without_own_name("当然！史蒂夫·乔布斯：先做产品。", jobs) == "当然！先做产品。"
    assert without_own_name("Certainly! Steve Jobs once said so.", jobs) == "Certainly! Steve Jobs once said so."
    for kept in ("Charlie Munger once said: invert.", "Charlie Munger:", "Steve Jobs: Hi.", "反过来想。"):
        assert without_own_name(kept, names) == kept
    # after a heading it opened with (the round's name), the heading kept
    opened = "#### Opening statements\n**Charlie Munger:** Today I invert."
    assert without_own_name(opened, names) == "#### Opening statements\nToday I invert."


def test_the_prompts_own_headings_copied_at_a_replys_start_go_and_stops_fire_only_after_a_line_break():
    from debates.engine.prompts import stop_before, without_echoed_headings

    assert without_echoed_headings("## 输出格式\n若被迫选，……：先还房贷。") == "若被迫选，……：先还房贷。"
    assert without_echoed_headings("## 议题\n## Question:\n正文。") == "正文。"
    for kept in ("## Key points\n- a", "## 输出格式", "Speech.\n## 输出格式"):
        assert without_echoed_headings(kept) == kept
    # after a first line that only says the question again (the bundled model's moderated speech)
    asked = "小公司应该先做产品还是先做销售？"
    echoed = f"{asked}\n\n## 领域适配\n我关注产品的设计。"
    assert without_echoed_headings(echoed, asked) == f"{asked}\n我关注产品的设计。"
    assert without_echoed_headings(echoed) == echoed  # without the question: its line is the speech's
    assert without_echoed_headings("先做产品。\n## 领域适配\n其次。", asked) == "先做产品。\n## 领域适配\n其次。"
    # A stop that matched a reply's very start returned it empty (llama.cpp, every retry alike):
    # the echo stops need the line break before them.
    for lang in ("zh", "en"):
        assert all(stop.startswith("\n") for stop in stop_before(["A", "B"], lang))


def test_a_length_instruction_copied_from_the_prompt_goes():
    """The bundled model's Yinguang (debate 75) ended its speech with a paraphrased label and the
    prompt's length instruction, and a placeholder under it, which the transcript showed."""
    from debates.engine.prompts import without_length_hints

    copied = (
        "Chanting is the better start.\n\nSummary of the question in my frame (at most 160 characters)\nI…\n"
        "Position change: none"
    )
    assert without_length_hints(copied) == "Chanting is the better start.\n\nPosition change: none"
    assert without_length_hints("正文。\n小结：…（不超过 80 字）\n立场变化：无") == "正文。\n立场变化：无"
    # after a sentence, only the instruction goes
    assert without_length_hints("Summary: Chan first. (at most 160 characters)\nnext") == "Summary: Chan first.\nnext"
    assert without_length_hints("小结：先念佛。（不超过80字）") == "小结：先念佛。"
    # the words inside a sentence, or a line below a kept one, stay
    for kept in ("Keep each answer (at most 3 words) short.", "Chan first.\nI…", "A speech."):
        assert without_length_hints(kept) == kept


async def test_the_transcript_leaves_out_a_speechs_echo_of_the_question():
    fake = FakeLLM()
    fake.reply("duel:1:huineng", f"正文：{ASKED}\n直指人心，见性成佛。\n立场变化：无\n小结：参禅见性。")
    fake.reply("duel:1:yinguang", f"{ASKED}\n正文：老实念佛。\n立场变化：无\n小结：信愿持名。")
    fake.reply("duel:close", CLOSE)
    run = await debate(duel_spec(ASKED, seats=[HUINENG, YINGUANG], options=options("duel", rounds=1)), fake)
    transcript = run.report.transcript_markdown
    assert transcript.count(ASKED) == 1, transcript  # the question's own line, no speech's
    assert "直指人心，见性成佛。" in transcript and "老实念佛。" in transcript


async def test_the_transcript_leaves_out_a_copied_length_instruction():
    fake = FakeLLM()
    fake.reply(
        "duel:1:huineng",
        "正文：直指人心，见性成佛。\n本轮立场的一句话概括（不超过 80 字）\n我…\n立场变化：无\n小结：参禅见性。",
    )
    fake.reply("duel:1:yinguang", "正文：老实念佛。\n立场变化：无\n小结：信愿持名。")
    fake.reply("duel:close", CLOSE)
    run = await debate(duel_spec(ASKED, seats=[HUINENG, YINGUANG], options=options("duel", rounds=1)), fake)
    speech = run.turns()["duel:1:huineng"].text
    assert "不超过" not in speech and "我…" not in speech, speech
    assert "直指人心，见性成佛。" in speech and "小结：参禅见性。" in speech


def test_rewrite_keys_fold_in_every_format():
    keys = ["host:admission", "host:admission-again", "duel:1:a", "duel:1:a:again", "duel:1:b"]
    assert replaced_key("host:verdict-again") == "host:verdict" and replaced_key("duel:1:a") is None
    assert fold_rewrites(keys, key=str) == [
        ("host:admission-again", ["host:admission"]),
        ("duel:1:a:again", ["duel:1:a"]),
        ("duel:1:b", []),
    ]
    # a rewrite not started yet: the attempt is still the turn
    assert fold_rewrites(["duel:1:a"], key=str) == [("duel:1:a", [])]


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        # seen: a summary the grammar cut at its length, mid-phrase
        (
            "依慧能大师之见，参禅直指本心，是当下可用的功夫。因此，无论在",
            80,
            "依慧能大师之见，参禅直指本心，是当下可用的功夫。",
        ),  # noqa: E501
        ("依慧能大师之见，参禅直指本心，当下可用，因此，无论在家出家都可以从一念入手而不必等待来世", 40, None),
        ("In Huineng's view, seeing one's nature is the direct way. Therefore, whether at home or in", 90, None),
        ("念佛与参禅", 80, "念佛与参禅"),  # short and whole
        ("参禅顿悟自性，不假外求。", 80, "参禅顿悟自性，不假外求。"),
    ],
)
def test_summaries_end_on_a_sentence(text, limit, expected):
    got = whole_sentences(text, limit)
    assert len(got) <= limit
    if expected is not None:
        assert got == expected
    assert got.endswith(("。", ".", "…")) or got == text, got
    assert not got.endswith(("无论在", "or in"))


def test_a_summary_carries_no_bold_marks():
    """The bundled host's summary read "Bayes**: The core argument…" from a bold-labelled list."""
    text = "#### Highlights\n- **Bayes**: The core argument is its effect on output.\n- **Osborn**: More ideas."
    assert summary_of(text, 80) == "Bayes: The core argument is its effect on output."


def test_a_long_english_summary_is_not_cut_inside_a_word():
    """The bundled model's English panel verdict: its first highlight, 60 characters of it, became
    "Bayes believes that microservices architecture is beneficia…"."""
    verdict = (
        "## Highlights\n1. **Bayes** believes that microservices architecture is beneficial for scalability, "
        "collaboration, security, and data privacy."
    )
    assert summary_of(verdict, 60) == "Bayes believes that microservices architecture is…"
    # Chinese has no spaces to cut at: clipped as before
    chinese = "念佛与参禅都要落在当下的心上而不是在口头上的争论里面反复打转然后还要写很多字"
    assert summary_of(chinese, 20) == chinese[:19] + "…"


def test_a_summary_is_never_just_a_list_number():
    assert summary_of("正文：讲了很多。\n小结：\n1. 念佛是稳妥的路。\n2. 参禅也可。", 80) == "念佛是稳妥的路。"
    assert summary_of("1. 念佛是稳妥的路。2. 参禅", 80) == "念佛是稳妥的路。"
    assert summary_of("1. Chan is direct. 2. Pure Land is safe.", 80) == "Chan is direct."


def test_a_summary_passes_over_an_opening_interjection():
    """The bundled model opened a moderated speech with "Absolutely!", which became its summary."""
    speech = "Absolutely! Remote work is a game-changer for junior engineers. It offers more focus."
    assert summary_of(speech, 120) == "Remote work is a game-changer for junior engineers."
    assert summary_of("当然！远程办公让初级工程师更专注。其次是通勤。", 60) == "远程办公让初级工程师更专注。"
    assert summary_of("Yes. No.", 60) == "Yes."  # nothing longer to take: the first stands
    # the speaker's own summary line is kept as written, however short
    assert summary_of("Speech: a long case for remote work.\nSummary: Absolutely!", 60) == "Absolutely!"


def test_a_summary_passes_over_an_opening_greeting():
    """The bundled model opened an English moderated speech with "Good evening, everyone.": three
    words, so it passed for a sentence that says something, and became the turn's summary."""
    speech = "Good evening, everyone. Bootstrapping keeps control with the founder. Money can wait."
    assert summary_of(speech, 120) == "Bootstrapping keeps control with the founder."
    assert summary_of("各位朋友们，晚上好！先做产品，再找投资。", 60) == "先做产品，再找投资。"
    assert summary_of("女士们，先生们！融资换来的是速度。", 60) == "融资换来的是速度。"
    # nor an interjection with a name after it (the bundled model's Munger)
    assert summary_of("Absolutely, Charlie Munger. Invert the question first.", 80) == "Invert the question first."
    # thanks are no summary either, nor being glad to be there (the bundled model's Jobs)
    assert summary_of("Hi! It's great to be here today. Design decides it.", 60) == "Design decides it."
    assert summary_of("Great. Thank you, Charlie. Bootstrapping keeps control.", 80) == "Bootstrapping keeps control."
    assert summary_of("谢谢主持人！我认为应当先做产品。", 60) == "我认为应当先做产品。"
    # a sentence that only starts like a greeting is one
    assert summary_of("Hello world programs prove nothing about a market. Sell first.", 80) == (
        "Hello world programs prove nothing about a market."
    )


def test_a_summary_prefers_a_sentence_on_the_question_to_a_self_introduction():
    """The bundled model's English moderated speeches (cut at 250 characters, no summary line):
    the summaries were "Good evening, everyone." and "Thank you, Charlie."."""
    question = "Should a first-time founder raise venture money or bootstrap?"
    jobs = (
        "Great. Thank you, Charlie. My name is Steve Jobs and I built Apple twice. As Steve Jobs, I believe "
        "that a first-time founder should never raise venture money, but instead should bootstrap. My reasons"
    )
    assert summary_of(jobs, 160, question) == (
        "As Steve Jobs, I believe that a first-time founder should never raise venture money, but instead "
        "should bootstrap."
    )
    zh = "各位好！我是慧能，来自岭南。依我看，念佛与参禅都要落在当下的心上。"
    assert summary_of(zh, 60, "念佛与参禅，哪条路更适合现代人修行？") == "依我看，念佛与参禅都要落在当下的心上。"
    # nothing on the subject in the first sentences: the first that says something stands
    assert summary_of("Thank you. My name is Charlie Munger. I invert, always invert.", 80, question) == (
        "My name is Charlie Munger."
    )


FOUNDER = "Should a first-time founder raise venture money or bootstrap?"
SENIORS = "Should our startup hire senior engineers or train juniors?"
ZH_PRACTICE = "念佛与参禅，哪条路更适合现代人修行？"
ZH_MONEY = "小公司应该先融资吗？"


@pytest.mark.parametrize(
    ("speech", "limit", "question", "summary"),
    [
        # a sentence that only announces the speech, on the question's words as it is (the bundled
        # model's English moderated speeches); one that goes on past a colon says something
        (
            "So, let's dive into the question of whether a first-time founder should raise venture money or "
            "bootstrap. Bootstrapping keeps the founder honest about customers.",
            160,
            FOUNDER,
            "Bootstrapping keeps the founder honest about customers.",
        ),
        (
            "好，让我们来探讨一下念佛与参禅的问题。念佛不挑根器，最适合现代人。",
            60,
            ZH_PRACTICE,
            "念佛不挑根器，最适合现代人。",
        ),
        (
            "Let's look at the numbers: most venture-backed founders lose control. Bootstrap.",
            160,
            FOUNDER,
            "Let's look at the numbers: most venture-backed founders lose control.",
        ),
        # one that starts like an announcement but makes a claim is a summary (debate 55's Jobs)
        (
            "Sure, Steve Jobs. Let me start by acknowledging that the question at hand is about the value our "
            "startup offers. Our approach is to focus on",
            120,
            SENIORS,
            "Let me start by acknowledging that the question at hand is about the value our startup offers.",
        ),
        # a long self-description before the claim is the persona's prompt copied (debate 48)
        (
            "Certainly! As an Apple co-founder known for product taste, radical simplicity, and end-to-end "
            "control, I firmly believe that a first-time founder should bootstrap. Here’s why:\n1. **Risk",
            100,
            FOUNDER,
            "I firmly believe that a first-time founder should bootstrap.",
        ),
        (
            "作为一位以逆向思维和多元思维模型著称的投资人，我认为应该先自筹资金。其次是控制。",
            60,
            ZH_MONEY,
            "我认为应该先自筹资金。",
        ),
        # the wrapper of the speaker's name round the claim, which the moderated seed forbids (debate 49)
        (
            "As Steve Jobs, I would say: We should hire senior engineers. Senior engineers are more experienced.",
            100,
            SENIORS,
            "We should hire senior engineers.",
        ),
        ("作为乔布斯，我会说：先招资深工程师。其次是培养。", 60, "", "先招资深工程师。"),
        # a sentence that only says what the question is about, and a view named before it is stated
        # (the bundled model's Jobs and Confucius, debate 63)
        (
            "The question is about hiring senior engineers versus training juniors for a startup. I believe the "
            "answer is that we should train juniors.",
            80,
            SENIORS,
            "I believe the answer is that we should train juniors.",
        ),
        ("这个问题是关于小公司先融资还是先自力更生的。我认为应该先自力更生。", 60, ZH_MONEY, "我认为应该先自力更生。"),
        (
            "As a thinker and teacher, my core view on the question is that we should train juniors for our "
            "startup. The reasons for this are as follows.",
            80,
            SENIORS,
            "We should train juniors for our startup.",
        ),
        # ... where it is too long to keep whole, the lead goes, not the claim (debate 69)
        (
            "As a Confucian philosopher, I firmly believe that hiring senior engineers should be our priority. More.",
            80,
            SENIORS,
            "I firmly believe that hiring senior engineers should be our priority.",
        ),
        (
            "As Steve Jobs, my core view on the question of hiring seniors or juniors is unequivocal: I would prefer "
            "senior engineers.",
            80,
            SENIORS,
            "I would prefer senior engineers.",
        ),
        # a heading announced in a sentence is not the claim, and a claim all in bold is not a
        # heading (the bundled model's Jobs, debate 72: "Let me start with this…" before)
        (
            "Certainly, Steve Jobs. Let me start with this: **Hiring Senior Engineers or Training Juniors**\n\n"
            "### Core View\n\n**We should hire senior engineers.**\n\n**Reasons:**\n\n1. **Expertise**: Depth.",
            120,
            SENIORS,
            "We should hire senior engineers.",
        ),
        (
            "好，让我们从这里开始：**融资还是自力更生**\n\n**应该先自力更生。**\n\n**理由：**",
            60,
            ZH_MONEY,
            "应该先自力更生。",
        ),
        # ... but one that makes its claim in bold after the colon is the claim
        (
            "Let me start with this: **we should hire senior engineers.**\nSeniors ship.",
            80,
            SENIORS,
            "Let me start with this: we should hire senior engineers.",
        ),
        # thanks for the chance to speak, however long (debate 80's Jobs)
        (
            "Thank you for the opportunity to share my perspective on this important question. At Apple, "
            "we believe in simplicity.",
            120,
            SENIORS,
            "At Apple, we believe in simplicity.",
        ),
        # a lead of only the name says who holds the claim: kept
        ("作为查理·芒格，我认为应该先自筹资金。", 60, ZH_MONEY, "作为查理·芒格，我认为应该先自筹资金。"),
    ],
)
def test_a_summary_is_the_claim_not_its_announcement_or_wrapper(speech, limit, question, summary):
    assert summary_of(speech, limit, question) == summary


@pytest.mark.parametrize(
    ("speech", "question", "summary"),
    [
        # the words the moderator's cap broke off, never its note: marked with an ellipsis, a Latin
        # word the cut may have split dropped, and within the limit as any summary
        (
            "Certainly! Hiring senior engineers is the key to a product customers love, and we should invest in "
            "custom" + CUT_MARK["en"],
            SENIORS,
            "Hiring senior engineers is the key to a product customers love…",
        ),
        (
            "当然！招聘资深工程师是打造好产品的关键，我们应该投入定制" + CUT_MARK["zh"],
            "",
            "招聘资深工程师是打造好产品的关键，我们应该投入定制…",
        ),
        (
            "Hire seniors: they ship from the first week and teach the engin" + CUT_MARK["en"],
            "",
            "Hire seniors: they ship from the first week and teach the…",
        ),
        # a one-letter end is a word the cut may have split too (debate 55's Confucius)
        (
            "By hiring senior engineers, we can ensure that we have a diverse set of skills a" + CUT_MARK["en"],
            "",
            "By hiring senior engineers, we can ensure that we have a diverse set of skills…",
        ),
        # a reply cut at its ceiling or for repeating itself: its first, whole sentence, as ever
        (
            "Senior engineers pay for themselves. They also mentor the juniors and" + CAPPED_MARK["en"],
            "",
            "Senior engineers pay for themselves.",
        ),
        ("资深工程师值得这个价钱。他们还能带新人，并且" + REPEATED_MARK["zh"], "", "资深工程师值得这个价钱。"),
    ],
)
def test_a_cut_speechs_summary_ends_where_its_words_do(speech, question, summary):
    assert summary_of(speech, 80, question) == summary
