"""Duel (master-debate) on the in-process fake, scripted by turn key: isolation, pairing, rounds,
ammunition, coverage warning, round summaries, early stop and the neutral close."""

from __future__ import annotations

import pytest

from debates.engine import duel
from debates.engine import events as ev
from debates.engine.duel import DISCLAIMER, ONE_SIDED_WARNING, choose_pair, pair_key, resolve_rounds
from debates.engine.spec import CritiqueSpec, PairingRuleSpec
from debates.engine.text import clip
from debates.engine.turns import DebateAborted
from debates.providers.base import ServerError
from testkit.fake_llm import FakeLLM
from testkit.prose import prose

from .conftest import (
    AJAHN_CHAH,
    HUINENG,
    KUMARAJIVA,
    MAHASI,
    MASTERS,
    PAIRING_RULES,
    YINGUANG,
    debate,
    duel_spec,
    unscripted,
)

NAME = {p.slug: p.name for p in MASTERS}
CLOSE_TEXT = "NEUTRAL-CLOSE 双方主张各有经证；分歧在于下手处；可互相参照之处在于都重视当下用功。\n小结：两家各有所重。"
# 124 characters, ordinary text with no sentence end (a phrase written 12 times would be cut as a
# loop by the repetition cut before the summary's limit acts): the engine must clip it to 80
LONG_SUMMARY = "慧能认为" + prose(120, stops=False)[:120]

CRITIQUES = [
    CritiqueSpec("huineng", "yinguang", "AMMO-H2Y 念佛若不见自性，只是口头功夫", "《坛经·疑问品》"),
    CritiqueSpec("yinguang", "huineng", "AMMO-Y2H 末法众生根机陋劣，参禅难以了脱", "《印光法师文钞·复永嘉某居士书》"),
    CritiqueSpec("huineng", "kumarajiva", "AMMO-H2K 不该出现在这场对辩里", "《坛经》"),
]


def slug_and_round(key: str) -> tuple[str, int]:
    """`duel:2:huineng` → ("huineng", 2)."""
    _, n, slug = key.split(":", 2)
    return slug, int(n)


def duel_fake(move=lambda slug, n: "松动，吸收了对方一点", summary=None, close=CLOSE_TEXT) -> FakeLLM:
    """Each speech is a unique raw marker sentence and a summary line that does not contain it."""

    def speech(call):
        slug, n = slug_and_round(call.key)
        said = summary(slug, n) if summary else f"SUM-{slug}-R{n} {NAME[slug]}守本派立场"
        return (
            f"RAW-{slug}-R{n}：这是{NAME[slug]}第{n}轮的原话，对手绝不应看到这句。\n"
            f"引《坛经》与《文钞》为证。\n立场变化：{move(slug, n)}\n小结：{said}"
        )

    return FakeLLM(default=unscripted).reply("duel:close", close).reply("duel:*", speech)


def speeches(run):
    return [c for c in run.calls if c.key != "duel:close"]


# -- isolation --------------------------------------------------------------------------------------


async def test_turns_never_carry_the_opponents_raw_text_only_its_summary():
    def summary(slug, n):
        return LONG_SUMMARY if (slug, n) == ("huineng", 2) else f"SUM-{slug}-R{n} 守本派立场"

    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    spec.options.rounds = 3
    run = await debate(spec, duel_fake(summary=summary))

    assert run.outcome == "done"
    turns = run.turns()
    assert run.keys == [f"duel:{n}:{slug}" for n in (1, 2, 3) for slug in ("huineng", "yinguang")] + ["duel:close"]
    for call in speeches(run):
        # the key names the turn: that persona speaks, and is told which round of how many it is
        slug, n = slug_and_round(call.key)
        assert call.speaker == NAME[slug] and f"第 {n}/3 轮" in call.user
    for call in run.calls:
        # one fresh call: a system prompt (the persona) and one user message (the task), no history
        assert [m["role"] for m in call.messages] == ["system", "user"]
    for call in speeches(run):
        me, n = slug_and_round(call.key)
        other = "yinguang" if me == "huineng" else "huineng"
        seen = call.text
        assert f"RAW-{other}" not in seen, "the opponent's raw text leaked into a duel turn"
        assert "对手绝不应看到" not in seen
        assert f"RAW-{me}" not in seen, "a speaker's own earlier draft was sent back to it"
        # the opponent's latest summary (yinguang answers huineng's same round; huineng answers the last one)
        latest = (n if me == "yinguang" else n - 1) if not (me == "huineng" and n == 1) else None
        if latest is None:
            assert "对手尚未发言" in seen
        else:
            opponent_summary = turns[f"duel:{latest}:{other}"].summary
            assert len(opponent_summary) <= 80
            assert f"## 对手当前立场摘要（≤80字）\n{opponent_summary}\n" in seen
    # the long summary was clipped to 80 characters, and only the clipped form reached the opponent
    clipped = turns["duel:2:huineng"].summary
    assert clipped == clip(LONG_SUMMARY, 80) and len(clipped) == 80 and clipped.endswith("…")
    yinguang_r2 = run.call("duel:2:yinguang").text
    assert clipped in yinguang_r2 and LONG_SUMMARY not in yinguang_r2
    # the close sees summaries only
    close = run.call("duel:close").text
    assert "RAW-" not in close and "SUM-yinguang-R3" in close


async def test_round_summaries_are_kept_in_the_report_data():
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    spec.options.rounds = 2
    run = await debate(spec, duel_fake())

    assert run.data["round_summaries"] == [
        {"round": 1, "speaker_slug": "huineng", "summary": "SUM-huineng-R1 慧能大师守本派立场"},
        {"round": 1, "speaker_slug": "yinguang", "summary": "SUM-yinguang-R1 印光大师守本派立场"},
        {"round": 2, "speaker_slug": "huineng", "summary": "SUM-huineng-R2 慧能大师守本派立场"},
        {"round": 2, "speaker_slug": "yinguang", "summary": "SUM-yinguang-R2 印光大师守本派立场"},
    ]
    assert run.data["pair_key"] == "huineng-vs-yinguang" and run.data["pairing"] == "explicit"


# -- pairing --------------------------------------------------------------------------------------


def test_pairing_explicit_choice_wins_over_rules_and_keywords():
    pairing = choose_pair("参禅还是念佛？", [AJAHN_CHAH, KUMARAJIVA], PAIRING_RULES, MASTERS)
    assert (pairing.a.slug, pairing.b.slug, pairing.how) == ("ajahn-chah", "kumarajiva", "explicit")


def test_pairing_rule_matches_topic_keywords():
    pairing = choose_pair("参禅好还是念佛好？", [], PAIRING_RULES, MASTERS)
    assert (pairing.a.slug, pairing.b.slug, pairing.how) == ("huineng", "yinguang", "rule")
    assert pairing.rule is PAIRING_RULES[0]


def test_pairing_rule_is_skipped_when_its_personas_are_not_in_the_pool():
    pool = [p for p in MASTERS if p.slug != "yinguang"]
    # 参禅 matches the huineng×yinguang rule, but yinguang is absent: fall through to keywords
    pairing = choose_pair("参禅与中观般若", [], PAIRING_RULES, pool)
    assert pairing.how == "keywords"
    assert {pairing.a.slug, pairing.b.slug} == {"huineng", "kumarajiva"}


def test_keyword_match_takes_the_two_best_from_different_traditions():
    # ajahn-chah (戒律, 放下) and mahasi-sayadaw (内观, 放下) score 2 each but share a tradition;
    # huineng (顿悟) scores 1 from another tradition and is taken instead of mahasi.
    pairing = choose_pair("放下、内观与戒律，兼谈顿悟", [], PAIRING_RULES, MASTERS)
    assert pairing.how == "keywords"
    assert (pairing.a.slug, pairing.b.slug) == ("ajahn-chah", "huineng")
    assert pairing.a.tradition != pairing.b.tradition


@pytest.mark.parametrize(
    "question, explicit, reason",
    [
        ("今天晚饭吃什么比较好？", [], "No pairing rule or persona keyword matches"),
        ("放下与内观", [], "different tradition"),  # only 上座部 personas match
        ("随便", [HUINENG], "exactly two personas"),
    ],
)
def test_pairing_refuses_when_nothing_fits(question, explicit, reason):
    with pytest.raises(DebateAborted) as caught:
        choose_pair(question, explicit, PAIRING_RULES, MASTERS)
    assert caught.value.outcome == "refused" and reason in str(caught.value)


def test_a_question_no_master_fits_is_pointed_at_the_formats_that_take_any_question():
    """A person's everyday question put to the duel (its library: masters of Buddhist traditions)
    is refused; the refusal says where such a question goes."""
    with pytest.raises(DebateAborted) as caught:
        choose_pair("Should we rewrite our monolith as microservices?", [], PAIRING_RULES, MASTERS)
    assert "panel or a moderated debate" in str(caught.value)


async def test_refused_pairing_makes_no_llm_call():
    run = await debate(duel_spec("今天晚饭吃什么比较好？"), duel_fake())
    assert run.outcome == "refused"
    assert run.calls == []
    assert run.finished.outcome == "refused" and "No pairing rule" in run.finished.reason
    assert not run.sink.of(ev.Report)


def test_pair_key_is_sorted_and_keeps_hyphenated_slugs_whole():
    assert pair_key("yinguang", "huineng") == "huineng-vs-yinguang"
    assert pair_key("mahasi-sayadaw", "ajahn-chah") == "ajahn-chah-vs-mahasi-sayadaw"
    assert pair_key("ajahn-chah", "mahasi-sayadaw") == pair_key("mahasi-sayadaw", "ajahn-chah")


# -- rounds ---------------------------------------------------------------------------------------


def _pair(a, b, how="explicit"):
    return duel.Pairing(a, b, how)


@pytest.mark.parametrize(
    "pair, rules, protocol, requested, expected",
    [
        ((AJAHN_CHAH, MAHASI), PAIRING_RULES, {"default_rounds": 4, "max_rounds": 8}, None, 3),  # per-pair
        ((MAHASI, AJAHN_CHAH), PAIRING_RULES, {"default_rounds": 4, "max_rounds": 8}, None, 3),  # order-free
        ((HUINENG, YINGUANG), PAIRING_RULES, {"default_rounds": 4, "max_rounds": 8}, None, 4),  # protocol
        ((HUINENG, YINGUANG), PAIRING_RULES, {"default_rounds": 2, "max_rounds": 8}, None, 2),
        ((HUINENG, YINGUANG), [], {}, None, duel.DEFAULT_ROUNDS),
        ((HUINENG, YINGUANG), PAIRING_RULES, {"default_rounds": 4, "max_rounds": 8}, 6, 6),  # user value
        ((AJAHN_CHAH, MAHASI), PAIRING_RULES, {"default_rounds": 4, "max_rounds": 8}, 5, 5),  # beats override
        ((HUINENG, YINGUANG), PAIRING_RULES, {"default_rounds": 4, "max_rounds": 8}, 20, 8),  # capped
        ((HUINENG, YINGUANG), [PairingRuleSpec(("huineng", "yinguang"), (), 12)], {"max_rounds": 8}, None, 8),
    ],
)
def test_resolve_rounds(pair, rules, protocol, requested, expected):
    assert resolve_rounds(_pair(*pair), rules, protocol, requested) == expected


async def test_rule_pair_with_hyphenated_slugs_runs_its_override_rounds():
    spec = duel_spec("戒律行持与直观内观，孰先孰后？")
    run = await debate(spec, duel_fake())

    assert run.outcome == "done"
    assert run.data["pair_key"] == "ajahn-chah-vs-mahasi-sayadaw"
    assert run.data["pairing"] == "rule" and run.data["rounds_planned"] == 3
    assert [c.key for c in speeches(run)] == [
        f"duel:{n}:{slug}" for n in (1, 2, 3) for slug in ("ajahn-chah", "mahasi-sayadaw")
    ]
    assert {c.speaker for c in speeches(run)} == {"阿姜查", "马哈希尊者"}


async def test_user_rounds_are_capped_by_the_protocol_maximum():
    spec = duel_spec(seats=(HUINENG, YINGUANG), protocol={"default_rounds": 4, "max_rounds": 2})
    spec.options.rounds = 20
    run = await debate(spec, duel_fake())

    assert run.data["rounds_planned"] == 2
    assert len(speeches(run)) == 4
    assert "第 2/2 轮" in run.call("duel:2:yinguang").user


# -- ammunition and coverage ---------------------------------------------------------------------


async def test_each_side_gets_only_its_own_ammunition():
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    spec.options.rounds = 2
    run = await debate(spec, duel_fake())

    assert run.data["ammunition"] == {"huineng": 1, "yinguang": 1}
    assert "one_sided_coverage" not in run.warning_codes
    for call in run.calls_for("duel:*:huineng"):
        assert "AMMO-H2Y" in call.text and "《坛经·疑问品》" in call.text
        assert "AMMO-Y2H" not in call.text and "AMMO-H2K" not in call.text
    for call in run.calls_for("duel:*:yinguang"):
        assert "AMMO-Y2H" in call.text and "《印光法师文钞·复永嘉某居士书》" in call.text
        assert "AMMO-H2Y" not in call.text and "AMMO-H2K" not in call.text
    assert len(run.calls_for("duel:*:huineng")) == len(run.calls_for("duel:*:yinguang")) == 2


async def test_one_sided_coverage_warns_at_the_top_and_still_runs():
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES[:1])
    spec.options.rounds = 2
    run = await debate(spec, duel_fake())

    assert run.outcome == "done"
    assert run.data["ammunition"] == {"huineng": 1, "yinguang": 0}
    assert run.warning("one_sided_coverage").text == ONE_SIDED_WARNING
    verdict = run.report.verdict_markdown
    assert ONE_SIDED_WARNING in verdict
    assert verdict.index(ONE_SIDED_WARNING) < verdict.index("## Neutral synthesis")
    assert len(speeches(run)) == 4
    yinguang = run.calls_for("duel:*:yinguang")
    assert len(yinguang) == 2 and all("没有预备的批评条目" in c.text for c in yinguang)


async def test_no_critiques_at_all_is_also_one_sided():
    spec = duel_spec(seats=(HUINENG, YINGUANG))
    spec.options.rounds = 1
    run = await debate(spec, duel_fake())
    assert run.outcome == "done" and "one_sided_coverage" in run.warning_codes


# -- stopping and closing -------------------------------------------------------------------------


async def test_early_stop_when_both_positions_stop_moving():
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)  # protocol default: 4 rounds
    run = await debate(spec, duel_fake(move=lambda s, n: "转向，采纳对方一点" if n == 1 else "无，坚持原立场"))

    assert run.outcome == "done"
    assert run.data["rounds_planned"] == 4
    assert run.data["stopped_early_after"] == 2
    assert "early_stop" in run.warning_codes
    assert len(speeches(run)) == 4 and run.keys[-1] == "duel:close" and len(run.calls) == 5
    assert [s["round"] for s in run.data["round_summaries"]] == [1, 1, 2, 2]


async def test_no_early_stop_while_one_side_still_moves():
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    run = await debate(spec, duel_fake(move=lambda s, n: "无" if s == "huineng" else "松动"))
    assert "stopped_early_after" not in run.data and "early_stop" not in run.warning_codes
    assert len(speeches(run)) == 8


async def test_a_move_explained_with_the_character_wu_still_counts_as_moved():
    # "转向" is the chosen option; the explanation mentions 无念 — that is not "无" (no change).
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    spec.options.rounds = 3
    run = await debate(spec, duel_fake(move=lambda s, n: "转向，接受了无念之说"))
    assert "stopped_early_after" not in run.data
    assert len(speeches(run)) == 6
    assert run.turns()["duel:2:huineng"].data["moved"] is True


async def test_early_stop_by_unchanged_summaries_when_nobody_declares():
    def speech(call):
        name = NAME[slug_and_round(call.key)[0]]
        return f"RAW：{name}的发言。\n小结：{name}始终认为自性与净土并不相碍"

    fake = FakeLLM(default=unscripted).reply("duel:close", CLOSE_TEXT).reply("duel:*", speech)
    run = await debate(duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES), fake)
    assert run.data["stopped_early_after"] == 2
    assert run.turns()["duel:2:huineng"].data["moved"] is None


async def test_neutral_close_is_headed_by_the_disclaimer():
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    spec.options.rounds = 1
    run = await debate(spec, duel_fake())

    verdict = run.report.verdict_markdown
    blocks = verdict.split("\n\n")
    assert blocks[0] == "# Duel"
    assert blocks[2] == f"> {DISCLAIMER}"  # right after the heading and the question
    assert verdict.index(DISCLAIMER) < verdict.index("## Neutral synthesis") < verdict.index("NEUTRAL-CLOSE")
    close = run.call("duel:close")
    assert "不站任何一方，不评判高下" in close.user
    assert "没有裁决之权" in close.system
    assert run.data["sections"][0]["title"]["msgid"] == "Neutral synthesis"
    assert run.data["sections"][0]["body"].startswith("NEUTRAL-CLOSE")


async def test_duel_failure_keeps_earlier_turns():
    error = ServerError("HTTP 500 from the provider (fake)")
    spec = duel_spec(seats=(HUINENG, YINGUANG), critiques=CRITIQUES)
    spec.options.rounds = 3
    run = await debate(spec, duel_fake().reply("duel:2:yinguang", error))

    assert run.outcome == "failed"
    failed = run.sink.of(ev.TurnFailed)
    assert [f.key for f in failed] == ["duel:2:yinguang"] and failed[0].error == str(error)
    assert set(run.turns()) == {"duel:1:huineng", "duel:1:yinguang", "duel:2:huineng"}
    assert run.turns()["duel:1:yinguang"].text.startswith("RAW-yinguang-R1")
    assert run.keys[-1] == "duel:2:yinguang"  # nothing after the failure, no close
    assert run.finished.outcome == "failed" and "印光大师" in run.finished.reason
    assert str(error) in run.finished.reason
