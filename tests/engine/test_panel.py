"""Panel (taixu-debate) on the in-process fake, scripted by turn key: admission, blind and cross
rounds, open fronts and R4, silence, summaries, the token cap, the citation check, evidence, slug,
mode, verdict."""

from __future__ import annotations

import math
import re

import pytest

from debates.engine import citations, panel
from debates.engine import events as ev
from debates.engine.context import PROMPT_SLACK
from debates.engine.panel import NO_EVIDENCE
from debates.engine.text import clip
from testkit.fake_llm import Counted, FakeLLM
from testkit.fake_openai import Reply
from testkit.prose import prose

from .conftest import PANEL_ROLES, debate, panel_spec, unscripted

NAME = {p.slug: p.name for p in PANEL_ROLES}
ADMIT_OK = "类型：选择决策型\n可证伪：是\n理由：可以用团队产出数据检验。\n话题标识：remote-work-team-productivity"
CONCEPTS = "- 远程办公：每周四天以上不在办公室\n- 产出：季度交付的功能点\n- 协作成本：会议与等待时间"
VERDICT = "## 辩论精华\n- 引文。\n## 三区\n共识区：需要数据。\n## 综合判断\n中性综合。\n## 结论产出\n分团队试行。"


def slug_and_round(key: str) -> tuple[str, int]:
    """`r2:feynman` (or its version written again, `r2:feynman:again`) → ("feynman", 2)."""
    phase, slug = key.removesuffix(":again").split(":", 1)
    return slug, int(phase[1:])


def default_speech(slug: str, n: int) -> str:
    name = NAME[slug]
    if n == 4:  # R4's own two parts
        return (
            f"检验交锋：{name}逐条回应开放战线，补上数据。\n终辩声明：{name}第4轮立场。MARK-{slug}-R4\n"
            f"小结：{name}第4轮小结。"
        )
    return (
        f"立场：{name}第{n}轮立场。MARK-{slug}-R{n}\n核心论据：\n1. 论据MARK-{slug}-R{n}-A。\n"
        f"{_rebuttal(n)}\n小结：{name}第{n}轮小结。"
    )


def _rebuttal(n: int) -> str:
    """R1 is blind: nothing to rebut. Later rounds rebut a point (无反驳则显式沉默: a speech that
    rebuts nothing must declare silence, or it is sent back)."""
    return "反驳：无\n沉默声明：无" if n == 1 else f"{REBUTTAL}\n沉默声明：无"


REBUTTAL = "反驳：他方低估了执行成本。"  # the default speech's from R2 on


# A baseline prompt the server counts this large makes the seed's cap (4.3-5 times it) leave the
# rounds room: for the tests about the rounds, not the cap. A user's budget cannot do it, since it
# may only lower the seed's cap (`UNCAPPED` is below the cap this gives, so it is not held to it).
ROOMY_BASELINE = 1_000_000


def roomy_baseline(body) -> Reply | None:
    """A `FakeOpenAIServer` script: the baseline counted as `ROOMY_BASELINE` prompt tokens."""
    return Reply(prompt_tokens=ROOMY_BASELINE) if body.get("agora_turn") == "host:baseline" else None


def panel_fake(
    admission=ADMIT_OK, speeches=None, verdict=VERDICT, concepts=CONCEPTS, *, roomy=True, **fake_options
) -> FakeLLM:
    """Every panel turn scripted by key; `speeches[(slug, round)]` overrides a role's speech.
    `roomy`: the baseline's prompt counts as `ROOMY_BASELINE` tokens (False: as the prompt is)."""
    fake = FakeLLM(default=unscripted, **fake_options)
    fake.reply("host:admission", admission)
    # The baseline is asked for one token; FakeLLM ignores max_tokens, so keep it that short.
    fake.reply("host:baseline", Counted("基线", prompt_tokens=ROOMY_BASELINE) if roomy else "基线")
    fake.reply("host:concepts", concepts)
    fake.reply("host:aggregate2", "- 盲区：执行成本。")
    fake.reply("host:verdict", verdict)
    for (slug, n), text in (speeches or {}).items():
        # A scripted speech that breaks its form is sent back once: the model writes it again the same.
        fake.reply(f"r{n}:{slug}", text)
        fake.reply(f"r{n}:{slug}:again", text)
    fake.reply("r?:*", lambda call: default_speech(*slug_and_round(call.key)))
    return fake


async def unplanned():
    """A panel under a budget the user set at the seed's own cap: its speeches keep the format's
    allowance (the rounds are planned only under the seed's cap), as the budgets measured here do."""
    return panel_spec(token_budget=(await debate(panel_spec(), panel_fake())).data["token_cap"]["cap"])


async def budget_through(last_round: int, speeches=None) -> int:
    """The least token cap that lets concept alignment and rounds 1..last_round run in full,
    measured on a run of the same script: what the turns before round `last_round` spent, what
    that round's turns book when they start together (each its prompt, at the margin the concepts
    turn taught, and its whole `max_tokens`), and the verdict's reserve. The next round then
    starts only the turns that fit what the last one left unspent (none, or a few)."""
    full = await debate(await unplanned(), panel_fake(speeches=speeches))
    turns = full.data["ledger"]["turns"]
    spent = sum(
        v["prompt"] + v["completion"]
        for k, v in turns.items()
        if k == "host:concepts"
        or (k[0] == "r" and int(k[1]) < last_round)
        or (k == "host:aggregate2" and last_round > 2)
    )
    speech = panel.FORMAT.tokens["speech"]
    booked = sum(
        math.ceil(v["prompt"] * PROMPT_SLACK) + speech for k, v in turns.items() if k.startswith(f"r{last_round}:")
    )
    return spent + booked + full.data["ledger"]["reserve"]


def in_round(run, n: int):
    return run.calls_for(f"r{n}:*")


def speakers(calls) -> list[str]:
    return sorted(slug_and_round(c.key)[0] for c in calls)


ALL = sorted(NAME)
UNCAPPED = 10**6  # for tests about the rounds, not the cap (with a roomy baseline: see `ROOMY_BASELINE`)


# -- admission ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "admission",
    [
        "类型：不适合\n可证伪：否\n理由：“万物皆有灵”无法被任何观察证伪。\n话题标识：animism",
        "Type: truth-seeking\nFalsifiable: No\nReason: 无法被任何观察证伪 (no observation could refute it).",
    ],
)
async def test_admission_refuses_an_unfalsifiable_proposition_with_the_reason(admission):
    run = await debate(panel_spec("万物皆有灵，这是宇宙的根本真理吗？"), panel_fake(admission=admission))

    assert run.outcome == "refused"
    assert run.finished.outcome == "refused"
    assert "did not pass admission" in run.finished.reason and "无法被任何观察证伪" in run.finished.reason
    assert [s.status for s in run.sink.of(ev.Status)][-1] == "refused"
    assert run.keys == ["host:admission"] and "入场审查" in run.call("host:admission").user
    assert not run.sink.of(ev.Report)


async def test_a_too_short_proposition_is_refused_without_a_call():
    run = await debate(panel_spec("好吗？"), panel_fake())
    assert run.outcome == "refused" and run.calls == [] and "too short" in run.finished.reason


async def test_admission_records_type_topic_slug_and_execution_mode():
    run = await debate(panel_spec(), panel_fake())

    assert run.outcome == "done"
    assert run.data["proposition_type"] == "choice"
    assert run.data["topic_slug"] == "remote-work-team-productivity"
    assert run.data["execution_mode"] == "isolated_parallel"
    assert "execution_mode: isolated_parallel" in run.report.transcript_markdown


@pytest.mark.parametrize(
    "slug_line",
    ["话题标识：远程办公的利弊", "话题标识：one two", "话题标识：a b c d e f g h i j"],
)
async def test_topic_slug_is_three_to_six_lowercase_words_even_when_the_model_fails(slug_line):
    admission = ADMIT_OK.rsplit("\n", 1)[0] + "\n" + slug_line
    run = await debate(panel_spec(token_budget=1), panel_fake(admission=admission))  # admission is enough
    slug = run.data["topic_slug"]
    assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z][a-z0-9]*){2,5}", slug), slug
    assert slug == "wo-men-tuan-dui-shi-fou"  # the question romanised: 我们团队是否…


async def test_sequential_provider_is_recorded_as_a_labelled_mode():
    spec = panel_spec(token_budget=1)  # no room for any turn: the mode is recorded all the same
    run = await debate(spec, panel_fake(concurrency=1))
    assert run.data["execution_mode"] == "isolated_sequential"
    assert "isolated calls, one at a time" in run.report.verdict_markdown


# -- visibility per round -------------------------------------------------------------------------


async def test_rounds_see_exactly_what_the_protocol_allows():
    run = await debate(panel_spec(token_budget=UNCAPPED), panel_fake())
    assert run.outcome == "done"

    r1, r2, r3 = in_round(run, 1), in_round(run, 2), in_round(run, 3)
    assert speakers(r1) == speakers(r2) == speakers(r3) == ALL
    # the key names the turn: that role speaks, told which round it is in
    assert all(c.speaker == NAME[slug_and_round(c.key)[0]] for c in r1 + r2 + r3)
    assert all(panel.ROUNDS_TEXT[n][1] in c.user for n, calls in ((1, r1), (2, r2), (3, r3)) for c in calls)
    for call in r1:  # blind: no speech and not even another role's name
        me, seen = slug_and_round(call.key)[0], call.text
        assert "MARK-" not in seen
        assert not [name for slug, name in NAME.items() if slug != me and name in seen]
    for call in r2:  # own R1 and the others' raw R1
        me, seen = slug_and_round(call.key)[0], call.text
        for slug in ALL:
            assert f"立场：{NAME[slug]}第1轮立场。MARK-{slug}-R1\n核心论据：\n1. 论据MARK-{slug}-R1-A。" in seen
        assert "-R2" not in seen
        assert f"### {NAME[me]}·R1（原文）" not in seen  # its own R1 comes once, as its own
    for call in r3:  # own R1 + R2, the others' R2, not the others' R1
        me, seen = slug_and_round(call.key)[0], call.text
        assert f"MARK-{me}-R1" in seen and f"MARK-{me}-R2" in seen
        for slug in ALL:
            if slug != me:
                assert f"MARK-{slug}-R2" in seen
                assert f"MARK-{slug}-R1" not in seen
        assert "- 盲区：执行成本。" in seen
    # no fronts in anybody's R3 → R4 skipped entirely
    assert in_round(run, 4) == []
    assert "r4_skipped" in run.warning_codes
    assert run.data["open_fronts"] == dict.fromkeys(ALL, 0)


async def test_r4_runs_only_for_roles_with_open_fronts():
    fake = panel_fake(
        speeches={
            ("feynman", 3): "立场：坚持审查。\n反驳：【引用 奥斯本·R2】“MARK-osborn-R2”这一点站不住。\n"
            "沉默声明：无\n小结：费曼坚持审查。",
            ("hegel", 3): "立场：收敛。\n反驳：德博诺的价值回收说法忽略了协作成本。\n沉默声明：无\n小结：黑格尔修正。",
        }
    )
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    assert run.outcome == "done"
    assert run.data["open_fronts"] == {"osborn": 1, "hegel": 0, "bayes": 0, "feynman": 0, "debono": 1}
    r4 = in_round(run, 4)
    assert speakers(r4) == ["debono", "osborn"]
    fronts = run.call("r4:osborn").user.split("## 你的开放战线\n", 1)[1].split("\n\n", 1)[0]
    assert fronts == "- 费曼：反驳：【引用 奥斯本·R2】“MARK-osborn-R2”这一点站不住。"
    assert "r4_skipped" not in run.warning_codes
    assert set(run.turns()) >= {"r4:osborn", "r4:debono"} and "r4:feynman" not in run.turns()


async def test_a_role_that_declares_silence_is_skipped_in_later_rounds():
    fake = panel_fake(
        speeches={
            ("bayes", 2): "立场：不变。\n反驳：无\n沉默声明：本轮沉默\n小结：贝叶斯本轮沉默。",
            # bayes is named in R3 but has fallen silent: no R4 for it; osborn is cited and gets R4
            ("feynman", 3): "立场：审查。\n反驳：贝叶斯回避了基率；【引用 奥斯本·R2】“MARK-osborn-R2”站不住。\n"
            "沉默声明：无\n小结：费曼两处质疑。",
        }
    )
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    assert run.data["silent"] == ["bayes"]
    assert "bayes" in speakers(in_round(run, 2))
    assert "bayes" not in speakers(in_round(run, 3))
    assert speakers(in_round(run, 4)) == ["osborn"]
    assert run.turns()["r2:bayes"].data["silent"] is True
    assert "| 贝叶斯 | 贝叶斯第1轮小结。 | 贝叶斯本轮沉默。 | (silent) | (silent) |" in run.report.transcript_markdown


async def test_summaries_never_exceed_60_characters():
    # ~300 characters of one run-on phrase, not a loop (a loop is cut by the repetition cut first)
    rambling = "我想说的是" + prose(295, stops=False)
    assert len(rambling) >= 300
    fake = panel_fake(
        speeches={("osborn", 1): f"立场：发散。\n反驳：无\n沉默声明：无\n小结：{rambling}"},
    )
    run = await debate(panel_spec(), fake)

    finished = run.sink.of(ev.TurnFinished)
    assert finished and all(len(t.summary) <= 60 for t in finished)
    assert run.turns()["r1:osborn"].summary == clip(rambling, 60)
    assert all(len(t["summary"]) <= 60 for t in run.data["turns"])


async def test_a_verdict_over_1200_characters_is_asked_again_with_its_count():
    long_verdict = VERDICT.replace("中性综合。", "中性综合。" + prose(1300))  # ordinary text, not a loop
    fake = panel_fake(verdict=long_verdict)
    fake.reply("host:verdict-again", VERDICT)
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    again = run.call("host:verdict-again").user
    assert f"上一稿 {len(long_verdict)} 字，超出 1200 字上限" in again and long_verdict in again
    assert run.data["verdict"] == VERDICT and "verdict_long" not in run.warning_codes


async def test_a_verdict_still_too_long_is_shortened_part_by_part_keeping_the_conclusion():
    padding = prose(600)  # over 1200 in all, under the reply ceiling; ordinary text, not a loop
    long_verdict = VERDICT.replace("中性综合。", "中性综合。" + padding).replace(
        "分团队试行。", "分团队试行。" + padding
    )
    fake = panel_fake(verdict=long_verdict)
    fake.reply("host:verdict-again", long_verdict)  # asked again, as long as before
    run = await debate(panel_spec(token_budget=UNCAPPED), fake)

    verdict = run.data["verdict"]
    assert len(verdict) <= 1200
    assert panel.verdict_missing(verdict) == [] and "## 结论产出\n分团队试行。" in verdict
    assert run.warning("verdict_long").text.startswith(f"The verdict was still {len(long_verdict)} characters")


# -- the token cap --------------------------------------------------------------------------------


async def test_token_cap_stops_the_run_and_it_still_reports_with_the_hosts_verdict():
    run = await debate(panel_spec(token_budget=await budget_through(1)), panel_fake())

    assert run.outcome == "done"
    assert run.data["stopped_by_cap_in_round"] == 2
    assert "token_cap" in run.warning_codes
    assert speakers(in_round(run, 1)) == ALL
    assert len(in_round(run, 2)) < len(ALL) and in_round(run, 3) == []  # R2 started only what fit
    assert run.data["verdict"] == VERDICT  # the verdict is the host's, from its reserve
    ledger = run.data["ledger"]
    assert ledger["counted_against_cap"] <= ledger["cap"]


async def test_a_round_one_turn_short_of_room_stops_before_it_started():
    """One token less than R1 needs to start all five turns at once: the fifth is not started
    (under the old check, made before each turn against what was spent, all five ran)."""
    # A few milliseconds a chunk, so the five really are in flight together (a reply streamed
    # without a pause ends before the next turn starts, and gives back what it did not spend).
    run = await debate(panel_spec(token_budget=await budget_through(1) - 1), panel_fake(delay=0.002))

    assert len(in_round(run, 1)) == 4 and run.data["stopped_by_cap_in_round"] == 1
    assert "host:verdict" in run.keys
    ledger = run.data["ledger"]
    assert ledger["counted_against_cap"] <= ledger["cap"]


async def test_token_cap_is_checked_before_every_turn_not_only_between_rounds():
    """On a one-at-a-time provider each turn is booked when it gets its slot, after the turn
    before it has given back what it did not spend: the cap stops R1 between two of its turns."""
    full = await debate(await unplanned(), panel_fake())
    turns, reserve = full.data["ledger"]["turns"], full.data["ledger"]["reserve"]
    before = turns["host:concepts"]["prompt"] + turns["host:concepts"]["completion"]
    first_four = sum(turns[f"r1:{p.slug}"]["prompt"] + turns[f"r1:{p.slug}"]["completion"] for p in PANEL_ROLES[:4])
    fifth = math.ceil(turns[f"r1:{PANEL_ROLES[4].slug}"]["prompt"] * PROMPT_SLACK) + panel.FORMAT.tokens["speech"]
    cap = before + first_four + fifth - 1 + reserve  # the fifth's booking is one token short
    run = await debate(panel_spec(token_budget=cap), panel_fake(concurrency=1))

    assert run.data["execution_mode"] == "isolated_sequential"
    assert len(in_round(run, 1)) == 4  # the fifth never started
    assert run.data["stopped_by_cap_in_round"] == 1
    assert "host:verdict" in run.keys
    assert run.data["ledger"]["counted_against_cap"] <= cap


async def test_the_cap_is_the_seeds_multiple_of_one_strong_prompt_and_the_report_states_it():
    run = await debate(panel_spec(research_budget="light"), panel_fake(roomy=False))

    baseline = run.turns()["host:baseline"]
    # one answer: the whole debate written at once, every perspective's four rounds and the verdict
    answer = panel.ROUNDS * len(PANEL_ROLES) * panel.FORMAT.tokens["speech"] + panel.FORMAT.tokens["verdict"]
    cap = int((baseline.prompt_tokens + answer) * 4.3)
    assert run.data["token_cap"] == {
        "research_budget": "light",
        "multiplier": 4.3,
        "prompt_tokens": baseline.prompt_tokens,
        "answer_tokens": answer,
        "baseline_tokens": baseline.prompt_tokens + answer,
        "cap": cap,
        "verdict_reserve": run.data["ledger"]["reserve"],
        "explicit": False,
    }
    assert run.data["ledger"]["cap"] == cap
    # The verdict's reserve pays for its call and one resend: two answers, a draft read back, two prompts.
    verdict = run.turns()["host:verdict"]
    assert run.data["ledger"]["reserve"] >= 2 * verdict.prompt_tokens + 3 * panel.FORMAT.tokens["verdict"]
    counted = run.data["ledger"]["counted_against_cap"]
    assert counted <= cap
    assert f"Counted against the cap: {counted:,} of {cap:,} tokens." in run.report.transcript_markdown
    # a few tokens, not one: one token can be half a Chinese character, an empty reply to the server
    assert 4 <= run.call("host:baseline").max_tokens == panel.BASELINE_TOKENS
    assert f"Token cap: 4.3 × (P {baseline.prompt_tokens} + A {answer}) = {cap}" in run.report.transcript_markdown
    # admission and baseline are charged but do not count against the cap
    ledger = run.data["ledger"]
    exempt = sum(
        ledger["turns"][k]["prompt"] + ledger["turns"][k]["completion"] for k in ("host:admission", "host:baseline")
    )
    assert ledger["counted_against_cap"] == ledger["total"] - exempt


# -- citations and evidence -----------------------------------------------------------------------


async def test_citation_of_a_point_that_does_not_exist_is_flagged():
    fake = panel_fake(
        speeches={
            (
                "feynman",
                2,
            ): "立场：审查。\n反驳：【引用 奥斯本·R1】“never said this”；【引用 黑格尔·R1】“MARK-hegel-R1”；"
            "【引用 康德·R1】“纯粹理性”\n沉默声明：无\n小结：费曼逐条审查。",
        }
    )
    run = await debate(panel_spec(), fake)

    checks = [c for c in run.data["citation_check"] if c["citing"] == "r2:feynman"]
    assert checks == [
        {
            "citing": "r2:feynman",
            "speaker": "奥斯本",
            "round": 1,
            "quote": "never said this",
            "ok": False,
            "reason": citations.NOT_FOUND,
        },
        {"citing": "r2:feynman", "speaker": "黑格尔", "round": 1, "quote": "MARK-hegel-R1", "ok": True, "reason": ""},
        {
            "citing": "r2:feynman",
            "speaker": "康德",
            "round": 1,
            "quote": "纯粹理性",
            "ok": False,
            "reason": citations.UNKNOWN_SPEAKER,
        },
    ]
    warning = run.warning("citations_unverified")
    assert warning.text.startswith("2 quoted point(s) were not found")
    transcript = run.report.transcript_markdown
    assert "Citation check: 3 quotes, 2 not verified." in transcript and citations.NOT_FOUND in transcript


async def test_no_evidence_warning_only_without_material():
    bare = await debate(panel_spec(token_budget=await budget_through(1)), panel_fake())
    assert bare.warning("no_evidence").text == NO_EVIDENCE
    assert NO_EVIDENCE in bare.report.transcript_markdown

    material = "材料：2023 年远程团队 EVIDENCE-42 的交付量下降 5%。"
    given = await debate(panel_spec(token_budget=UNCAPPED, evidence=material), panel_fake())
    assert "no_evidence" not in given.warning_codes
    assert len(in_round(given, 1)) == 5 and all(material in c.text for c in in_round(given, 1))
