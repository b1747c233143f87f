"""Moderated debate on the in-process fake, scripted by turn key: manifests, aborts, speaking order
per mode, the character limit, anti-pattern flags, the fixed verdict form, the budget and the
recommender."""

from __future__ import annotations

import re

from debates.engine import events as ev
from debates.engine.moderated import VERDICT_FORM, _framed_as, enforce_verdict_form, recommend, screen_seats
from debates.engine.spec import SeatSpec
from debates.engine.text import CUT_MARK
from testkit.fake_llm import FakeLLM

from .conftest import (
    CONFUCIUS,
    JOBS,
    MODERATOR,
    MUNGER,
    SOCRATES,
    debate,
    manifest,
    moderated_spec,
    unscripted,
)

CHAIR = "主持人"
NAME = {p.slug: p.name for p in (JOBS, MUNGER, CONFUCIUS, SOCRATES)}
FILLER = {
    1: "开篇先讲清楚边界条件与目标客户是谁，再谈资源怎么分配。",
    2: "回到对方提到的现金流压力，销售回款周期决定了能活多久。",
    3: "最后总结：两件事要交替推进，但第一步取决于是否已有付费意愿的证据。",
}
GOOD_VERDICT = f"{VERDICT_FORM}：先用最小产品验证付费意愿。\n## 各方要点\n- 甲方重产品，乙方重现金流。\n## 理由\n省。"


def slug_and_round(key: str) -> tuple[str, int]:
    """`speech:2:steve-jobs:2` (round 2, his second speech) → ("steve-jobs", 2)."""
    _, n, slug, _count = key.split(":")[:4]  # a speech asked for again ends in ":again"
    return slug, int(n)


def round_of(user: str) -> int:
    """The round a speech's prompt says it is in."""
    return int(re.search(r"（第 (\d+)/\d+ 轮）", user).group(1))


def mod_fake(speech=None, verdict=GOOD_VERDICT) -> FakeLLM:
    """`speech(call, slug, round)` may return a text; else a distinct default per speaker and round."""

    def say(call):
        slug, n = slug_and_round(call.key)
        text = speech(call, slug, n) if speech else None
        return text or f"MARK-{slug}-{n} {NAME.get(slug, slug)}：{FILLER[min(n, 3)]}"

    return FakeLLM(default=unscripted).reply("moderator:verdict", verdict).reply("speech:*", say)


def speech_calls(run):
    return run.calls_for("speech:*")


def order(run) -> list[str]:
    return [slug_and_round(c.key)[0] for c in speech_calls(run)]


# -- manifests and aborts -------------------------------------------------------------------------


def test_screening_the_seats_drops_incomplete_personas_and_warns_low_density():
    seats = [
        SeatSpec(JOBS),
        SeatSpec(manifest("no-schema", "缺类型", schema="")),
        SeatSpec(manifest("no-density", "缺密度", density=None)),
        SeatSpec(manifest("no-description", "缺描述", description="")),
        SeatSpec(manifest("thin", "庄子", density=4.5)),
        SeatSpec(manifest("unknown", "未评分", density=-1)),
        SeatSpec(manifest("zero", "零分", density=0)),
        SeatSpec(manifest("six", "六分", density=6.0)),
        SeatSpec(manifest("negative", "负五", density=-5)),
    ]
    kept, dropped, warnings = screen_seats(seats)

    assert [s.persona.slug for s in kept] == ["steve-jobs", "thin", "unknown", "zero", "six", "negative"]
    assert dropped == [
        "no-schema: missing schema_type",
        "no-density: missing density_score",
        "no-description: missing description",
    ]
    assert warnings == [
        "庄子: low-density persona (density 4.5)",
        "未评分: low-density persona (density -1)",
        "零分: low-density persona (density 0)",
    ]


async def test_dropped_personas_never_speak_and_warnings_are_emitted():
    seats = [
        SeatSpec(JOBS),
        SeatSpec(MUNGER),
        SeatSpec(manifest("no-schema", "缺类型者", schema="")),
        SeatSpec(manifest("thin", "低密度者", density=3)),
    ]
    run = await debate(moderated_spec(seats=seats, rounds=1), mod_fake())

    assert run.outcome == "done"
    assert run.data["participants"] == ["steve-jobs", "charlie-munger", "thin"]
    assert run.warning_codes.count("manifest_dropped") == 1 and "no-schema" in run.warning("manifest_dropped").text
    assert run.warning("low_density").text == "低密度者: low-density persona (density 3)"
    assert order(run) == ["steve-jobs", "charlie-munger", "thin"]
    assert [c.speaker for c in speech_calls(run)] == ["史蒂夫·乔布斯", "查理·芒格", "低密度者"]


async def test_fewer_than_two_participants_after_validation_aborts():
    seats = [SeatSpec(JOBS), SeatSpec(manifest("no-density", "缺密度", density=None))]
    run = await debate(moderated_spec(seats=seats), mod_fake())

    assert run.outcome == "refused"
    assert run.calls == []
    assert "a moderated debate needs 2" in run.finished.reason
    assert "manifest_dropped" in run.warning_codes


async def test_position_based_needs_an_against_side():
    seats = [SeatSpec(JOBS, position="for"), SeatSpec(MUNGER, position="for"), SeatSpec(CONFUCIUS)]
    run = await debate(moderated_spec(seats=seats, mode="position-based"), mod_fake())
    assert run.outcome == "refused" and run.calls == []
    assert "one persona for and one against" in run.finished.reason


# -- speaking order -------------------------------------------------------------------------------


async def test_round_robin_order_and_context():
    run = await debate(moderated_spec(rounds=2), mod_fake())

    assert run.outcome == "done"
    assert run.keys == [
        *(f"speech:1:{slug}:1" for slug in ("steve-jobs", "charlie-munger", "confucius")),
        *(f"speech:2:{slug}:2" for slug in ("steve-jobs", "charlie-munger", "confucius")),
        "moderator:verdict",
    ]
    # the key names the turn: that persona speaks, told which round it is in
    assert [c.speaker for c in speech_calls(run)] == ["史蒂夫·乔布斯", "查理·芒格", "孔子"] * 2
    assert [round_of(c.user) for c in speech_calls(run)] == [1, 1, 1, 2, 2, 2]
    first, second = speech_calls(run)[:2]
    assert "（你是第一位发言者。）" in first.user
    assert "史蒂夫·乔布斯：MARK-steve-jobs-1" in second.user  # earlier speeches as context
    assert "当前模式：round-robin" in first.user and "最大字数：600" in first.user
    assert run.calls[-1].speaker == CHAIR
    assert run.data["speech_counts"] == {"steve-jobs": 2, "charlie-munger": 2, "confucius": 2}


async def test_position_based_alternates_for_and_against():
    seats = [
        SeatSpec(JOBS, position="for"),
        SeatSpec(MUNGER, position="against"),
        SeatSpec(CONFUCIUS, position="for"),
    ]
    run = await debate(moderated_spec(seats=seats, mode="position-based", rounds=1), mod_fake())

    assert order(run) == ["steve-jobs", "charlie-munger", "confucius"]
    positions = [re.search(r"你被分派的立场：(\S+?)（", c.user).group(1) for c in speech_calls(run)]
    assert positions == ["支持", "反对", "支持"]


async def test_free_form_keeps_speech_counts_within_one():
    seats = [SeatSpec(p) for p in (JOBS, MUNGER, CONFUCIUS, SOCRATES)]

    def speech(call, slug, n):  # everybody keeps inviting 孔子: he must not get extra turns
        return f"MARK-{call.key} {NAME[slug]}：我想听听孔子怎么看。{FILLER[min(n, 3)]}"

    run = await debate(moderated_spec(seats=seats, mode="free-form", rounds=3), mod_fake(speech))

    sequence = order(run)
    assert len(sequence) == 12
    assert sequence[:2] == ["steve-jobs", "confucius"]  # the named speaker gets the floor among equals
    counts = dict.fromkeys(NAME, 0)
    for slug in sequence:
        counts[slug] += 1
        assert max(counts.values()) - min(counts.values()) <= 1, sequence
    assert run.data["speech_counts"] == dict.fromkeys(["steve-jobs", "charlie-munger", "confucius", "socrates"], 3)


# -- limits and flags -----------------------------------------------------------------------------


async def test_speech_over_the_character_limit_is_cut_and_marked():
    long = FILLER[1] + FILLER[2] + FILLER[3] + "TAIL-MARKER"  # not a loop: the repetition cut leaves it

    def speech(call, slug, n):
        return long if slug == "steve-jobs" else f"{NAME[slug]}：先卖再做。"

    run = await debate(moderated_spec(rounds=1, max_chars=40), mod_fake(speech))

    jobs = run.turns()["speech:1:steve-jobs:1"]
    assert jobs.text == long[:40] + CUT_MARK["zh"]
    assert jobs.data == {"cut": True, "position": ""}
    assert run.turns()["speech:1:charlie-munger:1"].data["cut"] is False
    assert "speech_cut" in run.warning_codes and "40" in run.warning("speech_cut").text
    munger = run.call("speech:1:charlie-munger:1")
    assert long[:40] + CUT_MARK["zh"] in munger.user and "TAIL-MARKER" not in munger.text
    assert "最大字数：40" in munger.user


async def test_a_speech_that_says_nothing_is_asked_for_again_once():
    """The bundled model gave Charlie Munger's whole opening as "No." (3 tokens): the moderator asks
    once more, showing the reply and the limit; the second reply is the speech (the first is folded
    under it), the next speaker reads that one. A terse real speech is not asked again."""

    def speech(call, slug, n):
        if slug == "charlie-munger":
            return "No." if not call.key.endswith(":again") else f"{NAME[slug]}：反过来想，先找出会让公司死掉的事。"
        return f"{NAME[slug]}：先卖再做，用回款养产品。"  # short, but a speech

    run = await debate(moderated_spec(rounds=1, max_chars=300), mod_fake(speech))

    assert run.outcome == "done"
    turns = run.turns()
    assert turns["speech:1:charlie-munger:1"].text == "No."
    again = turns["speech:1:charlie-munger:1:again"]
    assert again.text.startswith("反过来想")
    asked = run.call("speech:1:charlie-munger:1:again")
    assert asked.messages[-2] == {"role": "assistant", "content": "No."}
    assert "只有“No.”" in asked.messages[-1]["content"] and "不超过 300 字" in asked.messages[-1]["content"]
    assert "“No.”" in str(run.warning("speech_empty").text) and run.warning_codes.count("speech_empty") == 1
    assert [k for k in turns if k.endswith(":again")] == ["speech:1:charlie-munger:1:again"]  # nobody else
    later = [c for c in speech_calls(run) if "charlie-munger" not in c.key]
    assert any("反过来想" in c.user for c in later[1:] + run.calls_for("moderator:*")), "the second reply is read"
    assert not any("No." in c.user for c in run.calls_for("moderator:*"))


async def test_a_speech_that_opens_with_its_speakers_own_name_as_a_label_is_kept_without_it():
    """The bundled model wrote "Charlie Munger: …" / "Steve Jobs: Hi everyone!" (the context gives
    earlier speeches as "Name: speech"): the label is not the speech, its summary or its length."""
    body = "反过来想：小公司最常见的死因是现金流断裂，不是产品不够好，所以先卖。"  # 35 characters

    def speech(call, slug, n):
        return f"**{NAME[slug]}：** {body}" if slug == "charlie-munger" else f"【{NAME[slug]}】{body}"

    run = await debate(moderated_spec(rounds=1, max_chars=len(body)), mod_fake(speech))

    for key, turn in run.turns().items():
        if key.startswith("speech:"):
            assert turn.text == body and turn.data["cut"] is False, (key, turn.text)
            assert NAME[key.split(":")[2]] not in turn.summary
    assert "speech_cut" not in run.warning_codes


async def test_anti_pattern_flags():
    said = {
        ("steve-jobs", 1): "MARK 产品是一切的起点，先做出让人尖叫的东西，再考虑怎么卖。" * 2,
        ("charlie-munger", 1): "反过来想：如果一家小公司死了，最可能的死因是现金流断裂，而不是产品不够好。" * 2,
        ("confucius", 1): "作为一个AI语言模型，我无法给出个人意见，但可以列出几个考虑因素。",
        ("steve-jobs", 2): "我同意。",
        ("confucius", 2): "史蒂夫·乔布斯说：“产品必须免费送给所有人”，这显然违背了名实相副的道理，先正名再做事。",
    }
    said[("charlie-munger", 2)] = said[("charlie-munger", 1)]  # word for word again

    run = await debate(moderated_spec(rounds=2), mod_fake(lambda call, slug, n: said[(slug, n)]))

    assert sorted((f["speaker"], f["flag"], f["turn"]) for f in run.data["flags"]) == [
        ("charlie-munger", "repetition", "speech:2:charlie-munger:2"),
        ("confucius", "persona drift", "speech:1:confucius:1"),
        ("confucius", "straw man", "speech:2:confucius:2"),
        # "我同意。" is no speech either: asked again once, the same reply is kept and flagged.
        ("steve-jobs", "empty agreement", "speech:2:steve-jobs:2:again"),
    ]
    assert run.warning_codes.count("anti_pattern") == 4 and run.warning_codes.count("speech_empty") == 1


async def test_a_speech_wrapped_in_its_speakers_own_name_is_flagged_as_meta_framing():
    """The seed's prompt asks for the speech only, without "作为 X 我会说"; the bundled model opened
    with "…from Steve Jobs' perspective" in his seat. Naming oneself that way is flagged; naming
    another speaker is not (that is drift or a quotation, flagged as such)."""
    said = {
        "steve-jobs": "作为史蒂夫·乔布斯，我会说：先做出让人尖叫的产品，销售自然会跟上来。",
        "charlie-munger": "站在查理·芒格的立场上：反过来想，先问什么会让一家小公司死掉，再避开它。",
        "confucius": "乔布斯重产品，芒格重现金流；名不正则言不顺，先说清楚卖的是什么。",
    }

    run = await debate(moderated_spec(rounds=1), mod_fake(lambda call, slug, n: said[slug]))

    flagged = sorted((f["speaker"], f["flag"]) for f in run.data["flags"])
    assert flagged == [("charlie-munger", "meta framing"), ("steve-jobs", "meta framing")]
    assert run.warning_codes.count("anti_pattern") == 2
    # The English wrappers the bundled model wrote, and what is not one.
    assert _framed_as("Absolutely, let's dive into this debate from Steve Jobs’ perspective.", "Steve Jobs")
    assert _framed_as("Sure, I'll speak from my position as Steve Jobs, making my core view", "Steve Jobs")
    assert not _framed_as("Steve Jobs built Apple on taste; products come first.", "Steve Jobs")


async def test_a_speech_that_copies_anothers_is_flagged_as_repetition():
    """Seen with the bundled model: the round's second speaker wrote the first one's speech again."""
    first = "反过来想：如果一家小公司死了，最可能的死因是现金流断裂，而不是产品不够好。" * 2
    said = {"charlie-munger": first, "steve-jobs": first, "confucius": "名不正则言不顺：先说清楚卖的是什么。"}

    run = await debate(moderated_spec(rounds=1), mod_fake(lambda call, slug, n: said[slug]))

    order = [key.split(":")[2] for key in run.keys if key.startswith("speech:")]
    later = max(("charlie-munger", "steve-jobs"), key=order.index)  # the one who spoke it second
    assert [(f["speaker"], f["flag"]) for f in run.data["flags"]] == [(later, "repetition")]
    assert run.warning_codes.count("anti_pattern") == 1


async def test_a_speech_that_copies_the_first_paragraph_of_anothers_is_flagged_as_repetition():
    """Debate 81 (the bundled model, 小公司应该先做产品还是先做销售？): the second speaker gave the
    first one's opening paragraph word for word and no more, not similar enough to the whole to be
    flagged."""
    opening = (
        "在当今，小公司应该优先进行产品开发，而不是销售。产品开发可以提供企业快速盈利的机会，同时也可以建立竞争优势。"
    )
    second = (
        "产品开发和销售是两个不同阶段，需要企业根据自己的资源和目标来决定优先进行哪一个阶段，"
        "不能一概而论，更不能照搬大公司的做法。"
    )
    said = {
        "steve-jobs": f"{opening}\n\n{second}\n\n{second}",
        "charlie-munger": opening,
        "confucius": "名不正则言不顺：先说清楚卖的是什么。",
    }

    run = await debate(moderated_spec(rounds=1), mod_fake(lambda call, slug, n: said[slug]))

    order = [key.split(":")[2] for key in run.keys if key.startswith("speech:")]
    assert order.index("steve-jobs") < order.index("charlie-munger")
    assert [(f["speaker"], f["flag"]) for f in run.data["flags"]] == [("charlie-munger", "repetition")]


async def test_a_verdict_that_opens_with_the_prompts_heading_is_the_verdict_without_it():
    """The bundled model opened its verdict with "## 输出格式" (the prompt's heading); a stop on it
    used to end the reply empty there, and the debate failed after three empty retries."""
    run = await debate(moderated_spec(rounds=1), mod_fake(verdict="## 输出格式\n" + GOOD_VERDICT))
    turn = run.turns()["moderator:verdict"]
    assert turn.text.startswith(f"{VERDICT_FORM}：") and "输出格式" not in turn.text
    assert run.data["verdict_fixes"] == []


async def test_verdict_is_forced_into_the_fixed_form():
    run = await debate(moderated_spec(rounds=1), mod_fake(verdict="我认为应该选先做产品，理由是验证成本低。"))

    verdict = run.data["verdict"]
    assert verdict.startswith(f"{VERDICT_FORM}：")
    assert "我认为" not in verdict and "应该选" not in verdict
    assert run.data["verdict_fixes"] == ["removed '我认为'", "removed '应该选'", "verdict form added"]
    assert verdict in run.report.verdict_markdown
    # the verdict turn (the transcript's, the page's) is that verdict too, its fixed line first
    turn = run.turns()["moderator:verdict"]
    assert turn.text == verdict and turn.data["verdict_fixes"] == run.data["verdict_fixes"]
    assert verdict in run.report.transcript_markdown and "我认为应该选" not in run.report.transcript_markdown


async def test_a_verdict_already_in_the_fixed_form_is_left_alone():
    run = await debate(moderated_spec(rounds=1), mod_fake())
    assert run.data["verdict"] == GOOD_VERDICT and run.data["verdict_fixes"] == []
    chair = run.call("moderator:verdict")
    assert run.calls[-1] is chair and chair.speaker == CHAIR and VERDICT_FORM in chair.user
    assert all(f"MARK-{s}-1" in chair.user for s in ("steve-jobs", "charlie-munger", "confucius"))


def test_enforce_verdict_form_on_empty_text():
    assert enforce_verdict_form("") == (f"{VERDICT_FORM}：（无足够发言）", ["verdict form added"])


async def test_a_budget_too_small_for_one_speech_and_the_synthesis_refuses_before_any_call():
    run = await debate(moderated_spec(rounds=2, token_budget=1), mod_fake())

    assert run.outcome == "refused" and run.calls == []
    assert "cannot pay for one speech and the moderator's synthesis" in run.finished.reason


# -- recommender ----------------------------------------------------------------------------------


def test_recommender_ignores_scores_under_one_half():
    pool = [
        JOBS,  # 产品 + 设计: overlap 1.0 → 0.7 + 0.3 × 0.8
        MUNGER,  # no keyword: 0.3 × 0.9 = 0.27 → ignored
        manifest("half", "刚好一半", density=5.0, keywords=("产品", "别的")),  # 0.35 + 0.15 = 0.5 → kept
        manifest("almost", "差一点", density=4.0, keywords=("设计", "别的")),  # 0.35 + 0.12 = 0.47 → ignored
        MODERATOR,  # not a debater
    ]
    got = recommend("小团队的产品设计该先做什么？", pool)
    assert [(p.slug, s) for p, s in got] == [("steve-jobs", 0.94), ("half", 0.5)]
    assert all(score >= 0.5 for _, score in got)
    assert recommend("小团队的产品设计该先做什么？", pool, threshold=0.9) == [(JOBS, 0.94)]


async def test_moderated_stop_sequences_and_finish_event():
    run = await debate(moderated_spec(rounds=1), mod_fake())
    first = run.call("speech:1:steve-jobs:1")
    # The same stop strings as every format: other speakers' lines, and the prompt's own headings.
    assert first.stop == ["\n查理·芒格：", "\n孔子：", "\n## 输出格式", "\n## 本轮规则"]
    assert run.finished == ev.Finished("done")
