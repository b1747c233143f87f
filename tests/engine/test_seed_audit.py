"""Issue 28's smaller seed rules, each measured against the old behaviour: the panel seats its five
roles (taixu: 五个认知角色; fewer dropped the verifier's R2 searches silently), and a panel speech
that breaks its form (the five parts; R4's two parts, R3-only quotes, no new front) is sent back
once, as the other formats send theirs back."""

from __future__ import annotations

import pytest

from debates.engine import panel
from debates.engine.spec import LibrarySpec

from .conftest import PANEL_ROLES, debate, options, panel_spec
from .test_panel import UNCAPPED, panel_fake

# -- the panel's five roles -------------------------------------------------------------------------


def test_the_panel_refuses_fewer_than_its_five_roles_with_the_reason():
    fmt, library = panel.FORMAT, LibrarySpec()
    for chosen in (PANEL_ROLES[:3], PANEL_ROLES[:4]):
        problems = fmt.check("我们团队是否应该在明年全面转向远程办公？", chosen, options("panel"), library)
        message = problems["personas"].render(lambda s: s)
        assert "five roles" in message and f"you chose {len(chosen)}" in message and "verifier" in message
    assert "personas" not in fmt.check(
        "我们团队是否应该在明年全面转向远程办公？", PANEL_ROLES, options("panel"), library
    )
    assert "personas" not in fmt.check("我们团队是否应该在明年全面转向远程办公？", [], options("panel"), library)


async def test_a_panel_without_its_verifier_is_refused_not_run_without_his_searches():
    no_verifier = [p for p in PANEL_ROLES if p.role != "verifier"]
    run = await debate(panel_spec(roles=no_verifier, token_budget=UNCAPPED), panel_fake())
    assert run.outcome == "refused" and run.calls == []
    assert "five roles" in run.finished.reason and "you chose 4" in run.finished.reason


# -- a speech sent back once ------------------------------------------------------------------------

PARTIAL = "立场：看证据。\n小结：贝叶斯只谈证据。"
WHOLE = "立场：看证据。\n核心论据：\n1. 基率。\n反驳：无\n沉默声明：无\n小结：贝叶斯补全了五要素。"


async def test_a_speech_missing_its_five_parts_is_sent_back_once_with_what_it_lacks():
    fake = panel_fake()
    fake.reply("r1:bayes", PARTIAL)
    fake.reply("r1:bayes:again", WHOLE)
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    again = run.call("r1:bayes:again").user
    assert "缺少：核心论据、反驳、沉默声明" in again and "## 你被退回的上一版\n" + PARTIAL in again
    assert run.turns()["r1:bayes:again"].data["missing_parts"] == []
    assert "贝叶斯补全了五要素" in run.call("r2:osborn").user  # the new version is the one the others read
    assert "sent_back" in run.warning_codes and "sent_back_kept" not in run.warning_codes
    assert run.data["sent_back"] == {"bayes·R1": ["缺少：核心论据、反驳、沉默声明"]}
    assert not run.calls_for("r1:osborn:again")  # a whole speech is not sent back


async def test_a_speech_still_missing_parts_after_the_resend_is_flagged_and_not_sent_again():
    fake = panel_fake(speeches={("bayes", 1): PARTIAL})  # written again the same
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)
    assert len(run.calls_for("r1:bayes*")) == 2
    assert "sent_back_kept" in run.warning_codes and "贝叶斯" in run.warning("sent_back_kept").text


NOTHING_UNDECLARED = "立场：看证据。\n核心论据：\n1. 基率。\n反驳：无\n沉默声明：无\n小结：贝叶斯没有反驳。"
NOTHING_DECLARED = "立场：看证据。\n核心论据：\n1. 基率。\n反驳：无\n沉默声明：本轮沉默\n小结：贝叶斯本轮沉默。"


async def test_a_speech_that_rebuts_nothing_without_declaring_silence_is_sent_back_once():
    """The seed's fourth part: 沉默声明（无反驳则显式沉默）. In R2 a rebuttal of "无" with the
    silence "无" is sent back; written again with the silence declared, the role is silent and
    skipped in R3. In R1 (blind) both are "无" by the round's own rule: nothing is sent back."""
    fake = panel_fake()
    fake.reply("r1:bayes", NOTHING_UNDECLARED)
    fake.reply("r2:bayes", NOTHING_UNDECLARED)
    fake.reply("r2:bayes:again", NOTHING_DECLARED)
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    assert not run.calls_for("r1:bayes:again")
    again = run.call("r2:bayes:again").user
    assert "没有反驳却未声明沉默" in again and "## 你被退回的上一版\n" + NOTHING_UNDECLARED in again
    assert list(run.data["sent_back"]) == ["bayes·R2"]
    assert run.turns()["r2:bayes:again"].data["silent"] is True
    assert not run.calls_for("r3:bayes") and run.calls_for("r3:osborn")  # the silent role is skipped


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_undeclared_silence_is_a_form_problem_in_r2_and_r3_only(lang):
    text = (
        NOTHING_UNDECLARED
        if lang == "zh"
        else "Position: p.\nCore arguments: a.\nRebuttal: none\nSilence: none\nSummary: s."
    )
    _text, data = panel._speech_postprocess(text, lang)
    assert data["silence_undeclared"] is True and data["silent"] is False
    assert [bool(panel.form_problems(data, n, lang)) for n in (1, 2, 3)] == [False, True, True]
    rebutting = text.replace("反驳：无", "反驳：他方低估了成本。").replace("Rebuttal: none", "Rebuttal: costs.")
    assert panel._speech_postprocess(rebutting, lang)[1]["silence_undeclared"] is False


FRONT = (
    "立场：坚持审查。\n核心论据：一条。\n反驳：【引用 奥斯本·R2】“MARK-osborn-R2”这一点站不住。\n"
    "沉默声明：无\n小结：费曼坚持。"
)
BREACH = (
    "检验交锋：【引用 费曼·R3】“这一点站不住”——我补上数据；【引用 黑格尔·R1】“MARK-hegel-R1”也不对。\n"
    "终辩声明：维持发散立场，让步：接受试点。\n小结：奥斯本让一步。"
)
KEPT = "检验交锋：【引用 费曼·R3】“这一点站不住”——我补上数据。\n终辩声明：维持发散立场。\n小结：奥斯本坚持。"


async def test_a_closing_that_breaks_r4s_rules_is_sent_back_once_and_the_new_one_stands():
    fake = panel_fake(speeches={("feynman", 3): FRONT})
    fake.reply("r4:osborn", BREACH)
    fake.reply("r4:osborn:again", KEPT)
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    again = run.call("r4:osborn:again").user
    assert "引用了 R3 以外的发言：黑格尔·R1" in again and "对没有向你开战线的角色开了新战线：黑格尔" in again
    assert "## 你的开放战线" in again  # the fronts are still the material it answers
    # the new version passes: nothing is flagged at the end
    assert not {"r4_form", "r4_other_rounds", "r4_new_front"} & set(run.warning_codes)
    assert run.data["closing_checks"]["osborn"] == {"missing_parts": [], "other_rounds": [], "new_fronts": []}


async def test_a_closing_without_its_two_parts_is_sent_back_then_flagged_if_it_stays():
    fake = panel_fake(speeches={("feynman", 3): FRONT, ("osborn", 4): "立场：不变。\n小结：不变。"})
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)
    assert "缺少：检验交锋、终辩声明" in run.call("r4:osborn:again").user
    assert "r4_form" in run.warning_codes  # still lacking after the resend: flagged, as before


def test_the_parts_missing_are_named_in_the_debates_language_and_read_in_either():
    english = "Position: hold.\nCore arguments: 1. a.\nSummary: s."
    assert panel.missing_parts(english, "en") == ["Rebuttal", "Silence"]
    assert panel.missing_parts(english, "zh") == ["反驳", "沉默声明"]
    assert panel.missing_parts("立场：a\n论据：\n1. b\n反驳：无\n沉默声明：无\n小结：c", "zh") == []


# -- the duel's seed topics in a user's English words ------------------------------------------------

# How a user writes each of the seed table's topics in English (not the rules' own words).
ENGLISH_TOPICS = [
    ("Should I chant the Buddha's name or practise Chan meditation?", {"huineng", "yinguang"}),
    ("Pure Land or Zen: which suits a busy lay person?", {"huineng", "yinguang"}),
    # in everyday words, without the schools' names (refused before: no rule held them)
    ("Should a beginner start with sitting meditation or chanting?", {"huineng", "yinguang"}),
    ("With only twenty minutes a day, should I meditate or chant?", {"huineng", "yinguang"}),
    (
        "When distracting thoughts arise in meditation, should I watch them or turn to chanting Amitabha?",
        {"huineng", "yinguang"},
    ),
    ("Madhyamaka versus Yogacara: is the mind ultimately real?", {"kumarajiva", "xuanzang"}),
    ("Does the Middle Way school or the Mind-Only school read emptiness better?", {"kumarajiva", "xuanzang"}),
    ("Is enlightenment sudden or gradual?", {"huineng", "zhiyi"}),
    ("Sudden enlightenment or step-by-step practice?", {"huineng", "zhiyi"}),
    ("Does the Prasangika view undercut Chan's direct pointing at the mind?", {"tsongkhapa", "huineng"}),
    ("Is strict monastic discipline or insight meditation the better path?", {"ajahn-chah", "mahasi-sayadaw"}),
    ("Precepts first, or insight meditation first?", {"ajahn-chah", "mahasi-sayadaw"}),
    ("Do the three scopes of the Lamrim conflict with seeing one's own nature?", {"atisha", "huineng"}),
    (
        "The graded path of the three kinds of persons versus seeing your true nature: which comes first?",
        {"atisha", "huineng"},
    ),
    ("Study Tiantai doctrine but practise Pure Land: does that hold together?", {"ouyi", "yinguang"}),
    ("Tiantai teaching or Pure Land practice for a modern Buddhist?", {"ouyi", "yinguang"}),
    (
        "Is the Tiantai system of doctrine and contemplation compatible with Tsongkhapa's Middle Way?",
        {"ouyi", "tsongkhapa"},
    ),
]


# The benchmark's Chinese practice questions for the duel (bench/questions/decisions.jsonl), two of
# them refused before: 《阿弥陀经》 named no master's word, 持戒 was the English rule's "precepts" only.
CHINESE_PRACTICE = [
    ("初学者应该先读《坛经》还是先读《阿弥陀经》？", {"huineng", "yinguang"}),
    ("修行应当先持戒还是先修定？", {"ajahn-chah", "mahasi-sayadaw"}),
    ("在家人每天只有二十分钟，应当用来打坐还是念佛？", {"huineng", "yinguang"}),
    ("内观与止禅，初学者应当先学哪一种？", {"ajahn-chah", "mahasi-sayadaw"}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("question", "pair"), ENGLISH_TOPICS + CHINESE_PRACTICE)
def test_questions_in_a_users_words_pair_the_masters_the_seed_would(libraries, question, pair):
    from debates.engine import duel, registry
    from debates.specs import library_spec

    library = library_spec(registry.get("duel"))
    pairing = duel.choose_pair(question, [], library.pairing_rules, library.pool)
    assert {pairing.a.slug, pairing.b.slug} == pair, (question, pairing.how)


@pytest.mark.django_db
def test_a_master_arguing_the_others_practice_in_everyday_words_has_lost_his_side(libraries):
    """The bundled model's Huineng on "Should a beginner start with sitting meditation or chanting?"
    (debate 74): "I believe that beginners should start with chanting, not sitting meditation." was
    not sent back: the library's sides named the schools, not the practices in everyday words."""
    from debates.engine import duel, registry
    from debates.specs import library_spec

    pool = {p.slug: p for p in library_spec(registry.get("duel")).pool}
    huineng, yinguang = pool["huineng"], pool["yinguang"]
    flipped = "As Huineng, I believe that beginners should start with chanting, not sitting meditation."
    assert duel.speaks_for(flipped, yinguang, huineng)
    # "should start with" is a verdict: both practices named, the one to start with is the side argued
    both = "As Huineng, sitting meditation matters, but a beginner should start with chanting."
    assert duel.speaks_for(both, yinguang, huineng)
    assert not duel.speaks_for(
        "As Huineng, beginners should start with sitting meditation, not chanting.", yinguang, huineng
    )
    assert not duel.speaks_for("As Yinguang, a beginner should start with chanting.", huineng, yinguang)
    # in Chinese: 马哈希 arguing 先持戒 (debate 76) argues the precepts side, 阿姜查's
    chah, mahasi = pool["ajahn-chah"], pool["mahasi-sayadaw"]
    assert duel.speaks_for("作为马哈希尊者，我始终认为，修行应该先持戒。", chah, mahasi)
    assert not duel.speaks_for("作为马哈希尊者，我认为应当先禅修，持戒随之。", chah, mahasi)
    # "Chan" is Huineng's word, not part of Yinguang's "chant"
    assert duel.speaks_for("As Yinguang, Chan is the more direct way.", huineng, yinguang)
