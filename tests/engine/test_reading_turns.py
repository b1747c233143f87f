"""Issue 27.4, what a reader sees of procedural turns and of a speech's own headings (found in the
Chromium acceptance run): a measurement or a classification shows no summary, the moderator's
summary is the option it chose, a phase title that names its round is not given the round twice,
and a speech's headings sit below its turn's heading in the transcript."""

from __future__ import annotations

from debates.engine.report import demote_headings, render_transcript

from .conftest import debate, moderated_spec, panel_spec, table_spec
from .test_moderated import mod_fake
from .test_panel import panel_fake
from .test_roundtable import table_fake


async def test_the_panels_baseline_and_admission_show_no_summary():
    run = await debate(panel_spec(), panel_fake())
    turns = run.turns()
    assert turns["host:baseline"].summary == ""  # was "（基线测量，不是发言：…"
    assert turns["host:admission"].summary == ""  # was its first line again, "类型：选择决策型"
    assert all(t.summary for k, t in turns.items() if k.startswith("r1:"))  # speeches keep theirs


async def test_the_roundtables_suitability_check_shows_no_summary():
    spec = table_spec()
    run = await debate(spec, table_fake([s.persona for s in spec.seats]))
    assert run.turns()["host:suitability"].summary == ""  # was "类别：适合"


async def test_the_moderators_summary_is_the_option_it_chose():
    verdict = (
        "If forced to choose, the least-loss option on the basis of all speeches is: build the product first.\n"
        "## Key points\n- Sales need something to sell.\n## Reasons\nA product gives sales a story."
    )
    run = await debate(
        moderated_spec("Should a small company build the product or sell first?"), mod_fake(verdict=verdict)
    )
    assert run.turns()["moderator:verdict"].summary == "Build the product first."  # was "If forced to choose, … is…"


def _turn(**kw):
    return {"key": "r1:bayes", "phase": "r1", "round": 1, "speaker_name": "Bayes", "text": "", "summary": "", **kw}


def test_a_phase_title_that_names_its_round_is_not_given_it_twice():
    data = {"phase_titles": {"r1": "R1 · Blind positions", "host": "Host"}}
    turns = [_turn(text="Position: wait."), _turn(key="host:x", phase="host", round=0, speaker_name="Cicero")]
    markdown = render_transcript("Q?", data, turns, lambda s: s, ledger=False)
    assert "### R1 · Blind positions · Bayes" in markdown and "R1 · Blind positions · R1" not in markdown
    # a title that does not name it still gets the round
    data["phase_titles"]["r1"] = "Blind positions"
    assert "### Blind positions · R1 · Bayes" in render_transcript("Q?", data, turns[:1], lambda s: s, ledger=False)


def test_a_speechs_headings_sit_below_its_turns_heading():
    verdict = "If forced to choose, … is: wait.\n## Key points\n- one\n## Reasons\nbecause\n```\n# kept\n```"
    markdown = render_transcript("Q?", {}, [_turn(text=verdict)], lambda s: s, ledger=False)
    assert "#### Key points" in markdown and "#### Reasons" in markdown and "\n## Key points" not in markdown
    assert "\n# kept\n" in markdown  # code is not touched
    assert demote_headings("# a\n### b", below=3) == "#### a\n###### b"
    assert demote_headings("#### already below", below=3) == "#### already below"
