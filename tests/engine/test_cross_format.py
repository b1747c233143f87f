"""Rules that hold across formats: parallel rounds really overlap (and do not on a one-at-a-time
provider), summaries stay within their limits, the ledger equals the server's reported usage,
and a provider failure fails the debate while keeping what was said."""

from __future__ import annotations

import itertools

import pytest

from debates.engine import events as ev
from debates.engine.debate import run_debate
from debates.engine.turns import ClientPool
from testkit.fake_llm import FakeLLM
from testkit.fake_openai import Fault, Reply, max_overlap, tokenize

from . import test_duel, test_moderated, test_panel, test_roundtable
from .conftest import HUINENG, YINGUANG, duel_spec, moderated_spec, panel_spec, req_speaker, table_spec, text_of

# -- overlap --------------------------------------------------------------------------------------


def slow_r1_script():
    script = test_panel.PanelScript(speeches={(slug, 1): "立场：一句短话。\n小结：短。" for slug in test_panel.ALL})
    script.r1_delay = 0.02  # ~10 tokens × 20 ms per R1 reply; everything else streams at once
    return script


async def test_panel_r1_calls_overlap_in_time(harness):
    run = await harness.run(panel_spec(token_budget=1), slow_r1_script(), concurrency=5)

    r1 = test_panel.in_round(run, 1)
    assert len(r1) == 5
    assert max_overlap(r1) == 5
    assert max(r.started for r in r1) < min(r.finished for r in r1)  # all five in flight together
    assert run.data["execution_mode"] == "isolated_parallel"


async def test_one_at_a_time_provider_never_overlaps(harness):
    run = await harness.run(panel_spec(token_budget=1), slow_r1_script(), concurrency=1)

    r1 = test_panel.in_round(run, 1)
    assert len(r1) == 5
    assert max_overlap(run.requests) == 1
    ordered = sorted(r1, key=lambda r: r.started)
    assert all(a.finished <= b.started for a, b in itertools.pairwise(ordered))
    assert run.data["execution_mode"] == "isolated_sequential"


async def test_concurrency_between_one_and_five_bounds_the_overlap(harness):
    run = await harness.run(panel_spec(token_budget=1), slow_r1_script(), concurrency=2)
    assert max_overlap(test_panel.in_round(run, 1)) == 2


# -- summaries ------------------------------------------------------------------------------------

RAMBLE = "这一轮我想说的是" + "各方的论证都需要放到具体场景里检验才有意义" * 6  # ~134 characters


def rambling(script):
    """Wrap a format's script so every reply ends with a ~320-character summary line."""

    def wrapped(body):
        reply = script(body)
        text = reply.text if isinstance(reply, Reply) else reply
        return f"{text}\n小结：{RAMBLE}"

    return wrapped


CASES = {
    "duel": (lambda: duel_spec(seats=(HUINENG, YINGUANG)), lambda: test_duel.duel_script(), 80),
    "panel": (panel_spec, lambda: test_panel.PanelScript(), 60),
    "roundtable": (
        lambda: table_spec(no_interrupt=True),
        lambda: test_roundtable.TableScript(test_roundtable.STANDARD),
        80,
    ),
    "moderated": (lambda: moderated_spec(rounds=2, max_chars=2000), lambda: test_moderated.mod_script(), 80),
}


@pytest.mark.parametrize("fmt", list(CASES))
async def test_summaries_never_exceed_their_limit(harness, fmt):
    make_spec, make_script, limit = CASES[fmt]
    spec = make_spec()
    if fmt == "duel":
        spec.options.rounds = 2
    run = await harness.run(spec, rambling(make_script()))

    assert run.outcome == "done"
    finished = run.sink.of(ev.TurnFinished)
    assert len(finished) >= 4
    for turn in finished:
        assert len(turn.summary) <= limit, (turn.key, len(turn.summary))
    clipped = [t for t in finished if t.summary.startswith("这一轮我想说的是")]
    assert clipped and all(len(t.summary) == limit and t.summary.endswith("…") for t in clipped)
    assert all(len(t["summary"]) <= limit for t in run.data["turns"])
    if fmt == "duel":
        assert all(len(s["summary"]) <= 80 for s in run.data["round_summaries"])


# -- the ledger -----------------------------------------------------------------------------------


def usage_script(script):
    """Wrap a script so every reply carries distinct usage numbers; remember what was reported."""
    reported: list[tuple[int, int]] = []
    counter = itertools.count()

    def wrapped(body):
        reply = script(body)
        text = reply.text if isinstance(reply, Reply) else reply
        i = next(counter)
        usage = (1000 + 7 * i, 50 + 3 * i)
        reported.append(usage)
        return Reply(text, prompt_tokens=usage[0], completion_tokens=usage[1])

    wrapped.reported = reported
    return wrapped


@pytest.mark.parametrize("fmt", list(CASES))
async def test_ledger_totals_equal_the_usage_the_server_reported(harness, fmt):
    make_spec, make_script, _ = CASES[fmt]
    spec = make_spec()
    if fmt == "duel":
        spec.options.rounds = 2
    script = usage_script(make_script())
    run = await harness.run(spec, script)

    assert run.outcome == "done"
    assert len(script.reported) == len(run.requests) > 3
    ledger = run.data["ledger"]
    assert ledger["prompt_tokens"] == sum(p for p, _ in script.reported)
    assert ledger["completion_tokens"] == sum(c for _, c in script.reported)
    assert ledger["total"] == sum(p + c for p, c in script.reported)
    assert ledger["estimated"] is False
    # per turn: the ledger entry is exactly what the turn reported
    for turn in run.sink.of(ev.TurnFinished):
        assert ledger["turns"][turn.key] == {
            "prompt": turn.prompt_tokens,
            "completion": turn.completion_tokens,
            "estimated": False,
        }
    assert sorted((t.prompt_tokens, t.completion_tokens) for t in run.sink.of(ev.TurnFinished)) == sorted(
        script.reported
    )


async def test_ledger_counts_both_calls_of_a_resent_turn(harness):
    base = test_roundtable.TableScript(test_roundtable.STANDARD, speeches={("optimist", "r2"): test_roundtable.AGREE})
    script = usage_script(base)
    run = await harness.run(table_spec(no_interrupt=True), script)

    assert len(run.requests) == 4 + 4 + 1 + 4 + 1
    assert run.data["ledger"]["total"] == sum(p + c for p, c in script.reported)
    assert {"r2:optimist", "r2:optimist:resend"} <= set(run.data["ledger"]["turns"])


async def test_missing_usage_is_estimated_and_flagged(harness):
    base = test_moderated.mod_script()

    def script(body):
        return Reply(base(body), usage=False)

    run = await harness.run(moderated_spec(rounds=1), script)
    assert run.data["ledger"]["estimated"] is True
    assert all(t.usage_estimated for t in run.sink.of(ev.TurnFinished))
    assert "估算" in run.report.transcript_markdown


# -- failure --------------------------------------------------------------------------------------


def feynman_r2(body) -> bool:
    from .conftest import speaker_of, user_of

    return speaker_of(body) == "费曼" and "逐条反驳他方" in user_of(body)


async def test_provider_failure_that_survives_retries_fails_the_debate(harness):
    harness.server.inject(Fault.server_error(), times=None, when=feynman_r2)
    run = await harness.run(panel_spec(), test_panel.PanelScript(), max_retries=1)

    assert run.outcome == "failed"
    failed = run.sink.of(ev.TurnFailed)
    assert len(failed) == 1
    assert failed[0].key == "r2:feynman"
    assert "HTTP 500" in failed[0].error and failed[0].partial_text == ""
    assert run.finished.outcome == "failed" and "费曼" in run.finished.reason and "HTTP 500" in run.finished.reason
    assert [s.status for s in run.sink.of(ev.Status)][-1] == "failed"
    # tried twice (one retry), then gave up
    assert len([r for r in run.requests if req_speaker(r) == "费曼" and "逐条反驳他方" in text_of(r)]) == 2
    # earlier turns and the other R2 turns of the same round keep their text
    turns = run.turns()
    for slug in test_panel.ALL:
        assert turns[f"r1:{slug}"].text == test_panel.default_speech(slug, 1)
        if slug != "feynman":
            assert turns[f"r2:{slug}"].text == test_panel.default_speech(slug, 2)
    assert test_panel.in_round(run, 3) == []
    assert not run.sink.of(ev.Report)


async def test_failure_mid_stream_keeps_the_partial_text(harness):
    harness.server.inject(Fault.disconnect(after=6), times=None, when=feynman_r2)
    run = await harness.run(panel_spec(), test_panel.PanelScript(), max_retries=3)

    assert run.outcome == "failed"
    (failed,) = run.sink.of(ev.TurnFailed)
    assert failed.key == "r2:feynman"
    assert failed.partial_text == "".join(tokenize(test_panel.default_speech("feynman", 2))[:6])
    assert failed.partial_text.startswith("立场：费曼")
    assert "dropped" in failed.error or "ended the stream" in failed.error
    # text had already reached the viewer: the client must not retry and stream it twice
    assert len([r for r in run.requests if req_speaker(r) == "费曼" and "逐条反驳他方" in text_of(r)]) == 1
    assert run.ledger.entries["r2:feynman"].estimated is True
    assert "r1:feynman" in run.turns()


# -- the in-process fake: the same engine without HTTP ------------------------------------------


async def test_engine_runs_on_the_in_process_fake_and_records_every_prompt():
    fake = FakeLLM()
    sink = ev.ListSink()
    outcome = await run_debate(duel_spec(seats=(HUINENG, YINGUANG)), ClientPool(fake), sink)

    assert outcome == "done"
    started = sink.of(ev.TurnStarted)
    assert [s.messages for s in started] == [c.messages for c in fake.calls]
    # FakeLLM's default reply says "立场变化：无": both sides stand still, so round 2 ends the duel
    assert len(fake.calls) == 2 * 2 + 1
    assert [e.status for e in sink.of(ev.Status)] == ["running", "done"]


async def test_a_provider_that_cannot_start_fails_the_debate_with_its_reason():
    from debates.engine.debate import run_debate
    from debates.engine.events import Finished, ListSink
    from debates.engine.spec import DebateSpec, PersonaSpec, SeatSpec
    from debates.engine.turns import ClientPool
    from debates.providers.base import ProviderUnavailable
    from testkit.fake_llm import FakeLLM

    class Broken(FakeLLM):
        async def ensure_ready(self, on_status=None):
            await on_status("loading model")
            raise ProviderUnavailable("the local model server did not start: out of memory")

    spec = DebateSpec(
        question="念佛与参禅？",
        format="duel",
        seats=[SeatSpec(PersonaSpec("a", "甲")), SeatSpec(PersonaSpec("b", "乙"))],
    )
    sink = ListSink()
    client = Broken()
    assert await run_debate(spec, ClientPool(client), sink) == "failed"
    assert sink.of(Finished)[-1].reason == "the local model server did not start: out of memory"
    assert client.calls == []
