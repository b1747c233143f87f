"""The engine over the real provider path: `OpenAICompatibleClient` against the loopback fake
OpenAI server. What only this path shows: the ledger holds the usage the server reported (or an
estimate, flagged, when it reports none), a failure that survives the client's retries fails the
debate, and a stream dropped mid-reply keeps its partial text without being streamed twice.
Requests are scripted and faulted by the turn key the harness's client sends along."""

from __future__ import annotations

import itertools

import pytest

from debates.engine import events as ev
from testkit.fake_llm import default_reply
from testkit.fake_openai import Fault, Reply, tokenize

from . import test_panel
from .conftest import call_of, key_of, moderated_spec, panel_spec, turn
from .test_cross_format import CASES, case_spec

# -- usage ----------------------------------------------------------------------------------------


def usage_script():
    """Answer every request with text that fits its turn and distinct usage numbers; remember
    what was reported."""
    reported: list[tuple[int, int]] = []
    counter = itertools.count()

    def script(body):
        i = next(counter)
        usage = (1000 + 7 * i, 50 + 3 * i)
        reported.append(usage)
        return Reply(default_reply(call_of(body)), prompt_tokens=usage[0], completion_tokens=usage[1])

    script.reported = reported
    return script


@pytest.mark.parametrize("fmt", list(CASES))
async def test_ledger_totals_equal_the_usage_the_server_reported(harness, fmt):
    script = usage_script()
    run = await harness.run(case_spec(fmt), script)

    assert run.outcome == "done"
    assert len(script.reported) == len(run.requests) > 3
    ledger = run.data["ledger"]
    assert ledger["prompt_tokens"] == sum(p for p, _ in script.reported)
    assert ledger["completion_tokens"] == sum(c for _, c in script.reported)
    assert ledger["total"] == sum(p + c for p, c in script.reported)
    assert ledger["estimated"] is False
    # per turn: the ledger entry is exactly what the turn reported
    finished = run.sink.of(ev.TurnFinished)
    for done in finished:
        assert ledger["turns"][done.key] == {
            "prompt": done.prompt_tokens,
            "completion": done.completion_tokens,
            "estimated": False,
        }
    assert sorted((t.prompt_tokens, t.completion_tokens) for t in finished) == sorted(script.reported)


async def test_missing_usage_is_estimated_and_flagged(harness):
    run = await harness.run(moderated_spec(rounds=1), lambda body: Reply(default_reply(call_of(body)), usage=False))

    assert run.outcome == "done" and len(run.requests) == 4
    assert run.data["ledger"]["estimated"] is True
    assert all(t.usage_estimated for t in run.sink.of(ev.TurnFinished))
    assert "(partly estimated)" in run.report.transcript_markdown


# -- failure --------------------------------------------------------------------------------------


def panel_script(body):
    """The panel's speeches as test_panel scripts them; the host's turns need only fit their form."""
    key = key_of(body)
    if key.startswith("r"):
        return test_panel.default_speech(*test_panel.slug_and_round(key))
    if key == "host:baseline":  # a cap with room for every round: these tests are about failures
        return test_panel.roomy_baseline(body)
    return {"host:admission": test_panel.ADMIT_OK, "host:concepts": test_panel.CONCEPTS}.get(key)


async def test_provider_failure_that_survives_retries_fails_the_debate(harness):
    harness.server.inject(Fault.server_error(), times=None, when=turn("r2:feynman"))
    run = await harness.run(panel_spec(), panel_script, max_retries=1)

    assert run.outcome == "failed"
    failed = run.sink.of(ev.TurnFailed)
    assert len(failed) == 1
    assert failed[0].key == "r2:feynman"
    assert "HTTP 500" in failed[0].error and failed[0].partial_text == ""
    assert run.finished.outcome == "failed" and "费曼" in run.finished.reason and "HTTP 500" in run.finished.reason
    assert [s.status for s in run.sink.of(ev.Status)][-1] == "failed"
    # tried twice (one retry), then gave up
    assert [r.status for r in run.requests_for("r2:feynman")] == [500, 500]
    # earlier turns and the other R2 turns of the same round keep their text
    turns = run.turns()
    for slug in test_panel.ALL:
        assert turns[f"r1:{slug}"].text == test_panel.default_speech(slug, 1)
        if slug != "feynman":
            assert turns[f"r2:{slug}"].text == test_panel.default_speech(slug, 2)
    assert not [r for r in run.requests if key_of(r.body).startswith("r3:")]
    assert not run.sink.of(ev.Report)


async def test_failure_mid_stream_keeps_the_partial_text(harness):
    harness.server.inject(Fault.disconnect(after=6), times=None, when=turn("r2:feynman"))
    run = await harness.run(panel_spec(), panel_script, max_retries=3)

    assert run.outcome == "failed"
    (failed,) = run.sink.of(ev.TurnFailed)
    assert failed.key == "r2:feynman"
    assert failed.partial_text == "".join(tokenize(test_panel.default_speech("feynman", 2))[:6])
    assert failed.partial_text.startswith("立场：费曼")
    assert "dropped" in failed.error or "ended the stream" in failed.error
    # text had already reached the viewer: the client must not retry and stream it twice
    assert len(run.requests_for("r2:feynman")) == 1
    assert run.ledger.entries["r2:feynman"].estimated is True
    assert "r1:feynman" in run.turns()
