"""The panel in its question's language (issue 27): an English question gets English prompts,
forms, fixed lines and report over real loopback HTTP, a Chinese one stays Chinese; the parsers
read either language's labels. Also: the baseline measurement shown as what it is, concept
alignment read off the evidence (its terms under the heading, data lines never taken as terms),
and the evidence refusal naming the start form's fields by their labels."""

from __future__ import annotations

import re

import pytest

from debates.engine import events as ev
from debates.engine import panel
from debates.engine.spec import DebateSpec, LibrarySpec, PersonaSpec, SeatSpec
from testkit.fake_llm import Counted, FakeLLM

from .conftest import debate, options, panel_spec, unscripted
from .test_panel import ROOMY_BASELINE, UNCAPPED, panel_fake, roomy_baseline

CJK = re.compile("[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]")


def english_role(slug: str, name: str, role: str, focus: tuple[str, ...]) -> PersonaSpec:
    """A role whose library text is English too: then every word the panel sends must be."""
    return PersonaSpec(
        slug=slug,
        name=name,
        name_en=name,
        kind="debater",
        tier="panel",
        role=role,
        keywords=focus,
        text=f"{name}'s frame: a short test persona.",
    )


EN_ROLES = [
    english_role("osborn", "Osborn", "divergent", ("options", "possibilities")),
    english_role("hegel", "Hegel", "convergent", ("synthesis",)),
    english_role("bayes", "Bayes", "verifier", ("evidence", "base rates")),
    english_role("feynman", "Feynman", "auditor", ("self-deception",)),
    english_role("debono", "Edward de Bono", "integrator", ("lateral thinking",)),
]
EN_QUESTION = "Should our team move to fully remote work next year?"


def english_spec(**values) -> DebateSpec:
    host = PersonaSpec(slug="cicero", name="西塞罗", name_en="Cicero", kind="host", text="")
    return DebateSpec(
        question=EN_QUESTION,
        format="panel",
        seats=[SeatSpec(p) for p in EN_ROLES],
        library=LibrarySpec(host=host),
        options=options("panel", **values),
    )


def prompt_text(request) -> str:
    return "\n".join(str(m.get("content", "")) for m in request.messages)


# -- the whole panel over HTTP, both languages ----------------------------------------------------


async def test_an_english_panel_sends_english_prompts_and_reports_in_english(harness):
    run = await harness.run(english_spec(token_budget=UNCAPPED), roomy_baseline)

    assert run.outcome == "done", run.finished
    keys = {r.body.get("agora_turn") for r in run.requests}
    assert {"host:admission", "host:baseline", "host:concepts", "r1:osborn", "r3:feynman", "host:verdict"} <= keys
    for request in run.requests:
        said = prompt_text(request)
        assert not CJK.search(said), (request.body.get("agora_turn"), CJK.findall(said)[:10], said[:600])
    by_key = {r.body.get("agora_turn"): prompt_text(r) for r in run.requests}
    speech = by_key["r1:osborn"]
    for line in ("## Question", "## Rules of this round", "## Output format", "Position:", "Rebuttal:", "Summary:"):
        assert line in speech
    # R1 is blind: its form says "none" for the rebuttal and the silence (the citation form's own
    # line, which a small model copied as its rebuttal, comes from R2 on).
    assert "Rebuttal: none\nSilence: none\n" in speech and "[cite Name·R1]" not in speech and "Blind position" in speech
    assert "[cite Name·R1]" in by_key["r2:hegel"] and "Rebuttal: none" not in by_key["r2:hegel"]
    assert "You are Osborn (divergent) in a five-role debate" in speech
    assert "Falsifiable: yes / no" in by_key["host:admission"]
    assert "## Five perspectives" in by_key["host:baseline"] and "### Edward de Bono" in by_key["host:baseline"]
    assert "## Highlights" in by_key["host:verdict"] and "## Conclusion" in by_key["host:verdict"]
    assert "The others' R1, verbatim" in by_key["r2:hegel"] and "### Osborn·R1 (verbatim)" in by_key["r2:hegel"]
    # The admission the fake answered in the English form was read: a choice decision, its slug kept.
    assert run.data["proposition_type"] == "choice" and run.data["topic_slug"] == "sample-debate-topic"
    # The report as the engine writes it (headings as msgids, bodies in the debate's language).
    for markdown in (run.report.verdict_markdown, run.report.transcript_markdown):
        assert not CJK.search(markdown), CJK.findall(markdown)[:10]
    assert "| Edward de Bono |" in run.report.transcript_markdown  # the evolution table names roles in English


async def test_a_chinese_panel_stays_chinese(harness):
    run = await harness.run(panel_spec(token_budget=UNCAPPED), roomy_baseline)

    assert run.outcome == "done", run.finished
    by_key = {r.body.get("agora_turn"): prompt_text(r) for r in run.requests}
    speech = by_key["r1:osborn"]
    for line in ("## 议题", "## 本轮规则", "## 输出格式", "立场：", "反驳：无\n沉默声明：无\n", "小结："):
        assert line in speech
    assert "【引用 角色名·R1】" in by_key["r2:hegel"] and "【引用" not in speech
    for english in ("## Output format", "Position:", "Blind position", "Falsifiable"):
        assert english not in speech
    assert "可证伪：是 / 否" in by_key["host:admission"] and "## 五种视角" in by_key["host:baseline"]
    assert "## 辩论精华" in by_key["host:verdict"]


# -- the parsers read both languages -------------------------------------------------------------


def test_english_answers_are_read_in_a_chinese_debate_and_the_other_way_round():
    english = panel.Admission.read(
        "Type: investment decision\nFalsifiable: yes\nReason: a price.\nTopic slug: buy-more-shares"
    )
    assert (english.kind, english.falsifiable, english.slug) == ("investment", True, "buy-more-shares")
    chinese = panel.Admission.read("类型：认知求真型\n可证伪：否\n理由：无法检验。\n话题标识：x")
    assert (chinese.kind, chinese.falsifiable) == ("truth", False)
    assert panel.Admission.read("Type: unsuitable\nFalsifiable: no\nReason: vague.").unsuitable

    _text, silent = panel._speech_postprocess("Position: hold.\nRebuttal: none\nSilence: silent this round\nSummary: x")
    assert silent["silent"] is True and silent["position"] == "hold."
    _text, rebuts = panel._speech_postprocess(
        'Position: p.\nRebuttal: [cite Edward de Bono·R1] "lateral"\nSilence: none'
    )
    assert rebuts["silent"] is False and rebuts["citations"] == 1

    assert panel.concepts_from_answer(
        "Term 1: Output\nDefinition 1: features shipped per quarter\nTerm 2: Remote\nDefinition 2: away 4+ days",
        "en",
    ) == ["Output: features shipped per quarter", "Remote: away 4+ days"]
    verdict = "## Highlights\na\n## Three zones\nb\n## Overall judgement\nc"
    assert panel.verdict_missing(verdict, "en") == ["Conclusion"] and panel.verdict_missing(verdict) == ["结论产出"]


def test_the_english_verdict_form_copied_whole_is_read_as_all_four_parts():
    """The bundled model copies the form's headings with their parentheses (50 characters for the
    three zones): each is still its part, and the draft is not asked for again for lacking them."""
    _task, form = panel._verdict_words(panel.PanelState(roles=[], host=panel.DEFAULT_HOST, kind="choice", lang="en"))
    headings = [line for line in form.splitlines() if line.startswith("## ")]
    assert len(headings) == 4 and max(map(len, headings)) > 43  # longer than a plain heading line
    verdict = "\n\n".join(f"{heading}\n\n- body {i}" for i, heading in enumerate(headings))
    assert panel.verdict_missing(verdict, "en") == []
    assert [part for part, _, _ in panel.verdict_parts(verdict)] == ["辩论精华", "三区", "综合判断", "结论产出"]
    # A prose line starting with a part's name is not a heading: only marked lines may run long.
    prose = "Conclusion aside, the team should first measure how often its two services deploy together."
    assert panel.verdict_parts(prose) == []


async def test_an_english_closing_is_read_by_its_english_labels():
    front = (
        'Position: audit.\nCore arguments: 1. a.\nRebuttal: [cite Osborn·R2] "MARK-osborn-R2" does not hold.\n'
        "Silence: none\nSummary: s."
    )
    closing = (
        'Defence: [cite Feynman·R3] "does not hold": here is the data.\nFinal statement: I keep my position.\n'
        "Summary: Osborn holds."
    )
    fake = FakeLLM(default=unscripted)
    fake.reply("host:admission", "Type: choice decision\nFalsifiable: yes\nReason: r.\nTopic slug: remote-work-team")
    fake.reply("host:baseline", Counted("x", prompt_tokens=ROOMY_BASELINE))  # a cap with room for R4
    fake.reply("host:concepts", "Term 1: Output\nDefinition 1: features shipped")
    fake.reply("host:aggregate2", "- Blind spot: cost.")
    fake.reply("host:verdict", "## Highlights\na\n## Three zones\nb\n## Overall judgement\nc\n## Conclusion\nd")
    fake.reply("r3:feynman", front)
    fake.reply("r4:osborn", closing)
    parts = "Core arguments: 1. a.\nRebuttal: none\nSilence: none"
    fake.reply("r2:osborn", f"Position: MARK-osborn-R2\n{parts}\nSummary: s.")
    fake.reply("r?:*", lambda call: f"Position: {call.key}.\n{parts}\nSummary: {call.key}.")
    spec = english_spec(token_budget=UNCAPPED)
    spec.seats = [SeatSpec(p) for p in EN_ROLES]  # the panel's five
    run = await debate(spec, fake)

    assert run.outcome == "done"
    assert "Defence:" in run.call("r4:osborn").user and "## Your open fronts\n- Feynman: " in run.call("r4:osborn").user
    data = run.turns()["r4:osborn"].data
    assert data["missing_parts"] == [] and data["position"] == "I keep my position."


# -- the baseline: a measurement, shown as one ---------------------------------------------------


@pytest.mark.parametrize(("spec", "line"), [(panel_spec, panel.MEASURE_LINE), (english_spec, panel.MEASURE_LINE_EN)])
async def test_the_baseline_is_a_measurement_under_its_own_phase_not_a_host_speech(spec, line):
    run = await debate(spec(), panel_fake())

    events = run.events
    started = next(e for e in events if isinstance(e, ev.TurnStarted) and e.key == "host:baseline")
    measure = next(e for e in events if isinstance(e, ev.PhaseStarted) and e.phase == "measure")
    assert started.phase == "measure" and measure.title == panel.MEASURE_TITLE
    # its phase opens right before it: it is not shown under admission or research, as the host's
    assert events.index(measure) < events.index(started)
    between = events[events.index(measure) : events.index(started)]
    assert not [e for e in between if isinstance(e, ev.PhaseStarted | ev.TurnStarted) and e is not measure]
    baseline = run.turns()["host:baseline"]
    assert baseline.text == line and baseline.data == {"measurement": True}  # not what the model wrote ("基线")
    assert run.data["token_cap"]["prompt_tokens"] == baseline.prompt_tokens > 0


# -- concept alignment off the evidence ----------------------------------------------------------

TERMS_ZH = (
    "2024 年内部调查：远程组产出 +8%\n"
    "远程办公：每周四天以上不在办公室工作\n"
    "产出：季度交付的功能点数\n"
    "协作成本：会议与等待所占的工时\n"
)
TERMS_EN = (
    "Q3 2024 survey: remote teams' output +8%\n"
    "Revenue: $4.2M in 2023\n"
    "Remote work: four or more days a week away from the office\n"
    "Output: features shipped per quarter\n"
    "Coordination cost: hours spent in meetings and waiting\n"
)


def test_data_lines_are_not_terms():
    assert panel.concept_terms(panel.concepts_from_evidence(TERMS_ZH)) == ["远程办公", "产出", "协作成本"]
    assert panel.concepts_from_evidence(TERMS_EN, "en") == [
        "Remote work: four or more days a week away from the office",
        "Output: features shipped per quarter",
        "Coordination cost: hours spent in meetings and waiting",
    ]
    # A numbered list still gives its terms; a defined figure in a definition is still a definition.
    listed = "1. 市盈率：股价除以每股收益，目前 45 倍\n2、仓位：组合中该股市值占比\n3) 回撤：从高点下跌的幅度"
    assert panel.concept_terms(panel.concepts_from_evidence(listed)) == ["市盈率", "仓位", "回撤"]


@pytest.mark.parametrize(
    ("spec", "evidence", "first"),
    [
        (panel_spec, TERMS_ZH, "- 远程办公：每周四天以上不在办公室工作"),
        (english_spec, TERMS_EN, "- Remote work: four or more days a week away from the office"),
    ],
)
async def test_concept_alignment_off_the_evidence_shows_its_terms_under_its_heading(spec, evidence, first):
    run = await debate(spec(evidence=evidence, token_budget=UNCAPPED), panel_fake())

    assert "host:concepts" not in run.keys  # read off the evidence, no model call
    phase = next(e for e in run.sink.of(ev.PhaseStarted) if e.phase == "concepts")
    assert first in phase.note and len(re.findall(r"^- ", phase.note, re.M)) == 3
    assert "2024" not in phase.note and "concepts_failed" not in run.warning_codes


async def test_evidence_without_terms_says_so_under_the_heading():
    run = await debate(english_spec(evidence="Revenue: $4.2M in 2023", token_budget=UNCAPPED), panel_fake())
    phase = next(e for e in run.sink.of(ev.PhaseStarted) if e.phase == "concepts")
    assert phase.note.startswith("The evidence has 0 “Term: definition” lines")


# -- the evidence rule, on the form and in the refusal ---------------------------------------------

INVESTMENT = "Type: investment decision\nFalsifiable: yes\nReason: a position size.\nTopic slug: buy-more-nvidia-now"


async def test_the_evidence_refusal_names_the_fields_by_the_labels_the_form_shows():
    spec = english_spec()
    spec.question = "Should we raise our Nvidia position to 10% this quarter?"
    run = await debate(spec, panel_fake(admission=INVESTMENT))

    assert run.outcome == "refused"
    reason = run.finished.reason
    assert "“Material for the evidence pack”" in reason and "“Documents”" in reason
    assert "Evidence field" not in reason


def test_the_panels_evidence_option_carries_the_rule_as_its_help():
    from debates.engine.options import describe

    described = describe(panel.PanelOptions)["evidence"]
    assert described.help == panel.EVIDENCE_RULE and "investment decision" in described.help
    assert described.label == describe(panel.CommonOptions)["evidence"].label  # one field, one label
    assert described.place == "material" and described.kind == "long_text"
